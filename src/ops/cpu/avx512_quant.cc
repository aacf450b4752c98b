// AVX-512 kernels for GGUF's low-bit weight types (Q4_0 ... Q6_K, IQ4_NL,
// IQ4_XS; tensor/quant_blocks.h). Compiled with the AVX-512 + VNNI flags like
// avx512.cc and under the same rules (no library templates, nothing runs
// unless the dispatcher said yes).
//
// Every type is read through one form: a group of 256 weights of a row
// becomes 256 unsigned codes (4 zmm) and 16 per-sub-block factors A, B with
// w = A * u - B (unpack_* below mirrors tensor::unpack_group()). Then:
//   decode (m <= 16): x is quantized to int8 per 32 values once per call;
//     each zmm of codes meets 64 values of x in one vpdpbusd (u8 x s8, exact
//     int32 sums of 4 products per lane), converted to f32 and scaled by the
//     lane's A * d_x; the B term is Σ_j B_j * (d_x Σ q_x)_j, with the x sums
//     precomputed. No horizontal sum inside the k loop. With several x rows
//     the 32-value types with a zero point (Q4_0, Q5_0, IQ4_NL) turn it
//     around: signed codes u - z against x + 128, seeded from the weights
//     (pair_step).
//     Q2_K, Q3_K, Q4_K, Q5_K and Q6_K instead quantize x per 256 values (one d_x per
//     group, lowbit_x_block) and keep each group's sum in int32 with the
//     integer sub-block scales (tile_kquant): vpmaddubsw + vpdpwssd per 64
//     values, one conversion and FMA per group. Q2_K and Q3_K read their
//     2-bit codes as the block stores them, in bit planes, against x stored
//     in plane order (lowbit_x_chunk_slot): one shift and mask per 64 codes.
//   prefill (m > 16): tiles of rows are dequantized to bf16 (A * u - B,
//     rounded) for the bf16 GEMM, as Q8_0 does.
// Each output is one accumulator chain over k in a fixed order, so results
// do not depend on m, the tile shape or how n is split across threads.
#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstdint>

#include "ops/cpu/avx512_util.h"
#include "ops/cpu/kernels.h"
#include "tensor/quant_blocks.h"

namespace strata::ops::cpu::STRATA_AVX512_NS {
namespace {

using tensor::DType;

// A group of 256 weights as codes and factors (see the file comment).
struct QGroup {
  __m512i u[4];  // codes of values [64 z, 64 z + 64)
  __m512 a, b;   // lane j: factor of values [16 j, 16 j + 16)
};

alignas(16) constexpr uint8_t kZero16[16] = {};

STRATA_INLINE __m512i nib_mask() { return _mm512_set1_epi8(0x0F); }

// 64 codes from two 32-value blocks' nibble arrays: [lo(p0), hi(p0), lo(p1), hi(p1)].
// Two broadcast loads, the second one masked into 128-bit lanes 2-3: no
// cross-lane shuffle.
STRATA_INLINE __m512i nibbles_2x16(const uint8_t* p0, const uint8_t* p1) {
  __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p0)));
  v = _mm512_mask_broadcast_i32x4(v, 0xFF00, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1)));
  v = _mm512_mask_srli_epi16(v, 0xFF00FF00u, v, 4);
  return _mm512_and_si512(v, nib_mask());
}

// Both halves of a zmm hold the same 32 bytes (a broadcast load).
STRATA_INLINE __m512i dup32(const uint8_t* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// 64 codes from 32 bytes: [lo(p[0..32)), hi(p[0..32))].
STRATA_INLINE __m512i nibbles_32(const uint8_t* p) {
  __m512i v = dup32(p);
  v = _mm512_mask_srli_epi16(v, 0xFFFF0000u, v, 4);
  return _mm512_and_si512(v, nib_mask());
}

// Byte mask: bit `lo` of each byte in the lower 32 bytes, bit `hi` in the upper.
STRATA_INLINE __mmask64 bits_2x32(__m512i v, int lo, int hi) {
  __m512i sel = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << lo)),
                                   _mm256_set1_epi8(static_cast<char>(1 << hi)), 1);
  return _mm512_test_epi8_mask(v, sel);
}

// Eight f32 values, each repeated for two lanes (32-value blocks -> 16 lanes).
STRATA_INLINE __m512 pairs(__m256 v8) {
  return _mm512_permutexvar_ps(
      _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0), _mm512_castps256_ps512(v8));
}

STRATA_INLINE __m256 f16x8(const uint16_t (&h)[8]) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

// ---- legacy 32-value blocks: group g = blocks [8 g, 8 g + 8) ----

template <DType T>
struct Block32;
template <>
struct Block32<DType::kQ4_0> { using B = tensor::BlockQ4_0; };
template <>
struct Block32<DType::kQ4_1> { using B = tensor::BlockQ4_1; };
template <>
struct Block32<DType::kQ5_0> { using B = tensor::BlockQ5_0; };
template <>
struct Block32<DType::kQ5_1> { using B = tensor::BlockQ5_1; };
template <>
struct Block32<DType::kIQ4_NL> { using B = tensor::BlockIQ4_NL; };

