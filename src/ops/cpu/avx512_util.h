// Helpers shared by the AVX-512 translation units (avx512.cc,
// avx512_quant.cc, avx512_panels.cc): horizontal sums in a fixed order, tile
// stores, masks, bf16 pair products and conversions. Include only from files
// compiled with the AVX-512 flags (see ops/CMakeLists.txt); everything here is
// inline, in an unnamed namespace.
//
// Those files are compiled twice: with AVX512-BF16 (the avx512_bf16 table,
// namespace cpu::avx512_bf16) and, with STRATA_AVX512_NO_BF16 defined, for
// CPUs with AVX-512 F/BW/VL and VNNI but no BF16 (Cascade Lake, Ice Lake;
// the avx512_vnni table, namespace cpu::avx512_vnni; avx512_vnni*.cc). The
// only difference is here: dot_bf16_pairs and the bf16 conversions below.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "ops/cpu/kernels.h"
#include "tensor/quant_blocks.h"

#ifdef STRATA_AVX512_NO_BF16
#define STRATA_AVX512_NS avx512_vnni
#else
#define STRATA_AVX512_NS avx512_bf16
#endif

namespace strata::ops::cpu::STRATA_AVX512_NS {

// Dequantizes rows [j0, j0 + rows) x k-values [k0, k0 + kc) of a weight of a
// tensor::is_low_bit_quant() type to bf16 in out [rows, out_stride]; k0 and
// kc are multiples of 256 (kc may end at k). Defined in avx512_quant.cc.
void avx512_dequant_lowbit_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0,
                                int64_t kc, uint16_t* out, int64_t out_stride);
// Table entries defined in avx512_quant.cc (see KernelTable).
void avx512_matmul_lowbit_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end);
void avx512_x_to_q8_groups(const float* x, int64_t rows, int64_t k, int64_t k_pad256,
                           tensor::DType w_dtype, const Q8GroupsOut& out);
// Table entries defined in avx512_panels.cc (see KernelTable).
void avx512_matmul_panels_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end);
void avx512_x_to_q8_blocks(const float* x, int64_t rows, int64_t k, int8_t* q, float* d,
                           int32_t* corr);
// Rows [j0, j0 + rows) x k-values [k0, k0 + kc) of a weight in panels
// (a.w_panels, a.w_dtype; j0 % 16 == 0, k0 and kc multiples of 32) as
// bf16(value * d) in out [rows, out_stride]: the values the row-major tiles give.
void avx512_dequant_panels_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0,
                                int64_t kc, uint16_t* out, int64_t out_stride);

namespace {

#define STRATA_INLINE inline __attribute__((always_inline))

STRATA_INLINE int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// acc + x[2i] w[2i] + x[2i + 1] w[2i + 1] per f32 lane i, x and w 32 bf16
// values each (vdpbf16ps). Without AVX512-BF16: two FMAs on the halves
// widened to f32 (exactly), the odd element first, as Intel documents the
// instruction (each product is exact in f32, so each FMA rounds once). The
// bits then equal the instruction's for normal inputs and sums
// (DispatchTest.Avx512VnniTableComputesTheBf16TablesBits); it flushes
// subnormals, the FMAs keep them.
STRATA_INLINE __m512 dot_bf16_pairs(__m512 acc, __m512i x, __m512i w) {
#ifdef STRATA_AVX512_NO_BF16
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  acc = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(x, high)),
                        _mm512_castsi512_ps(_mm512_and_si512(w, high)), acc);
  return _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(x, 16)),
                         _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)), acc);
#else
  return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w);
#endif
}

#ifdef STRATA_AVX512_NO_BF16
// v rounded to bf16 (to nearest even) in the high 16 bits of each lane, as
// vcvtneps2bf16 rounds: NaN stays a NaN (quiet, sign and top payload kept),
// subnormal inputs become a signed zero.
STRATA_INLINE __m512i bf16_in_high_halves(__m512 v) {
  const __m512i b = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
  const __m512i exponent = _mm512_set1_epi32(0x7F800000);
  const __mmask16 subnormal =
      _mm512_cmpeq_epi32_mask(_mm512_and_si512(b, exponent), _mm512_setzero_si512());
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  r = _mm512_mask_mov_epi32(r, subnormal, _mm512_and_si512(b, _mm512_set1_epi32(INT32_MIN)));
  return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(b, _mm512_set1_epi32(0x00400000)));
}
#endif

