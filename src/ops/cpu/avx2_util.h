// Helpers shared by the AVX2 translation units (avx2.cc, avx2_quant.cc,
// avx2_panels.cc), and the table entries the last two define. Include only
// from files compiled with the AVX2 flags (see ops/CMakeLists.txt); the
// helpers are inline, in an unnamed namespace.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "ops/cpu/kernels.h"

namespace strata::ops::cpu {

// Table entries defined in avx2_quant.cc and avx2_panels.cc (see KernelTable).
void avx2_matmul_lowbit_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end);
void avx2_x_to_q8_groups(const float* x, int64_t rows, int64_t k, int64_t k_pad256,
                         tensor::DType w_dtype, const Q8GroupsOut& out);
void avx2_matmul_panels_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end);
// The same kernel built with AVX-VNNI (avx2_vnni_panels.cc): call only where
// cpu_features().avx_vnni.
void avx2_vnni_matmul_panels_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end);
void avx2_x_to_q8_blocks(const float* x, int64_t rows, int64_t k, int8_t* q, float* d,
                         int32_t* corr);

namespace {

#define STRATA_INLINE inline __attribute__((always_inline))

STRATA_INLINE int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Writes y[(i0 + i) * n + j] for the MR rows of a tile whose outputs are
// each two 8-lane chains: (c0 + c1), its lanes summed as (l0+l4 + l2+l6) +
// (l1+l5 + l3+l7), plus extra[i] (when given) and the bias. The same order
// for every tile.
template <int MR>
STRATA_INLINE void store_two_chains(const __m256 (&acc)[MR][2], const float* extra,
                                    const MatmulArgs& a, int64_t i0, int64_t j) {
  for (int i = 0; i < MR; ++i) {
    const __m256 v = _mm256_add_ps(acc[i][0], acc[i][1]);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    float out = _mm_cvtss_f32(s);
    if (extra != nullptr) out += extra[i];
    if (a.bias != nullptr) out += a.bias[j];
    a.y[(i0 + i) * a.n + j] = out;
  }
}

// The 32 values at x quantized with scale d: round-to-nearest-even(x * (1 /
// d)), saturated to int8, in order (x_to_q8_groups, x_to_q8_blocks).
STRATA_INLINE __m256i quantize32(const float* x, float d) {
  const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  __m256i i32[4];
  for (int s = 0; s < 4; ++s)
    i32[s] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * s), id));
  // packs work per 128-bit lane: put the groups of four back in order.
  const __m256i p8 =
      _mm256_packs_epi16(_mm256_packs_epi32(i32[0], i32[1]), _mm256_packs_epi32(i32[2], i32[3]));
  return _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// max |x[0, n)|, n % 8 == 0.
STRATA_INLINE float abs_max(const float* x, int64_t n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  for (int64_t v = 0; v < n; v += 8)
    m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + v), abs_mask));
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}

}  // namespace
}  // namespace strata::ops::cpu
