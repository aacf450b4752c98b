// Weights in 16-row panels (panels.h: Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K), AVX2: the avx2 table's int8 kernel for every m
// (decode and prefill; the table has no prefill GEMM), and its x_to_q8_blocks.
// Compiled with the AVX2 flags (ops/CMakeLists.txt).
//
// The panels are the AVX512-VNNI kernel's (avx512_panels.cc), and so are the
// sums: each output's exact int32 block sum Σ w q (the K-quants: super-block
// sum Σ scale w q, and Σ min (-Σq)), then per block (super-block) in k order
//   acc = fma(float(sum), d_w * d_x, acc)        (one f32 lane per output)
// with the same operations, so a row's result has that kernel's bits.
// Without vpdpbusd the sums are built from vpmaddubsw (unsigned codes times
// int8 x, two products per int16 lane) and vpmaddwd:
//   - 32 bytes of a 64-byte panel line are 4 k values of 8 weight rows (a
//     "half": rows 0-7 or 8-15), so one vpmaddubsw with 4 broadcast bytes of
//     x gives each row two int16 partial sums;
//   - as many of those are added as int16 as stay below 2^15 (Q4_0 / Q4_K:
//     8, a whole 32-value block; Q5_0 / Q5_K: 4; Q6_K: 2; Q8_0 and the IQ4
//     levels: 1), then vpmaddwd adds each row's pair into an int32 lane,
//     multiplied by ones, or by the row's integer sub-block scale in both
//     words (the K-quants, IQ4_XS), which is exact;
//   - Q8_0 and the IQ4 levels are signed (-128..127): |w| against x carrying
//     w's sign (vpsignb), as the avx2 table's row-major kernels do. The
//     unsigned codes with a zero point (Q4_0: w = u - 8, Q5_0: u - 16, Q6_K:
//     u - 32, Q3_K: u - 4) are seeded with -z Σq, as on AVX-512.
// Tiles are MR x rows by one half (MR = 3, 4: two passes over the panel) or by
// both halves (MR = 1, 2), so their int16 and int32 partial sums and f32
// accumulators fit the 16 ymm registers.
//
// Built a second time with AVX-VNNI (avx2_vnni_panels.cc defines
// STRATA_AVX2_VNNI; Alder Lake and later Intel cores without AVX-512): the
// signed types' tiles of 3-4 x rows (kUseVnni) then sum with vpdpbusd on
// their codes + 128 seeded with -128 Σq, as on AVX-512 (IQ4_XS's sub-block
// sums scaled by vpmulld). The same integers, so the same bits.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "ops/cpu/avx2_util.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/panels.h"
#include "tensor/quant_blocks.h"

namespace strata::ops::cpu {
namespace {

using tensor::DType;

#ifdef STRATA_AVX2_VNNI
constexpr bool kVnni = true;
#else
constexpr bool kVnni = false;
#endif

// Each weight line is prefetched into L2 this far ahead in the panel stream,
// as the AVX-512 panel kernel does.
constexpr int64_t kPanelPrefetchBytes = 16384;
STRATA_INLINE void prefetch_panel(const uint8_t* line) {
  _mm_prefetch(reinterpret_cast<const char*>(line) + kPanelPrefetchBytes, _MM_HINT_T1);
}

STRATA_INLINE __m256i broadcast_x4(const int8_t* x) {
  int32_t four;
  std::memcpy(&four, x, 4);
  return _mm256_set1_epi32(four);
}

// Rows 8 h .. 8 h + 7 of a 64-byte panel line (4 bytes each).
STRATA_INLINE __m256i half_line(const uint8_t* line, int h) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(line + 32 * h));
}

// Bits [from, from + width) of each byte of v at [to, to + width), the rest
// cleared (`mask` = the moved bits at their new place). A 16-bit shift keeps
// each byte's own bits there while both ranges lie inside a byte. (`from` and
// `to` are constants once the caller's loops are unrolled.)
STRATA_INLINE __m256i move_bits(__m256i v, int from, int to, char mask) {
  const __m256i s = from <= to ? _mm256_slli_epi16(v, to - from) : _mm256_srli_epi16(v, from - to);
  return _mm256_and_si256(s, _mm256_set1_epi8(mask));
}

