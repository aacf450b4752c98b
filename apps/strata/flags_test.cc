#include "flags.h"

#include <gtest/gtest.h>

namespace strata::app {
namespace {

TEST(FlagsTest, ParsesAllForms) {
  std::string model;
  int64_t n = 1;
  double t = 1.0;
  bool json = false, cache = true;
  FlagSet flags("test");
  flags.add_string("model", &model, "");
  flags.add_int("max-tokens", &n, "");
  flags.add_double("temperature", &t, "");
  flags.add_bool("json", &json, "");
  flags.add_bool("enable-prefix-caching", &cache, "");
  ASSERT_TRUE(flags
                  .parse({"pos", "--model", "m", "--max-tokens=7", "--temperature", "0.5",
                          "--json", "--no-enable-prefix-caching"})
                  .ok());
  EXPECT_EQ(model, "m");
  EXPECT_EQ(n, 7);
  EXPECT_DOUBLE_EQ(t, 0.5);
  EXPECT_TRUE(json);
  EXPECT_FALSE(cache);
  EXPECT_EQ(flags.positional(), std::vector<std::string>{"pos"});
  EXPECT_TRUE(flags.was_set("model"));
}

TEST(FlagsTest, UnknownFlagSuggestsClosest) {
  int64_t n = 1;
  FlagSet flags("generate");
  flags.add_int("max-tokens", &n, "");
  Status s = flags.parse({"--max-token", "3"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("did you mean --max-tokens?"), std::string::npos) << s.message();
}

TEST(FlagsTest, BadNumberNamesFlag) {
  int64_t n = 1;
  FlagSet flags("generate");
  flags.add_int("max-tokens", &n, "");
  Status s = flags.parse({"--max-tokens", "ten"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--max-tokens expects a number, got 'ten'"), std::string::npos);
}

TEST(FlagsTest, IdList) {
  EXPECT_EQ(parse_id_list("1, 2,3").value(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(parse_id_list("1,x").ok());
  EXPECT_FALSE(parse_id_list("").ok());
}

}  // namespace
}  // namespace strata::app