// 32 bf16 values: lo's 16 lanes rounded to bf16, then hi's (vcvtne2ps2bf16).
STRATA_INLINE __m512i bf16_from_f32x2(__m512 hi, __m512 lo) {
#ifdef STRATA_AVX512_NO_BF16
  // The high 16-bit halves of lo's lanes, then of hi's.
  const __m512i odd_words =
      _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33,  //
                       31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  return _mm512_permutex2var_epi16(bf16_in_high_halves(lo), odd_words, bf16_in_high_halves(hi));
#else
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
#endif
}

// 16 bf16 values: v's lanes rounded to bf16 (vcvtneps2bf16).
STRATA_INLINE __m256i bf16_from_f32(__m512 v) {
#ifdef STRATA_AVX512_NO_BF16
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_in_high_halves(v), 16));
#else
  return (__m256i)_mm512_cvtneps_pbh(v);
#endif
}

// Runtime dtype to template argument: for_dtype_in(DtypeList<Ds...>{}, t, f)
// calls f.template operator()<D>() (f a lambda []<tensor::DType D>() {...})
// for the D among Ds equal to t, and says whether there was one.
template <tensor::DType... Ds>
struct DtypeList {};
template <tensor::DType... Ds, class F>
bool for_dtype_in(DtypeList<Ds...>, tensor::DType t, F&& f) {
  return ((t == Ds ? (f.template operator()<Ds>(), true) : false) || ...);
}
STRATA_INLINE __mmask16 tail_mask16(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
}
STRATA_INLINE __mmask32 tail_mask32(int64_t left) {
  return left >= 32 ? __mmask32(0xFFFFFFFFu) : __mmask32((1u << left) - 1);
}

// {Σa, Σb, Σc, Σd}; every lane is reduced in the same fixed order.
STRATA_INLINE __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  __m512d abd = _mm512_castps_pd(ab), cdd = _mm512_castps_pd(cd);
  __m512 s = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(abd, cdd)),
                           _mm512_castpd_ps(_mm512_unpackhi_pd(abd, cdd)));
  __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(s),
                            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
  return _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
}

STRATA_INLINE float reduce1(__m512 a) { return _mm_cvtss_f32(reduce4(a, a, a, a)); }

// IQ4's signed levels as a vpshufb table in every 128-bit lane.
STRATA_INLINE __m512i iq4_levels() {
  const auto* levels = reinterpret_cast<const __m128i*>(tensor::kIq4Values);
  return _mm512_broadcast_i32x4(_mm_loadu_si128(levels));
}

// IQ4 levels + 128 (unsigned codes) as a vpshufb table in every 128-bit lane.
STRATA_INLINE __m512i iq4_table() {
  return _mm512_xor_si512(iq4_levels(), _mm512_set1_epi8(static_cast<char>(0x80)));
}

// Stores the NR (1 or 4) reduced sums of one x row: y[0..NR) (= or +=)
// sums (+ bias). Takes the accumulators by value: passing their address would
// make GCC keep the whole accumulator array in memory inside the k loop.
STRATA_INLINE void store_sums4(__m512 a, __m512 b, __m512 c, __m512 d, float* y, const float* bias,
                               bool accumulate) {
  __m128 s = reduce4(a, b, c, d);
  if (accumulate) s = _mm_add_ps(s, _mm_loadu_ps(y));
  if (bias != nullptr) s = _mm_add_ps(s, _mm_loadu_ps(bias));
  _mm_storeu_ps(y, s);
}

STRATA_INLINE void store_sums2(__m512 a, __m512 b, float* y, const float* bias, bool accumulate) {
  __m128 s = reduce4(a, b, a, b);
  for (int r = 0; r < 2; ++r) {
    float v = s[r];
    if (accumulate) v += y[r];
    if (bias != nullptr) v += bias[r];
    y[r] = v;
  }
}