// The IQ4_NL levels of 4-bit codes: signed, or + 128 as unsigned.
STRATA_INLINE __m256i iq4_levels(__m256i nibbles, bool plus128) {
  const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tensor::kIq4Values));
  const __m256i table = _mm256_broadcastsi128_si256(levels);
  return _mm256_shuffle_epi8(
      plus128 ? _mm256_xor_si256(table, _mm256_set1_epi8(static_cast<char>(0x80))) : table,
      nibbles);
}

// Types with signed codes (-128..127): |w| against x with w's sign
// (vpmaddubsw), or w + 128 with a -128 Σq seed (vpdpbusd).
template <DType D>
constexpr bool kSignedCodes = D == DType::kQ8_0 || D == DType::kIQ4_NL || D == DType::kIQ4_XS;

// The tiles of the VNNI build that sum with vpdpbusd: the signed types (the
// unsigned codes keep vpmaddubsw, whose int16 sums need one vpmaddwd per
// block; on Zen 5, vpdpbusd ran Q4_0 no faster and Q5_0, Q6_K, Q2_K 10-25%
// slower) in tiles of 3-4 x rows (at m = 1, 2 it read the weights 20% slower
// from DRAM on Zen 5, though faster from cache). BENCHMARKS.md, "AVX2 panels".
template <DType D, int MR>
constexpr bool kUseVnni = kVnni&& kSignedCodes<D>&& MR >= 3;

// Types whose block (sub-block) sums are scaled by an integer per row.
template <DType D>
constexpr bool kScaledSums =
    D == DType::kIQ4_XS || D == DType::kQ4_K || D == DType::kQ5_K || D == DType::kQ6_K;

// vpmaddubsw results added as int16 before one vpmaddwd (see the top).
template <DType D>
constexpr int kInt16Terms = D == DType::kQ4_0 || D == DType::kQ4_K   ? 8
                            : D == DType::kQ5_0 || D == DType::kQ5_K ? 4
                            : D == DType::kQ6_K                      ? 2
                                                                     : 1;

// A 32-value panel block (a Q4_K / Q5_K / Q6_K sub-block alike) has 8
// operands s = 0..7, each 4 k values of every row. Operand s reads line
// block_line<D>(s)'s low or high nibbles (Q8_0: the whole line) and meets x
// bytes [block_x_offset<D>(s), + 4) of the block. Q6_K takes the low
// nibbles (values 0-15, scale of its first 16-value sub-block) first, then the
// high ones, so that each int16 pair of terms shares a scale.
template <DType D>
constexpr int block_line(int s) {
  return D == DType::kQ8_0 ? s : D == DType::kQ6_K ? s % 4 : s / 2;
}
template <DType D>
constexpr bool block_high_nibbles(int s) {
  return D == DType::kQ6_K ? s >= 4 : s % 2 == 1;
}
template <DType D>
constexpr int block_x_offset(int s) {
  return D == DType::kQ8_0 ? 4 * s : 16 * block_high_nibbles<D>(s) + 4 * block_line<D>(s);
}

// Operand s of the block at `codes`, rows of half h: unsigned codes u (Q4_0,
// Q5_0, the K-quants; the signed types with kPlus128: w + 128), or signed
// codes w (Q8_0: u - 128; IQ4: the level).
template <DType D, bool kPlus128 = false>
STRATA_INLINE __m256i block_operand(const uint8_t* codes, int s, int h) {
  if constexpr (D == DType::kQ8_0) {
    const __m256i u = half_line(codes + 64 * s, h);
    return kPlus128 ? u : _mm256_xor_si256(u, _mm256_set1_epi8(static_cast<char>(0x80)));
  } else {
    const int line = block_line<D>(s);
    const bool high = block_high_nibbles<D>(s);
    const __m256i bytes = half_line(codes + 64 * line, h);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i u =
        high ? _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4) : _mm256_and_si256(bytes, m4);
    if constexpr (D == DType::kQ5_0 || D == DType::kQ5_K) {
      // The fifth-bit line: bit 2 line (+ 1 for the high nibbles) to bit 4.
      u = _mm256_or_si256(u, move_bits(half_line(codes + 4 * 64, h), 2 * line + high, 4, 0x10));
    } else if constexpr (D == DType::kQ6_K) {
      // Top-bit line 4 (low nibbles) or 5 (high): bits 2 line, 2 line + 1 to 4, 5.
      u = _mm256_or_si256(u, move_bits(half_line(codes + (4 + high) * 64, h), 2 * line, 4, 0x30));
    } else if constexpr (D == DType::kIQ4_NL || D == DType::kIQ4_XS) {
      u = iq4_levels(u, kPlus128);
    }
    return u;
  }
}

