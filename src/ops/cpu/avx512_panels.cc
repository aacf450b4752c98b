// Weights in 16-row panels (panels.h: Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K), AVX512-VNNI: the int8 kernel (every decode m, and prefill unless
// calibration chose a bf16-tile candidate: uses_panels()) and the bf16 tiles
// of those candidates. Compiled with the AVX-512 flags (ops/CMakeLists.txt); only
// intrinsics and POD arguments here, as in avx512.cc.
//
// The int8 kernel: x is quantized per 32 values as llama.cpp's Q8_0 activations
// (x_to_q8_blocks: int8 q, f32 d, and -128 Σq per block). A panel line holds
// 4 k values of 16 weight rows as unsigned bytes u (Q8_0: w + 128; Q4_0: the
// nibble, w = u - 8, two values per byte; Q5_0: the nibble and its fifth bit,
// w = u - 16; IQ4_NL and IQ4_XS: the level + 128 looked up from the nibble
// by vpshufb), so one vpdpbusd with 4 broadcast bytes of x adds Σ u q for 16
// outputs; seeded with -128 Σq (Q4_0: -8 Σq, Q5_0: -16 Σq) they give
// each output's exact block sum Σ w q (|Σ| < 2^24, exact in f32 too; IQ4_XS
// multiplies it by the row's sub-block scale - 32, still exact). Each
// output is then, block by block in k order,
//   acc = fma(float(Σ w q), d_w * d_x, acc)       (one f32 lane per output)
// and y = acc (+ bias). (The K-quants instead sum a whole 256-value
// super-block in int32 against x quantized per 256 values, as their
// row-major kernels do: k_group and k32_group below.) That is a function of the output's row of
// weights and x row alone, so a row's result does not depend on m, on the x rows it shares a tile
// with, or on how n is split across threads.
#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstdint>
#include <cstring>

#include "ops/cpu/avx512_util.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/panels.h"

namespace strata::ops::cpu::STRATA_AVX512_NS {
namespace {

// Each weight line is prefetched into L2 this far ahead in the panel stream
// (as the row-major decode kernels do: BENCHMARKS.md, "Prefetching further").
constexpr int64_t kPanelPrefetchBytes = 16384;
STRATA_INLINE void prefetch_panel(const uint8_t* line) {
  _mm_prefetch(reinterpret_cast<const char*>(line) + kPanelPrefetchBytes, _MM_HINT_T1);
}

STRATA_INLINE __m512i broadcast_x4(const int8_t* x) {
  int32_t four;
  std::memcpy(&four, x, 4);
  return _mm512_set1_epi32(four);
}

// The unsigned codes of a nibble panel line (Q4_0, IQ4_NL): line g of a
// block holds, for its 16 rows, values 4 g .. 4 g + 3 in the low nibbles
// and 16 + 4 g .. in the high ones.
template <tensor::DType D>
STRATA_INLINE void nibble_line_codes(const uint8_t* line, __m512i& lo, __m512i& hi) {
  const __m512i bytes = _mm512_load_si512(line);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  lo = _mm512_and_si512(bytes, m4);
  hi = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), m4);
  if constexpr (D == tensor::DType::kIQ4_NL) {
    lo = _mm512_shuffle_epi8(iq4_table(), lo);
    hi = _mm512_shuffle_epi8(iq4_table(), hi);
  }
}

// Q5_0's fifth bits of nibble line g at bit 4 of each byte, ORed into its
// codes: bit 2 g of the fifth-bit line's bytes for the low nibbles, 2 g + 1
// for the high ones (panels.h). A 16-bit shift by at most 4 moves each
// byte's own bit to bit 4, and the mask drops the rest.
// (`bit` is a constant once the caller's loop is unrolled.)
STRATA_INLINE __m512i with_fifth_bit(__m512i nibbles, __m512i high, int bit) {
  const __m512i at4 =
      bit <= 4 ? _mm512_slli_epi16(high, 4 - bit) : _mm512_srli_epi16(high, bit - 4);
  return _mm512_ternarylogic_epi32(nibbles, at4, _mm512_set1_epi8(0x10), 0xF8);  // a | (b & c)
}

// The int32 seed of a block sum, Σ w q - Σ u q = -z Σq for the code offset z
// (w = u - z), from the block's corr = -128 Σq (exact divisions: corr % 128 == 0).
template <tensor::DType D>
STRATA_INLINE int32_t block_seed(int32_t corr) {
  if constexpr (D == tensor::DType::kQ4_0) return corr / 16;  // -8 Σq
  if constexpr (D == tensor::DType::kQ5_0) return corr / 8;   // -16 Σq
  return corr;
}

