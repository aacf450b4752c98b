// Lexer: turns template source into tokens the way jinja2's lexer does with
// transformers' settings (trim_blocks=True, lstrip_blocks=True,
// keep_trailing_newline=False): text between tags, {{ }} and {% %} tag
// delimiters with the tokens inside them; comments vanish. Whitespace control
// ("-" and "+" next to a delimiter) and {% raw %} are resolved here, so the
// parser never sees whitespace rules.
//
// Pure function of its input; safe to call from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::chat_template {

enum class TokenType {
  kText,        // literal template text (already whitespace-processed)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,      // text holds the unescaped value
  kInteger,
  kFloat,
  kOperator,    // text holds the operator, e.g. "//"
  kEof,
};

struct Token {
  TokenType type;
  std::string text;
  int line = 1;
  int column = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws TemplateError (kSyntax) on unterminated tags, comments or strings.
std::vector<Token> lex(std::string_view source, const LexOptions& options);

// Readable name of a token for "expected X, found Y" messages.
std::string describe_token(const Token& token);

}  // namespace strata::chat_template