// x pointers of MR rows (each at the block's first byte).
template <int MR>
using XRows = const int8_t* [MR];

#ifdef STRATA_AVX2_VNNI
// add_block_products with vpdpbusd: the unscaled types in two chains per
// output (even and odd operands; integer sums, so the split changes no bit).
template <DType D, int MR, int NH>
STRATA_INLINE void add_block_products_vnni(const uint8_t* codes, const XRows<MR>& xb, int h0,
                                           const __m256i (&mul)[2][NH], const int32_t (&seed)[MR],
                                           __m256i (&sum)[MR][NH]) {
  constexpr int kClass = D == DType::kQ6_K ? 4 : 8;  // operands per scale
  __m256i part[MR][NH];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) part[i][h] = _mm256_setzero_si256();
  }
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    __m256i w[NH];
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) w[h] = block_operand<D, true>(codes, s, h0 + h);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m256i x = broadcast_x4(xb[i] + block_x_offset<D>(s));
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) {
        if constexpr (!kScaledSums<D>) {
          if (s % 2 == 0) {
            sum[i][h] = _mm256_dpbusd_avx_epi32(sum[i][h], w[h], x);
          } else {
            part[i][h] = _mm256_dpbusd_avx_epi32(part[i][h], w[h], x);
          }
        } else {
          if (s % kClass == 0) part[i][h] = _mm256_set1_epi32(seed[i]);
          part[i][h] = _mm256_dpbusd_avx_epi32(part[i][h], w[h], x);
          if (s % kClass == kClass - 1) {
            sum[i][h] =
                _mm256_add_epi32(sum[i][h], _mm256_mullo_epi32(part[i][h], mul[s / kClass][h]));
          }
        }
      }
    }
  }
  if constexpr (!kScaledSums<D>) {
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) sum[i][h] = _mm256_add_epi32(sum[i][h], part[i][h]);
    }
  }
}
#endif

// add_block_products with vpmaddubsw: int32 lanes of vpmaddwd with
// mul[c][h] (c = 0; Q6_K: 0 for the low nibbles, 1 for the high).
template <DType D, int MR, int NH>
STRATA_INLINE void add_block_products_maddubs(const uint8_t* codes, const XRows<MR>& xb, int h0,
                                              const __m256i (&mul)[2][NH], __m256i (&sum)[MR][NH]) {
  constexpr int kTerms = kInt16Terms<D>;
  __m256i part[MR][NH];
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    __m256i w[NH], wabs[NH];
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) {
      w[h] = block_operand<D>(codes, s, h0 + h);
      if constexpr (kSignedCodes<D>) wabs[h] = _mm256_abs_epi8(w[h]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m256i x = broadcast_x4(xb[i] + block_x_offset<D>(s));
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) {
        const __m256i p = kSignedCodes<D> ? _mm256_maddubs_epi16(wabs[h], _mm256_sign_epi8(x, w[h]))
                                          : _mm256_maddubs_epi16(w[h], x);
        part[i][h] = s % kTerms == 0 ? p : _mm256_add_epi16(part[i][h], p);
        if (s % kTerms == kTerms - 1) {
          const int c = D == DType::kQ6_K ? s / 4 : 0;
          sum[i][h] = _mm256_add_epi32(sum[i][h], _mm256_madd_epi16(part[i][h], mul[c][h]));
        }
      }
    }
  }
}

