// UTF-8 and Unicode helpers shared by the tokenizer components.
//
// Operations: decoding one code point, appending one, lossy repair of invalid
// UTF-8 (the replacement rule of Rust's String::from_utf8_lossy and the WHATWG
// TextDecoder: one U+FFFD per maximal invalid subpart), and the character
// classes Hugging Face tokenizers use (`\w`, `\s`, char::is_numeric).
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::tokenizer {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Decodes the code point starting at text[pos]. Returns its byte length, or 0
// when the bytes at pos do not start a valid UTF-8 sequence.
int utf8_decode(std::string_view text, size_t pos, char32_t* code_point);

// Byte length of the UTF-8 sequence whose lead byte is `lead` (1 for bytes that
// are not valid lead bytes, so callers always advance).
inline int utf8_lead_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

void utf8_append(char32_t code_point, std::string* out);

bool is_valid_utf8(std::string_view text);

// Returns `text` with every maximal invalid subpart replaced by U+FFFD.
std::string utf8_lossy(std::string_view text);

// Number of trailing bytes of `text` that form an incomplete (but so far
// valid) UTF-8 sequence; 0 when the text ends on a character boundary.
size_t utf8_incomplete_tail(std::string_view text);

// Unicode White_Space property (Rust `char::is_whitespace`, regex `\s`).
bool is_unicode_whitespace(char32_t c);
// Rust regex `\w`: alphabetic, marks, decimal digits, connector punctuation,
// join controls.
bool is_word_char(char32_t c);
// Rust `char::is_numeric`: general categories Nd, Nl, No.
bool is_numeric_char(char32_t c);

}  // namespace strata::tokenizer
