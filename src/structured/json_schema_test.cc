#include "structured/json_schema.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "structured/grammar_compiler.h"
#include "structured/grammar_matcher.h"
#include "structured/testing.h"
#include "structured/token_vocabulary.h"

namespace strata::structured {
namespace {


constexpr JsonSchemaOptions kCompact{.any_whitespace = false, .strict = false};

std::string gbnf_or_error(const std::string& schema, const JsonSchemaOptions& options = kCompact) {
  StatusOr<std::string> gbnf = json_schema_to_gbnf(schema, options);
  return gbnf.ok() ? *gbnf : "ERROR " + gbnf.status().message();
}

// The documents a schema's grammar accepts (compiled with the engine).
class Schema {
 public:
  explicit Schema(const std::string& schema, const JsonSchemaOptions& options = kCompact) {
    StatusOr<std::string> gbnf = json_schema_to_gbnf(schema, options);
    EXPECT_TRUE(gbnf.ok()) << schema << ": " << gbnf.status().to_string();
    if (!gbnf.ok()) return;
    gbnf_ = *gbnf;
    auto compiled = compile_gbnf(gbnf_, testing::byte_vocabulary());
    EXPECT_TRUE(compiled.ok()) << compiled.status().to_string() << "\n" << gbnf_;
    if (compiled.ok()) grammar_ = std::move(compiled).value();
  }
  bool accepts(std::string_view document) const {
    if (grammar_ == nullptr) return false;
    GrammarMatcher matcher(grammar_);
    return matcher.accept_string(document) && matcher.can_terminate();
  }
  const std::string& gbnf() const { return gbnf_; }

 private:
  std::string gbnf_;
  std::shared_ptr<const CompiledGrammar> grammar_;
};

#define EXPECT_ACCEPTS(schema, doc) EXPECT_TRUE((schema).accepts(doc)) << "should accept: " << (doc)
#define EXPECT_REJECTS(schema, doc) \
  EXPECT_FALSE((schema).accepts(doc)) << "should reject: " << (doc)

const char kChar[] = R"(char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ))";

// ---- Golden output ----

TEST(JsonSchemaGolden, RequiredPropertiesInOrder) {
  EXPECT_EQ(gbnf_or_error(R"({"type": "object", "properties": {"name": {"type": "string"},
      "age": {"type": "integer"}}, "required": ["name", "age"], "additionalProperties": false})"),
            std::string("root ::= \"{\" \"\\\"name\\\"\" \":\" string \",\" \"\\\"age\\\"\" \":\" "
                        "integer \"}\"\n"
                        "string ::= \"\\\"\" char* \"\\\"\"\n") +
                kChar + "\n" + "integer ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} )\n");
}

TEST(JsonSchemaGolden, WhitespaceRuleIsBounded) {
  const std::string gbnf =
      gbnf_or_error(R"({"type": "array", "items": {"type": "null"}})", JsonSchemaOptions{});
  EXPECT_EQ(gbnf,
            "root ::= \"[\" ws ( null ( ws \",\" ws null )* ws )? \"]\"\n"
            "null ::= \"null\"\n"
            "ws ::= ( \" \" | \"\\n\"{1,2} [ \\t]{0,20} )?\n");
}

TEST(JsonSchemaGolden, IntegerRangeDecomposition) {
  EXPECT_EQ(gbnf_or_error(R"({"type": "integer", "minimum": -5, "maximum": 120})"),
            "root ::= \"-\" [1-5] | [0-9] | [1-9] [0-9] | \"1\" ( [0-1] [0-9] | \"2\" \"0\" )\n");
  EXPECT_EQ(gbnf_or_error(R"({"type": "integer", "exclusiveMinimum": 9, "maximum": 10})"),
            "root ::= \"10\"\n");
}