// Adds the products of a 32-value block (codes at `codes`, halves h0 ..
// h0 + NH - 1) with MR x rows into sum[i][h]: vpdpbusd sums where kUseVnni
// (kScaledSums types: per class, seeded with seed[i], IQ4_XS's -128 Σq,
// times mul), else vpmaddubsw's.
template <DType D, int MR, int NH>
STRATA_INLINE void add_block_products(const uint8_t* codes, const XRows<MR>& xb, int h0,
                                      const __m256i (&mul)[2][NH], const int32_t (&seed)[MR],
                                      __m256i (&sum)[MR][NH]) {
  if constexpr (kUseVnni<D, MR>) {
#ifdef STRATA_AVX2_VNNI  // kUseVnni is false elsewhere
    add_block_products_vnni<D, MR, NH>(codes, xb, h0, mul, seed, sum);
#endif
  } else {
    (void)seed;  // vpmaddubsw's seeds are the callers' (block_seed)
    add_block_products_maddubs<D, MR, NH>(codes, xb, h0, mul, sum);
  }
}

// The int32 seed of a 32-value block's sum, -z Σq for the code offset z
// (w = u - z), from corr = -128 Σq; 0 for the signed codes.
template <DType D, int MR>
STRATA_INLINE int32_t block_seed(int32_t corr) {
  if constexpr (D == DType::kQ4_0) return corr / 16;  // -8 Σq
  if constexpr (D == DType::kQ5_0) return corr / 8;   // -16 Σq
  return kUseVnni<D, MR> ? corr : 0;                  // Q8_0, IQ4_NL as w + 128
}

// The f16 scales of rows 8 h .. 8 h + 7 at `scales` (16 f16 per panel).
STRATA_INLINE __m256 half_scales(const uint8_t* scales, int h) {
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(scales + 16 * h)));
}

// Sub-block scales of rows 8 h .. 8 h + 7 (one byte each at `bytes` + 8 h)
// as int32 lanes: `both` with the scale in both 16-bit words (vpmaddwd of a
// row's int16 pair), `low` with it in the low word and 0 above (vpmaddwd
// against a broadcast int32 whose value fits an int16).
template <bool kSigned>
STRATA_INLINE __m256i scale_lanes(const uint8_t* bytes, int h) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + 8 * h));
  return kSigned ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
}
STRATA_INLINE __m256i in_both_words(__m256i v) {
  return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(v, 16));
}
STRATA_INLINE __m256i in_low_word(__m256i v) {
  return _mm256_and_si256(v, _mm256_set1_epi32(0xFFFF));
}
// Integer scales v (int32 lanes) as add_block_products' mul: in both words
// for vpmaddwd, as they are for vpmulld (kUseVnni).
template <DType D, int MR>
STRATA_INLINE __m256i scale_operand(__m256i v) {
  return kUseVnni<D, MR> ? v : in_both_words(v);
}

// The f32 step of x block b for MR x rows: acc += float(sum) * d_w * d_x,
// d_w the rows' f16 at `scales`.
template <int MR, int NH>
STRATA_INLINE void add_block_step(const MatmulArgs& a, const uint8_t* scales, int64_t i0, int64_t b,
                                  int h0, const __m256i (&sum)[MR][NH], __m256 (&acc)[MR][NH]) {
  const int64_t blocks = a.k / 32;
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) {
    const __m256 dw = half_scales(scales, h0 + h);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      acc[i][h] = _mm256_fmadd_ps(
          _mm256_cvtepi32_ps(sum[i][h]),
          _mm256_mul_ps(dw, _mm256_set1_ps(a.x_q8_d[(i0 + i) * blocks + b])), acc[i][h]);
    }
  }
}

// ---- the 32-value types: Q8_0, Q4_0, Q5_0, IQ4_NL ----

template <DType D, int MR, int NH>
STRATA_INLINE void block32(const MatmulArgs& a, const uint8_t* codes, const uint8_t* scales,
                           int64_t i0, int64_t b, int h0, __m256 (&acc)[MR][NH]) {
  const int64_t blocks = a.k / 32;
  if (h0 == 0) {
    for (int line = 0; line < panel_block_codes(D) / 64; ++line) prefetch_panel(codes + 64 * line);
  }
  XRows<MR> xb;
  __m256i sum[MR][NH];
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i mul[2][NH];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    xb[i] = a.x_q8s + (i0 + i) * a.k + b * 32;
    const __m256i seed = _mm256_set1_epi32(block_seed<D, MR>(a.x_q8_corr[(i0 + i) * blocks + b]));
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) sum[i][h] = seed;
  }
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) mul[0][h] = mul[1][h] = ones;
  const int32_t no_seed[MR] = {};
  add_block_products<D, MR, NH>(codes, xb, h0, mul, no_seed, sum);
  add_block_step<MR, NH>(a, scales, i0, b, h0, sum, acc);
}