// The exact int32 sums Σ w q of block b (codes at `codes`) for 16 weight
// rows and MR x rows. With few x rows each sum runs as two chains (Q8_0:
// lines 0-3 and 4-7; nibbles: low and high ones) for the core's sake;
// integer sums are exact, so the split does not change any bit.
template <tensor::DType D, int MR>
STRATA_INLINE void block_sums(const MatmulArgs& a, const uint8_t* codes, const int8_t* xq,
                              const int32_t* xc, int64_t blocks, int64_t b, __m512i (&sum)[MR]) {
  constexpr bool kTwoChains = MR <= 4;
  __m512i lo[MR], hi[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    lo[i] = _mm512_set1_epi32(block_seed<D>(xc[i * blocks + b]));
    if constexpr (kTwoChains) hi[i] = _mm512_setzero_si512();
  }
  __m512i high;  // Q5_0's fifth-bit line
  if constexpr (D == tensor::DType::kQ5_0) {
    prefetch_panel(codes + 4 * 64);
    high = _mm512_load_si512(codes + 4 * 64);
  }
  // Two lines per step: Q8_0's g and g + 4 (values 4 g.. and 16 + 4 g..),
  // or one nibble line's two halves.
#pragma GCC unroll 8
  for (int g = 0; g < 4; ++g) {
    __m512i w0, w1;
    prefetch_panel(codes + g * 64);
    if constexpr (D == tensor::DType::kQ8_0) {
      prefetch_panel(codes + (g + 4) * 64);
      w0 = _mm512_load_si512(codes + g * 64);
      w1 = _mm512_load_si512(codes + (g + 4) * 64);
    } else {
      nibble_line_codes<D>(codes + g * 64, w0, w1);
    }
    if constexpr (D == tensor::DType::kQ5_0) {
      w0 = with_fifth_bit(w0, high, 2 * g);
      w1 = with_fifth_bit(w1, high, 2 * g + 1);
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const int8_t* xb = xq + i * a.k + b * 32;
      lo[i] = _mm512_dpbusd_epi32(lo[i], w0, broadcast_x4(xb + g * 4));
      if constexpr (kTwoChains) {
        hi[i] = _mm512_dpbusd_epi32(hi[i], w1, broadcast_x4(xb + 16 + g * 4));
      } else {
        lo[i] = _mm512_dpbusd_epi32(lo[i], w1, broadcast_x4(xb + 16 + g * 4));
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) sum[i] = kTwoChains ? _mm512_add_epi32(lo[i], hi[i]) : lo[i];
}

// Adds block b (codes at `codes`, 16 f16 scales at `scales`) of MR x rows
// into acc.
template <tensor::DType D, int MR>
STRATA_INLINE void panel_block(const MatmulArgs& a, const uint8_t* codes, const uint16_t* scales,
                               const int8_t* xq, const float* xd, const int32_t* xc, int64_t blocks,
                               int64_t b, __m512 (&acc)[MR]) {
  __m512i sum[MR];
  block_sums<D, MR>(a, codes, xq, xc, blocks, b, sum);
  const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[i]),
                             _mm512_mul_ps(dw, _mm512_set1_ps(xd[i * blocks + b])), acc[i]);
  }
}

// IQ4_XS (panels.h): each sub-block is an IQ4_NL block (x block 8 g + s)
// whose exact sum is multiplied by the row's 6-bit scale - 32 (still exact:
// |Σ| <= 32 * 127 * 128 and |scale| <= 32 keep it below 2^24) before the
// same f32 step with the super-block's d.
template <int MR>
STRATA_INLINE void iq4_xs_group(const MatmulArgs& a, const uint8_t* group, const int8_t* xq,
                                const float* xd, const int32_t* xc, int64_t blocks, int64_t g,
                                __m512 (&acc)[MR]) {
  for (int64_t line = 0; line < kIq4XsPanelCodes; line += 64) prefetch_panel(group + line);
  const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(group)));
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    const int64_t b = 8 * g + s;
    __m512i sum[MR];
    block_sums<tensor::DType::kIQ4_NL, MR>(a, group + kIq4XsPanelCodes + s * 256, xq, xc, blocks, b,
                                           sum);
    const __m512i sc = _mm512_cvtepi8_epi32(_mm_load_si128(
        reinterpret_cast<const __m128i*>(group + kIq4XsPanelScales + s * kPanelRows)));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_mullo_epi32(sum[i], sc)),
                               _mm512_mul_ps(dw, _mm512_set1_ps(xd[i * blocks + b])), acc[i]);
    }
  }
}

// ---- Q2_K, Q3_K (panels.h): x per 256 values (x_to_q8_groups) ----
//
// Sub-block i of a super-block is x positions [16 i, 16 i + 16) (a.x_q8s, in
// lowbit_x_chunk_slot() order) and codes line i. Its exact sum S_i = Σ u q
// (Q3_K: Σ (u - 4) q, seeded with -4 Σq) is below 16 * 4 * 128 in
// magnitude, an int16: vpdpwssd multiplies its low word by the row's integer
// scale (whose high word is 0) into the super-block's sum Σ_i s_i S_i
// (|.| < 2^23, exact in f32). Q2_K's min term Σ_i m_i (-Σq_i) goes the same
// way. Then, per super-block,
//   acc = fma(float(Σ s S), d_w * d_x, acc)
//   acc = fma(float(Σ m (-Σq)), dmin_w * d_x, acc)      (Q2_K)

// The unsigned codes of sub-block i: u[j] holds positions 16 i + 4 j + c
// (bytes c of each row's dword). (`i` is a constant once the caller's loop
// is unrolled.)
template <tensor::DType D>
STRATA_INLINE void k_sub_block_codes(const uint8_t* group, int i, __m512i (&u)[4]) {
  const __m512i line = _mm512_load_si512(group + kKPanelCodes + i * 64);
  const __m512i m3 = _mm512_set1_epi8(3);
  u[0] = _mm512_and_si512(line, m3);
  u[1] = _mm512_and_si512(_mm512_srli_epi16(line, 2), m3);
  u[2] = _mm512_and_si512(_mm512_srli_epi16(line, 4), m3);
  u[3] = _mm512_and_si512(_mm512_srli_epi16(line, 6), m3);
  if constexpr (D == tensor::DType::kQ3_K) {
    // Bit 4 (i % 2) + j of the high-bit line's bytes, moved to bit 2 by a
    // 16-bit shift of at most 5 (each byte's own bit lands there), then
    // u | (that & 4).
    const __m512i high = _mm512_load_si512(group + kKPanelHighBits + i / 2 * 64);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const int bit = 4 * (i % 2) + j;
      const __m512i at2 = bit < 2    ? _mm512_slli_epi16(high, 2 - bit)
                          : bit == 2 ? high
                                     : _mm512_srli_epi16(high, bit - 2);
      u[j] = _mm512_ternarylogic_epi32(u[j], at2, _mm512_set1_epi8(4), 0xF8);  // a | (b & c)
    }
  }
}

