#include <gtest/gtest.h>

#include <set>
#include <string>

#include "server/request_options.h"

namespace strata::server {
namespace {

// prefix followed by exactly 32 lowercase hex digits.
bool has_shape(const std::string& id, const std::string& prefix) {
  if (id.size() != prefix.size() + 32 || id.rfind(prefix, 0) != 0) return false;
  for (size_t i = prefix.size(); i < id.size(); ++i) {
    const char c = id[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

TEST(ResponseId, Is128RandomBitsInHexAfterThePrefix) {
  for (int i = 0; i < 100; ++i) {
    const std::string id = new_response_id("chatcmpl-");
    EXPECT_TRUE(has_shape(id, "chatcmpl-")) << id;
  }
  EXPECT_TRUE(has_shape(new_response_id("cmpl-"), "cmpl-"));
}

TEST(ResponseId, NeverRepeatsAndDoesNotCount) {
  std::set<std::string> seen;
  std::set<std::string> tails;
  for (int i = 0; i < 10000; ++i) {
    const std::string id = new_response_id("cmpl-");
    EXPECT_TRUE(seen.insert(id).second) << id;
    tails.insert(id.substr(id.size() - 8));  // a counter in the low digits would repeat less
  }
  // Random low digits: 10,000 draws of 32 bits give (almost surely) 10,000 tails.
  EXPECT_GT(tails.size(), 9990u);
}

}  // namespace
}  // namespace strata::server