TEST(JsonSchemaGolden, EnumConstAndRef) {
  EXPECT_EQ(gbnf_or_error(R"({"enum": ["a", 1, null, {"x": [true]}]})"),
            "root ::= \"\\\"a\\\"\" | \"1\" | \"null\" | \"{\\\"x\\\":[true]}\"\n");
  EXPECT_EQ(gbnf_or_error(R"({"$defs": {"a~1b": {"const": 3}}, "$ref": "#/$defs/a~01b"})"),
            "root ::= a-1b\na-1b ::= \"3\"\n");  // ~0 decodes to ~, so this names key "a~1b"
  EXPECT_EQ(gbnf_or_error(R"({"$defs": {"a/b": {"const": 3}}, "$ref": "#/$defs/a~1b"})"),
            "root ::= a-b\na-b ::= \"3\"\n");
}

TEST(JsonSchemaGolden, OptionalPropertiesStayLinear) {
  // 200 optional properties: the grammar grows linearly, not with the number of subsets.
  std::string schema = R"({"type": "object", "additionalProperties": false, "properties": {)";
  for (int idx = 0; idx < 200; ++idx) {
    schema += (idx ? ", " : "") + std::string("\"p") + std::to_string(idx) +
              "\": {\"type\": \"integer\"}";
  }
  schema += "}}";
  const std::string gbnf = gbnf_or_error(schema);
  ASSERT_EQ(gbnf.find("ERROR"), std::string::npos) << gbnf;
  EXPECT_LT(gbnf.size(), 60000u);
  const Schema compiled(schema);
  EXPECT_ACCEPTS(compiled, "{}");
  EXPECT_ACCEPTS(compiled, R"({"p3":1,"p150":2,"p199":3})");
  EXPECT_REJECTS(compiled, R"({"p150":2,"p3":1})");  // schema order only
}

// ---- Errors ----

TEST(JsonSchemaErrors, NamesUnsupportedKeywordAndPath) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type": "object", "properties": {"x": {"type": "object", "patternProperties": {}}}})",
       "unsupported JSON Schema keyword 'patternProperties' at /properties/x"},
      {R"({"not": {"type": "null"}})", "unsupported JSON Schema keyword 'not' at /"},
      {R"({"if": {}, "then": {}})", "unsupported JSON Schema keyword 'if'"},
      {R"({"type": "number", "multipleOf": 3})", "'multipleOf'"},
      {R"({"type": "array", "contains": {"type": "integer"}})", "'contains'"},
      {R"({"type": "array", "uniqueItems": true})", "'uniqueItems'"},
      {R"({"propertyNames": {"maxLength": 3}})", "'propertyNames'"},
      {R"({"dependentRequired": {"a": ["b"]}})", "'dependentRequired'"},
      {R"({"unevaluatedProperties": false})", "'unevaluatedProperties'"},
      {R"({"items": [{"$dynamicRef": "#x"}]})", "'$dynamicRef' at /items/0"},
      {R"({"$ref": "https://example.com/s.json"})", "remote '$ref'"},
      {R"({"$ref": "#/$defs/missing"})", "does not resolve"},
      {R"({"type": "object", "properties": {"a": {}}, "minProperties": 1})", "'minProperties'"},
      {R"({"type": "object", "maxProperties": 2})", "'maxProperties'"},
      {R"({"type": "number", "minimum": 0.5})", "'minimum' 0.5"},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", "no integer satisfies"},
      {R"({"type": "string", "pattern": "a+", "minLength": 2})", "'pattern' with 'minLength'"},
      {R"({"type": "string", "pattern": "(a)\\1"})",
       "unsupported 'pattern' at /: regex: backreference"},
      {R"({"type": "string", "format": "date", "maxLength": 4})", "'format' \"date\""},
      {R"({"type": "string", "minLength": 3, "maxLength": 2})", "'minLength' 3 > 'maxLength' 2"},
      {R"({"type": "string", "maxLength": 1000000})", "'maxLength' 1000000"},
      {R"({"enum": ["a"], "minLength": 1})", "'enum' with 'minLength'"},
      {R"({"type": "integer", "enum": ["a"]})", "admits no value"},
      {R"({"allOf": [{"minimum": 1}, {"minimum": 2}]})", "conflicting values for 'minimum'"},
      {R"({"allOf": [{"properties": {"a": {}}, "additionalProperties": false},
                     {"properties": {"b": {}}}]})",
       "'additionalProperties' of one part"},
      {R"({"anyOf": [{}], "oneOf": [{}]})", "'anyOf' and 'oneOf'"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "'minItems' 3"},
      {R"({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})", "'minItems' 2"},
      {R"({"type": "object", "required": ["a"], "additionalProperties": false})",
       "required property 'a'"},
      {R"({"type": "colour"})", "unknown 'type' \"colour\""},
      {R"({"type": "object", "properties": {"a": false}, "required": ["a"]})", "schema false"},
      {R"(false)", "admits no value"},
      {R"({"type": "object",)", "not valid JSON"},
      {R"(42)", "must be an object or a boolean"},
      {R"({"$ref": "#"})", "'$ref' \"#\" refers to itself"},
      {R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})", "refers to itself"},
  };
  for (const auto& [schema, expected] : cases) {
    StatusOr<std::string> gbnf = json_schema_to_gbnf(schema);
    ASSERT_FALSE(gbnf.ok()) << schema << "\n" << *gbnf;
    EXPECT_EQ(gbnf.status().code(), StatusCode::kInvalidArgument) << schema;
    EXPECT_NE(gbnf.status().message().find(expected), std::string::npos)
        << schema << "\n  got: " << gbnf.status().message() << "\n  want: " << expected;
  }
}

