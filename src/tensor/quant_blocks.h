// GGUF's block-quantized weight types, bit-compatible with the files
// llama.cpp writes (its ggml-common.h is the specification; these structs
// were written from its documented layouts). All multi-byte fields are
// little-endian; "f16" fields are IEEE half. A weight row of k values is
// k / block_size consecutive blocks.
//
// Two views of a block:
//   - dequantize_row(): the f32 values, computed with llama.cpp's formulas in
//     its order of operations (the reference every kernel is tested against).
//   - unpack_group(): the form the int8 dot-product kernels use. 256 values
//     (one super-block, or eight 32-value blocks) become unsigned codes
//     u[256] and per-16-value sub-block factors A[16], B[16] such that
//         w[i] = A[i / 16] * u[i] - B[i / 16]      (i in [0, 256))
//     equals the dequantized value up to f32 rounding. Codes are small
//     unsigned integers (at most 8 bits), so a dot product with int8
//     activations q_x (scale d_x per 32 values) is
//         Σ_j A_j · d_x · Σ_{i∈j} u_i q_x,i  −  Σ_j B_j · d_x · Σ_{i∈j} q_x,i
//     with exact integer inner sums (vpdpbusd takes u8 × s8).
// Per type (d, dmin, m: f16 fields; sc, mn: the block's integer sub-scales):
//   Q4_0   u = nibble            A = d            B = 8 d
//   Q4_1   u = nibble            A = d            B = -m
//   Q5_0   u = nibble | bit<<4   A = d            B = 16 d
//   Q5_1   u = nibble | bit<<4   A = d            B = -m
//   Q8_0   u = q + 128           A = d            B = 128 d
//   IQ4_NL u = table[nibble]+128 A = d            B = 128 d
//   Q2_K   u = 2 bits            A = d sc         B = dmin mn     (16-value sub-blocks)
//   Q3_K   u = 2 bits | hbit<<2  A = d (sc - 32)  B = 4 A         (16-value sub-blocks)
//   Q4_K   u = nibble            A = d sc         B = dmin mn     (32-value sub-blocks)
//   Q5_K   u = nibble | bit<<4   A = d sc         B = dmin mn     (32-value sub-blocks)
//   Q6_K   u = nibble | 2 bits<<4 A = d sc        B = 32 A        (16-value sub-blocks)
//   IQ4_XS u = table[nibble]+128 A = d (sc - 32)  B = 128 A       (32-value sub-blocks)
// For 32-value blocks a group is blocks [8g, 8g + 8) of the row; a group past
// the row's last block has u = 0 and A = B = 0 there.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace strata::tensor {

constexpr int64_t kQuantGroup = 256;  // values per unpack_group() group
constexpr int64_t kQkK = 256;         // values per K-quant super-block

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];  // value j: low nibble of qs[j]; value j + 16: high nibble
};
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[16];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];   // bit j of the little-endian u32: fifth bit of value j
  uint8_t qs[16];
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[16];  // nibbles index kIq4Values, ordered as Q4_0
};
struct BlockQ2_K {
  uint8_t scales[16];  // low nibble: scale, high nibble: min of sub-block j
  uint8_t qs[64];
  uint16_t d, dmin;
};
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];  // sixteen 6-bit scales, offset by 32
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];  // eight 6-bit scales and eight 6-bit mins
  uint8_t qs[128];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;   // 2 high bits of each 6-bit sub-block scale
  uint8_t scales_l[4];  // 4 low bits, two sub-blocks per byte
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210 && sizeof(BlockIQ4_XS) == 136);

// The 16 non-linear levels of IQ4_NL / IQ4_XS.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// Q4_K / Q5_K: the 6-bit scale and min of 32-value sub-block j (0..7).
inline void k4_scale_min(const uint8_t* s, int j, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = s[j] & 63;
    *mn = s[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Q3_K: the sixteen 6-bit scales (still offset by 32) of a block.
void q3k_scales(const uint8_t* packed12, uint8_t out[16]);

// f32 values of one row of n values (n a multiple of the block size) stored
// as `dtype` (Q8_0 or is_low_bit_quant()).
void dequantize_row(const void* src, DType dtype, int64_t n, float* out);

// IQ4_XS: the 6-bit scale code of sub-block ib (0..7) of b, still offset by
// 32 (the sub-block's scale is d * (code - 32)).
int iq4xs_scale(const BlockIQ4_XS& b, int ib);

// One group of a quantized row as codes and factors (see the header comment).
// row: the row's first block; k: values in the row (a multiple of the block
// size); g: group index, g * 256 < k.
struct UnpackedGroup {
  uint8_t u[kQuantGroup];
  float a[16], b[16];
};
void unpack_group(const void* row, DType dtype, int64_t k, int64_t g, UnpackedGroup* out);

}  // namespace strata::tensor
