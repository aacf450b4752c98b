// TemplateError: the one exception type used inside the chat_template module
// to unwind out of deep recursion (parser and evaluator). It never leaves the
// module: ChatTemplate::parse/render catch it and return a Status.
#pragma once

#include <string>
#include <utility>

namespace strata::chat_template {

struct TemplateError {
  enum class Kind { kSyntax, kRender, kRaised, kLimit };
  Kind kind;
  std::string message;
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based; 0 when unknown

  TemplateError(Kind k, std::string m, int l = 0, int c = 0)
      : kind(k), message(std::move(m)), line(l), column(c) {}
};

// Throws a render error ("line N: message" once it reaches the caller).
[[noreturn]] inline void throw_render_error(std::string message, int line = 0) {
  throw TemplateError(TemplateError::Kind::kRender, std::move(message), line);
}

}  // namespace strata::chat_template