// ---- IQ4_XS: sub-block s of super-block g is an IQ4_NL block (x block
// 8 g + s) whose sum is scaled by the row's scale - 32 (in vpmaddwd), then
// the same f32 step with the super-block's d ----

template <int MR, int NH>
STRATA_INLINE void iq4_xs_group(const MatmulArgs& a, const uint8_t* group, int64_t i0, int64_t g,
                                int h0, __m256 (&acc)[MR][NH]) {
  const int64_t blocks = a.k / 32;
  if (h0 == 0) {
    for (int64_t line = 0; line < kIq4XsPanelGroupBytes; line += 64) prefetch_panel(group + line);
  }
#pragma GCC unroll 1
  for (int s = 0; s < 8; ++s) {
    const int64_t b = 8 * g + s;
    XRows<MR> xb;
    __m256i sum[MR][NH], mul[2][NH];
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) {
      mul[0][h] = mul[1][h] = scale_operand<DType::kIQ4_XS, MR>(
          scale_lanes<true>(group + kIq4XsPanelScales + s * kPanelRows, h0 + h));
    }
    int32_t seed[MR];  // kUseVnni: the levels + 128 against x
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      seed[i] = kUseVnni<DType::kIQ4_XS, MR> ? a.x_q8_corr[(i0 + i) * blocks + b] : 0;
      xb[i] = a.x_q8s + (i0 + i) * a.k + b * 32;
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) sum[i][h] = _mm256_setzero_si256();
    }
    add_block_products<DType::kIQ4_XS, MR, NH>(group + kIq4XsPanelCodes + s * 256, xb, h0, mul,
                                               seed, sum);
    add_block_step<MR, NH>(a, group, i0, b, h0, sum, acc);
  }
}

// ---- the K-quants: x per 256 values (x_to_q8_groups), one int32 sum per
// super-block ----

// The start of a K-quant super-block at `group`: its lines prefetched ahead
// (in the first pass over the panel) and the int32 sums zeroed.
template <DType D, int MR, int NH>
STRATA_INLINE void k_group_start(const uint8_t* group, int h0, __m256i (&isum)[MR][NH],
                                 __m256i (&imin)[MR][NH]) {
  if (h0 == 0) {
    for (int64_t line = 0; line < k_panel_group_bytes(D); line += 64) prefetch_panel(group + line);
  }
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) isum[i][h] = imin[i][h] = _mm256_setzero_si256();
  }
}

// acc += float(isum) * d_w * d_x, then (kMins) acc += float(imin) * dmin_w *
// d_x, with d_w, dmin_w the rows' f16 at group, group + 32: the AVX-512
// kernel's order.
template <bool kMins, int MR, int NH>
STRATA_INLINE void k_group_finish(const MatmulArgs& a, const uint8_t* group, int64_t i0, int64_t g,
                                  int h0, const __m256i (&isum)[MR][NH],
                                  const __m256i (&imin)[MR][NH], __m256 (&acc)[MR][NH]) {
  const int64_t kp = a.k_pad256;
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) {
    const __m256 d = half_scales(group, h0 + h);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m256 dx = _mm256_set1_ps(a.x_q8_scale[(i0 + i) * (kp / 4) + g * 64]);
      acc[i][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][h]), _mm256_mul_ps(d, dx), acc[i][h]);
      if constexpr (kMins) {
        const __m256 dmin = half_scales(group + 32, h0 + h);
        acc[i][h] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin[i][h]), _mm256_mul_ps(dmin, dx), acc[i][h]);
      }
    }
  }
}

