// Test and benchmark helpers of the structured module: a vocabulary of the 256
// single bytes plus a stop token, and a generic JSON grammar.
// Thread-safety: byte_vocabulary() is built once (static), then immutable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "structured/token_vocabulary.h"

namespace strata::structured::testing {

// Token b (b < 256) is the byte b; token 256 is the stop token "</s>".
inline std::shared_ptr<const TokenVocabulary> byte_vocabulary() {
  static const std::shared_ptr<const TokenVocabulary> vocab = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
    tokens.push_back("</s>");
    return make_token_vocabulary(tokens, {256}, {});
  }();
  return vocab;
}

// Any JSON value (objects, arrays, strings with escapes, numbers, literals),
// unbounded whitespace.
inline constexpr const char* kGenericJsonGrammar = R"(
root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]*
)";

}  // namespace strata::structured::testing
