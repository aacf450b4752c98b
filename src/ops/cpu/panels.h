// Weights in 16-row panels: the layout the AVX512-VNNI int8 kernels read
// (avx512_panels.cc). By 32-value blocks for the types whose blocks hold one
// f16 scale and no zero point of their own: Q8_0, Q4_0 / IQ4_NL (nibbles)
// and Q5_0 (nibbles and a fifth bit). By 256-value super-blocks for IQ4_XS
// (IQ4_NL's codes under a 6-bit scale per 32 values), Q2_K / Q3_K (2-bit
// (3-bit) codes under a scale, and Q2_K's min, per 16 values), Q4_K / Q5_K
// (Q4_0's (Q5_0's) codes under a scale and a min per 32 values) and Q6_K
// (6-bit codes under a scale per 16 values). Built once at load by
// MatmulWeight::prepare / concat_rows in place of the GGUF row-major bytes.
// Portable code.
//
// Panel p holds weight rows [16 p, 16 p + 16); rows past n are GGUF blocks
// of zero bytes (scale +0), so they compute 0 and unpack to zero bytes. Its k / 32 blocks go in
// pairs, one after the other, each pair (a last odd block alone) as
//   codes  [2 blocks][lines][16 rows][4 bytes]
//   scales [2 blocks][16 rows]                   f16 (the block's d)
// with, per block,
//   Q8_0:          8 lines; line g, row r: u8 w + 128 of values 4 g .. 4 g + 3
//                  (w the int8 code);
//   Q4_0, IQ4_NL:  4 lines; line g, row r: the block's qs bytes 4 g .. 4 g + 3
//                  as stored (low nibbles: values 4 g ..; high: 16 + 4 g ..);
//   Q5_0:          those 4 lines, then a line of fifth bits: byte 4 r + c
//                  holds value 4 g + c's at bit 2 g and 16 + 4 g + c's at
//                  bit 2 g + 1 (g = 0..3), so one shift and mask per nibble
//                  line put them at bit 4 of that line's bytes.
// So one 64-byte line holds 4 (Q8_0) or 4 + 4 (nibbles) k values of all 16
// rows: the operand vpdpbusd multiplies with 4 broadcast bytes of x, giving
// 16 outputs' exact int32 block sums. A pair is 1,088 bytes (Q8_0, 17 lines),
// 576 (9 lines) or 704 (Q5_0, 11 lines), the size of its 16 rows' GGUF
// blocks; the panel is one sequential stream, and panels follow one another.
//
// IQ4_XS goes by super-blocks of 256 values instead, each 2,240 bytes (35
// lines, 3% more than the GGUF blocks):
//   d      [16 rows] f16, then 32 zero bytes
//   scales [8 sub-blocks][16 rows] int8, the sub-block's 6-bit scale - 32
//   codes  [8 sub-blocks][4 lines][16 rows][4 bytes], each sub-block's 16
//          qs bytes as IQ4_NL's block above.
//
// Q2_K and Q3_K go by super-blocks of 256 values too, in the order their
// x is quantized in (x_to_q8_groups: per 256 values, 32-value chunks in
// lowbit_x_chunk_slot() order): "position" p of a super-block is byte p of
// that x, and its 16 positions [16 i, 16 i + 16) are one sub-block of the
// weights (i = 0..15, in position order). Per super-block:
//   head   [16 rows] f16 d, then [16 rows] f16 dmin (Q2_K) or 32 zero bytes
//   scales [16 i][16 rows] u8: Q2_K the GGUF scales byte (scale | min << 4),
//          Q3_K int8 (6-bit scale - 32)
//   codes  [16 i][16 rows][4 bytes]: byte c of row r holds in bits 2 j,
//          2 j + 1 the 2-bit code of position 16 i + 4 j + c (j = 0..3)
//   Q3_K:  high bits [8 pairs][16 rows][4 bytes]: byte c of row r holds in
//          bit 4 e + j the third bit of position 16 (2 pair + e) + 4 j + c
// so one shift and mask of a codes line (and of a high-bit line) gives the
// operand of one vpdpbusd against x bytes [16 i + 4 j, + 4). Q2_K's
// super-block is 1,344 bytes (21 lines, its 16 rows' GGUF blocks), Q3_K's
// 1,856 (29 lines, 5.5% more than GGUF's 1,760).
//
// Q4_K and Q5_K likewise (x in value order), with 32-value sub-blocks s:
//   head   [16 rows] f16 d, then [16 rows] f16 dmin
//   scales [8 s][16 rows] u8 (6-bit), then mins [8 s][16 rows] u8 (6-bit)
//   codes  [8 s][Q4_0's (Q5_0's) block codes above]: sub-block s as a Q4_0
//          (Q5_0) block of values 32 s .. 32 s + 31
// 2,368 bytes (37 lines, 2.8% more than GGUF's 2,304) and 2,880 (45
// lines, 2.3% more than 2,816). Q6_K (16-value sub-blocks, 6-bit codes u,
// w = d scale (u - 32)) the same way by 32-value blocks p:
//   head   [16 rows] f16 d, then 32 zero bytes
//   scales [16 sub-blocks][16 rows] int8
//   codes  [8 p][4 lines of u's low 4 bits as Q4_0's][2 lines of u's top 2
//          bits: line h, byte c of row r, bits 2 L, 2 L + 1: value
//          32 p + 16 h + 4 L + c's]
// 3,392 bytes (53 lines, 1% more than GGUF's 3,360).
//
// Threading: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/dtype.h"