// The start and end of a K-quant super-block g (at `group`, `bytes` long)
// for MR x rows [i0, i0 + MR): its lines prefetched ahead and the int32
// sums zeroed; then acc += float(isum) * d_w * d_x (+ float(imin) *
// dmin_w * d_x where the type has mins), d_w and dmin_w the rows' f16 at
// group and group + 32.
template <int MR>
STRATA_INLINE void k_group_start(const uint8_t* group, int64_t bytes, __m512i (&isum)[MR],
                                 __m512i (&imin)[MR]) {
  for (int64_t line = 0; line < bytes; line += 64) prefetch_panel(group + line);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) isum[r] = imin[r] = _mm512_setzero_si512();
}
template <bool kMins, int MR>
STRATA_INLINE void k_group_finish(const MatmulArgs& a, const uint8_t* group, int64_t i0, int64_t g,
                                  const __m512i (&isum)[MR], const __m512i (&imin)[MR],
                                  __m512 (&acc)[MR]) {
  const int64_t kp = a.k_pad256;
  const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(group)));
  __m512 dmin;
  if constexpr (kMins) {
    dmin = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(group + 32)));
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    const __m512 dx = _mm512_set1_ps(a.x_q8_scale[(i0 + r) * (kp / 4) + g * 64]);
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r]), _mm512_mul_ps(d, dx), acc[r]);
    if constexpr (kMins) {
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin[r]), _mm512_mul_ps(dmin, dx), acc[r]);
    }
  }
}

// Adds super-block g (at `group`) of MR x rows [i0, i0 + MR) into acc.
template <tensor::DType D, int MR>
STRATA_INLINE void k_group(const MatmulArgs& a, const uint8_t* group, int64_t i0, int64_t g,
                           __m512 (&acc)[MR]) {
  constexpr bool kQ2 = D == tensor::DType::kQ2_K;
  const int64_t kp = a.k_pad256;
  __m512i isum[MR], imin[MR];
  k_group_start<MR>(group, k_panel_group_bytes(D), isum, imin);
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    __m512i u[4];
    k_sub_block_codes<D>(group, i, u);
    const __m128i bytes =
        _mm_load_si128(reinterpret_cast<const __m128i*>(group + kKPanelScales + i * kPanelRows));
    __m512i sc, mn;
    if constexpr (kQ2) {  // scale | min << 4
      const __m512i both = _mm512_cvtepu8_epi32(bytes);
      sc = _mm512_and_si512(both, _mm512_set1_epi32(15));
      mn = _mm512_srli_epi32(both, 4);
    } else {  // int8, as int16 words with a zero high word
      sc = _mm512_and_si512(_mm512_cvtepi8_epi32(bytes), _mm512_set1_epi32(0xFFFF));
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const int8_t* xb = a.x_q8s + (i0 + r) * kp + g * 256 + 16 * i;
      const int32_t nsum = a.x_q8_nsum16[(i0 + r) * (kp / 16) + g * 16 + i];  // -Σq
      __m512i s = kQ2 ? _mm512_setzero_si512() : _mm512_set1_epi32(nsum * 4);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) s = _mm512_dpbusd_epi32(s, u[j], broadcast_x4(xb + 4 * j));
      isum[r] = _mm512_dpwssd_epi32(isum[r], s, sc);
      if constexpr (kQ2) imin[r] = _mm512_dpwssd_epi32(imin[r], mn, _mm512_set1_epi32(nsum));
    }
  }
  k_group_finish<kQ2, MR>(a, group, i0, g, isum, imin, acc);
}

// Q6_K's top 2 bits of top-bit line `high` at bits 4, 5 of the codes of
// nibble line L (bits 2 L, 2 L + 1 of each byte, moved by a 16-bit shift of
// at most 4 that keeps each byte's own bits there), ORed in.
STRATA_INLINE __m512i with_top_bits(__m512i nibbles, __m512i high, int line) {
  const __m512i at4 =
      line <= 2 ? _mm512_slli_epi16(high, 4 - 2 * line) : _mm512_srli_epi16(high, 2 * line - 4);
  return _mm512_ternarylogic_epi32(nibbles, at4, _mm512_set1_epi8(0x30), 0xF8);  // a | (b & c)
}

