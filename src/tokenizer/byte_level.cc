#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace strata::tokenizer {
namespace {

struct Tables {
  std::array<std::string, 256> byte_to_utf8;
  std::array<int16_t, 324> char_to_byte;  // indexed by code point; -1 when unmapped

  Tables() {
    char_to_byte.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const int c = printable ? b : next++;
      utf8_append(static_cast<char32_t>(c), &byte_to_utf8[b]);
      char_to_byte[c] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables kTables;
  return kTables;
}

}  // namespace

void byte_level_encode(std::string_view bytes, std::string* out) {
  const Tables& t = tables();
  for (char b : bytes) *out += t.byte_to_utf8[static_cast<uint8_t>(b)];
}

bool byte_level_decode(std::string_view token, std::string* out) {
  const Tables& t = tables();
  const size_t old_size = out->size();
  char32_t c = 0;
  for (size_t pos = 0; pos < token.size();) {
    const int n = utf8_decode(token, pos, &c);
    if (n == 0 || c >= t.char_to_byte.size() || t.char_to_byte[c] < 0) {
      out->resize(old_size);
      return false;
    }
    out->push_back(static_cast<char>(t.char_to_byte[c]));
    pos += n;
  }
  return true;
}

}  // namespace strata::tokenizer