template <DType T>
STRATA_INLINE void unpack_blocks32(const char* row, int64_t k, int64_t g, QGroup& q) {
  using B = typename Block32<T>::B;
  const B* blk = reinterpret_cast<const B*>(row) + 8 * g;
  const int64_t nb = min64(8, k / 32 - 8 * g);
  alignas(16) uint16_t d[8] = {}, m[8] = {};
  uint32_t qh[8] = {};
  const uint8_t* qs[8];
  for (int i = 0; i < 8; ++i) {
    if (i < nb) {
      d[i] = blk[i].d;
      qs[i] = blk[i].qs;
      if constexpr (T == DType::kQ4_1 || T == DType::kQ5_1) m[i] = blk[i].m;
      if constexpr (T == DType::kQ5_0 || T == DType::kQ5_1) {
        __builtin_memcpy(&qh[i], blk[i].qh, 4);
      }
    } else {
      qs[i] = kZero16;
    }
  }
#pragma GCC unroll 4
  for (int z = 0; z < 4; ++z) {
    __m512i u = nibbles_2x16(qs[2 * z], qs[2 * z + 1]);
    if constexpr (T == DType::kQ5_0 || T == DType::kQ5_1) {
      __mmask64 hb = static_cast<__mmask64>(qh[2 * z]) | static_cast<__mmask64>(qh[2 * z + 1]) << 32;
      u = _mm512_mask_add_epi8(u, hb, u, _mm512_set1_epi8(16));
    }
    if constexpr (T == DType::kIQ4_NL) u = _mm512_shuffle_epi8(iq4_table(), u);
    q.u[z] = u;
  }
  q.a = pairs(f16x8(d));
  if constexpr (T == DType::kQ4_1 || T == DType::kQ5_1) {
    q.b = _mm512_sub_ps(_mm512_setzero_ps(), pairs(f16x8(m)));
  } else {
    constexpr float kZeroPoint = T == DType::kQ4_0 ? 8.0f : T == DType::kQ5_0 ? 16.0f : 128.0f;
    q.b = _mm512_mul_ps(q.a, _mm512_set1_ps(kZeroPoint));
  }
}

// ---- 256-value super-blocks: group g = block g ----

// The 2-bit codes of a Q2_K / Q3_K group, values 64 z..: half z / 2 of qs,
// bit pairs j0 (lower 32 values) and j0 + 1 (upper), j0 = 2 (z % 2).
STRATA_INLINE void codes_2bit(const uint8_t* qs, __m512i (&u)[4]) {
#pragma GCC unroll 4
  for (int z = 0; z < 4; ++z) {
    const int j0 = 2 * (z % 2);
    __m512i v = _mm512_srli_epi16(dup32(qs + 32 * (z / 2)), 2 * j0);
    v = _mm512_mask_srli_epi16(v, 0xFFFF0000u, v, 2);
    u[z] = _mm512_and_si512(v, _mm512_set1_epi8(3));
  }
}

// Q3_K's codes u in 0..7 (w = d s (u - 4)): the 2-bit codes plus 4 where
// bit 4 (z / 2) + j of hmask[l] is set for value 128 (z / 2) + 32 j + l.
STRATA_INLINE void codes_q3_k(const tensor::BlockQ3_K& b, __m512i (&u)[4]) {
  codes_2bit(b.qs, u);
  const __m512i hm = dup32(b.hmask);
#pragma GCC unroll 4
  for (int z = 0; z < 4; ++z) {
    const int half = z / 2, j0 = 2 * (z % 2);
    __mmask64 hb = bits_2x32(hm, 4 * half + j0, 4 * half + j0 + 1);
    u[z] = _mm512_mask_add_epi8(u[z], hb, u[z], _mm512_set1_epi8(4));
  }
}

// Q3_K's sixteen 6-bit scales minus 32 as int8 lanes 0-15 (tensor::q3k_scales's
// layout: the low 4 bits of scale i are the low (i < 8) or high nibble of
// byte i % 8, its high 2 bits are bits 2 (i / 4), + 1 of byte 8 + i % 4).
STRATA_INLINE __m128i scales_q3_k(const tensor::BlockQ3_K& b) {
  const __m128i v = _mm_maskz_loadu_epi8(0x0FFF, b.scales);
  // byte i: the nibble of scale i in bits 0-3
  const __m128i lo = _mm_unpacklo_epi64(v, _mm_srli_epi16(v, 4));
  // dword q = bytes 8-11 rotated left by 4 - 2 q: byte i's bits 4-5 are
  // scale i's high bits
  __m128i hi = _mm_rolv_epi32(_mm_shuffle_epi32(v, 0xAA), _mm_setr_epi32(4, 2, 0, 30));
  hi = _mm_and_si128(hi, _mm_set1_epi8(0x30));
  // (lo & 0x0F) | hi
  const __m128i sc = _mm_ternarylogic_epi32(lo, hi, _mm_set1_epi8(0x0F), 0xEC);
  return _mm_sub_epi8(sc, _mm_set1_epi8(32));
}

// Q2_K's sixteen scales (low nibbles) and mins (high nibbles) as int32 lanes.
STRATA_INLINE __m512i scales_q2_k(const tensor::BlockQ2_K& b) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
}

STRATA_INLINE void unpack_q2_k(const char* row, int64_t g, QGroup& q) {
  const auto& b = reinterpret_cast<const tensor::BlockQ2_K*>(row)[g];
  codes_2bit(b.qs, q.u);
  const __m512i sc = scales_q2_k(b);
  q.a = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b.d)),
                      _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(15))));
  q.b = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b.dmin)),
                      _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4)));
}

STRATA_INLINE void unpack_q3_k(const char* row, int64_t g, QGroup& q) {
  const auto& b = reinterpret_cast<const tensor::BlockQ3_K*>(row)[g];
  codes_q3_k(b, q.u);
  q.a = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b.d)),
                      _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(scales_q3_k(b))));
  q.b = _mm512_mul_ps(q.a, _mm512_set1_ps(4.0f));
}

// The codes of a Q4_K (qh == nullptr) or Q5_K group.
STRATA_INLINE void codes_q45_k(const uint8_t* qs, const uint8_t* qh, __m512i (&u)[4]) {
  __m512i hv;
  if (qh != nullptr) hv = dup32(qh);
#pragma GCC unroll 4
  for (int z = 0; z < 4; ++z) {
    u[z] = nibbles_32(qs + 32 * z);
    if (qh != nullptr) {
      u[z] = _mm512_mask_add_epi8(u[z], bits_2x32(hv, 2 * z, 2 * z + 1), u[z], _mm512_set1_epi8(16));
    }
  }
}