// Q4_K / Q5_K / Q6_K (panels.h) by 32-value blocks p of unsigned codes u:
// Q4_K and Q5_K sub-block p as a Q4_0 (Q5_0) block, w = d * scale * u -
// dmin * min; Q6_K's block p as Q4_0's nibbles plus two lines of top bits,
// w = d * scale * (u - 32) with a scale per 16 values. The sums Σ u q over
// values 32 p + [0, 16) and + [16, 32) (the low and high nibbles; Q6_K
// seeded with -32 Σq) are int16 for Q4_K (|.| <= 16 * 15 * 127), so vpdpwssd
// scales them into the super-block sum; Q5_K's and Q6_K's may not be, and
// take vpmulld. The super-block sum stays exact in int32 (it is rounded
// once, to f32, if above 2^24); the min term and the f32 steps are Q2_K's.
template <tensor::DType D, int MR>
STRATA_INLINE void k32_group(const MatmulArgs& a, const uint8_t* group, int64_t i0, int64_t g,
                             __m512 (&acc)[MR]) {
  constexpr bool kQ5 = D == tensor::DType::kQ5_K, kQ6 = D == tensor::DType::kQ6_K;
  constexpr int64_t kCodes = panel_block_codes(D);
  const int64_t kp = a.k_pad256;
  __m512i isum[MR], imin[MR];
  k_group_start<MR>(group, k_panel_group_bytes(D), isum, imin);
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) {
    const uint8_t* codes = group + kK45PanelCodes + p * kCodes;
    __m512i lo[MR], hi[MR], high, top0, top1;
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      if constexpr (kQ6) {  // -32 Σq of each half
        const int32_t* nsum = a.x_q8_nsum16 + (i0 + r) * (kp / 16) + g * 16 + 2 * p;
        lo[r] = _mm512_set1_epi32(nsum[0] * 32);
        hi[r] = _mm512_set1_epi32(nsum[1] * 32);
      } else {
        lo[r] = hi[r] = _mm512_setzero_si512();
      }
    }
    if constexpr (kQ5) high = _mm512_load_si512(codes + 4 * 64);
    if constexpr (kQ6) {
      top0 = _mm512_load_si512(codes + 4 * 64);
      top1 = _mm512_load_si512(codes + 5 * 64);
    }
#pragma GCC unroll 4
    for (int line = 0; line < 4; ++line) {
      __m512i w0, w1;
      nibble_line_codes<tensor::DType::kQ4_0>(codes + line * 64, w0, w1);
      if constexpr (kQ5) {
        w0 = with_fifth_bit(w0, high, 2 * line);
        w1 = with_fifth_bit(w1, high, 2 * line + 1);
      }
      if constexpr (kQ6) {
        w0 = with_top_bits(w0, top0, line);
        w1 = with_top_bits(w1, top1, line);
      }
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const int8_t* xb = a.x_q8s + (i0 + r) * kp + g * 256 + 32 * p;
        lo[r] = _mm512_dpbusd_epi32(lo[r], w0, broadcast_x4(xb + 4 * line));
        hi[r] = _mm512_dpbusd_epi32(hi[r], w1, broadcast_x4(xb + 16 + 4 * line));
      }
    }
    if constexpr (kQ6) {  // int8 scales of sub-blocks 2 p, 2 p + 1
      const uint8_t* sc = group + kQ6KPanelScales + 2 * p * kPanelRows;
      const __m512i sc0 =
          _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)));
      const __m512i sc1 =
          _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + kPanelRows)));
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        isum[r] = _mm512_add_epi32(_mm512_add_epi32(isum[r], _mm512_mullo_epi32(lo[r], sc0)),
                                   _mm512_mullo_epi32(hi[r], sc1));
      }
    } else {
      const __m512i sc = _mm512_cvtepu8_epi32(_mm_load_si128(
          reinterpret_cast<const __m128i*>(group + kK45PanelScales + p * kPanelRows)));
      const __m512i mn = _mm512_cvtepu8_epi32(
          _mm_load_si128(reinterpret_cast<const __m128i*>(group + kK45PanelMins + p * kPanelRows)));
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        if constexpr (kQ5) {
          isum[r] =
              _mm512_add_epi32(isum[r], _mm512_mullo_epi32(_mm512_add_epi32(lo[r], hi[r]), sc));
        } else {
          isum[r] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(isum[r], lo[r], sc), hi[r], sc);
        }
        const int32_t* nsum = a.x_q8_nsum16 + (i0 + r) * (kp / 16) + g * 16 + 2 * p;  // -Σq
        imin[r] = _mm512_dpwssd_epi32(imin[r], mn, _mm512_set1_epi32(nsum[0] + nsum[1]));
      }
    }
  }
  k_group_finish<!kQ6, MR>(a, group, i0, g, isum, imin, acc);
}

// The panel of weight rows [j0, j0 + 16) against x rows [i0, i0 + MR).
template <tensor::DType D, int MR>
void panel_tile(const MatmulArgs& a, const uint8_t* panel, int64_t i0, int64_t j0) {
  constexpr int64_t kCodes = panel_block_codes(D);
  const int64_t blocks = a.k / 32;
  __m512 acc[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  if constexpr (D == tensor::DType::kQ2_K || D == tensor::DType::kQ3_K) {
    for (int64_t g = 0; g < a.k / 256; ++g) {
      k_group<D, MR>(a, panel + g * k_panel_group_bytes(D), i0, g, acc);
    }
  } else if constexpr (panels_read_x_groups(D)) {  // Q4_K, Q5_K, Q6_K
    for (int64_t g = 0; g < a.k / 256; ++g) {
      k32_group<D, MR>(a, panel + g * k_panel_group_bytes(D), i0, g, acc);
    }
  } else if constexpr (D == tensor::DType::kIQ4_XS) {
    const int8_t* xq = a.x_q8s + i0 * a.k;
    const float* xd = a.x_q8_d + i0 * blocks;
    const int32_t* xc = a.x_q8_corr + i0 * blocks;
    for (int64_t g = 0; g < a.k / 256; ++g) {
      iq4_xs_group<MR>(a, panel + g * kIq4XsPanelGroupBytes, xq, xd, xc, blocks, g, acc);
    }
  } else {
    const int8_t* xq = a.x_q8s + i0 * a.k;
    const float* xd = a.x_q8_d + i0 * blocks;
    const int32_t* xc = a.x_q8_corr + i0 * blocks;
    int64_t b = 0;
    for (; b + 2 <= blocks; b += 2) {
      const uint8_t* pair = panel + panel_codes_offset(D, b);
      prefetch_panel(pair + 2 * kCodes);
      const uint16_t* scales = reinterpret_cast<const uint16_t*>(pair + 2 * kCodes);
      panel_block<D, MR>(a, pair, scales, xq, xd, xc, blocks, b, acc);
      panel_block<D, MR>(a, pair + kCodes, scales + kPanelRows, xq, xd, xc, blocks, b + 1, acc);
    }
    if (b < blocks) {
      const uint8_t* lone = panel + panel_codes_offset(D, b);
      panel_block<D, MR>(a, lone, reinterpret_cast<const uint16_t*>(lone + kCodes), xq, xd, xc,
                         blocks, b, acc);
    }
  }
  const __mmask16 valid = tail_mask16(a.n - j0);
  const __m512 bias =
      a.bias != nullptr ? _mm512_maskz_loadu_ps(valid, a.bias + j0) : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    const __m512 y = a.bias != nullptr ? _mm512_add_ps(acc[i], bias) : acc[i];
    _mm512_mask_storeu_ps(a.y + (i0 + i) * a.n + j0, valid, y);
  }
}