TEST(JsonSchemaErrors, HostileSchemasFailCleanly) {
  std::string deep;
  for (int idx = 0; idx < 500; ++idx) deep += R"({"type": "array", "items": )";
  deep += "{}";
  for (int idx = 0; idx < 500; ++idx) deep += "}";
  StatusOr<std::string> gbnf = json_schema_to_gbnf(deep);
  ASSERT_FALSE(gbnf.ok());
  EXPECT_NE(gbnf.status().message().find("nested deeper than 64"), std::string::npos)
      << gbnf.status().message();

  // Deep JSON anywhere (here inside a const) is refused before any recursive copy.
  const std::string deep_const =
      R"({"const": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  gbnf = json_schema_to_gbnf(deep_const);
  ASSERT_FALSE(gbnf.ok());
  EXPECT_NE(gbnf.status().message().find("nested deeper than 512"), std::string::npos);

  std::string loop =
      R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                        "$ref": "#/$defs/a"})";
  EXPECT_FALSE(json_schema_to_gbnf(loop).ok());

  std::string wide = R"({"anyOf": [)";
  for (int idx = 0; idx < 12000; ++idx) {
    wide += (idx ? "," : "") + std::string(R"({"type": "string", "maxLength": )") +
            std::to_string(idx % 9000 + 1) + "}";
  }
  wide += "]}";
  gbnf = json_schema_to_gbnf(wide);
  ASSERT_FALSE(gbnf.ok());
  EXPECT_NE(gbnf.status().message().find("too large"), std::string::npos)
      << gbnf.status().message();
}

TEST(JsonSchemaErrors, AnnotationsAreIgnored) {
  EXPECT_EQ(gbnf_or_error(R"({"$schema": "https://json-schema.org/draft/2020-12/schema",
      "$id": "x", "title": "T", "description": "D", "examples": [1], "default": 2,
      "$comment": "c", "deprecated": true, "readOnly": true, "writeOnly": false,
      "x-vendor": {"not": 1}, "type": "boolean", "format": "something-else"})"),
            "root ::= boolean\nboolean ::= \"true\" | \"false\"\n");
}

// ---- Semantics through the grammar engine ----

TEST(JsonSchemaSemantics, ObjectRequiredAndTypes) {
  const Schema schema(R"({"type": "object", "properties": {"name": {"type": "string"},
      "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["name", "age"]})");
  EXPECT_ACCEPTS(schema, R"({"name":"Ann","age":31})");
  EXPECT_ACCEPTS(schema, R"({"name":"Ann","age":31,"tags":["a","b"]})");
  EXPECT_ACCEPTS(schema, R"({"name":"Ann","age":31,"extra":{"k":[1,null]}})");
  EXPECT_REJECTS(schema, R"({"name":"Ann"})");             // age missing
  EXPECT_REJECTS(schema, R"({"age":31})");                 // name missing
  EXPECT_REJECTS(schema, R"({"name":"Ann","age":"31"})");  // wrong type
  EXPECT_REJECTS(schema, R"({"name":"Ann","age":31.5})");
  EXPECT_REJECTS(schema, R"({"name":"Ann","age":31,"tags":[1]})");
  EXPECT_REJECTS(schema, R"({"name":"Ann","age":31,"age":32})");  // a listed name as extra key
  EXPECT_REJECTS(schema, R"({"name":"Ann","age":012})");
  EXPECT_REJECTS(schema, R"([])");
}