// tensor::k4_scale_min() for all 8 sub-blocks at once, on the 3 words of the
// packed scales: bytes 0-3 of w0/w1 carry scales/mins 0-3 (6 bits) and the
// top 2 bits of scales/mins 4-7, whose low 4 bits are in w2's nibbles.
// Bytes 0-7: the 8 scales, 8-15: the 8 mins.
STRATA_INLINE __m128i scales_mins_q45_k(const uint8_t* scales) {
  uint32_t w0, w1, w2;
  __builtin_memcpy(&w0, scales, 4);
  __builtin_memcpy(&w1, scales + 4, 4);
  __builtin_memcpy(&w2, scales + 8, 4);
  const uint32_t sc_lo = w0 & 0x3F3F3F3Fu, mn_lo = w1 & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (w2 & 0x0F0F0F0Fu) | ((w0 >> 6) & 0x03030303u) << 4;
  const uint32_t mn_hi = ((w2 >> 4) & 0x0F0F0F0Fu) | ((w1 >> 6) & 0x03030303u) << 4;
  return _mm_set_epi32(static_cast<int>(mn_hi), static_cast<int>(mn_lo), static_cast<int>(sc_hi),
                       static_cast<int>(sc_lo));
}

// A Q4_K / Q5_K block's fields.
struct Q45Fields {
  const uint8_t *scales, *qs, *qh;
  uint16_t d, dmin;
};

template <bool kQ5>
STRATA_INLINE Q45Fields q45_fields(const char* row, int64_t g) {
  if constexpr (kQ5) {
    const auto& b = reinterpret_cast<const tensor::BlockQ5_K*>(row)[g];
    return {b.scales, b.qs, b.qh, b.d, b.dmin};
  } else {
    const auto& b = reinterpret_cast<const tensor::BlockQ4_K*>(row)[g];
    return {b.scales, b.qs, nullptr, b.d, b.dmin};
  }
}

template <bool kQ5>
STRATA_INLINE void unpack_q45_k(const char* row, int64_t g, QGroup& q) {
  const Q45Fields b = q45_fields<kQ5>(row, g);
  codes_q45_k(b.qs, kQ5 ? b.qh : nullptr, q.u);
  // lanes 0-7: scales, 8-15: mins
  __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(scales_mins_q45_k(b.scales)));
  f = _mm512_mul_ps(f, _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(_cvtsh_ss(b.d)),
                                            _mm512_set1_ps(_cvtsh_ss(b.dmin))));
  q.a = pairs(_mm512_castps512_ps256(f));
  q.b = pairs(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
}

STRATA_INLINE void codes_q6_k(const tensor::BlockQ6_K& b, __m512i (&u)[4]) {
  const __m512i three = _mm512_set1_epi8(3);
#pragma GCC unroll 2
  for (int half = 0; half < 2; ++half) {
    __m512i ql = _mm512_loadu_si512(b.ql + 64 * half);
    __m512i qh = dup32(b.qh + 32 * half);
    // values 128 half + [0, 64): low nibbles, qh bits 0-1 (lower) / 2-3 (upper)
    __m512i h0 = _mm512_mask_srli_epi16(qh, 0xFFFF0000u, qh, 2);
    h0 = _mm512_slli_epi16(_mm512_and_si512(h0, three), 4);
    u[2 * half] = _mm512_or_si512(_mm512_and_si512(ql, nib_mask()), h0);
    // values 128 half + [64, 128): high nibbles, qh bits 4-5 / 6-7
    __m512i h1 = _mm512_srli_epi16(qh, 4);
    h1 = _mm512_mask_srli_epi16(h1, 0xFFFF0000u, h1, 2);
    h1 = _mm512_slli_epi16(_mm512_and_si512(h1, three), 4);
    u[2 * half + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), nib_mask()), h1);
  }
}

// Q6_K's 16 signed sub-block scales as int32 lanes.
STRATA_INLINE __m512i scales_q6_k(const tensor::BlockQ6_K& b) {
  return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
}

STRATA_INLINE void unpack_q6_k(const char* row, int64_t g, QGroup& q) {
  const auto& b = reinterpret_cast<const tensor::BlockQ6_K*>(row)[g];
  codes_q6_k(b, q.u);
  q.a = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b.d)), _mm512_cvtepi32_ps(scales_q6_k(b)));
  q.b = _mm512_mul_ps(q.a, _mm512_set1_ps(32.0f));
}

STRATA_INLINE void unpack_iq4_xs(const char* row, int64_t g, QGroup& q) {
  const auto& b = reinterpret_cast<const tensor::BlockIQ4_XS*>(row)[g];
  const __m512i table = iq4_table();
#pragma GCC unroll 4
  for (int z = 0; z < 4; ++z) {
    q.u[z] = _mm512_shuffle_epi8(table, nibbles_2x16(b.qs + 32 * z, b.qs + 32 * z + 16));
  }
  // Lane i: the 6-bit scale of block i / 2, bits 4 (i / 2).. of scales_l
  // below bits 2 (i / 2).. of scales_h.
  uint32_t low;
  __builtin_memcpy(&low, b.scales_l, 4);
  const __m512i lo = _mm512_and_si512(
      _mm512_srlv_epi32(
          _mm512_set1_epi32(static_cast<int>(low)),
          _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28)),
      _mm512_set1_epi32(0xF));
  const __m512i hi = _mm512_and_si512(
      _mm512_srlv_epi32(_mm512_set1_epi32(b.scales_h),
                        _mm512_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14)),
      _mm512_set1_epi32(3));
  const __m512i ls = _mm512_or_si512(lo, _mm512_slli_epi32(hi, 4));
  q.a = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b.d)),
                      _mm512_cvtepi32_ps(_mm512_sub_epi32(ls, _mm512_set1_epi32(32))));
  q.b = _mm512_mul_ps(q.a, _mm512_set1_ps(128.0f));
}