// x rows per panel pass: 8 keeps each row's accumulator and block sum in
// registers (the K-quants: 4, with their super-block sums); more rows pass
// over the panel again (from L2).
template <tensor::DType D>
constexpr int panel_chunk_rows() {
  return panels_read_x_groups(D) ? 4 : 8;
}

template <tensor::DType D, int MR>
STRATA_INLINE void panel_chunk(const MatmulArgs& a, int64_t rows, const uint8_t* panel, int64_t i0,
                               int64_t j0) {
  if constexpr (MR >= 1) {
    if (rows == MR) return panel_tile<D, MR>(a, panel, i0, j0);
    panel_chunk<D, MR - 1>(a, rows, panel, i0, j0);
  }
}

template <tensor::DType D>
void panels_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  const int64_t p_bytes = panel_bytes(D, a.k);
  for (int64_t j0 = n_begin; j0 < n_end; j0 += kPanelRows) {
    const uint8_t* panel = a.w_panels + j0 / kPanelRows * p_bytes;
    constexpr int kRows = panel_chunk_rows<D>();
    for (int64_t i0 = 0; i0 < a.m; i0 += kRows) {
      panel_chunk<D, kRows>(a, min64(kRows, a.m - i0), panel, i0, j0);
    }
  }
}

// Row values 0-15 and 16-31 from unsigned codes u0, u1 (u8) as u * a - b
// (values 0-15 with a0, b0, 16-31 with a1, b1), rounded once (the
// row-major low-bit tiles' fmsub, zero signs included), as 32 bf16 at out.
STRATA_INLINE void store_codes_bf16(__m128i u0, __m128i u1, float a0, float b0, float a1, float b1,
                                    uint16_t* out) {
  const __m512 lo = _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(u0)),
                                    _mm512_set1_ps(a0), _mm512_set1_ps(b0));
  const __m512 hi = _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(u1)),
                                    _mm512_set1_ps(a1), _mm512_set1_ps(b1));
  _mm512_storeu_si512(out, bf16_from_f32x2(hi, lo));
}
STRATA_INLINE void store_codes_bf16(__m128i u0, __m128i u1, float a, float b, uint16_t* out) {
  store_codes_bf16(u0, u1, a, b, a, b, out);
}

// Row values 0-15 and 16-31 (int8 codes q0, q1) times d, as 32 bf16 at out.
STRATA_INLINE void store_row_bf16(__m128i q0, __m128i q1, float d, uint16_t* out) {
  const __m512 dr = _mm512_set1_ps(d);
  const __m512 lo = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0)), dr);
  const __m512 hi = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1)), dr);
  _mm512_storeu_si512(out, bf16_from_f32x2(hi, lo));
}

}  // namespace

void avx512_x_to_q8_blocks(const float* x, int64_t rows, int64_t k, int8_t* q, float* d,
                           int32_t* corr) {
  const int64_t blocks = k / 32;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      __m128i q0, q1;
      d[r * blocks + b] = quantize_block32(x + r * k + b * 32, &q0, &q1);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + r * k + b * 32), q0);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + r * k + b * 32 + 16), q1);
      const __m512i s = _mm512_add_epi32(_mm512_cvtepi8_epi32(q0), _mm512_cvtepi8_epi32(q1));
      corr[r * blocks + b] = -128 * _mm512_reduce_add_epi32(s);
    }
  }
}

namespace {

// The blocks of a tile of a weight in panels of type D: for the panels of
// rows [j0, j0 + rows) (j0 % 16 == 0) and the blocks of k-values [k0, k0 + kc),
// calls block(codes, d, r0, nr, b) with the block's first line, its 16 scales
// as f32, the panel's first row in the tile and its rows in the tile.
template <tensor::DType D, class Block>
STRATA_INLINE void for_each_panel_block(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0,
                                        int64_t kc, Block&& block) {
  const int64_t blocks = a.k / 32, p_bytes = panel_bytes(D, a.k);
  for (int64_t r0 = 0; r0 < rows; r0 += kPanelRows) {
    const uint8_t* panel = a.w_panels + (j0 + r0) / kPanelRows * p_bytes;
    const int64_t nr = min64(kPanelRows, rows - r0);
    for (int64_t b = k0 / 32; b < (k0 + kc) / 32; ++b) {
      alignas(64) float d[kPanelRows];
      _mm512_store_ps(d, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                             panel + panel_scales_offset(D, blocks, b)))));
      block(panel + panel_codes_offset(D, b), d, r0, nr, b);
    }
  }
}

