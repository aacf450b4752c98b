#include "config/json_fields.h"

#include <gtest/gtest.h>

namespace strata::config {
namespace {

TEST(JsonFields, FlagStyleNamesTheKeyPath) {
  const Json j = Json::parse(R"({"n": "4", "m": 2.0, "b": 1, "s": null, "x": 1})");
  JsonFields f(j, "extra.tiers[0]", FieldStyle::kFlag);
  int64_t n = 0;
  EXPECT_EQ(f.optional_int("n", &n, 1).message(),
            "extra.tiers[0].n must be an integer >= 1, got \"4\"");
  EXPECT_TRUE(f.optional_int("m", &n, 1).ok());  // a whole float is an integer
  EXPECT_EQ(n, 2);
  bool b = false;
  EXPECT_EQ(f.optional_bool("b", &b).message(), "extra.tiers[0].b must be true or false, got 1");
  std::string s = "kept";
  EXPECT_EQ(f.optional_string("s", &s).message(), "extra.tiers[0].s must be a string, got null");
  EXPECT_TRUE(f.optional_string_or_null("s", &s).ok());
  EXPECT_EQ(s, "kept");
  EXPECT_EQ(f.check_keys({"n", "m", "b", "s"}).message(),
            "unknown key extra.tiers[0].x (known: n, m, b, s)");
  EXPECT_EQ(f.missing_error("root", "a string").message(), "extra.tiers[0].root is required");
  double d = 0;
  EXPECT_EQ(JsonFields(j, "", FieldStyle::kFlag).optional_double("n", &d, 0.0).message(),
            "n must be a number >= 0.000000, got \"4\"");
}

TEST(JsonFields, FileStyleNamesTheFileAndField) {
  const Json j = Json::parse(R"({"n": 2.0, "s": null, "r": {"f": "x"}, "e": [1, 2]})");
  JsonFields f(j, "config.json");
  int64_t n = 0;
  EXPECT_EQ(f.optional_int("n", &n).message(),
            "config.json: field 'n' must be an integer; got number 2.0");
  std::string s = "kept";
  EXPECT_TRUE(f.optional_string("s", &s).ok());  // null reads as absent
  EXPECT_EQ(s, "kept");
  EXPECT_EQ(f.required_int("v", &n).message(),
            "config.json: required field 'v' (an integer) is missing");
  double d = 0;
  EXPECT_EQ(f.nested("r").optional_double("f", &d).message(),
            "config.json: field 'r.f' must be a number; got string \"x\"");
  std::vector<int64_t> ids;
  ASSERT_TRUE(f.optional_token_ids("e", &ids).ok());
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2}));
}

TEST(JsonFields, ExactInt64RejectsWhatDoesNotFit) {
  EXPECT_EQ(exact_int64(Json(18446744073709551615ull), true), std::nullopt);
  EXPECT_EQ(exact_int64(Json(1e300), true), std::nullopt);
  EXPECT_EQ(exact_int64(Json(2.5), true), std::nullopt);
  EXPECT_EQ(exact_int64(Json(3.0), false), std::nullopt);
  EXPECT_EQ(exact_int64(Json(-7), false), -7);
  EXPECT_EQ(string_or(Json::parse(R"({"t": 1})"), "t", "d"), "d");
  EXPECT_TRUE(bool_or(Json::parse(R"({"t": true})"), "t", false));
}

}  // namespace
}  // namespace strata::config
