// Hexadecimal digits: the value of one, or -1 (escapes in JSON, GBNF, regex,
// URLs and byte-fallback tokens all read them).
// Thread-safety: pure.
#pragma once

#include <cstdint>

namespace strata {

constexpr int hex_digit_value(uint32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

}  // namespace strata