// Q4_K / Q5_K / Q6_K: sub-block p of super-block g as a 32-value block,
// scaled in vpmaddwd; Q4_K / Q5_K's min term Σ_p min_p (-Σq over p) after the
// super-block, Q6_K's -32 Σq per 16 values as a seed.
template <DType D, int MR, int NH>
STRATA_INLINE void k32_group(const MatmulArgs& a, const uint8_t* group, int64_t i0, int64_t g,
                             int h0, __m256 (&acc)[MR][NH]) {
  constexpr bool kQ6 = D == DType::kQ6_K;
  constexpr int64_t kCodes = panel_block_codes(D);
  const int64_t kp = a.k_pad256;
  __m256i isum[MR][NH], imin[MR][NH];
  k_group_start<D, MR, NH>(group, h0, isum, imin);
#pragma GCC unroll 1
  for (int p = 0; p < 8; ++p) {
    XRows<MR> xb;
    __m256i mul[2][NH];
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) {
      if constexpr (kQ6) {
        const uint8_t* sc = group + kQ6KPanelScales + 2 * p * kPanelRows;
        const __m256i s0 = scale_lanes<true>(sc, h0 + h);
        const __m256i s1 = scale_lanes<true>(sc + kPanelRows, h0 + h);
        mul[0][h] = in_both_words(s0);
        mul[1][h] = in_both_words(s1);
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
          // -32 Σq of each 16 values times its scale: nsum (|.| < 2^12) in
          // a word, 32 scale in the other.
          const int32_t* nsum = a.x_q8_nsum16 + (i0 + i) * (kp / 16) + g * 16 + 2 * p;
          const __m256i n2 = _mm256_set1_epi32(static_cast<int32_t>(
              (static_cast<uint32_t>(nsum[0]) & 0xFFFFu) | (static_cast<uint32_t>(nsum[1]) << 16)));
          const __m256i s32 =
              _mm256_or_si256(in_low_word(_mm256_slli_epi32(s0, 5)), _mm256_slli_epi32(s1, 21));
          isum[i][h] = _mm256_add_epi32(isum[i][h], _mm256_madd_epi16(n2, s32));
        }
      } else {
        mul[0][h] = mul[1][h] =
            in_both_words(scale_lanes<false>(group + kK45PanelScales + p * kPanelRows, h0 + h));
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) xb[i] = a.x_q8s + (i0 + i) * kp + g * 256 + 32 * p;
    const int32_t no_seed[MR] = {};
    add_block_products<D, MR, NH>(group + kK45PanelCodes + p * kCodes, xb, h0, mul, no_seed, isum);
  }
  if constexpr (!kQ6) {
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const int32_t* nsum = a.x_q8_nsum16 + (i0 + i) * (kp / 16) + g * 16;
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) {
        __m256i m = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int p = 0; p < 8; ++p) {
          const __m256i mn = scale_lanes<false>(group + kK45PanelMins + p * kPanelRows, h0 + h);
          m = _mm256_add_epi32(
              m, _mm256_madd_epi16(mn, _mm256_set1_epi32(nsum[2 * p] + nsum[2 * p + 1])));
        }
        imin[i][h] = m;
      }
    }
  }
  k_group_finish<!kQ6, MR, NH>(a, group, i0, g, h0, isum, imin, acc);
}