TEST(JsonSchemaSemantics, AdditionalPropertiesAndStrictMode) {
  const Schema closed(R"({"type": "object", "properties": {"a": {"type": "integer"}},
      "additionalProperties": false})");
  EXPECT_ACCEPTS(closed, R"({})");
  EXPECT_ACCEPTS(closed, R"({"a":1})");
  EXPECT_REJECTS(closed, R"({"a":1,"b":2})");
  EXPECT_REJECTS(closed, R"({"b":2})");

  const Schema typed_extra(R"({"type": "object", "properties": {"a": {"type": "string"}},
      "additionalProperties": {"type": "integer"}})");
  EXPECT_ACCEPTS(typed_extra, R"({"a":"x","ab":1,"b":2})");
  EXPECT_ACCEPTS(typed_extra, R"({"":1})");
  EXPECT_REJECTS(typed_extra, R"({"a":"x","ab":"y"})");
  EXPECT_REJECTS(typed_extra, R"({"a":1})");  // "a" must be a string, even as an extra key
  EXPECT_REJECTS(typed_extra, R"({"\u0061":1})");

  const char* open_schema = R"({"type": "object", "properties": {"a": {"type": "integer"}}})";
  const Schema lenient(open_schema);
  const Schema strict(open_schema, {.any_whitespace = false, .strict = true});
  EXPECT_ACCEPTS(lenient, R"({"a":1,"z":true})");
  EXPECT_ACCEPTS(strict, R"({"a":1})");
  EXPECT_REJECTS(strict, R"({"a":1,"z":true})");
}

TEST(JsonSchemaSemantics, OptionalPropertiesAnySubsetInOrder) {
  const Schema schema(R"({"type": "object", "properties": {"a": {"const": 1}, "b": {"const": 2},
      "c": {"const": 3}, "d": {"const": 4}}, "required": ["c"], "additionalProperties": false})");
  for (const char* doc : {R"({"c":3})", R"({"a":1,"c":3})", R"({"b":2,"c":3,"d":4})",
                          R"({"a":1,"b":2,"c":3,"d":4})", R"({"c":3,"d":4})"}) {
    EXPECT_ACCEPTS(schema, doc);
  }
  for (const char* doc : {R"({})", R"({"a":1})", R"({"c":3,"a":1})", R"({"a":1,,"c":3})",
                          R"({,"c":3})", R"({"c":3,})", R"({"b":2,"a":1,"c":3})"}) {
    EXPECT_REJECTS(schema, doc);
  }
}

TEST(JsonSchemaSemantics, IntegerBoundsExactAtEveryEdge) {
  const std::vector<std::pair<int, int>> ranges = {
      {0, 9},     {1, 10},      {-10, -1}, {-15, 7}, {3, 3},  {-100, 100}, {10, 99},
      {99, 1000}, {-999, -100}, {17, 352}, {0, 0},   {-1, 0}, {5, 12345}};
  for (const auto& [low, high] : ranges) {
    const std::string text = R"({"type": "integer", "minimum": )" + std::to_string(low) +
                             R"(, "maximum": )" + std::to_string(high) + "}";
    const Schema schema(text);
    for (int value = low - 25; value <= high + 25; ++value) {
      if (value > low + 25 && value < high - 25 && value % 7 != 0) continue;
      EXPECT_EQ(schema.accepts(std::to_string(value)), value >= low && value <= high)
          << text << " value " << value << "\n"
          << schema.gbnf();
    }
    EXPECT_REJECTS(schema, "-0");
    EXPECT_REJECTS(schema, "0" + std::to_string(std::abs(high) + 1));  // leading zero
  }
}

TEST(JsonSchemaSemantics, IntegerOneSidedAndExclusiveBounds) {
  const Schema positive(R"({"type": "integer", "exclusiveMinimum": 0})");
  EXPECT_REJECTS(positive, "0");
  EXPECT_REJECTS(positive, "-1");
  EXPECT_ACCEPTS(positive, "1");
  EXPECT_ACCEPTS(positive, "9999999999999999");
  EXPECT_REJECTS(positive, "99999999999999999");  // 17 digits: capped

  const Schema below(R"({"type": "integer", "exclusiveMaximum": -20})");
  EXPECT_ACCEPTS(below, "-21");
  EXPECT_ACCEPTS(below, "-1000000");
  EXPECT_REJECTS(below, "-20");
  EXPECT_REJECTS(below, "0");
  EXPECT_REJECTS(below, "5");

  const Schema draft4(R"({"type": "integer", "minimum": 2, "exclusiveMinimum": true,
      "maximum": 3.5})");
  EXPECT_REJECTS(draft4, "2");
  EXPECT_ACCEPTS(draft4, "3");
  EXPECT_REJECTS(draft4, "4");

  const Schema fractional(R"({"type": "integer", "minimum": -2.5, "maximum": 1.5})");
  for (const char* doc : {"-2", "-1", "0", "1"}) EXPECT_ACCEPTS(fractional, doc);
  for (const char* doc : {"-3", "2"}) EXPECT_REJECTS(fractional, doc);

  const Schema big(R"({"type": "integer", "minimum": 123456789012345678})");
  EXPECT_ACCEPTS(big, "123456789012345678");
  EXPECT_ACCEPTS(big, "999999999999999999");
  EXPECT_REJECTS(big, "123456789012345677");
}