template <DType T>
STRATA_INLINE void unpack(const char* row, int64_t k, int64_t g, QGroup& q) {
  if constexpr (T == DType::kQ4_0 || T == DType::kQ4_1 || T == DType::kQ5_0 ||
                T == DType::kQ5_1 || T == DType::kIQ4_NL) {
    unpack_blocks32<T>(row, k, g, q);
  } else if constexpr (T == DType::kQ2_K) {
    unpack_q2_k(row, g, q);
  } else if constexpr (T == DType::kQ3_K) {
    unpack_q3_k(row, g, q);
  } else if constexpr (T == DType::kQ4_K) {
    unpack_q45_k<false>(row, g, q);
  } else if constexpr (T == DType::kQ5_K) {
    unpack_q45_k<true>(row, g, q);
  } else if constexpr (T == DType::kQ6_K) {
    unpack_q6_k(row, g, q);
  } else {
    static_assert(T == DType::kIQ4_XS);
    unpack_iq4_xs(row, g, q);
  }
}

// Bytes of one group (the stride between consecutive groups of a row).
template <DType T>
constexpr int64_t group_bytes() {
  constexpr DType t = T;
  if constexpr (t == DType::kQ4_0 || t == DType::kIQ4_NL) return 8 * 18;
  if constexpr (t == DType::kQ4_1) return 8 * 20;
  if constexpr (t == DType::kQ5_0) return 8 * 22;
  if constexpr (t == DType::kQ5_1) return 8 * 24;
  if constexpr (t == DType::kQ2_K) return 84;
  if constexpr (t == DType::kQ3_K) return 110;
  if constexpr (t == DType::kQ4_K) return 144;
  if constexpr (t == DType::kQ5_K) return 176;
  if constexpr (t == DType::kQ6_K) return 210;
  return 136;  // IQ4_XS
}

// ---- decode: MR x rows against NR weight rows ----

// How far ahead in the weight stream the decode kernels prefetch. One core
// needs ~50 lines in flight to stream at the read loop's rate on the Zen 5
// host (2048 B = 32 lines held Q4_K at 14-16 GB/s against 17-19 at 8192 B,
// and at 2 threads 25 against 35; BENCHMARKS.md, "K-quant decode in int32").
constexpr int64_t kPrefetchBytes = 8192;

// Prefetches the bytes kPrefetchBytes past group g of a row. Rows are short
// (a few groups), so this runs on into the next rows of the weight stream.
template <DType T>
STRATA_INLINE void prefetch_group_ahead(const char* row, int64_t g) {
  const char* ahead = row + g * group_bytes<T>() + kPrefetchBytes;
  for (int64_t off = 0; off < group_bytes<T>(); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
}

// Lane l of lanes_z(a, z) is a's factor for values 64 z + 4 l .. + 3.
STRATA_INLINE __m512 lanes_z(__m512 a, int z) {
  const int b = 4 * z;
  return _mm512_permutexvar_ps(
      _mm512_set_epi32(b + 3, b + 3, b + 3, b + 3, b + 2, b + 2, b + 2, b + 2, b + 1, b + 1, b + 1,
                       b + 1, b, b, b, b),
      a);
}

// log2 of the zero point z of types whose weights are A * (u - z) (then
// Σ u q_x - z Σ q_x is one vpdpbusd seeded with z * (-Σ q_x) per lane); -1
// for types with a separate min term (w = A u - B).
template <DType T>
constexpr int zero_point_shift() {
  constexpr DType t = T;
  if constexpr (t == DType::kQ4_0) return 3;
  if constexpr (t == DType::kQ5_0) return 4;
  if constexpr (t == DType::kIQ4_NL || t == DType::kIQ4_XS) return 7;
  if constexpr (t == DType::kQ6_K) return 5;
  if constexpr (t == DType::kQ3_K) return 2;
  return -1;
}

// Per-lane int32 sums of one zmm of codes with x: Σ u q_x (- z Σ q_x).
template <DType T>
STRATA_INLINE __m512i code_dot(__m512i u, __m512i xv, const int32_t* nsum4) {
  if constexpr (zero_point_shift<T>() >= 0) {
    __m512i seed = _mm512_slli_epi32(_mm512_loadu_si512(nsum4), zero_point_shift<T>());
    return _mm512_dpbusd_epi32(seed, u, xv);
  } else {
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, xv);
  }
}

// ---- 32-value types: two blocks (64 values) per step ----

// [h0 x 8, h1 x 8] as f32 lanes.
STRATA_INLINE __m512 f16_pair(uint16_t h0, uint16_t h1) {
  return _mm512_cvtph_ps(_mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_set1_epi16(static_cast<short>(h0))),
      _mm_set1_epi16(static_cast<short>(h1)), 1));
}

// Codes and per-lane factors of blocks blk[0], blk[1] (kTwo) or blk[0] alone;
// kSigned (types with a zero point z only): the codes as signed u - z.
template <DType T, bool kTwo, bool kSigned>
STRATA_INLINE void pair_codes(const typename Block32<T>::B* blk, __m512i& u, __m512& dw,
                              __m512& mw) {
  static_assert(!kSigned || zero_point_shift<T>() >= 0);
  u = nibbles_2x16(blk[0].qs, kTwo ? blk[1].qs : kZero16);
  if constexpr (T == DType::kQ5_0 || T == DType::kQ5_1) {
    uint32_t h0, h1 = 0;
    __builtin_memcpy(&h0, blk[0].qh, 4);
    if constexpr (kTwo) __builtin_memcpy(&h1, blk[1].qh, 4);
    __mmask64 hb = static_cast<__mmask64>(h0) | static_cast<__mmask64>(h1) << 32;
    if constexpr (kSigned) {  // u + 16 hb - z, z = 16: subtract where the fifth bit is clear
      u = _mm512_mask_sub_epi8(u, ~hb, u, _mm512_set1_epi8(1 << zero_point_shift<T>()));
    } else {
      u = _mm512_mask_add_epi8(u, hb, u, _mm512_set1_epi8(16));
    }
  }
  if constexpr (kSigned && T == DType::kQ4_0) {
    u = _mm512_sub_epi8(u, _mm512_set1_epi8(1 << zero_point_shift<T>()));
  }
  if constexpr (T == DType::kIQ4_NL) {
    u = _mm512_shuffle_epi8(kSigned ? iq4_levels() : iq4_table(), u);
  }
  dw = f16_pair(blk[0].d, kTwo ? blk[1].d : 0);
  if constexpr (T == DType::kQ4_1 || T == DType::kQ5_1) {
    mw = f16_pair(blk[0].m, kTwo ? blk[1].m : 0);
  }
}