// Q2_K / Q3_K: sub-block j (x positions [16 j, 16 j + 16) in
// lowbit_x_chunk_slot() order) is codes line j: plane e = bits 2 e, 2 e + 1
// of each byte, against x bytes 16 j + 4 e (Q3_K: its third bit from high-bit
// line j / 2, bit 4 (j % 2) + e, at bit 2). Its int16 sum Σ u q times the
// row's scale into the super-block sum; Q3_K's -4 Σq and Q2_K's min term
// per sub-block alike.
template <DType D, int MR, int NH>
STRATA_INLINE void k_group(const MatmulArgs& a, const uint8_t* group, int64_t i0, int64_t g, int h0,
                           __m256 (&acc)[MR][NH]) {
  constexpr bool kQ2 = D == DType::kQ2_K;
  const int64_t kp = a.k_pad256;
  __m256i isum[MR][NH], imin[MR][NH];
  k_group_start<D, MR, NH>(group, h0, isum, imin);
#pragma GCC unroll 1
  for (int j = 0; j < 16; ++j) {
    __m256i u[NH][4], sc[NH], lo[NH];
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) {
      const __m256i line = half_line(group + kKPanelCodes + j * 64, h0 + h);
#pragma GCC unroll 4
      for (int e = 0; e < 4; ++e) u[h][e] = move_bits(line, 2 * e, 0, 3);
      if constexpr (!kQ2) {
        const __m256i high = half_line(group + kKPanelHighBits + j / 2 * 64, h0 + h);
#pragma GCC unroll 4
        for (int e = 0; e < 4; ++e) {
          u[h][e] = _mm256_or_si256(u[h][e], move_bits(high, 4 * (j % 2) + e, 2, 4));
        }
      }
      const __m256i bytes = kQ2 ? scale_lanes<false>(group + kKPanelScales + j * kPanelRows, h0 + h)
                                : scale_lanes<true>(group + kKPanelScales + j * kPanelRows, h0 + h);
      sc[h] = in_both_words(kQ2 ? _mm256_and_si256(bytes, _mm256_set1_epi32(15)) : bytes);
      lo[h] = kQ2 ? _mm256_srli_epi32(bytes, 4) : in_low_word(bytes);  // Q2_K: the min
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const int8_t* xb = a.x_q8s + (i0 + i) * kp + g * 256 + 16 * j;
      const int32_t nsum = a.x_q8_nsum16[(i0 + i) * (kp / 16) + g * 16 + j];  // -Σq
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) {
        __m256i part = _mm256_maddubs_epi16(u[h][0], broadcast_x4(xb));
#pragma GCC unroll 3
        for (int e = 1; e < 4; ++e) {
          part = _mm256_add_epi16(part, _mm256_maddubs_epi16(u[h][e], broadcast_x4(xb + 4 * e)));
        }
        isum[i][h] = _mm256_add_epi32(isum[i][h], _mm256_madd_epi16(part, sc[h]));
        if constexpr (kQ2) {
          imin[i][h] =
              _mm256_add_epi32(imin[i][h], _mm256_madd_epi16(lo[h], _mm256_set1_epi32(nsum)));
        } else {  // -4 Σq times the scale
          isum[i][h] =
              _mm256_add_epi32(isum[i][h], _mm256_madd_epi16(lo[h], _mm256_set1_epi32(4 * nsum)));
        }
      }
    }
  }
  k_group_finish<kQ2, MR, NH>(a, group, i0, g, h0, isum, imin, acc);
}

// The panel of weight rows [j0, j0 + 16), halves h0 .. h0 + NH - 1, against
// x rows [i0, i0 + MR).
template <DType D, int MR, int NH>
void panel_tile(const MatmulArgs& a, const uint8_t* panel, int64_t i0, int64_t j0, int h0) {
  __m256 acc[MR][NH];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) acc[i][h] = _mm256_setzero_ps();
  }
  if constexpr (D == DType::kQ2_K || D == DType::kQ3_K) {
    for (int64_t g = 0; g < a.k / 256; ++g) {
      k_group<D, MR, NH>(a, panel + g * k_panel_group_bytes(D), i0, g, h0, acc);
    }
  } else if constexpr (panels_read_x_groups(D)) {  // Q4_K, Q5_K, Q6_K
    for (int64_t g = 0; g < a.k / 256; ++g) {
      k32_group<D, MR, NH>(a, panel + g * k_panel_group_bytes(D), i0, g, h0, acc);
    }
  } else if constexpr (D == DType::kIQ4_XS) {
    for (int64_t g = 0; g < a.k / 256; ++g) {
      iq4_xs_group<MR, NH>(a, panel + g * kIq4XsPanelGroupBytes, i0, g, h0, acc);
    }
  } else {
    const int64_t blocks = a.k / 32;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* codes = panel + panel_codes_offset(D, b);
      const uint8_t* scales = panel + panel_scales_offset(D, blocks, b);
      block32<D, MR, NH>(a, codes, scales, i0, b, h0, acc);
    }
  }
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) {
    const int64_t j = j0 + 8 * (h0 + h);
    const int64_t valid = a.n - j;
    if (valid <= 0) continue;
    const __m256i mask =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(min64(valid, 8))),
                           _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 bias =
        a.bias != nullptr ? _mm256_maskload_ps(a.bias + j, mask) : _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m256 y = a.bias != nullptr ? _mm256_add_ps(acc[i][h], bias) : acc[i][h];
      _mm256_maskstore_ps(a.y + (i0 + i) * a.n + j, mask, y);
    }
  }
}