namespace strata::ops::cpu {

constexpr int64_t kPanelRows = 16;

// True for the panel dtypes whose kernel reads x quantized per 256 values
// (x_to_q8_groups) instead of per 32 (x_to_q8_blocks): the K-quants Q2_K
// ... Q6_K.
constexpr bool panels_read_x_groups(tensor::DType t) {
  return t == tensor::DType::kQ2_K || t == tensor::DType::kQ3_K || t == tensor::DType::kQ4_K ||
         t == tensor::DType::kQ5_K || t == tensor::DType::kQ6_K;
}
// True for the dtypes that have this layout (Q8_0, Q4_0, IQ4_NL, Q5_0,
// IQ4_XS and panels_read_x_groups()).
constexpr bool has_panel_layout(tensor::DType t) {
  return t == tensor::DType::kQ8_0 || t == tensor::DType::kQ4_0 || t == tensor::DType::kIQ4_NL ||
         t == tensor::DType::kQ5_0 || t == tensor::DType::kIQ4_XS || panels_read_x_groups(t);
}
// K-quant super-blocks in a panel: offsets of the parts (Q2_K / Q3_K, then
// Q4_K / Q5_K, then Q6_K) and bytes.
constexpr int64_t kKPanelScales = 64;
constexpr int64_t kKPanelCodes = 320;
constexpr int64_t kKPanelHighBits = 1344;  // Q3_K
constexpr int64_t kK45PanelScales = 64;
constexpr int64_t kK45PanelMins = 192;
constexpr int64_t kK45PanelCodes = 320;
constexpr int64_t kQ6KPanelScales = 64;
constexpr int64_t kQ6KPanelCodes = 320;
// Code bytes of a 32-value block of 16 rows (the Q4_0 / Q5_0 / Q8_0 layout;
// Q4_K and Q5_K sub-blocks as Q4_0 and Q5_0 blocks; Q6_K's blocks).
constexpr int64_t panel_block_codes(tensor::DType t) {
  return t == tensor::DType::kQ8_0                                ? 512
         : t == tensor::DType::kQ6_K                              ? 384
         : t == tensor::DType::kQ5_0 || t == tensor::DType::kQ5_K ? 320
                                                                  : 256;
}
constexpr int64_t k_panel_group_bytes(tensor::DType t) {
  return t == tensor::DType::kQ3_K   ? 1856
         : t == tensor::DType::kQ2_K ? 1344
                                     : kK45PanelCodes + 8 * panel_block_codes(t);
}
// IQ4_XS super-blocks in a panel: bytes, and offsets of the parts inside one.
constexpr int64_t kIq4XsPanelGroupBytes = 2240;
constexpr int64_t kIq4XsPanelScales = 64;
constexpr int64_t kIq4XsPanelCodes = 192;
constexpr int64_t kPanelBlockScales = 2 * kPanelRows;  // bytes: 16 f16
constexpr int64_t panel_pair_bytes(tensor::DType t) {
  return 2 * panel_block_codes(t) + 2 * kPanelBlockScales;
}
// A last odd block: its codes, its scales, padding to whole lines.
constexpr int64_t panel_lone_bytes(tensor::DType t) { return panel_block_codes(t) + 64; }

// Bytes of one panel of a weight with rows of k values (k % 32 == 0; IQ4_XS
// and the K-quants: k % 256 == 0).
constexpr int64_t panel_bytes(tensor::DType t, int64_t k) {
  if (t == tensor::DType::kIQ4_XS) return k / 256 * kIq4XsPanelGroupBytes;
  if (panels_read_x_groups(t)) return k / 256 * k_panel_group_bytes(t);
  const int64_t blocks = k / 32;
  return blocks / 2 * panel_pair_bytes(t) + blocks % 2 * panel_lone_bytes(t);
}
constexpr int64_t panel_count(int64_t n) { return (n + kPanelRows - 1) / kPanelRows; }
// Offsets inside a panel of block b's codes and of its 16 f16 scales (the
// 32-value types).
constexpr int64_t panel_codes_offset(tensor::DType t, int64_t b) {
  return b / 2 * panel_pair_bytes(t) + b % 2 * panel_block_codes(t);
}
constexpr int64_t panel_scales_offset(tensor::DType t, int64_t blocks, int64_t b) {
  const int64_t in_unit = b / 2 * 2 + 1 < blocks ? 2 : 1;
  return b / 2 * panel_pair_bytes(t) + in_unit * panel_block_codes(t) + b % 2 * kPanelBlockScales;
}

// Rows of GGUF blocks of a panel dtype, rows one after another.
struct PanelRows {
  const void* blocks = nullptr;
  int64_t n = 0;
};

// Writes the panels of the weight of dtype t made of parts[0]'s rows, then
// parts[1]'s, ... (n = the sum of their n) into out (panel_count(n) *
// panel_bytes(t, k) bytes).
void pack_panels(tensor::DType t, const std::vector<PanelRows>& parts, int64_t k, uint8_t* out);

// Rows [j0, j0 + rows) of a packed weight back as GGUF blocks into out
// (tests, and tables that read rows: a slow path).
void unpack_panel_rows(tensor::DType t, const uint8_t* panels, int64_t k, int64_t j0, int64_t rows,
                       void* out);

}  // namespace strata::ops::cpu