// With several x rows, types with a zero point (w = A * (u - z)) take the
// codes as signed u - z and x as unsigned x + 128 (x xor 0x80, in register):
//   Σ (x + 128)(u - z) - 128 Σ (u - z) = Σ x u - z Σ x,
// the same int32 as code_dot's seeded sum, but the seed -128 Σ (u - z) comes
// from the weights already in registers (one vpdpbusd per weight row, shared
// by the x rows) instead of a per-lane x-sum array loaded and shifted for
// every (x row, weight row): batched decode (m = 16) runs 1.1-1.4x faster.
// With one x row that trade adds an instruction per step and nothing is
// shared, so m = 1 keeps code_dot (BENCHMARKS.md, "The 32-value types").
template <DType T, int MR, int NR, bool kTwo>
STRATA_INLINE void pair_step(const MatmulArgs& a, const char* w0, int64_t row_bytes, int64_t i0,
                             int64_t p, __m512 (&acc)[MR][NR]) {
  using B = typename Block32<T>::B;
  constexpr bool kZeroPoint = zero_point_shift<T>() >= 0;
  constexpr bool kSeedFromWeights = kZeroPoint && MR > 1;
  const __m512i x_bias = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i u[NR], seed[NR];
  __m512 dw[NR], mw[NR];
#pragma GCC unroll 16
  for (int r = 0; r < NR; ++r) {
    const B* blk = reinterpret_cast<const B*>(w0 + r * row_bytes) + 2 * p;
    _mm_prefetch(reinterpret_cast<const char*>(blk) + kPrefetchBytes, _MM_HINT_T0);
    pair_codes<T, kTwo, kSeedFromWeights>(blk, u[r], dw[r], mw[r]);
    if constexpr (kSeedFromWeights) {
      seed[r] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                 _mm512_dpbusd_epi32(_mm512_setzero_si512(), x_bias, u[r]));
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    const int64_t xi = i0 + i;
    __m512i xv = _mm512_loadu_si512(a.x_q8s + xi * a.k_pad256 + 64 * p);
    if constexpr (kSeedFromWeights) xv = _mm512_xor_si512(xv, x_bias);
    __m512 d = _mm512_loadu_ps(a.x_q8_scale + xi * (a.k_pad256 / 4) + 16 * p);
    const int64_t lane = xi * (a.k_pad256 / 4) + 16 * p;
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      __m512i s;
      if constexpr (kSeedFromWeights) {
        s = _mm512_dpbusd_epi32(seed[r], xv, u[r]);
      } else {
        s = code_dot<T>(u[r], xv, a.x_q8_nsum4 + lane);
      }
      acc[i][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw[r], d), acc[i][r]);
      if constexpr (!kZeroPoint) {
        acc[i][r] = _mm512_fmadd_ps(mw[r], _mm512_loadu_ps(a.x_q8_fsum4 + lane), acc[i][r]);
      }
    }
  }
}

template <DType T, int MR, int NR>
void tile_blocks32(const MatmulArgs& a, int64_t row_bytes, int64_t i0, int64_t j0) {
  __m512 acc[MR][NR];
  zero_tile(acc);
  // Two accumulator sets (even / odd block pairs) so consecutive steps do
  // not wait on one FMA chain; every tile shape sums in this same order.
  __m512 acc1[MR][NR];
  zero_tile(acc1);
  const char* w0 = static_cast<const char*>(a.w) + j0 * row_bytes;
  const int64_t nb = a.k / 32;
  int64_t p = 0;
  for (; 2 * p + 4 <= nb; p += 2) {
    pair_step<T, MR, NR, true>(a, w0, row_bytes, i0, p, acc);
    pair_step<T, MR, NR, true>(a, w0, row_bytes, i0, p + 1, acc1);
  }
  if (2 * p + 2 <= nb) pair_step<T, MR, NR, true>(a, w0, row_bytes, i0, p++, acc);
  if (2 * p < nb) pair_step<T, MR, NR, false>(a, w0, row_bytes, i0, p, acc1);
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_add_ps(acc[i][r], acc1[i][r]);
  store_tile<MR, NR>(acc, a.y + i0 * a.n + j0, a.n, a.bias != nullptr ? a.bias + j0 : nullptr,
                     false);
}

template <DType T, int MR, int NR>
void tile_lowbit(const MatmulArgs& a, int64_t row_bytes, int64_t i0, int64_t j0) {
  __m512 acc[MR][NR];
  zero_tile(acc);
  const char* w0 = static_cast<const char*>(a.w) + j0 * row_bytes;
  const int64_t groups = a.k_pad256 / 256;
  for (int64_t g = 0; g < groups; ++g) {
    // One weight row's group at a time (its codes and factors stay in
    // registers while every x row meets them).
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      const char* row = w0 + r * row_bytes;
      prefetch_group_ahead<T>(row, g);
      QGroup q;
      unpack<T>(row, a.k, g, q);
      __m512 az[4];
#pragma GCC unroll 4
      for (int z = 0; z < 4; ++z) az[z] = lanes_z(q.a, z);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const int64_t xi = i0 + i;
        const int8_t* xq = a.x_q8s + xi * a.k_pad256 + g * 256;
        const float* dx = a.x_q8_scale + xi * (a.k_pad256 / 4) + g * 64;
        const int32_t* ns = a.x_q8_nsum4 + xi * (a.k_pad256 / 4) + g * 64;
#pragma GCC unroll 4
        for (int z = 0; z < 4; ++z) {
          __m512i s = code_dot<T>(q.u[z], _mm512_loadu_si512(xq + 64 * z), ns + 16 * z);
          acc[i][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
                                      _mm512_mul_ps(az[z], _mm512_loadu_ps(dx + 16 * z)), acc[i][r]);
        }
        if constexpr (zero_point_shift<T>() < 0) {
          __m512 xs = _mm512_loadu_ps(a.x_q8_sum16 + xi * (a.k_pad256 / 16) + g * 16);
          acc[i][r] = _mm512_fnmadd_ps(q.b, xs, acc[i][r]);
        }
      }
    }
  }
  store_tile<MR, NR>(acc, a.y + i0 * a.n + j0, a.n, a.bias != nullptr ? a.bias + j0 : nullptr,
                     false);
}