// MR rows of x against one panel: both halves at once for MR <= 2, else one
// half per pass (the second skipped where the panel has no rows there).
template <DType D, int MR>
STRATA_INLINE void panel_chunk_of(const MatmulArgs& a, const uint8_t* panel, int64_t i0,
                                  int64_t j0) {
  if constexpr (MR <= 2) {
    panel_tile<D, MR, 2>(a, panel, i0, j0, 0);
  } else {
    panel_tile<D, MR, 1>(a, panel, i0, j0, 0);
    if (j0 + 8 < a.n) panel_tile<D, MR, 1>(a, panel, i0, j0, 1);
  }
}

template <DType D>
void panels_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  const int64_t p_bytes = panel_bytes(D, a.k);
  for (int64_t j0 = n_begin; j0 < n_end; j0 += kPanelRows) {
    const uint8_t* panel = a.w_panels + j0 / kPanelRows * p_bytes;
    int64_t i0 = 0;
    for (; i0 + 4 <= a.m; i0 += 4) panel_chunk_of<D, 4>(a, panel, i0, j0);
    switch (a.m - i0) {
      case 3:
        panel_chunk_of<D, 3>(a, panel, i0, j0);
        break;
      case 2:
        panel_chunk_of<D, 2>(a, panel, i0, j0);
        break;
      case 1:
        panel_chunk_of<D, 1>(a, panel, i0, j0);
        break;
      default:
        break;
    }
  }
}

}  // namespace

#ifdef STRATA_AVX2_VNNI
void avx2_vnni_matmul_panels_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
#else
void avx2_matmul_panels_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
#endif
  switch (a.w_dtype) {
    case DType::kQ8_0:
      return panels_range<DType::kQ8_0>(a, n_begin, n_end);
    case DType::kQ4_0:
      return panels_range<DType::kQ4_0>(a, n_begin, n_end);
    case DType::kIQ4_NL:
      return panels_range<DType::kIQ4_NL>(a, n_begin, n_end);
    case DType::kQ5_0:
      return panels_range<DType::kQ5_0>(a, n_begin, n_end);
    case DType::kIQ4_XS:
      return panels_range<DType::kIQ4_XS>(a, n_begin, n_end);
    case DType::kQ2_K:
      return panels_range<DType::kQ2_K>(a, n_begin, n_end);
    case DType::kQ3_K:
      return panels_range<DType::kQ3_K>(a, n_begin, n_end);
    case DType::kQ4_K:
      return panels_range<DType::kQ4_K>(a, n_begin, n_end);
    case DType::kQ5_K:
      return panels_range<DType::kQ5_K>(a, n_begin, n_end);
    case DType::kQ6_K:
      return panels_range<DType::kQ6_K>(a, n_begin, n_end);
    default:
      __builtin_trap();  // has_panel_layout() types only
  }
}

#ifndef STRATA_AVX2_VNNI
void avx2_x_to_q8_blocks(const float* x, int64_t rows, int64_t k, int8_t* q, float* d,
                         int32_t* corr) {
  const int64_t blocks = k / 32;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = x + r * k + b * 32;
      const float db = abs_max(xb, 32) / 127.0f;
      const __m256i qv = quantize32(xb, db);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + r * k + b * 32), qv);
      // Σq: vpmaddubsw of ones with q gives pairs, vpmaddwd sums them.
      const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), qv);
      const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
      __m128i s = _mm_add_epi32(_mm256_castsi256_si128(quads), _mm256_extracti128_si256(quads, 1));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
      d[r * blocks + b] = db;
      corr[r * blocks + b] = -128 * _mm_cvtsi128_si32(s);
    }
  }
}

#endif

}  // namespace strata::ops::cpu
