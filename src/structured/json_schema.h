// JSON Schema -> GBNF for structured outputs (vLLM's `json` / guided_json /
// response_format {type: json_schema}). The grammar admits only documents
// that the schema accepts (a subset of them where noted below), written as
// compact JSON or with bounded whitespace.
//
// Supported (the subset vLLM's xgrammar backend accepts):
//   type (one name or a list; absent: any value, or the types that keywords
//   such as `properties`/`items`/`minLength`/`minimum` imply), enum, const,
//   anyOf, oneOf (as plain alternatives: exclusivity is not enforced), allOf
//   (merged: object parts with disjoint or identical keywords), $ref to
//   "#", "#/$defs/..", "#/definitions/.." or any local JSON pointer
//   (recursion allowed), nullable (OpenAPI), boolean schemas;
//   object: properties (emitted in schema order; required ones always,
//   optional ones any subset), required, additionalProperties (extra keys
//   come after the listed ones and never reuse a listed name),
//   minProperties/maxProperties when the other keywords already imply them;
//   array: items, prefixItems (and draft-7 array-form items +
//   additionalItems), minItems, maxItems, uniqueItems false;
//   string: minLength, maxLength (code points), pattern (full match, like
//   xgrammar and llama.cpp; a full match is also a JSON Schema search
//   match), format date, time, date-time, uuid, email (approximations that
//   admit only valid values); other formats are annotations and ignored;
//   integer: minimum, maximum, exclusiveMinimum, exclusiveMaximum (number
//   or draft-4 boolean form), exact; number: the same bounds when they are
//   integers (bounded numbers have no exponent).
// Errors (invalid_argument, naming the keyword and its JSON pointer, e.g.
// "unsupported JSON Schema keyword 'patternProperties' at /properties/x"):
// invalid JSON, assertion keywords we do not support (not, if/then/else,
// patternProperties, propertyNames, dependent*, unevaluated*, contains,
// multipleOf, uniqueItems true, $dynamicRef, ...), unsupported
// combinations (e.g. pattern with minLength), remote $ref, unsatisfiable
// schemas, and the size limits below. Unknown keywords without assertion
// meaning (title, description, examples, default, x-*, ...) are ignored.
//
// Output: llama.cpp GBNF; rule `root` first, then schema rules in creation
// order, then shared rules (ws, string, char, integer, number, value, ...).
// Unbounded integer and fraction parts are capped at 16 digits and exponents
// at 3, so a model cannot emit digits forever; enum/const values are
// accepted in their compact serialization only.
//
// A $ref cycle that consumes no input (e.g. anyOf [{"$ref": "#"}, ...]) gives
// a left-recursive grammar, which compile_gbnf rejects (invalid_argument).
//
// Thread-safety: pure function, callable from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace strata::structured {

struct JsonSchemaOptions {
  // Whitespace between JSON tokens. false: compact JSON only (`{"a":1}`, what
  // vLLM's xgrammar does with any_whitespace=False). true: bounded
  // whitespace around `,` and `:`, after `{` `[` and before `}` `]` (never
  // around the whole document): nothing, one space, or one or two newlines
  // plus up to 20 spaces/tabs, so small models cannot loop on whitespace.
  bool any_whitespace = true;
  // OpenAI strict mode: additionalProperties defaults to false.
  bool strict = false;
};

// Limits against hostile schemas (errors, not crashes).
inline constexpr int kMaxSchemaDepth = 64;        // nested subschemas and $ref chains
inline constexpr size_t kMaxDocumentDepth = 512;  // JSON nesting of the schema text
inline constexpr size_t kMaxGrammarRules = 10000;
inline constexpr size_t kMaxGrammarBytes = 1 << 20;
inline constexpr int kMaxSchemaRepeat = 10000;  // minLength/maxLength/minItems/maxItems
inline constexpr size_t kMaxPrefixItems = 64;   // prefixItems nest one group each

// JSON Schema text -> GBNF text with a `root` rule.
StatusOr<std::string> json_schema_to_gbnf(std::string_view schema_json,
                                          const JsonSchemaOptions& options = {});

}  // namespace strata::structured
