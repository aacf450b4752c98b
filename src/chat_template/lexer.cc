#include "chat_template/lexer.h"

#include <algorithm>
#include <cctype>

#include "chat_template/error.h"

namespace strata::chat_template {
namespace {

// jinja2 splits source on \r\n, \r and \n, joins with \n, and (without
// keep_trailing_newline) drops one trailing newline.
std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexOptions& options)
      : src_(normalize_source(source)), options_(options) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t start = find_tag_start(pos_);
      if (start == std::string::npos) {
        emit_text(src_.substr(pos_));
        pos_ = src_.size();
        break;
      }
      lex_tag(start);
    }
    add(TokenType::kEof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  size_t find_tag_start(size_t from) const {
    size_t p = src_.find('{', from);
    while (p != std::string::npos && p + 1 < src_.size()) {
      char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      p = src_.find('{', p + 1);
    }
    return std::string::npos;
  }

  void position_of(size_t offset, int* line, int* column) const {
    *line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < offset && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++*line;
        line_start = i + 1;
      }
    }
    *column = static_cast<int>(offset - line_start) + 1;
  }

  [[noreturn]] void fail(const std::string& message, size_t offset) const {
    int line, column;
    position_of(offset, &line, &column);
    throw TemplateError(TemplateError::Kind::kSyntax, message, line, column);
  }

  void add(TokenType type, std::string text, size_t offset) {
    Token t{type, std::move(text), 1, 1};
    // Incremental line tracking keeps lexing linear.
    while (line_scan_ < offset && line_scan_ < src_.size()) {
      if (src_[line_scan_] == '\n') {
        ++line_;
        line_start_ = line_scan_ + 1;
      }
      ++line_scan_;
    }
    t.line = line_;
    t.column = static_cast<int>(offset - line_start_) + 1;
    tokens_.push_back(std::move(t));
  }

  void emit_text(std::string text) {
    if (!text.empty()) add(TokenType::kText, std::move(text), pos_);
  }

  // lstrip_blocks: drop spaces/tabs between the start of the line and a block
  // or comment tag when nothing else precedes the tag on that line.
  size_t lstrip_amount(size_t tag_start, size_t text_len) const {
    size_t p = tag_start;
    while (p > 0 && (src_[p - 1] == ' ' || src_[p - 1] == '\t')) --p;
    if (p != 0 && src_[p - 1] != '\n') return 0;
    return std::min(tag_start - p, text_len);
  }

  void lex_tag(size_t start) {
    std::string text = src_.substr(pos_, start - pos_);
    char kind = src_[start + 1];
    size_t inner = start + 2;
    char modifier = inner < src_.size() ? src_[inner] : '\0';
    if (modifier == '-') {
      while (!text.empty() && is_space(text.back())) text.pop_back();
    } else if (kind != '{' && modifier != '+' && options_.lstrip_blocks) {
      text.resize(text.size() - lstrip_amount(start, text.size()));
    }
    emit_text(std::move(text));
    if (modifier == '-' || modifier == '+') ++inner;
    pos_ = start;
    if (kind == '#') {
      lex_comment(start, inner);
    } else {
      lex_code(start, inner, kind);
    }
  }

  // After a closing delimiter: "-" strips all following whitespace; otherwise
  // trim_blocks removes one newline after block tags and comments.
  void after_close(size_t end, bool strip, bool is_block) {
    pos_ = end;
    if (strip) {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
    } else if (is_block && options_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
  }

  void lex_comment(size_t start, size_t inner) {
    size_t close = src_.find("#}", inner);
    if (close == std::string::npos) fail("unclosed comment: missing '#}'", start);
    bool strip = close > inner && src_[close - 1] == '-';
    after_close(close + 2, strip, true);
  }

  void lex_code(size_t start, size_t p, char kind) {
    const char close_char = kind == '{' ? '}' : '%';
    add(kind == '{' ? TokenType::kVarBegin : TokenType::kBlockBegin, "", start);
    size_t first_token = tokens_.size();
    while (true) {
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (p >= src_.size()) {
        fail(std::string("unclosed tag: missing '") + close_char + "}'", start);
      }
      size_t close_len = match_close(p, close_char);
      if (close_len > 0) {
        bool strip = src_[p] == '-';
        add(kind == '{' ? TokenType::kVarEnd : TokenType::kBlockEnd, "", p);
        after_close(p + close_len, strip, kind == '%');
        break;
      }
      p = lex_token(p);
    }
    if (kind == '%' && tokens_.size() == first_token + 2 && tokens_[first_token].text == "raw" &&
        tokens_[first_token].type == TokenType::kName) {
      lex_raw_body(start);
    }
  }

  size_t match_close(size_t p, char close_char) const {
    auto at = [&](size_t i, char c) { return i < src_.size() && src_[i] == c; };
    if ((src_[p] == '-' || src_[p] == '+') && at(p + 1, close_char) && at(p + 2, '}')) return 3;
    if (src_[p] == close_char && at(p + 1, '}')) return 2;
    return 0;
  }

  // {% raw %}...{% endraw %}: the body is literal text.
  void lex_raw_body(size_t raw_start) {
    // Drop the tokens of the raw tag itself.
    tokens_.resize(tokens_.size() - 3);
    size_t search = pos_;
    while (true) {
      size_t tag = src_.find("{%", search);
      if (tag == std::string::npos) fail("missing '{% endraw %}' for this raw block", raw_start);
      size_t q = tag + 2;
      bool strip_before = q < src_.size() && src_[q] == '-';
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) ++q;
      while (q < src_.size() && is_space(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) {
        search = tag + 2;
        continue;
      }
      q += 6;
      while (q < src_.size() && is_space(src_[q])) ++q;
      size_t close_len = q < src_.size() ? match_close(q, '%') : 0;
      if (close_len == 0) fail("malformed '{% endraw %}'", tag);
      std::string body = src_.substr(pos_, tag - pos_);
      if (strip_before) {
        while (!body.empty() && is_space(body.back())) body.pop_back();
      } else if (options_.lstrip_blocks) {
        body.resize(body.size() - lstrip_amount(tag, body.size()));
      }
      emit_text(std::move(body));
      after_close(q + close_len, src_[q] == '-', true);
      return;
    }
  }

  size_t lex_token(size_t p) {
    char c = src_[p];
    if (is_name_start(c)) {
      size_t e = p;
      while (e < src_.size() && is_name_char(src_[e])) ++e;
      add(TokenType::kName, src_.substr(p, e - p), p);
      return e;
    }
    if (is_digit(c)) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/",
                                       "%",  "~",  "(",  ")",  "[",  "]",  "{", "}", ",", ".",
                                       ":",  "|",  "=",  "<",  ">",  ";"};
    for (const char* op : kOps) {
      size_t n = std::char_traits<char>::length(op);
      if (src_.compare(p, n, op) == 0) {
        add(TokenType::kOperator, op, p);
        return p + n;
      }
    }
    fail(std::string("unexpected character '") + c + "'", p);
  }

  size_t scan_digits(size_t p) const {
    while (p < src_.size() && (is_digit(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() &&
                                                      is_digit(src_[p + 1])))) {
      ++p;
    }
    return p;
  }

  size_t lex_number(size_t p) {
    size_t e = scan_digits(p);
    bool is_float = false;
    bool after_dot = p > 0 && src_[p - 1] == '.';  // "x.0.1" is two attribute lookups
    if (!after_dot && e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      e = scan_digits(e + 1);
      is_float = true;
    }
    if (!after_dot && e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t q = e + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && is_digit(src_[q])) {
        e = scan_digits(q);
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = p; i < e; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    add(is_float ? TokenType::kFloat : TokenType::kInteger, text, p);
    return e;
  }

  // Python string escapes, as jinja2 applies them ("unicode-escape").
  size_t lex_escape(size_t p, std::string& out) const {
    char e = src_[p];
    switch (e) {
      case 'n': out += '\n'; return p + 1;
      case 't': out += '\t'; return p + 1;
      case 'r': out += '\r'; return p + 1;
      case '\\': out += '\\'; return p + 1;
      case '\'': out += '\''; return p + 1;
      case '"': out += '"'; return p + 1;
      case 'a': out += '\a'; return p + 1;
      case 'b': out += '\b'; return p + 1;
      case 'f': out += '\f'; return p + 1;
      case 'v': out += '\v'; return p + 1;
      case '\n': return p + 1;
      case 'x': return lex_hex_escape(p, 2, out);
      case 'u': return lex_hex_escape(p, 4, out);
      case 'U': return lex_hex_escape(p, 8, out);
      default: break;
    }
    if (e >= '0' && e <= '7') {
      uint32_t cp = 0;
      size_t q = p;
      while (q < p + 3 && q < src_.size() && src_[q] >= '0' && src_[q] <= '7') cp = cp * 8 + (src_[q++] - '0');
      append_utf8(out, cp);
      return q;
    }
    out += '\\';
    return p;
  }

  size_t lex_hex_escape(size_t p, size_t digits, std::string& out) const {
    if (p + digits >= src_.size()) fail("truncated escape in string", p);
    uint32_t cp = 0;
    for (size_t i = 1; i <= digits; ++i) {
      char h = src_[p + i];
      if (!std::isxdigit(static_cast<unsigned char>(h))) fail("invalid escape in string", p);
      cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
    }
    if (cp > 0x10ffff) fail("invalid \\U escape in string", p);
    append_utf8(out, cp);
    return p + digits + 1;
  }

  size_t lex_string(size_t p) {
    char quote = src_[p];
    std::string value;
    size_t q = p + 1;
    while (true) {
      if (q >= src_.size()) fail("unterminated string literal", p);
      char c = src_[q];
      if (c == quote) break;
      if (c == '\\' && q + 1 < src_.size()) {
        q = lex_escape(q + 1, value);
        continue;
      }
      value += c;
      ++q;
    }
    add(TokenType::kString, std::move(value), p);
    return q + 1;
  }

  std::string src_;
  LexOptions options_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
  int line_ = 1;
  size_t line_start_ = 0;
  size_t line_scan_ = 0;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options) {
  return Lexer(source, options).run();
}

std::string describe_token(const Token& token) {
  switch (token.type) {
    case TokenType::kText: return "template text";
    case TokenType::kVarBegin: return "'{{'";
    case TokenType::kVarEnd: return "'}}'";
    case TokenType::kBlockBegin: return "'{%'";
    case TokenType::kBlockEnd: return "'%}'";
    case TokenType::kName: return "'" + token.text + "'";
    case TokenType::kString: return "string literal";
    case TokenType::kInteger:
    case TokenType::kFloat: return "number " + token.text;
    case TokenType::kOperator: return "'" + token.text + "'";
    case TokenType::kEof: return "end of template";
  }
  return "token";
}

}  // namespace strata::chat_template
