// Parser: tokens (lexer.h) -> AST (ast.h), following jinja2's grammar and
// operator precedence for the subset chat templates use:
//   statements  for/else, if/elif/else, set (=, namespace attribute, tuple,
//               block form), macro, filter blocks, break/continue,
//               generation (rendered as is)
//   expressions literals, names, lists, dicts, tuples, attribute/subscript/
//               slice, calls with keyword arguments, filters, tests, unary and
//               binary operators, chained comparisons, in/not in, inline if.
//
// Pure function of its input; safe to call from any thread.
#pragma once

#include <string_view>

#include "chat_template/ast.h"

namespace strata::chat_template {

// Throws TemplateError (kSyntax) with line/column and what was expected.
Body parse_template(std::string_view source);

}  // namespace strata::chat_template
