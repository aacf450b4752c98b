// Q8_0 weights in 16-row panels: the layout the AVX512-VNNI decode kernel
// reads (avx512_q8_panels.cc), built once at load by MatmulWeight::prepare /
// concat_rows in place of the GGUF row-major bytes. Portable code.
//
// Panel p holds weight rows [16 p, 16 p + 16); rows past n are zero (codes
// 128, scales 0). Its k / 32 blocks go in pairs, one after the other, each
// pair (a last odd block alone) as
//   codes  [2 blocks][8 groups][16 rows][4 bytes]  u8 = w + 128 (w the int8 code)
//   scales [2 blocks][16 rows]                     f16 (the block's d)
// so one 64-byte line holds 4 consecutive k values of all 16 rows: the
// operand vpdpbusd multiplies with 4 broadcast bytes of x, and 8 of them give
// 16 outputs' exact int32 block sums. A pair is 1,088 bytes (17 lines, the
// size of its 16 rows' GGUF blocks); the panel is one sequential stream,
// and panels follow one another.
//
// Threading: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/dtype.h"

namespace strata::ops::cpu {

constexpr int64_t kQ8PanelRows = 16;
constexpr int64_t kQ8PanelBlockCodes = 512;  // bytes: 32 values x 16 rows
constexpr int64_t kQ8PanelPairBytes = 2 * kQ8PanelBlockCodes + 2 * 2 * kQ8PanelRows;  // 1088
// A last odd block: its codes, its scales, padding to whole lines.
constexpr int64_t kQ8PanelLoneBytes = kQ8PanelBlockCodes + 64;

// Bytes of one panel of a weight with rows of k values (k % 32 == 0).
constexpr int64_t q8_panel_bytes(int64_t k) {
  const int64_t blocks = k / 32;
  return blocks / 2 * kQ8PanelPairBytes + blocks % 2 * kQ8PanelLoneBytes;
}
constexpr int64_t q8_panel_count(int64_t n) { return (n + kQ8PanelRows - 1) / kQ8PanelRows; }
// Offsets inside a panel of block b's codes and of its 16 f16 scales.
constexpr int64_t q8_panel_codes_offset(int64_t b) {
  return b / 2 * kQ8PanelPairBytes + b % 2 * kQ8PanelBlockCodes;
}
constexpr int64_t q8_panel_scales_offset(int64_t blocks, int64_t b) {
  const int64_t in_unit = b / 2 * 2 + 1 < blocks ? 2 : 1;
  return b / 2 * kQ8PanelPairBytes + in_unit * kQ8PanelBlockCodes + b % 2 * 2 * kQ8PanelRows;
}

// Rows of Q8_0 blocks, k / 32 blocks per row, rows one after another.
struct Q8Rows {
  const tensor::BlockQ8_0* blocks = nullptr;
  int64_t n = 0;
};

// Writes the panels of the weight made of parts[0]'s rows, then parts[1]'s,
// ... (n = the sum of their n) into out (q8_panel_count(n) *
// q8_panel_bytes(k) bytes).
void pack_q8_panels(const std::vector<Q8Rows>& parts, int64_t k, uint8_t* out);

// Rows [j0, j0 + rows) of a packed weight back as GGUF blocks, k / 32 per
// row, into out (tests, and tables that read rows: a slow path).
void unpack_q8_panel_rows(const uint8_t* panels, int64_t k, int64_t j0, int64_t rows,
                          tensor::BlockQ8_0* out);

}  // namespace strata::ops::cpu