TEST(JsonSchemaSemantics, NumberBounds) {
  const Schema unit(R"({"type": "number", "minimum": 0, "maximum": 1})");
  for (const char* doc : {"0", "0.0", "0.5", "0.999", "1", "1.0", "1.000"})
    EXPECT_ACCEPTS(unit, doc);
  for (const char* doc : {"-0.5", "-1", "1.5", "1.0001", "2", "1e0", "01"})
    EXPECT_REJECTS(unit, doc);

  const Schema open(R"({"type": "number", "exclusiveMinimum": -2, "exclusiveMaximum": 3})");
  for (const char* doc : {"-1.999", "-1", "0", "2.999", "-0.5", "2"}) EXPECT_ACCEPTS(open, doc);
  for (const char* doc : {"-2", "-2.0", "-2.5", "3", "3.0", "3.01", "-3"})
    EXPECT_REJECTS(open, doc);

  const Schema negative(R"({"type": "number", "maximum": -1})");
  for (const char* doc : {"-1", "-1.0", "-1.5", "-12345.25"}) EXPECT_ACCEPTS(negative, doc);
  for (const char* doc : {"-0.99", "0", "-0", "1"}) EXPECT_REJECTS(negative, doc);

  const Schema plain(R"({"type": "number"})");
  for (const char* doc : {"0", "-0", "1.5", "-2e10", "3.25E-3", "12"}) EXPECT_ACCEPTS(plain, doc);
  for (const char* doc : {"01", "1.", ".5", "1e", "+1", "--1"}) EXPECT_REJECTS(plain, doc);
}

TEST(JsonSchemaSemantics, NumberBoundsMatchArithmeticOnRandomValues) {
  struct Case {
    std::optional<int> low, high;
    bool low_exclusive, high_exclusive;
  };
  const std::vector<Case> cases = {{-3, 4, false, false},
                                   {-3, 4, true, true},
                                   {0, 0, false, false},
                                   {-7, -2, true, false},
                                   {2, 13, false, true},
                                   {std::nullopt, 5, false, true},
                                   {-11, std::nullopt, true, false},
                                   {0, 1, true, false}};
  std::mt19937 rng(1234);
  for (const Case& c : cases) {
    std::string text = R"({"type": "number")";
    if (c.low)
      text += std::string(", \"") + (c.low_exclusive ? "exclusiveMinimum" : "minimum") +
              "\": " + std::to_string(*c.low);
    if (c.high)
      text += std::string(", \"") + (c.high_exclusive ? "exclusiveMaximum" : "maximum") +
              "\": " + std::to_string(*c.high);
    text += "}";
    const Schema schema(text);
    for (int trial = 0; trial < 300; ++trial) {
      const int whole = static_cast<int>(rng() % 41) - 20;
      const int num_fraction_digits = static_cast<int>(rng() % 4);  // "", ".d", ".dd", ".ddd"
      int fraction = 0;
      std::string digits;
      for (int idx = 0; idx < num_fraction_digits; ++idx) {
        const int digit = rng() % 3 == 0 ? 0 : static_cast<int>(rng() % 10);
        digits += static_cast<char>('0' + digit);
        fraction = fraction * 10 + digit;
      }
      for (int idx = num_fraction_digits; idx < 3; ++idx) fraction *= 10;
      const bool negative = whole < 0 || (whole == 0 && rng() % 2 == 0 && fraction > 0);
      const int64_t milli = (negative ? -1 : 1) * (int64_t{std::abs(whole)} * 1000 + fraction);
      const std::string doc = (negative ? "-" : "") + std::to_string(std::abs(whole)) +
                              (digits.empty() ? "" : "." + digits);
      bool valid = true;
      if (c.low) valid &= c.low_exclusive ? milli > *c.low * 1000 : milli >= *c.low * 1000;
      if (c.high) valid &= c.high_exclusive ? milli < *c.high * 1000 : milli <= *c.high * 1000;
      EXPECT_EQ(schema.accepts(doc), valid) << text << " " << doc;
    }
  }
}