STRATA_INLINE void store_sums1(__m512 a, float* y, const float* bias, bool accumulate) {
  float s = reduce1(a);
  if (accumulate) s += *y;
  if (bias != nullptr) s += *bias;
  *y = s;
}

// Stores the reduced sums of one weight row against four x rows: y[l *
// y_stride] (= or +=) Σ(l-th accumulator) (+ *bias), in store_sums1's order of
// additions, so a column reduced four at a time has the same bits as one
// reduced alone.
STRATA_INLINE void store_column4(__m512 a, __m512 b, __m512 c, __m512 d, float* y, int64_t y_stride,
                                 const float* bias, bool accumulate) {
  __m128 s = reduce4(a, b, c, d);
  for (int l = 0; l < 4; ++l) {
    float v = s[l];
    if (accumulate) v += y[l * y_stride];
    if (bias != nullptr) v += *bias;
    y[l * y_stride] = v;
  }
}

template <int MR, int NR>
STRATA_INLINE void store_tile(const __m512 (&acc)[MR][NR], float* y, int64_t y_stride,
                              const float* bias, bool accumulate) {
  int i0 = 0;
  if constexpr (NR == 1) {  // one weight row: reduce four x rows' sums at once
#pragma GCC unroll 16
    for (; i0 + 4 <= MR; i0 += 4) {
      store_column4(acc[i0][0], acc[i0 + 1][0], acc[i0 + 2][0], acc[i0 + 3][0], y + i0 * y_stride,
                    y_stride, bias, accumulate);
    }
  }
#pragma GCC unroll 16
  for (int i = i0; i < MR; ++i) {
    if constexpr (NR == 4) {
      store_sums4(acc[i][0], acc[i][1], acc[i][2], acc[i][3], y + i * y_stride, bias, accumulate);
    } else if constexpr (NR == 2) {
      store_sums2(acc[i][0], acc[i][1], y + i * y_stride, bias, accumulate);
    } else {
      store_sums1(acc[i][0], y + i * y_stride, bias, accumulate);
    }
  }
}

// x[0..32) quantized to int8 as llama.cpp's Q8_0 activations: returns
// d = max|x| / 127 and q = round-to-nearest-even(x * (1 / d)), saturated
// (vcvtps2dq rounds to nearest even under the default MXCSR; vpmovsdb
// saturates), values 0-15 in *q0 and 16-31 in *q1.
// Lane-wise max|x| of x[0, 32).
STRATA_INLINE __m512 abs_max32(const float* x) {
  return _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x)), _mm512_abs_ps(_mm512_loadu_ps(x + 16)));
}

// q = round-to-nearest-even(x * (1 / d)) for x[0, 32) with the given d.
STRATA_INLINE void quantize32_with(const float* x, float d, __m128i* q0, __m128i* q1) {
  const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  *q0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), id)));
  *q1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 16), id)));
}

STRATA_INLINE float quantize_block32(const float* x, __m128i* q0, __m128i* q1) {
  const float d = _mm512_reduce_max_ps(abs_max32(x)) / 127.0f;
  quantize32_with(x, d, q0, q1);
  return d;
}

template <int MR, int NR>
STRATA_INLINE void zero_tile(__m512 (&acc)[MR][NR]) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_setzero_ps();
}

// A compile-time count of x rows, for for_row_chunks.
template <int N>
struct RowCount {
  static constexpr int kValue = N;
};

// Calls f(RowCount<MR>{}, i0) over the m rows of x in chunks of 4, then one
// chunk of the remaining 1-3 rows.
template <class F>
STRATA_INLINE void for_row_chunks(int64_t m, F&& f) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) f(RowCount<4>{}, i);
  switch (m - i) {
    case 3:
      f(RowCount<3>{}, i);
      break;
    case 2:
      f(RowCount<2>{}, i);
      break;
    case 1:
      f(RowCount<1>{}, i);
      break;
    default:
      break;
  }
}

}  // namespace
}  // namespace strata::ops::cpu::STRATA_AVX512_NS
