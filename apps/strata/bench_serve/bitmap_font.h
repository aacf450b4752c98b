// A 5x7 pixel bitmap font with two descender rows (g j p q y , ;) for
// printable ASCII (32..126), drawn for this project, used to label plots
// without a font library.
//
// Each glyph is 9 rows top to bottom (7 above the baseline); in each row bit
// 4 is the leftmost pixel and bit 0 the rightmost. Characters outside the
// range map to a box.
//
// Thread-safety: constant data.
#pragma once

#include <cstdint>

namespace strata::bench {

inline constexpr int kGlyphWidth = 5;
inline constexpr int kGlyphHeight = 9;     // rows per glyph
inline constexpr int kGlyphCapHeight = 7;  // rows above the baseline

// The kGlyphHeight rows of `c`'s glyph.
const uint8_t* glyph_rows(char c);

}  // namespace strata::bench