TEST(JsonSchemaSemantics, StringLengthsCountCodePoints) {
  const Schema schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_ACCEPTS(schema, "\"ab\"");
  EXPECT_ACCEPTS(schema, "\"abc\"");
  EXPECT_ACCEPTS(schema, "\"\xC3\xA9\xE4\xBD\xA0\"");  // 2 code points, 5 bytes
  EXPECT_ACCEPTS(schema, "\"\xF0\x9F\x98\x80\xF0\x9F\x98\x80\xF0\x9F\x98\x80\"");  // 3 emoji
  EXPECT_ACCEPTS(schema, R"("\n\u00e9")");  // escapes count once
  EXPECT_REJECTS(schema, "\"a\"");
  EXPECT_REJECTS(schema, "\"\xC3\xA9\"");
  EXPECT_REJECTS(schema, "\"abcd\"");
  EXPECT_REJECTS(schema, "\"\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\"");
  EXPECT_REJECTS(schema, "\"a\nb\"");  // raw control character
  EXPECT_REJECTS(schema, R"("a\qb")");
}

TEST(JsonSchemaSemantics, PatternIsJsonEscapeAware) {
  const Schema schema(R"({"type": "string", "pattern": "^[a-z]+\"\\\\\\d{2}$"})");
  EXPECT_ACCEPTS(schema, R"("ab\"\\12")");
  EXPECT_REJECTS(schema, R"("ab"\12")");  // an unescaped quote ends the string
  EXPECT_REJECTS(schema, R"("ab\"\\1")");
  EXPECT_REJECTS(schema, R"("AB\"\\12")");

  const Schema any_char(R"({"type": "string", "pattern": "^.{2}$"})");
  EXPECT_ACCEPTS(any_char, R"("\"\\")");
  EXPECT_ACCEPTS(any_char, "\"\xC3\xA9\\t\"");
  EXPECT_REJECTS(any_char, R"("\n\n")");  // . excludes newline
  EXPECT_REJECTS(any_char, R"("abc")");
}

TEST(JsonSchemaSemantics, FormatsAdmitOnlyValidValues) {
  const Schema date(R"({"type": "string", "format": "date"})");
  EXPECT_ACCEPTS(date, R"("2024-02-29")");
  EXPECT_REJECTS(date, R"("2024-13-01")");
  EXPECT_REJECTS(date, R"("2024-1-01")");
  const Schema date_time(R"({"type": "string", "format": "date-time"})");
  EXPECT_ACCEPTS(date_time, R"("2024-02-29T23:59:07.123Z")");
  EXPECT_ACCEPTS(date_time, R"("2024-02-29T00:00:00+05:30")");
  EXPECT_REJECTS(date_time, R"("2024-02-29T24:00:00Z")");
  EXPECT_REJECTS(date_time, R"("2024-02-29 10:00:00Z")");
  const Schema uuid(R"({"format": "uuid"})");
  EXPECT_ACCEPTS(uuid, R"("123e4567-e89b-12d3-a456-426614174000")");
  EXPECT_REJECTS(uuid, R"("123e4567e89b12d3a456426614174000")");
  const Schema email(R"({"type": "string", "format": "email"})");
  EXPECT_ACCEPTS(email, R"("first.last+tag@mail.example.com")");
  EXPECT_REJECTS(email, R"("no-at-sign.example.com")");
  EXPECT_REJECTS(email, R"(".x@example.com")");
}

