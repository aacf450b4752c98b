#include "tokenizer/utf8.h"

#include <utf8proc.h>

namespace strata::tokenizer {
namespace {

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Valid range of the second byte for a lead byte (Unicode Table 3-7); the
// remaining bytes are plain continuation bytes.
void second_byte_range(uint8_t lead, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (lead == 0xE0) *lo = 0xA0;
  if (lead == 0xED) *hi = 0x9F;
  if (lead == 0xF0) *lo = 0x90;
  if (lead == 0xF4) *hi = 0x8F;
}

int expected_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Length of the valid prefix of the sequence starting at pos (the "maximal
// subpart"), and whether the whole sequence is complete and valid.
int valid_prefix_length(std::string_view text, size_t pos, bool* complete) {
  const auto lead = static_cast<uint8_t>(text[pos]);
  const int len = expected_length(lead);
  *complete = false;
  if (len == 0) return 0;
  if (len == 1) {
    *complete = true;
    return 1;
  }
  uint8_t lo, hi;
  second_byte_range(lead, &lo, &hi);
  int n = 1;
  for (; n < len && pos + n < text.size(); ++n) {
    const auto b = static_cast<uint8_t>(text[pos + n]);
    const bool ok = n == 1 ? (b >= lo && b <= hi) : is_continuation(b);
    if (!ok) return n;
  }
  *complete = n == len;
  return n;
}

}  // namespace

int utf8_decode(std::string_view text, size_t pos, char32_t* code_point) {
  bool complete = false;
  const int n = valid_prefix_length(text, pos, &complete);
  if (!complete) return 0;
  const auto lead = static_cast<uint8_t>(text[pos]);
  char32_t c = n == 1 ? lead : n == 2 ? (lead & 0x1F) : n == 3 ? (lead & 0x0F) : (lead & 0x07);
  for (int i = 1; i < n; ++i) c = (c << 6) | (static_cast<uint8_t>(text[pos + i]) & 0x3F);
  *code_point = c;
  return n;
}

void utf8_append(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

bool is_valid_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    bool complete = false;
    const int n = valid_prefix_length(text, pos, &complete);
    if (!complete) return false;
    pos += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t pos = 0; pos < text.size();) {
    bool complete = false;
    const int n = valid_prefix_length(text, pos, &complete);
    if (complete) {
      out.append(text.substr(pos, n));
      pos += n;
    } else {
      utf8_append(kReplacementChar, &out);
      pos += n == 0 ? 1 : n;
    }
  }
  return out;
}

size_t utf8_incomplete_tail(std::string_view text) {
  const size_t limit = text.size() < 4 ? text.size() : 4;
  for (size_t back = 1; back <= limit; ++back) {
    const size_t pos = text.size() - back;
    if (is_continuation(static_cast<uint8_t>(text[pos]))) continue;
    bool complete = false;
    const int n = valid_prefix_length(text, pos, &complete);
    return (!complete && static_cast<size_t>(n) == back) ? back : 0;
  }
  return 0;
}

bool is_unicode_whitespace(char32_t c) {
  if (c >= 0x09 && c <= 0x0D) return true;
  switch (c) {
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_word_char(char32_t c) {
  if (c == '_' || c == 0x200C || c == 0x200D) return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

bool is_numeric_char(char32_t c) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

}  // namespace strata::tokenizer
