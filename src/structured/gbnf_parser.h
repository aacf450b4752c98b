// GBNF parser: llama.cpp's grammar text format -> Grammar (grammar.h).
//
// Syntax (one rule per line; a line starting with '|' continues the previous
// rule; newlines are free inside parentheses and after "::=" or '|'):
//   name ::= alt1 | alt2          names: [a-zA-Z0-9_-]+
//   "literal"                      escapes \n \t \r \\ \" \[ \] \- \^ \/ \' \xHH \uHHHH \UHHHHHHHH
//   [a-z0-9_]  [^"\\]              character classes (ranges, negation, same escapes)
//   .                              any code point
//   ( ... )                        grouping
//   x*  x+  x?  x{m}  x{m,}  x{m,n} repetition (of the preceding atom)
//   # comment                      to the end of the line
// The text must be valid UTF-8. Repetitions become helper rules: x{m,n}
// costs m copies of x plus n-m small nested optional rules (linear, never
// exponential).
//
// Errors are invalid_argument with "line L, column C: ..." saying what was
// expected; undefined rules, a missing root rule, rules defined twice, left
// recursion and inputs beyond GbnfLimits are rejected the same way.
//
// Thread-safety: parse_gbnf is a pure function; call it from any thread.
// Cost: linear in the text and in the expanded grammar size.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "structured/grammar.h"

namespace strata::structured {

// Bounds that keep hostile grammars from exhausting memory or the stack.
struct GbnfLimits {
  int64_t max_text_bytes = 1 << 20;   // 1 MiB of grammar text
  int64_t max_elements = 1 << 21;     // flat elements after expansion
  int64_t max_rules = 1 << 18;        // rules after expansion (helpers included)
  int64_t max_repeat_count = 100000;  // m and n in x{m,n}
  int64_t max_nesting = 128;          // parenthesis depth
};

StatusOr<Grammar> parse_gbnf(std::string_view text, std::string_view root_rule = "root",
                             const GbnfLimits& limits = GbnfLimits());

}  // namespace strata::structured