TEST(JsonSchemaSemantics, EnumConstNullableAnyOf) {
  const Schema colours(R"({"type": "string", "enum": ["red", "green", 3], "nullable": true})");
  EXPECT_ACCEPTS(colours, R"("red")");
  EXPECT_ACCEPTS(colours, "null");
  EXPECT_REJECTS(colours, "3");  // filtered out by type
  EXPECT_REJECTS(colours, R"("blue")");

  const Schema either(R"({"anyOf": [{"type": "integer", "minimum": 10}, {"type": "boolean"},
      {"type": "object", "properties": {"k": {"const": "v"}}, "required": ["k"],
       "additionalProperties": false}]})");
  for (const char* doc : {"10", "123", "true", R"({"k":"v"})"}) EXPECT_ACCEPTS(either, doc);
  for (const char* doc : {"9", "null", R"({"k":"w"})", R"("x")"}) EXPECT_REJECTS(either, doc);

  const Schema with_false(R"({"oneOf": [false, {"const": "x"}]})");
  EXPECT_ACCEPTS(with_false, R"("x")");
  EXPECT_REJECTS(with_false, R"("y")");
  EXPECT_FALSE(json_schema_to_gbnf(R"({"anyOf": [false]})").ok());

  const Schema sibling_nullable(R"({"nullable": true, "anyOf": [{"type": "string"},
      {"type": "integer"}]})");
  for (const char* doc : {"null", "\"s\"", "7"}) EXPECT_ACCEPTS(sibling_nullable, doc);
  EXPECT_REJECTS(sibling_nullable, "true");

  const Schema nullable(R"({"type": "integer", "nullable": true})");
  EXPECT_ACCEPTS(nullable, "null");
  EXPECT_ACCEPTS(nullable, "-4");
  EXPECT_REJECTS(nullable, "\"null\"");

  const Schema type_list(R"({"type": ["string", "null"], "maxLength": 1})");
  EXPECT_ACCEPTS(type_list, "null");
  EXPECT_ACCEPTS(type_list, "\"a\"");
  EXPECT_REJECTS(type_list, "\"ab\"");
}

TEST(JsonSchemaSemantics, AllOfMergesObjectParts) {
  const Schema schema(R"({"$defs": {"named": {"properties": {"name": {"type": "string"}},
      "required": ["name"]}}, "allOf": [{"$ref": "#/$defs/named"},
      {"properties": {"id": {"type": "integer"}}, "required": ["id"]}]})");
  EXPECT_ACCEPTS(schema, R"({"name":"a","id":1})");
  EXPECT_ACCEPTS(schema, R"({"name":"a","id":1,"x":0})");
  EXPECT_REJECTS(schema, R"({"name":"a"})");
  EXPECT_REJECTS(schema, R"({"id":1})");
  EXPECT_REJECTS(schema, R"({"name":1,"id":1})");
  // A sibling additionalProperties:false forbids the parts' properties (JSON Schema semantics).
  EXPECT_FALSE(json_schema_to_gbnf(R"({"allOf": [{"properties": {"a": {}}}],
      "additionalProperties": false})")
                   .ok());
  const Schema closed(R"({"allOf": [{"properties": {"a": {"type": "integer"}},
      "additionalProperties": false}, {"required": ["a"]}]})");
  EXPECT_ACCEPTS(closed, R"({"a":1})");
  EXPECT_REJECTS(closed, R"({})");
  EXPECT_REJECTS(closed, R"({"a":1,"b":2})");
}

TEST(JsonSchemaSemantics, ArraysBoundsAndTuples) {
  const Schema bounded(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2,
      "maxItems": 4})");
  for (const char* doc : {"[1,2]", "[1,2,3]", "[1,2,3,4]"}) EXPECT_ACCEPTS(bounded, doc);
  for (const char* doc : {"[]", "[1]", "[1,2,3,4,5]", "[1,\"2\"]", "[1,,2]"}) {
    EXPECT_REJECTS(bounded, doc);
  }
  const Schema tuple(R"({"type": "array", "prefixItems": [{"type": "integer"},
      {"type": "string"}], "items": false})");
  for (const char* doc : {"[]", "[1]", R"([1,"a"])"}) EXPECT_ACCEPTS(tuple, doc);
  for (const char* doc : {R"(["a"])", R"([1,"a",2])", R"([1,2])"}) EXPECT_REJECTS(tuple, doc);

  const Schema tuple_rest(R"({"type": "array", "prefixItems": [{"const": "x"}],
      "items": {"type": "boolean"}, "minItems": 2})");
  EXPECT_ACCEPTS(tuple_rest, R"(["x",true])");
  EXPECT_ACCEPTS(tuple_rest, R"(["x",true,false])");
  EXPECT_REJECTS(tuple_rest, R"(["x"])");
  EXPECT_REJECTS(tuple_rest, R"([true,true])");
}

