#include "ops/cpu/q8_panels.h"

#include <emmintrin.h>  // SSE2: baseline x86-64

#include <algorithm>
#include <cstring>

namespace strata::ops::cpu {

namespace {

// Offset of values [v, v + 4) of row r of block b (v % 4 == 0).
inline int64_t code_offset(int64_t b, int64_t r, int64_t v) {
  return q8_panel_codes_offset(b) + v / 4 * 64 + r * 4;
}

}  // namespace

void pack_q8_panels(const std::vector<Q8Rows>& parts, int64_t k, uint8_t* out) {
  const int64_t blocks = k / 32, panel_bytes = q8_panel_bytes(k);
  std::vector<const tensor::BlockQ8_0*> rows;  // every row of the weight, in order
  for (const Q8Rows& part : parts) {
    for (int64_t i = 0; i < part.n; ++i) rows.push_back(part.blocks + i * blocks);
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  // Each panel is written front to back: per block, 8 lines of 16 rows' 4
  // values (w + 128 == w ^ 0x80 as a byte), then the scales. Rows past n are
  // zero: code 128, scale +0.
  for (int64_t p = 0; p < q8_panel_count(n); ++p) {
    uint8_t* panel = out + p * panel_bytes;
    const int64_t r_end = std::min<int64_t>(kQ8PanelRows, n - p * kQ8PanelRows);
    if (r_end < kQ8PanelRows) {
      std::memset(panel, 0, static_cast<size_t>(panel_bytes));
    } else if (blocks % 2 == 1) {  // the padding after a lone last block's scales
      std::memset(panel + panel_bytes - 32, 0, 32);
    }
    const tensor::BlockQ8_0* const* panel_rows = rows.data() + p * kQ8PanelRows;
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* codes = panel + q8_panel_codes_offset(b);
      // Four rows at a time: their 16-byte halves, transposed as 4 x 4
      // dwords, are 16 bytes of four lines each.
      for (int64_t r = 0; r < kQ8PanelRows; r += 4) {
        for (int64_t half = 0; half < 2; ++half) {
          __m128i v[4];
          for (int64_t i = 0; i < 4; ++i) {
            v[i] = r + i < r_end ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(
                                       panel_rows[r + i][b].values + half * 16))
                                 : _mm_setzero_si128();
          }
          const __m128i t01lo = _mm_unpacklo_epi32(v[0], v[1]), t01hi = _mm_unpackhi_epi32(v[0], v[1]);
          const __m128i t23lo = _mm_unpacklo_epi32(v[2], v[3]), t23hi = _mm_unpackhi_epi32(v[2], v[3]);
          const __m128i line[4] = {_mm_unpacklo_epi64(t01lo, t23lo), _mm_unpackhi_epi64(t01lo, t23lo),
                                   _mm_unpacklo_epi64(t01hi, t23hi), _mm_unpackhi_epi64(t01hi, t23hi)};
          const __m128i k80 = _mm_set1_epi8(static_cast<char>(0x80));  // w + 128 == w ^ 0x80
          for (int64_t g = 0; g < 4; ++g) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + (half * 4 + g) * 64 + r * 4),
                             _mm_xor_si128(line[g], k80));
          }
        }
      }
      uint8_t* scales = panel + q8_panel_scales_offset(blocks, b);
      for (int64_t r = 0; r < r_end; ++r) std::memcpy(scales + r * 2, &panel_rows[r][b].scale_f16, 2);
    }
  }
}

void unpack_q8_panel_rows(const uint8_t* panels, int64_t k, int64_t j0, int64_t rows,
                          tensor::BlockQ8_0* out) {
  const int64_t blocks = k / 32;
  for (int64_t j = j0; j < j0 + rows; ++j) {
    const uint8_t* panel = panels + j / kQ8PanelRows * q8_panel_bytes(k);
    const int64_t r = j % kQ8PanelRows;
    tensor::BlockQ8_0* row = out + (j - j0) * blocks;
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t v = 0; v < 32; v += 4) {
        uint32_t four;
        std::memcpy(&four, panel + code_offset(b, r, v), 4);
        four ^= 0x80808080u;
        std::memcpy(row[b].values + v, &four, 4);
      }
      std::memcpy(&row[b].scale_f16, panel + q8_panel_scales_offset(blocks, b) + r * 2, 2);
    }
  }
}

}  // namespace strata::ops::cpu
