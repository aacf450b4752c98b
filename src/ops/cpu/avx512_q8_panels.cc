// Q8_0 on weights in 16-row panels (q8_panels.h), AVX512-VNNI: the int8
// kernel (every decode m, and prefill unless calibration chose a bf16-tile
// candidate: uses_q8_panels()) and the bf16 tiles of those candidates. Compiled
// with the AVX-512 flags (ops/CMakeLists.txt); only intrinsics and POD
// arguments here, as in avx512.cc.
//
// The int8 kernel: x is quantized per 32 values as llama.cpp's Q8_0 activations
// (x_to_q8_blocks: int8 q, f32 d, and -128 Σq per block). A panel line holds
// 4 k values of 16 weight rows as u8 w + 128, so one vpdpbusd with 4
// broadcast bytes of x adds Σ (w + 128) q for 16 outputs; 8 of them seeded
// with -128 Σq give each output's exact block sum Σ w q (|Σ| < 2^24, exact in
// f32 too). Each output is then, block by block in k order,
//   acc = fma(float(Σ w q), d_w * d_x, acc)       (one f32 lane per output)
// and y = acc (+ bias). That is a function of the output's row of weights
// and x row alone, so a row's result does not depend on m, on the x rows it
// shares a tile with, or on how n is split across threads.
#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstdint>
#include <cstring>

#include "ops/cpu/avx512_util.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/q8_panels.h"

namespace strata::ops::cpu {
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

// Adds block b (codes at `codes`, 16 f16 scales at `scales`) of MR x rows
// into acc. With few x rows each row's block sum runs as two chains (groups
// 0-3 and 4-7) for the core's sake; integer sums are exact, so the split
// does not change any bit.
template <int MR>
STRATA_INLINE void panel_block(const MatmulArgs& a, const uint8_t* codes, const uint16_t* scales,
                               const int8_t* xq, const float* xd, const int32_t* xc,
                               int64_t blocks, int64_t b, __m512 (&acc)[MR]) {
  constexpr bool kTwoChains = MR <= 4;
  __m512i lo[MR], hi[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    lo[i] = _mm512_set1_epi32(xc[i * blocks + b]);
    if constexpr (kTwoChains) hi[i] = _mm512_setzero_si512();
  }
#pragma GCC unroll 8
  for (int g = 0; g < 4; ++g) {
    prefetch_panel(codes + g * 64);
    prefetch_panel(codes + (g + 4) * 64);
    const __m512i w0 = _mm512_load_si512(codes + g * 64);
    const __m512i w1 = _mm512_load_si512(codes + (g + 4) * 64);
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
  const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    const __m512i sum = kTwoChains ? _mm512_add_epi32(lo[i], hi[i]) : lo[i];
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                             _mm512_mul_ps(dw, _mm512_set1_ps(xd[i * blocks + b])), acc[i]);
  }
}

// The panel of weight rows [j0, j0 + 16) against x rows [i0, i0 + MR).
template <int MR>
void panel_tile(const MatmulArgs& a, const uint8_t* panel, int64_t i0, int64_t j0) {
  const int64_t blocks = a.k / 32;
  const int8_t* xq = a.x_q8s + i0 * a.k;
  const float* xd = a.x_q8_d + i0 * blocks;
  const int32_t* xc = a.x_q8_corr + i0 * blocks;
  __m512 acc[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    const uint8_t* pair = panel + q8_panel_codes_offset(b);
    prefetch_panel(pair + 2 * kQ8PanelBlockCodes);
    const uint16_t* scales = reinterpret_cast<const uint16_t*>(pair + 2 * kQ8PanelBlockCodes);
    panel_block<MR>(a, pair, scales, xq, xd, xc, blocks, b, acc);
    panel_block<MR>(a, pair + kQ8PanelBlockCodes, scales + kQ8PanelRows, xq, xd, xc, blocks,
                    b + 1, acc);
  }
  if (b < blocks) {
    const uint8_t* lone = panel + q8_panel_codes_offset(b);
    panel_block<MR>(a, lone, reinterpret_cast<const uint16_t*>(lone + kQ8PanelBlockCodes), xq, xd,
                    xc, blocks, b, acc);
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
// registers; more rows pass over the panel again (from L2).
constexpr int64_t kPanelChunkRows = 8;

template <int MR>
STRATA_INLINE void panel_chunk(const MatmulArgs& a, int64_t rows, const uint8_t* panel, int64_t i0,
                               int64_t j0) {
  if constexpr (MR >= 1) {
    if (rows == MR) return panel_tile<MR>(a, panel, i0, j0);
    panel_chunk<MR - 1>(a, rows, panel, i0, j0);
  }
}

// Row values 0-15 and 16-31 (int8 codes) times d, as 32 bf16 at out.
STRATA_INLINE void store_row_bf16(__m128i q0, __m128i q1, float d, uint16_t* out) {
  const __m512 dr = _mm512_set1_ps(d);
  const __m512 lo = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0)), dr);
  const __m512 hi = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1)), dr);
  _mm512_storeu_si512(out, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
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

void avx512_matmul_q8_panels_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  const int64_t panel_bytes = q8_panel_bytes(a.k);
  for (int64_t j0 = n_begin; j0 < n_end; j0 += kQ8PanelRows) {
    const uint8_t* panel = a.w_panels + j0 / kQ8PanelRows * panel_bytes;
    for (int64_t i0 = 0; i0 < a.m; i0 += kPanelChunkRows) {
      panel_chunk<kPanelChunkRows>(a, min64(kPanelChunkRows, a.m - i0), panel, i0, j0);
    }
  }
}

void avx512_dequant_q8_panels_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0,
                                   int64_t kc, uint16_t* out, int64_t out_stride) {
  const int64_t blocks = a.k / 32, panel_bytes = q8_panel_bytes(a.k);
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
  for (int64_t r0 = 0; r0 < rows; r0 += kQ8PanelRows) {
    const uint8_t* panel = a.w_panels + (j0 + r0) / kQ8PanelRows * panel_bytes;
    const int64_t nr = min64(kQ8PanelRows, rows - r0);
    for (int64_t b = k0 / 32; b < (k0 + kc) / 32; ++b) {
      const uint8_t* codes = panel + q8_panel_codes_offset(b);
      alignas(64) float d[kQ8PanelRows];
      _mm512_store_ps(d, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                             panel + q8_panel_scales_offset(blocks, b)))));
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
              store_row_bf16(_mm512_extracti32x4_epi32(two, 2),
                             _mm512_extracti32x4_epi32(two, 3), d[r + 1], row + out_stride);
            }
          }
        }
      }
    }
  }
}

}  // namespace strata::ops::cpu
