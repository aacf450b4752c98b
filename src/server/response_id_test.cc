#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "server/request_options.h"

namespace strata::server {
namespace {

TEST(ResponseId, Is128RandomBitsInHexAfterThePrefix) {
  const std::regex shape("chatcmpl-[0-9a-f]{32}");
  for (int i = 0; i < 100; ++i) {
    const std::string id = new_response_id("chatcmpl-");
    EXPECT_TRUE(std::regex_match(id, shape)) << id;
  }
  EXPECT_EQ(new_response_id("cmpl-").rfind("cmpl-", 0), 0u);
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