void dequant_q8_panels_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0, int64_t kc,
                            uint16_t* out, int64_t out_stride) {
  // A block's 8 lines hold dword r = 4 values of row r; row r's 32 bytes are
  // dword r of lines 0..7. Three rounds of two-source permutes transpose the
  // 8 x 16 dwords into 8 registers of two rows each: pairs of lines (qword q
  // = row q's dwords of both), then quads (128-bit chunk c = 4 lines of one
  // row), then rows (256 bits of 8 lines per row).
  const __m512i pair_lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i pair_hi =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512i quad_a = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
  const __m512i quad_b = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
  const __m512i rows_01 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i rows_23 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  const __m512i k80 = _mm512_set1_epi8(static_cast<char>(0x80));
  for_each_panel_block<tensor::DType::kQ8_0>(
      a, j0, rows, k0, kc,
      [&](const uint8_t* codes, const float* d, int64_t r0, int64_t nr, int64_t b) {
        __m512i pairs[2][4];  // [rows 0-7 / 8-15][lines 2p, 2p + 1]
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
          const __m512i g0 = _mm512_load_si512(codes + 2 * p * 64);
          const __m512i g1 = _mm512_load_si512(codes + (2 * p + 1) * 64);
          pairs[0][p] = _mm512_permutex2var_epi32(g0, pair_lo, g1);
          pairs[1][p] = _mm512_permutex2var_epi32(g0, pair_hi, g1);
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 2
          for (int q = 0; q < 2; ++q) {  // rows h * 8 + q * 4 + 0..3
            const __m512i& quad_idx = q == 0 ? quad_a : quad_b;
            const __m512i lines03 = _mm512_permutex2var_epi64(pairs[h][0], quad_idx, pairs[h][1]);
            const __m512i lines47 = _mm512_permutex2var_epi64(pairs[h][2], quad_idx, pairs[h][3]);
#pragma GCC unroll 2
            for (int t = 0; t < 2; ++t) {  // rows r, r + 1
              const int64_t r = h * 8 + q * 4 + t * 2;
              if (r >= nr) continue;
              const __m512i two = _mm512_xor_si512(
                  _mm512_permutex2var_epi64(lines03, t == 0 ? rows_01 : rows_23, lines47), k80);
              uint16_t* row = out + (r0 + r) * out_stride + (b * 32 - k0);
              store_row_bf16(_mm512_extracti32x4_epi32(two, 0), _mm512_extracti32x4_epi32(two, 1),
                             d[r], row);
              if (r + 1 < nr) {
                store_row_bf16(_mm512_extracti32x4_epi32(two, 2), _mm512_extracti32x4_epi32(two, 3),
                               d[r + 1], row + out_stride);
              }
            }
          }
        }
      });
}

// Row r's codes of a nibble panel block (Q4_0, IQ4_NL, Q5_0, and Q4_K's /
// Q5_K's sub-blocks as D = Q4_0 / Q5_0) as unsigned bytes: values 0-15 in
// lo, 16-31 in hi. Its 16 code bytes are dword r of the block's 4 lines (and
// its fifth bits dword r of the fifth line).
template <tensor::DType D>
STRATA_INLINE void panel_row_codes(const uint8_t* codes, int64_t r, __m128i& lo, __m128i& hi) {
  const __m128i m4 = _mm_set1_epi8(0x0F);
  int32_t dw[4];
  for (int g = 0; g < 4; ++g) std::memcpy(&dw[g], codes + g * 64 + r * 4, 4);
  const __m128i bytes = _mm_setr_epi32(dw[0], dw[1], dw[2], dw[3]);
  lo = _mm_and_si128(bytes, m4);
  hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), m4);
  if constexpr (D == tensor::DType::kQ5_0) {
    // Byte 4 g + c of `spread` = the fifth-bit byte c; its bit 2 g
    // (low nibbles) or 2 g + 1 (high) goes to bit 4 by a per-dword shift
    // (a count of 32 shifts to 0).
    int32_t fifth;
    std::memcpy(&fifth, codes + 4 * 64 + r * 4, 4);
    const __m128i spread = _mm_set1_epi32(fifth);
    const __m128i m10 = _mm_set1_epi8(0x10);
    const __m128i lo_bits = _mm_or_si128(_mm_sllv_epi32(spread, _mm_setr_epi32(4, 2, 0, 32)),
                                         _mm_srlv_epi32(spread, _mm_setr_epi32(32, 32, 32, 2)));
    const __m128i hi_bits = _mm_or_si128(_mm_sllv_epi32(spread, _mm_setr_epi32(3, 1, 32, 32)),
                                         _mm_srlv_epi32(spread, _mm_setr_epi32(32, 32, 1, 3)));
    lo = _mm_or_si128(lo, _mm_and_si128(lo_bits, m10));
    hi = _mm_or_si128(hi, _mm_and_si128(hi_bits, m10));
  } else if constexpr (D == tensor::DType::kIQ4_NL) {
    const __m128i table = _mm512_castsi512_si128(iq4_table());  // level + 128
    lo = _mm_shuffle_epi8(table, lo);
    hi = _mm_shuffle_epi8(table, hi);
  }
}

// Nibble panels (Q4_0, IQ4_NL, Q5_0): the values are u * d - z d from the
// unsigned codes, as the row-major tiles compute them (exact in f32; the
// same bf16 bits, zero signs included).
template <tensor::DType D>
void dequant_nibble_panels_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0,
                                int64_t kc, uint16_t* out, int64_t out_stride) {
  constexpr float kZeroPoint = D == tensor::DType::kQ4_0   ? 8.0f
                               : D == tensor::DType::kQ5_0 ? 16.0f
                                                           : 128.0f;
  for_each_panel_block<D>(
      a, j0, rows, k0, kc,
      [&](const uint8_t* codes, const float* d, int64_t r0, int64_t nr, int64_t b) {
        for (int64_t r = 0; r < nr; ++r) {
          __m128i lo, hi;
          panel_row_codes<D>(codes, r, lo, hi);
          store_codes_bf16(lo, hi, d[r], d[r] * kZeroPoint,
                           out + (r0 + r) * out_stride + (b * 32 - k0));
        }
      });
}

