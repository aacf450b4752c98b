// GBNF text helpers and the fixed grammars behind vLLM's simple structured
// outputs: `choice` (exactly one of a list of strings) and `json_object`
// (any JSON object). All functions are pure and thread-safe.
//
// Output is llama.cpp's GBNF dialect with the start rule named `root`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "structured/json_schema.h"

namespace strata::structured {

// `bytes` as a GBNF string literal, quotes included: `"a\"b"`. Printable ASCII
// stays as is except `"` and `\`; \n \r \t use short escapes, other control
// bytes and bytes that are not part of valid UTF-8 become \xHH; valid
// multi-byte UTF-8 sequences are copied raw (one code point each).
std::string gbnf_literal(std::string_view bytes);

// root ::= "a" | "b" | ... : exactly one of `choices` (bytes, compared
// exactly; duplicates are dropped). Errors: invalid_argument for an empty list.
// An empty string among the choices makes the empty output valid.
StatusOr<std::string> choice_to_gbnf(const std::vector<std::string>& choices);

// Any JSON object, whitespace per `options.any_whitespace` (`strict` is unused).
std::string json_object_gbnf(const JsonSchemaOptions& options = {});

}  // namespace strata::structured