TEST(JsonSchemaSemantics, RecursiveRefBuildsTrees) {
  const Schema tree(R"({"type": "object", "properties": {"value": {"type": "integer"},
      "children": {"type": "array", "items": {"$ref": "#"}}}, "required": ["value"],
      "additionalProperties": false})");
  EXPECT_ACCEPTS(tree, R"({"value":1})");
  EXPECT_ACCEPTS(tree,
                 R"({"value":1,"children":[{"value":2},{"value":3,"children":[{"value":4}]}]})");
  EXPECT_REJECTS(tree, R"({"value":1,"children":[{"children":[]}]})");
  EXPECT_REJECTS(tree, R"({"value":1,"children":[{"value":"x"}]})");

  const Schema defs(R"({"definitions": {"list": {"anyOf": [{"type": "null"},
      {"type": "object", "properties": {"head": {"type": "integer"}, "tail": {"$ref": "#/definitions/list"}},
       "required": ["head", "tail"], "additionalProperties": false}]}}, "$ref": "#/definitions/list"})");
  EXPECT_ACCEPTS(defs, R"({"head":1,"tail":{"head":2,"tail":null}})");
  EXPECT_REJECTS(defs, R"({"head":1,"tail":{"head":2}})");
}

TEST(JsonSchemaSemantics, WhitespaceIsAllowedButBounded) {
  const Schema schema(R"({"type": "object", "properties": {"a": {"type": "array",
      "items": {"type": "integer"}}}, "required": ["a"]})",
                      JsonSchemaOptions{});
  EXPECT_ACCEPTS(schema, R"({"a":[1,2]})");
  EXPECT_ACCEPTS(schema, "{\n  \"a\": [\n    1,\n    2\n  ]\n}");
  EXPECT_ACCEPTS(schema, "{ \"a\" : [ 1 , 2 ] }");
  EXPECT_REJECTS(schema, "{  \"a\":[1]}");                              // two spaces
  EXPECT_REJECTS(schema, "{\n" + std::string(21, ' ') + "\"a\":[1]}");  // indentation over 20
  EXPECT_REJECTS(schema, " {\"a\":[1]}");  // nothing around the document
  const Schema compact(R"({"type": "object", "properties": {"a": {"type": "integer"}}})");
  EXPECT_REJECTS(compact, R"({"a": 1})");
}

TEST(JsonSchemaSemantics, LimitsStayWithinWhatTheEngineCompiles) {
  // The most prefixItems we accept, all optional: one nested group each.
  std::string tuple = R"({"type": "array", "items": false, "prefixItems": [)";
  for (size_t idx = 0; idx < kMaxPrefixItems; ++idx)
    tuple += (idx ? "," : "") + std::string("{\"const\": 1}");
  tuple += "]}";
  const Schema schema(tuple);
  EXPECT_ACCEPTS(schema, "[]");
  EXPECT_ACCEPTS(schema, "[1,1,1]");
  std::string full = "[1";
  for (size_t idx = 1; idx < kMaxPrefixItems; ++idx) full += ",1";
  EXPECT_ACCEPTS(schema, full + "]");
  EXPECT_REJECTS(schema, full + ",1]");
  std::string too_many = tuple;
  too_many.replace(too_many.find("[{"), 1, "[{\"const\": 1},");
  EXPECT_FALSE(json_schema_to_gbnf(too_many).ok());

  // Long property names: the "any other key" trie splits into rules.
  const std::string long_name(150, 'k');
  const Schema keys(R"({"type": "object", "properties": {")" + long_name +
                    R"(": {"type": "integer"}}, "additionalProperties": {"type": "string"}})");
  EXPECT_ACCEPTS(keys, "{\"" + long_name + "\":1}");
  EXPECT_ACCEPTS(keys, "{\"" + long_name + "k\":\"s\"}");
  EXPECT_ACCEPTS(keys, "{\"" + long_name.substr(1) + "\":\"s\"}");
  EXPECT_REJECTS(keys, "{\"" + long_name + "\":\"s\"}");
}

TEST(JsonSchemaSemantics, EmptyAndBooleanSchemasMeanAnyValue) {
  for (const char* text : {"{}", "true", R"({"description": "anything"})"}) {
    const Schema schema(text);
    for (const char* doc : {"1", "\"s\"", "null", R"({"a":[true,{}]})", "[]"}) {
      EXPECT_ACCEPTS(schema, doc);
    }
    EXPECT_REJECTS(schema, "[1,]");
  }
}

}  // namespace
}  // namespace strata::structured