// ---- Q2_K ... Q6_K: x quantized per 256 values (lowbit_x_block) ----
//
// With one d_x per group, a group's dot product with an x row is
//   d * d_x * Σ_j s_j Σ_{v in sub-block j} u_v q_v  -  Σ_j B_j d_x Σ_{16 values} q
// and the first sum is all int32: vpmaddubsw pairs codes with x (|pair| <=
// 2 * 63 * 127), vpdpwssd multiplies each pair sum by its sub-block's integer
// scale and accumulates; one conversion and one FMA per group, where the
// 32-value types need both per 64 values.

// A group as codes, integer scales and factors: w = d * s * u - B.
struct KGroup {
  __m512i u[4];  // codes of x's slots 2 z, 2 z + 1 (values [64 z, 64 z + 64), or plane z)
  __m512i s[4];  // int16 lane p of s[z]: the scale of u[z]'s bytes 2 p, 2 p + 1
  __m512 b;      // lane j: B of values [16 j, 16 j + 16)
  float d;
};

// vpshufb control: int16 lanes of 128-bit lanes 0-1 take byte `lo` of their
// lane, of lanes 2-3 byte `hi` (zero-extended).
STRATA_INLINE __m512i word_from_bytes(int lo, int hi) {
  const int wl = static_cast<int>(0x80008000u | static_cast<uint32_t>(lo << 16 | lo));
  const int wh = static_cast<int>(0x80008000u | static_cast<uint32_t>(hi << 16 | hi));
  return _mm512_inserti64x4(_mm512_set1_epi32(wl), _mm256_set1_epi32(wh), 1);
}

// Plane j (= 0..3) of a Q2_K / Q3_K block's 2-bit codes, against x's slots
// 2 j, 2 j + 1 (lowbit_x_chunk_slot): byte 32 h + l is bits 2 j, 2 j + 1 of
// qs[32 h + l], the code of value 128 h + 32 j + l.
STRATA_INLINE void planes_2bit(const uint8_t* qs, __m512i (&u)[4]) {
  const __m512i v = _mm512_loadu_si512(qs);
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    u[j] = _mm512_and_si512(_mm512_srli_epi16(v, 2 * j), _mm512_set1_epi8(3));
  }
}

// Q3_K's codes in planes (u in 0..7, w = d s (u - 4)): plus 4 where bit
// 4 h + j of hmask[l] is set.
STRATA_INLINE void planes_q3_k(const tensor::BlockQ3_K& b, __m512i (&u)[4]) {
  planes_2bit(b.qs, u);
  // Byte 32 h + l, bit j (j = 0..3): bit 4 h + j of hmask[l] (the upper half
  // shifted down by 4 in 16-bit words; only bits 0-3 of a byte are used).
  __m512i hm = dup32(b.hmask);
  hm = _mm512_mask_srli_epi16(hm, 0xFFFF0000u, hm, 4);
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    // bit j moved to bit 2, then u | (that & 4)
    const __m512i at2 = j < 2    ? _mm512_slli_epi16(hm, 2 - j)
                        : j == 2 ? hm
                                 : _mm512_srli_epi16(hm, 1);
    u[j] = _mm512_ternarylogic_epi32(u[j], at2, _mm512_set1_epi8(4), 0xF8);
  }
}

template <DType T>
STRATA_INLINE void unpack_kquant(const char* row, int64_t g, KGroup& q) {
  if constexpr (T == DType::kQ4_K || T == DType::kQ5_K) {
    // Sub-block j = values [32 j, 32 j + 32): s[z] takes scale 2 z in
    // 128-bit lanes 0-1 and scale 2 z + 1 in lanes 2-3.
    const Q45Fields b = q45_fields<T == DType::kQ5_K>(row, g);
    codes_q45_k(b.qs, T == DType::kQ5_K ? b.qh : nullptr, q.u);
    const __m128i sm = scales_mins_q45_k(b.scales);
    const __m512i sm4 = _mm512_broadcast_i32x4(sm);
#pragma GCC unroll 4
    for (int z = 0; z < 4; ++z) q.s[z] = _mm512_shuffle_epi8(sm4, word_from_bytes(2 * z, 2 * z + 1));
    const __m256 mins = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8)));
    q.b = pairs(_mm256_mul_ps(mins, _mm256_set1_ps(_cvtsh_ss(b.dmin))));
    q.d = _cvtsh_ss(b.d);
  } else {
    // Sub-block i = values [16 i, 16 i + 16).
    __m128i s8;  // the 16 integer scales as int8
    if constexpr (T == DType::kQ2_K) {
      const auto& b = reinterpret_cast<const tensor::BlockQ2_K*>(row)[g];
      planes_2bit(b.qs, q.u);
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
      s8 = _mm_and_si128(packed, _mm_set1_epi8(0x0F));
      const __m128i mins = _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F));
      q.d = _cvtsh_ss(b.d);
      // Q2_K's mins (dmin * the high nibbles) are B.
      q.b = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b.dmin)),
                          _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mins)));
    } else if constexpr (T == DType::kQ3_K) {
      const auto& b = reinterpret_cast<const tensor::BlockQ3_K*>(row)[g];
      planes_q3_k(b, q.u);
      s8 = scales_q3_k(b);
      q.d = _cvtsh_ss(b.d);
      // The zero point 4 goes into B.
      q.b = _mm512_mul_ps(_mm512_set1_ps(4.0f * q.d), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(s8)));
    } else {
      static_assert(T == DType::kQ6_K);
      const auto& b = reinterpret_cast<const tensor::BlockQ6_K*>(row)[g];
      codes_q6_k(b, q.u);
      s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
      q.d = _cvtsh_ss(b.d);
      // The zero point 32 goes into B.
      q.b =
          _mm512_mul_ps(_mm512_set1_ps(32.0f * q.d), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(s8)));
    }
    // Q6_K: u[z] holds values [64 z, 64 z + 64), sub-block 4 z + L in
    // 128-bit lane L. Q2_K / Q3_K: u[z] is plane z, whose lane L holds
    // values 128 (L / 2) + 32 z + 16 (L % 2) + [0, 16): sub-block
    // 8 (L / 2) + 2 z + L % 2. Bytes 4 L + z of `by_lane` are those scales,
    // so int32 lanes 4 L + z of `wide` are, and s[z] repeats int32 lane
    // 4 L + z's low word across lane L (vpshufb, in-lane).
    const __m128i by_lane = _mm_shuffle_epi8(
        s8, T == DType::kQ6_K
                ? _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)
                : _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15));
    const __m512i wide = _mm512_cvtepi8_epi32(by_lane);