// Q4_K / Q5_K / Q6_K panels: block p of row r holds Q4_0 / Q5_0 codes (Q6_K:
// Q4_0's nibbles and top bits from lines 4, 5); its values are u * A - B with
// the row-major tiles' A = scale * d and B = min * dmin (Q6_K: A = d * scale
// per 16 values, B = 32 A), and their one fmsub: the same bf16 bits.
template <tensor::DType D>
void dequant_k32_panels_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0, int64_t kc,
                             uint16_t* out, int64_t out_stride) {
  constexpr bool kQ6 = D == tensor::DType::kQ6_K;
  constexpr tensor::DType kBlock =
      D == tensor::DType::kQ5_K ? tensor::DType::kQ5_0 : tensor::DType::kQ4_0;
  const int64_t p_bytes = panel_bytes(D, a.k);
  for (int64_t r0 = 0; r0 < rows; r0 += kPanelRows) {
    const uint8_t* panel = a.w_panels + (j0 + r0) / kPanelRows * p_bytes;
    const int64_t nr = min64(kPanelRows, rows - r0);
    for (int64_t b = k0 / 32; b < (k0 + kc) / 32; ++b) {
      const uint8_t* group = panel + b / 8 * k_panel_group_bytes(D);
      const int64_t s = b % 8;
      const uint8_t* codes = group + kK45PanelCodes + s * panel_block_codes(D);
      for (int64_t r = 0; r < nr; ++r) {
        uint16_t dh, dminh;
        std::memcpy(&dh, group + r * 2, 2);
        std::memcpy(&dminh, group + 32 + r * 2, 2);
        __m128i lo, hi;
        panel_row_codes<kBlock>(codes, r, lo, hi);
        uint16_t* dst = out + (r0 + r) * out_stride + (b * 32 - k0);
        if constexpr (kQ6) {
          // Top bits: byte c of top line h's dword r, bits 2 L, at bit 4 of
          // byte 4 L + c of lo (h = 0) or hi (h = 1).
          const __m128i shifts = _mm_setr_epi32(0, 2, 4, 6), m3 = _mm_set1_epi8(3);
          int32_t top[2];
          std::memcpy(&top[0], codes + 4 * 64 + r * 4, 4);
          std::memcpy(&top[1], codes + 5 * 64 + r * 4, 4);
          lo = _mm_or_si128(
              lo,
              _mm_slli_epi32(_mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(top[0]), shifts), m3), 4));
          hi = _mm_or_si128(
              hi,
              _mm_slli_epi32(_mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(top[1]), shifts), m3), 4));
          const float d = _cvtsh_ss(dh);
          const float a0 = d * static_cast<float>(static_cast<int8_t>(
                                   group[kQ6KPanelScales + 2 * s * kPanelRows + r]));
          const float a1 = d * static_cast<float>(static_cast<int8_t>(
                                   group[kQ6KPanelScales + (2 * s + 1) * kPanelRows + r]));
          store_codes_bf16(lo, hi, a0, a0 * 32.0f, a1, a1 * 32.0f, dst);
        } else {
          const float fa =
              static_cast<float>(group[kK45PanelScales + s * kPanelRows + r]) * _cvtsh_ss(dh);
          const float fb =
              static_cast<float>(group[kK45PanelMins + s * kPanelRows + r]) * _cvtsh_ss(dminh);
          store_codes_bf16(lo, hi, fa, fb, fa, fb, dst);
        }
      }
    }
  }
}

// IQ4_XS panels: sub-block b = 8 g + s of row r is an IQ4_NL block under
// d * (scale - 32), exact in f32; each value is that times its level, rounded
// once to f32 and then to bf16, as the row-major tiles do (one fmsub).
void dequant_iq4_xs_panels_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0,
                                int64_t kc, uint16_t* out, int64_t out_stride) {
  const int64_t p_bytes = panel_bytes(tensor::DType::kIQ4_XS, a.k);
  const __m128i m4 = _mm_set1_epi8(0x0F);
  const __m128i table = _mm512_castsi512_si128(iq4_table());  // level + 128
  for (int64_t r0 = 0; r0 < rows; r0 += kPanelRows) {
    const uint8_t* panel = a.w_panels + (j0 + r0) / kPanelRows * p_bytes;
    const int64_t nr = min64(kPanelRows, rows - r0);
    for (int64_t b = k0 / 32; b < (k0 + kc) / 32; ++b) {
      const uint8_t* group = panel + b / 8 * kIq4XsPanelGroupBytes;
      const uint8_t* codes = group + kIq4XsPanelCodes + b % 8 * 256;
      for (int64_t r = 0; r < nr; ++r) {
        uint16_t d;
        std::memcpy(&d, group + r * 2, 2);
        const auto scale = static_cast<int8_t>(group[kIq4XsPanelScales + b % 8 * kPanelRows + r]);
        int32_t dw[4];
        for (int line = 0; line < 4; ++line) std::memcpy(&dw[line], codes + line * 64 + r * 4, 4);
        const __m128i bytes = _mm_setr_epi32(dw[0], dw[1], dw[2], dw[3]);
        const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(bytes, m4));
        const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(bytes, 4), m4));
        const float dl = _cvtsh_ss(d) * static_cast<float>(scale);
        store_codes_bf16(lo, hi, dl, dl * 128.0f, out + (r0 + r) * out_stride + (b * 32 - k0));
      }
    }
  }
}

