#include "output_parsers/value_scanner.h"

#include <cstdint>

#include "base/hex.h"

namespace strata::output_parsers {
namespace {

// Deeper nesting is treated as invalid: model output never needs it, and the
// scanner recurses once per level.
constexpr int kMaxDepth = 128;

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Bytes in the UTF-8 sequence that `lead` starts (1 for ASCII and for bytes
// that cannot start a sequence, which are passed through unchanged).
size_t utf8_sequence_length(unsigned char lead) {
  if (lead >= 0xF0 && lead <= 0xF7) return 4;
  if (lead >= 0xE0) return lead <= 0xEF ? 3 : 1;
  if (lead >= 0xC0) return 2;
  return 1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;  // lone surrogate
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

enum class Utf8Seq { kValid, kTruncated, kInvalid };

// Classifies the bytes at s[i] (a byte >= 0x80): a valid UTF-8 sequence of
// *len bytes, the valid beginning of one that the text cuts off, or an invalid
// byte (bad lead or continuation, overlong form, surrogate, above U+10FFFF).
Utf8Seq utf8_at(std::string_view s, size_t i, size_t* len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    *len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    *len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    *len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return Utf8Seq::kInvalid;
  }
  for (size_t k = 1; k < *len; ++k) {
    if (i + k >= s.size()) return Utf8Seq::kTruncated;
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return Utf8Seq::kInvalid;
  }
  return Utf8Seq::kValid;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// JSON string body: json.dumps escapes; bytes that are not valid UTF-8 become
// U+FFFD so the result is always valid JSON.
void append_json_escaped(std::string& out, std::string_view utf8) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < utf8.size(); ++i) {
    const char c = utf8[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      size_t len = 1;
      if (utf8_at(utf8, i, &len) != Utf8Seq::kValid) {
        out += kReplacement;
      } else {
        out.append(utf8.substr(i, len));
        i += len - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += kHex[(c >> 4) & 0xF];
          out += kHex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
}

class Scanner {
 public:
  Scanner(std::string_view text, size_t pos, Dialect dialect, bool at_end)
      : text_(text), pos_(pos), python_(dialect == Dialect::kPython), at_end_(at_end) {}

  size_t pos() const { return pos_; }

  ScanState value(std::string& out, std::string& closers, int depth) {
    pos_ = skip_whitespace(text_, pos_);
    if (pos_ >= text_.size()) return ScanState::kIncomplete;
    if (depth > kMaxDepth) return ScanState::kInvalid;
    const char c = text_[pos_];
    if (c == '"' || (python_ && c == '\'')) return string_value(out, closers);
    if (c == '{' || c == '[' || (python_ && c == '(')) return container(out, closers, depth);
    if (c == '-' || is_digit(c) || (python_ && (c == '+' || c == '.'))) return number(out);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return word(out);
    return ScanState::kInvalid;
  }

  // pos_ at the opening quote. `decoded` receives the characters decoded so
  // far (all of them when complete).
  ScanState string(std::string& decoded) {
    const char quote = text_[pos_++];
    while (true) {
      if (pos_ >= text_.size()) return ScanState::kIncomplete;
      const char c = text_[pos_];
      if (c == quote) {
        ++pos_;
        return ScanState::kComplete;
      }
      if (c == '\\') {
        const ScanState st = python_ ? python_escape(decoded) : json_escape(decoded);
        if (st != ScanState::kComplete) return st;
        continue;
      }
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 && (!python_ || c == '\n' || c == '\r')) return ScanState::kInvalid;
      if (byte < 0x80) {
        decoded += c;
        ++pos_;
        continue;
      }
      // Bytes that are not UTF-8 become U+FFFD one at a time, so a quote after
      // a bad lead byte still ends the string.
      size_t len = 1;
      const Utf8Seq seq = utf8_at(text_, pos_, &len);
      if (seq == Utf8Seq::kTruncated) return ScanState::kIncomplete;
      if (seq == Utf8Seq::kInvalid) {
        decoded += kReplacement;
        ++pos_;
        continue;
      }
      decoded.append(text_.substr(pos_, len));
      pos_ += len;
    }
  }

 private:
  ScanState string_value(std::string& out, std::string& closers) {
    std::string decoded;
    const ScanState st = string(decoded);
    out += '"';
    append_json_escaped(out, decoded);
    if (st == ScanState::kComplete) {
      out += '"';
    } else {
      closers = "\"";
    }
    return st;
  }

  // Reads `count` hex digits at `at` into *value.
  ScanState hex_digits(size_t at, size_t count, uint32_t* value) const {
    *value = 0;
    for (size_t i = 0; i < count; ++i) {
      if (at + i >= text_.size()) return ScanState::kIncomplete;
      const int h = hex_digit_value(static_cast<unsigned char>(text_[at + i]));
      if (h < 0) return ScanState::kInvalid;
      *value = *value * 16 + static_cast<uint32_t>(h);
    }
    return ScanState::kComplete;
  }

  // The character a one-letter escape `\e` stands for, if `e` is one of
  // `allowed`; 0 otherwise.
  static char simple_escape(char e, std::string_view allowed) {
    if (allowed.find(e) == std::string_view::npos) return 0;
    switch (e) {
      case 'a': return '\a';
      case 'b': return '\b';
      case 'f': return '\f';
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case 'v': return '\v';
      default: return e;  // \\ \" \' \/
    }
  }

  // pos_ at a backslash inside a JSON string.
  ScanState json_escape(std::string& decoded) {
    if (pos_ + 1 >= text_.size()) return ScanState::kIncomplete;
    const char e = text_[pos_ + 1];
    const char simple = simple_escape(e, "\"\\/bfnrt");
    if (simple == 0 && e != 'u') return ScanState::kInvalid;
    if (simple != 0) {
      decoded += simple;
      pos_ += 2;
      return ScanState::kComplete;
    }
    uint32_t cp = 0;
    ScanState st = hex_digits(pos_ + 2, 4, &cp);
    if (st != ScanState::kComplete) return st;
    size_t consumed = 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      // A high surrogate pairs with a following \uDC00-\uDFFF escape.
      const size_t next = pos_ + 6;
      if (next >= text_.size() || (text_[next] == '\\' && next + 1 >= text_.size())) {
        return ScanState::kIncomplete;
      }
      if (text_[next] == '\\' && text_[next + 1] == 'u') {
        uint32_t low = 0;
        st = hex_digits(next + 2, 4, &low);
        if (st == ScanState::kIncomplete) return st;
        if (st == ScanState::kComplete && low >= 0xDC00 && low <= 0xDFFF) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          consumed = 12;
        }
      }
    }
    append_utf8(decoded, cp);
    pos_ += consumed;
    return ScanState::kComplete;
  }

  // pos_ at a backslash inside a Python string literal.
  ScanState python_escape(std::string& decoded) {
    if (pos_ + 1 >= text_.size()) return ScanState::kIncomplete;
    const char e = text_[pos_ + 1];
    const char simple = simple_escape(e, "\\'\"abfnrtv");
    if (simple != 0) {
      decoded += simple;
      pos_ += 2;
      return ScanState::kComplete;
    }
    if (e == '\n') {  // line continuation
      pos_ += 2;
      return ScanState::kComplete;
    }
    if (e >= '0' && e <= '7') {
      uint32_t cp = 0;
      size_t i = 1;
      for (; i <= 3; ++i) {
        // More octal digits may follow (and the string is unterminated anyway).
        if (pos_ + i >= text_.size()) return ScanState::kIncomplete;
        const char d = text_[pos_ + i];
        if (d < '0' || d > '7') break;
        cp = cp * 8 + static_cast<uint32_t>(d - '0');
      }
      append_utf8(decoded, cp);
      pos_ += i;
      return ScanState::kComplete;
    }
    const size_t count = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (count == 0) {  // unknown escapes keep their backslash, as in Python
      decoded += '\\';
      pos_ += 1;
      return ScanState::kComplete;
    }
    uint32_t cp = 0;
    const ScanState st = hex_digits(pos_ + 2, count, &cp);
    if (st != ScanState::kComplete) return st;
    append_utf8(decoded, cp);
    pos_ += 2 + count;
    return ScanState::kComplete;
  }

  // Numbers are emitted only once complete; JSON numbers keep their spelling,
  // Python ones are made valid JSON (no '+', no '_', "0.5" for ".5", "5.0" for "5.").
  ScanState number(std::string& out) {
    enum S { kStart, kSign, kZero, kInt, kLeadDot, kDot, kFrac, kE, kESign, kExp };
    S s = kStart;
    std::string literal;
    while (true) {
      if (pos_ >= text_.size()) {
        const bool accepting =
            s == kZero || s == kInt || s == kFrac || s == kExp || (python_ && s == kDot);
        if (!(at_end_ && accepting)) return ScanState::kIncomplete;
        break;
      }
      const char c = text_[pos_];
      S next = s;
      bool ok = true;
      switch (s) {
        case kStart:
          if (c == '-' || (python_ && c == '+'))
            next = kSign;
          else if (c == '0')
            next = kZero;
          else if (is_digit(c))
            next = kInt;
          else if (python_ && c == '.')
            next = kLeadDot;
          else
            ok = false;
          break;
        case kSign:
          if (c == '0')
            next = kZero;
          else if (is_digit(c))
            next = kInt;
          else if (python_ && c == '.')
            next = kLeadDot;
          else
            ok = false;
          break;
        case kZero:
          if (c == '.')
            next = kDot;
          else if (c == 'e' || c == 'E')
            next = kE;
          else if (python_ && (is_digit(c) || c == '_'))
            next = kInt;
          else
            ok = false;
          break;
        case kInt:
          if (is_digit(c) || (python_ && c == '_'))
            next = kInt;
          else if (c == '.')
            next = kDot;
          else if (c == 'e' || c == 'E')
            next = kE;
          else
            ok = false;
          break;
        case kLeadDot:
        case kDot:
          if (is_digit(c))
            next = kFrac;
          else if (python_ && s == kDot && (c == 'e' || c == 'E'))
            next = kE;
          else
            ok = false;
          break;
        case kFrac:
          if (is_digit(c) || (python_ && c == '_'))
            next = kFrac;
          else if (c == 'e' || c == 'E')
            next = kE;
          else
            ok = false;
          break;
        case kE:
          if (c == '+' || c == '-')
            next = kESign;
          else if (is_digit(c))
            next = kExp;
          else
            ok = false;
          break;
        case kESign:
        case kExp:
          if (is_digit(c))
            next = kExp;
          else
            ok = false;
          break;
      }
      if (!ok) {
        const bool accepting =
            s == kZero || s == kInt || s == kFrac || s == kExp || (python_ && s == kDot);
        if (!accepting) return ScanState::kInvalid;
        break;
      }
      if (python_ && s == kDot && next == kE) literal += '0';  // "5.e3" -> "5.0e3"
      if (python_ && (s == kStart || s == kSign) && next == kLeadDot) literal += '0';
      if (c != '_' && !(python_ && s == kStart && c == '+')) literal += c;
      s = next;
      ++pos_;
    }
    if (python_ && s == kDot) literal += '0';
    if (python_) literal = strip_leading_zeros(literal);
    out += literal;
    return ScanState::kComplete;
  }

  // "007" is not JSON; Python spells zero as "00" at most, so drop the extras.
  static std::string strip_leading_zeros(const std::string& literal) {
    const size_t digits_at = (!literal.empty() && literal[0] == '-') ? 1 : 0;
    size_t first = digits_at;
    while (first + 1 < literal.size() && literal[first] == '0' && is_digit(literal[first + 1])) {
      ++first;
    }
    return literal.substr(0, digits_at) + literal.substr(first);
  }

  ScanState word(std::string& out) {
    struct Word {
      std::string_view source;
      std::string_view json;
    };
    static constexpr Word kJsonWords[] = {{"true", "true"}, {"false", "false"}, {"null", "null"}};
    static constexpr Word kPythonWords[] = {{"True", "true"}, {"False", "false"}, {"None", "null"}};
    for (const Word& w : python_ ? kPythonWords : kJsonWords) {
      if (text_[pos_] != w.source[0]) continue;
      for (size_t i = 0; i < w.source.size(); ++i) {
        if (pos_ + i >= text_.size()) return ScanState::kIncomplete;
        if (text_[pos_ + i] != w.source[i]) {
          pos_ += i;  // the first byte that cannot continue the word
          return ScanState::kInvalid;
        }
      }
      pos_ += w.source.size();
      out += w.json;
      return ScanState::kComplete;
    }
    return ScanState::kInvalid;
  }

  ScanState container(std::string& out, std::string& closers, int depth) {
    const char open = text_[pos_++];
    const bool is_object = open == '{';
    const char close = open == '{' ? '}' : open == '[' ? ']' : ')';
    const std::string close_json = is_object ? "}" : "]";
    out += is_object ? '{' : '[';
    closers = close_json;
    bool first = true;        // no item yet
    bool after_item = false;  // expecting ',' or the close
    while (true) {
      pos_ = skip_whitespace(text_, pos_);
      if (pos_ >= text_.size()) return ScanState::kIncomplete;
      const char c = text_[pos_];
      if (c == close && (after_item || first || python_)) {
        ++pos_;
        out += close_json;
        closers.clear();
        return ScanState::kComplete;
      }
      if (after_item) {
        if (c != ',') return ScanState::kInvalid;
        ++pos_;
        after_item = false;
        continue;
      }
      std::string key;
      if (is_object) {
        if (!(c == '"' || (python_ && c == '\''))) return ScanState::kInvalid;
        const ScanState st = string(key);
        if (st != ScanState::kComplete) return st;
        pos_ = skip_whitespace(text_, pos_);
        if (pos_ >= text_.size()) return ScanState::kIncomplete;
        if (text_[pos_] != ':') return ScanState::kInvalid;
        ++pos_;
      }
      std::string item;
      std::string item_closers;
      const ScanState st = value(item, item_closers, depth + 1);
      if (!item.empty()) {
        if (!first) out += ", ";
        if (is_object) {
          append_json_string(out, key);
          out += ": ";
        }
        out += item;
        first = false;
      }
      if (st != ScanState::kComplete) {
        if (!item.empty()) closers = item_closers + close_json;
        return st;
      }
      after_item = true;
    }
  }

  std::string_view text_;
  size_t pos_;
  bool python_;
  bool at_end_;
};

}  // namespace

std::string ValueScan::repaired() const {
  if (state == ScanState::kComplete) return certain;
  if (certain.empty()) return "{}";
  return certain + closers;
}

ValueScan scan_value(std::string_view text, size_t pos, Dialect dialect, bool at_end) {
  Scanner scanner(text, pos, dialect, at_end);
  ValueScan scan;
  scan.state = scanner.value(scan.certain, scan.closers, 0);
  scan.end = scan.state == ScanState::kIncomplete ? text.size() : scanner.pos();
  if (scan.state == ScanState::kComplete) scan.closers.clear();
  return scan;
}

ScanState scan_string(std::string_view text, size_t pos, Dialect dialect, std::string* decoded,
                      size_t* end) {
  Scanner scanner(text, pos, dialect, /*at_end=*/false);
  const ScanState st = scanner.string(*decoded);
  *end = scanner.pos();
  return st;
}

bool normalize_json(std::string_view text, std::string* normalized) {
  ValueScan scan = scan_value(text, 0, Dialect::kJson, /*at_end=*/true);
  if (scan.state != ScanState::kComplete) return false;
  if (skip_whitespace(text, scan.end) != text.size()) return false;
  *normalized = std::move(scan.certain);
  return true;
}

void append_json_string(std::string& out, std::string_view utf8) {
  out += '"';
  append_json_escaped(out, utf8);
  out += '"';
}

size_t complete_utf8_length(std::string_view s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto byte = static_cast<unsigned char>(s[n - back]);
    if ((byte & 0xC0) == 0x80) continue;  // continuation byte
    const size_t len = utf8_sequence_length(byte);
    return len > back ? n - back : n;
  }
  return n;
}

size_t skip_whitespace(std::string_view text, size_t pos) {
  while (pos < text.size() && is_json_space(text[pos])) ++pos;
  return pos;
}

bool is_whitespace_only(std::string_view s) { return skip_whitespace(s, 0) == s.size(); }

bool is_partial_prefix(std::string_view text, size_t pos, std::string_view word) {
  if (pos >= text.size()) return false;
  const std::string_view rest = text.substr(pos);
  return rest.size() < word.size() && word.substr(0, rest.size()) == rest;
}

}  // namespace strata::output_parsers