#pragma GCC unroll 4
    for (int z = 0; z < 4; ++z) {
      const char lo = static_cast<char>(4 * z), hi = static_cast<char>(4 * z + 1);
      q.s[z] = _mm512_shuffle_epi8(
          wide, _mm512_broadcast_i32x4(
                    _mm_setr_epi8(lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi)));
    }
  }
}

template <DType T>
constexpr bool is_kquant_x256() {
  return lowbit_x_block(T) == 256;
}

template <DType T, int MR, int NR>
void tile_kquant(const MatmulArgs& a, int64_t row_bytes, int64_t i0, int64_t j0) {
  __m512 acc[MR][NR];
  zero_tile(acc);
  const char* w0 = static_cast<const char*>(a.w) + j0 * row_bytes;
  const int64_t groups = a.k_pad256 / 256;  // k % 256 == 0 for these types
  for (int64_t g = 0; g < groups; ++g) {
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      const char* row = w0 + r * row_bytes;
      prefetch_group_ahead<T>(row, g);
      KGroup q;
      unpack_kquant<T>(row, g, q);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const int64_t xi = i0 + i;
        const int8_t* xq = a.x_q8s + xi * a.k_pad256 + g * 256;
        // Two int32 chains of two groups of 64 values each, then one add.
        __m512i s0 = _mm512_madd_epi16(_mm512_maddubs_epi16(q.u[0], _mm512_loadu_si512(xq)), q.s[0]);
        __m512i s1 =
            _mm512_madd_epi16(_mm512_maddubs_epi16(q.u[2], _mm512_loadu_si512(xq + 128)), q.s[2]);
        s0 = _mm512_dpwssd_epi32(s0, _mm512_maddubs_epi16(q.u[1], _mm512_loadu_si512(xq + 64)),
                                 q.s[1]);
        s1 = _mm512_dpwssd_epi32(s1, _mm512_maddubs_epi16(q.u[3], _mm512_loadu_si512(xq + 192)),
                                 q.s[3]);
        const __m512i s = _mm512_add_epi32(s0, s1);
        const float dx = a.x_q8_scale[xi * (a.k_pad256 / 4) + g * 64];
        acc[i][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(q.d * dx), acc[i][r]);
        __m512 xs = _mm512_loadu_ps(a.x_q8_sum16 + xi * (a.k_pad256 / 16) + g * 16);
        acc[i][r] = _mm512_fnmadd_ps(q.b, xs, acc[i][r]);
      }
    }
  }
  store_tile<MR, NR>(acc, a.y + i0 * a.n + j0, a.n, a.bias != nullptr ? a.bias + j0 : nullptr,
                     false);
}

template <DType T>
constexpr bool is_blocks32() {
  return T == DType::kQ4_0 || T == DType::kQ4_1 || T == DType::kQ5_0 || T == DType::kQ5_1 ||
         T == DType::kIQ4_NL;
}

template <DType T, int MR, int NR>
STRATA_INLINE void tile_any(const MatmulArgs& a, int64_t row_bytes, int64_t i0, int64_t j0) {
  if constexpr (is_blocks32<T>()) {
    tile_blocks32<T, MR, NR>(a, row_bytes, i0, j0);
  } else if constexpr (is_kquant_x256<T>()) {
    tile_kquant<T, MR, NR>(a, row_bytes, i0, j0);
  } else {
    tile_lowbit<T, MR, NR>(a, row_bytes, i0, j0);
  }
}

template <DType T, int MR>
void rows_lowbit(const MatmulArgs& a, int64_t row_bytes, int64_t i0, int64_t n_begin,
                 int64_t n_end) {
  int64_t j = n_begin;
  if constexpr (MR > 1) {
    for (; j + 2 <= n_end; j += 2) tile_any<T, MR, 2>(a, row_bytes, i0, j);
  } else if constexpr (!is_blocks32<T>()) {
    // One x row: one weight row at a time (see rows_bf16), except rows of at
    // most two super-blocks, whose per-row reduction costs as much as their
    // dot product: 4 such rows (contiguous, so still one stream) share one.
    if (row_bytes <= 2 * group_bytes<T>()) {
      for (; j + 4 <= n_end; j += 4) tile_any<T, 1, 4>(a, row_bytes, i0, j);
    }
  }
  for (; j < n_end; ++j) tile_any<T, MR, 1>(a, row_bytes, i0, j);
}

template <DType T>
void matmul_lowbit_typed(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  const int64_t row_bytes = a.k / tensor::dtype_block_size(T) * tensor::dtype_block_bytes(T);
  for (int64_t jb = n_begin; jb < n_end; jb += 32) {
    const int64_t je = min64(jb + 32, n_end);
    for_row_chunks(a.m, [&](auto rows, int64_t i) {
      rows_lowbit<T, decltype(rows)::kValue>(a, row_bytes, i, jb, je);
    });
  }
}