// Q2_K / Q3_K panels: row r's sub-block i (x positions [16 i, 16 i + 16),
// one 16-value sub-block of the weights) is dword r of codes line i (and of
// high-bit line i / 2). Its values are u * A - B with the row-major tiles'
// factors (Q2_K: A = d * scale, B = dmin * min; Q3_K: A = d * (scale - 32),
// B = 4 A) and their one fmsub, so the same bf16 bits.
template <tensor::DType D>
void dequant_k_panels_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0, int64_t kc,
                           uint16_t* out, int64_t out_stride) {
  constexpr bool kQ2 = D == tensor::DType::kQ2_K;
  const int64_t p_bytes = panel_bytes(D, a.k);
  int64_t first_value[16];  // of sub-block i in its super-block
  for (int i = 0; i < 16; ++i) {
    int64_t chunk = 0;
    while (lowbit_x_chunk_slot(D, chunk) != i / 2) ++chunk;
    first_value[i] = 32 * chunk + 16 * (i % 2);
  }
  const __m128i plane_shift = _mm_setr_epi32(0, 2, 4, 6);
  for (int64_t r0 = 0; r0 < rows; r0 += kPanelRows) {
    const uint8_t* panel = a.w_panels + (j0 + r0) / kPanelRows * p_bytes;
    const int64_t nr = min64(kPanelRows, rows - r0);
    for (int64_t g = k0 / 256; g * 256 < k0 + kc; ++g) {
      const uint8_t* group = panel + g * k_panel_group_bytes(D);
      for (int64_t r = 0; r < nr; ++r) {
        uint16_t dh, dminh = 0;
        std::memcpy(&dh, group + r * 2, 2);
        if constexpr (kQ2) std::memcpy(&dminh, group + 32 + r * 2, 2);
        const float d = _cvtsh_ss(dh), dmin = _cvtsh_ss(dminh);
        for (int i = 0; i < 16; ++i) {
          const int64_t v = g * 256 + first_value[i];
          if (v < k0 || v >= k0 + kc) continue;
          int32_t low;
          std::memcpy(&low, group + kKPanelCodes + i * 64 + r * 4, 4);
          __m128i u =
              _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(low), plane_shift), _mm_set1_epi8(3));
          const uint8_t scale = group[kKPanelScales + i * kPanelRows + r];
          float fa, fb;
          if constexpr (kQ2) {
            fa = d * static_cast<float>(scale & 15);
            fb = dmin * static_cast<float>(scale >> 4);
          } else {
            int32_t high;
            std::memcpy(&high, group + kKPanelHighBits + i / 2 * 64 + r * 4, 4);
            const int e = 4 * (i % 2);
            const __m128i bits = _mm_and_si128(
                _mm_srlv_epi32(_mm_set1_epi32(high), _mm_setr_epi32(e, e + 1, e + 2, e + 3)),
                _mm_set1_epi8(1));
            u = _mm_or_si128(u, _mm_slli_epi32(bits, 2));
            fa = d * static_cast<float>(static_cast<int8_t>(scale));
            fb = fa * 4.0f;
          }
          const __m512 w = _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(u)),
                                           _mm512_set1_ps(fa), _mm512_set1_ps(fb));
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (r0 + r) * out_stride + (v - k0)),
                              bf16_from_f32(w));
        }
      }
    }
  }
}

// The bf16 tile of a weight in panels of type D.
template <tensor::DType D>
void dequant_panels_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0, int64_t kc,
                         uint16_t* out, int64_t out_stride) {
  if constexpr (D == tensor::DType::kQ8_0) {
    dequant_q8_panels_bf16(a, j0, rows, k0, kc, out, out_stride);
  } else if constexpr (D == tensor::DType::kIQ4_XS) {
    dequant_iq4_xs_panels_bf16(a, j0, rows, k0, kc, out, out_stride);
  } else if constexpr (D == tensor::DType::kQ2_K || D == tensor::DType::kQ3_K) {
    dequant_k_panels_bf16<D>(a, j0, rows, k0, kc, out, out_stride);
  } else if constexpr (panels_read_x_groups(D)) {  // Q4_K, Q5_K, Q6_K
    dequant_k32_panels_bf16<D>(a, j0, rows, k0, kc, out, out_stride);
  } else {
    dequant_nibble_panels_bf16<D>(a, j0, rows, k0, kc, out, out_stride);
  }
}

// The has_panel_layout() types.
using PanelDtypes = DtypeList<tensor::DType::kQ8_0, tensor::DType::kQ4_0, tensor::DType::kIQ4_NL,
                              tensor::DType::kQ5_0, tensor::DType::kIQ4_XS, tensor::DType::kQ2_K,
                              tensor::DType::kQ3_K, tensor::DType::kQ4_K, tensor::DType::kQ5_K,
                              tensor::DType::kQ6_K>;

}  // namespace

void avx512_matmul_panels_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  const bool known = for_dtype_in(PanelDtypes{}, a.w_dtype,
                                  [&]<tensor::DType D>() { panels_range<D>(a, n_begin, n_end); });
  if (!known) __builtin_trap();  // has_panel_layout() types only
}

void avx512_dequant_panels_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0,
                                int64_t kc, uint16_t* out, int64_t out_stride) {
  const bool known = for_dtype_in(PanelDtypes{}, a.w_dtype, [&]<tensor::DType D>() {
    dequant_panels_bf16<D>(a, j0, rows, k0, kc, out, out_stride);
  });
  if (!known) __builtin_trap();
}

}  // namespace strata::ops::cpu::STRATA_AVX512_NS
