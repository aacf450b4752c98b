#include "server/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "server/api_error.h"

namespace strata::server {
namespace {

TEST(JsonWriter, NestedContainersAndCommas) {
  JsonWriter w;
  w.begin_object().key("a").value(1).key("b").begin_array().value("x").null().value(true);
  w.end_array().key("c").begin_object().end_object().end_object();
  EXPECT_EQ(w.str(), R"({"a":1,"b":["x",null,true],"c":{}})");
}

TEST(JsonWriter, EscapesControlCharactersAndQuotes) {
  JsonWriter w;
  w.value(std::string("a\"b\\c\n\t") + '\x01' + "/é");
  EXPECT_EQ(w.str(), "\"a\\\"b\\\\c\\n\\t\\u0001/é\"");
}

// Found by the soak test: error messages echo request bytes (a prompt of
// "\xff\xfe", a URL path), and raw invalid UTF-8 made the body invalid JSON.
TEST(JsonWriter, InvalidUtf8BecomesReplacementCharacters) {
  JsonWriter w;
  w.value(std::string("a\xff\xfe") + "é" + "\xe2\x82" + "z\xed\xa0\x80");
  EXPECT_EQ(w.str(), "\"a\xEF\xBF\xBD\xEF\xBF\xBDé\xEF\xBF\xBDz\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
  std::string key_out;
  append_json_escaped("\xc0\xaf\"", &key_out);
  EXPECT_EQ(key_out, "\xEF\xBF\xBD\xEF\xBF\xBD\\\"");
}

TEST(JsonWriter, Numbers) {
  EXPECT_EQ(json_number(1.0), "1.0");
  EXPECT_EQ(json_number(-0.5), "-0.5");
  EXPECT_EQ(json_number(1e-7), "1e-07");
  EXPECT_EQ(json_number(0.1), "0.1");
  EXPECT_EQ(json_number(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(json_number(std::nan("")), "null");
}

TEST(ApiError, Envelope) {
  EXPECT_EQ(
      ApiError::bad_request("bad", "temperature").to_json(),
      R"({"error":{"message":"bad","type":"BadRequestError","param":"temperature","code":400}})");
  EXPECT_EQ(
      ApiError::not_found("The model `x` does not exist.", "model").to_json(),
      R"({"error":{"message":"The model `x` does not exist.","type":"NotFoundError","param":"model","code":404}})");
  EXPECT_EQ(ApiError::unauthorized().status, 401);
  EXPECT_EQ(ApiError::from_status(invalid_argument("x")).status, 400);
  EXPECT_EQ(ApiError::from_status(internal_error("x")).status, 500);
}

}  // namespace
}  // namespace strata::server