// ---- prefill: dequantize to bf16 ----

template <DType T>
void dequant_rows_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0, int64_t kc,
                       uint16_t* out, int64_t out_stride) {
  const int64_t row_bytes = a.k / tensor::dtype_block_size(T) * tensor::dtype_block_bytes(T);
  for (int64_t r = 0; r < rows; ++r) {
    const char* row = static_cast<const char*>(a.w) + (j0 + r) * row_bytes;
    uint16_t* o = out + r * out_stride;
    for (int64_t g = k0 / 256; g * 256 < k0 + kc; ++g) {
      QGroup q;
      unpack<T>(row, a.k, g, q);
      alignas(64) float fa[16], fb[16];
      _mm512_store_ps(fa, q.a);
      _mm512_store_ps(fb, q.b);
      const int64_t left = k0 + kc - g * 256;  // values of this group inside the tile
#pragma GCC unroll 4
      for (int z = 0; z < 4; ++z) {
        if (64 * z >= left) break;
        __m512 w[4];
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          __m512 u = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
              c == 0   ? _mm512_castsi512_si128(q.u[z])
              : c == 1 ? _mm512_extracti32x4_epi32(q.u[z], 1)
              : c == 2 ? _mm512_extracti32x4_epi32(q.u[z], 2)
                       : _mm512_extracti32x4_epi32(q.u[z], 3)));
          w[c] = _mm512_fmsub_ps(u, _mm512_set1_ps(fa[4 * z + c]), _mm512_set1_ps(fb[4 * z + c]));
        }
        uint16_t* dst = o + (g * 256 - k0) + 64 * z;
        __m512i lo = bf16_from_f32x2(w[1], w[0]);
        __m512i hi = bf16_from_f32x2(w[3], w[2]);
        const int64_t n = min64(64, left - 64 * z);
        _mm512_mask_storeu_epi16(dst, tail_mask32(n), lo);
        if (n > 32) _mm512_mask_storeu_epi16(dst + 32, tail_mask32(n - 32), hi);
      }
    }
  }
}

// The types matmul_lowbit_range has kernels for (every_lowbit_type()).
using LowbitDtypes =
    DtypeList<DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kQ2_K,
              DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS>;

}  // namespace

void avx512_matmul_lowbit_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  for_dtype_in(LowbitDtypes{}, a.w_dtype,
               [&]<DType T>() { matmul_lowbit_typed<T>(a, n_begin, n_end); });
}

void avx512_dequant_lowbit_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0,
                                int64_t kc, uint16_t* out, int64_t out_stride) {
  for_dtype_in(LowbitDtypes{}, a.w_dtype,
               [&]<DType T>() { dequant_rows_bf16<T>(a, j0, rows, k0, kc, out, out_stride); });
}

void avx512_x_to_q8_groups(const float* x, int64_t rows, int64_t k, int64_t k_pad256, DType w_dtype,
                           const Q8GroupsOut& out) {
  const int64_t x_block = lowbit_x_block(w_dtype);
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    int8_t* qr = out.q + r * k_pad256;
    float* sr = out.scale + r * (k_pad256 / 4);
    float* s16 = out.sum16 + r * (k_pad256 / 16);
    int32_t* n4 = out.nsum4 + r * (k_pad256 / 4);
    float* f4 = out.fsum4 + r * (k_pad256 / 4);
    float block_d = 0.0f;
    for (int64_t b = 0; b < k_pad256 / 32; ++b) {
      if (b * 32 % x_block == 0) {  // d of values [32 b, min(32 b + x_block, k))
        __m512 amax = _mm512_setzero_ps();
        for (int64_t v = 32 * b; v < min64(32 * b + x_block, k); v += 32) {
          amax = _mm512_max_ps(amax, abs_max32(xr + v));
        }
        block_d = _mm512_reduce_max_ps(amax) / 127.0f;
      }
      float d = 0.0f;
      __m128i q0 = _mm_setzero_si128(), q1 = _mm_setzero_si128();
      int32_t sum0 = 0, sum1 = 0;
      if (b * 32 < k) {
        d = block_d;
        quantize32_with(xr + b * 32, d, &q0, &q1);
        sum0 = _mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(q0));
        sum1 = _mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(q1));
      }
      const int64_t slot = b / 8 * 8 + lowbit_x_chunk_slot(w_dtype, b % 8);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + slot * 32), q0);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + slot * 32 + 16), q1);
      _mm256_storeu_ps(sr + (slot / 2) * 16 + (slot % 2) * 8, _mm256_set1_ps(d));
      s16[2 * b] = d * static_cast<float>(sum0);
      s16[2 * b + 1] = d * static_cast<float>(sum1);
    }
    // Per 4 values: -Σ q (int32) and d * Σ q (f32), in the lane layout of
    // vpdpbusd over 64 values (the scale lanes above); per 16: -Σ q.
    int32_t* n16 = out.nsum16 + r * (k_pad256 / 16);
    for (int64_t v = 0; v < k_pad256; v += 64) {
      __m512i xv = _mm512_loadu_si512(qr + v);
      __m512i s4 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, xv);
      const __m512i neg4 = _mm512_sub_epi32(_mm512_setzero_si512(), s4);
      _mm512_storeu_si512(n4 + v / 4, neg4);
      _mm512_storeu_ps(f4 + v / 4, _mm512_mul_ps(_mm512_cvtepi32_ps(s4), _mm512_loadu_ps(sr + v / 4)));
      alignas(64) int32_t lanes[16];
      _mm512_store_si512(lanes, neg4);
      for (int i = 0; i < 4; ++i) {
        n16[v / 16 + i] = lanes[4 * i] + lanes[4 * i + 1] + lanes[4 * i + 2] + lanes[4 * i + 3];
      }
    }
  }
}

}  // namespace strata::ops::cpu::STRATA_AVX512_NS
