// AVX2 kernels (AVX2 + FMA + F16C): the table for x86-64 CPUs without
// AVX-512 BF16 (Zen 2/3, Intel client cores before Ice Lake), which would
// otherwise run the portable kernels. This file alone is compiled with those
// ISA flags (see ops/CMakeLists.txt); nothing here may run unless
// avx2_supported() said yes. Like avx512.cc it includes no library templates
// (only intrinsics, our POD argument structs and local helpers in an
// anonymous namespace), so no AVX2 code can leak into portable callers.
//
// matmul, both modes: each output is an inner product over k in steps of 32
//   values, four 8-lane chains per output (chain s takes values 8s..8s+7 of
//   every step), the chains added as (c0 + c1) + (c2 + c3) and reduced in a
//   fixed order at the end. Four chains keep four FMAs in flight for one row
//   of x (m = 1), so decode is bound by the weight stream, not the FMA
//   latency. Tiles are one weight row against up to 3 rows of x (12
//   accumulators of the 16 ymm registers); every tile has the same chains, so
//   an output's bits do not depend on m (batch invariance) or on how n is
//   split across threads. Decode (m <= kDecodeMaxRows) reads each weight row
//   once and runs every chunk of x against it; prefill blocks 64 weight rows
//   against each chunk of x (the rows stay in L2), and in kBF16 mode widens
//   the chunk's x to f32 once per k-block of kBf16TileK values instead of
//   once per weight row. Both sum an output as per-k-block partials in k
//   order (row_tile), so a token's bits do not depend on the size of the
//   chunk it is computed in.
//   kF32 mode widens F32/F16/BF16/Q8_0 weights exactly; kBF16 mode takes BF16
//   weights, or Q8_0 dequantized to bf16 tiles, against bf16-rounded x. The
//   low-bit types have their own int8 kernels at every m (avx2_quant.cc).
// matmul, Q8_0 decode: x quantized to int8 per 32 values, integer block
//   dot products (vpmaddubsw / vpmaddwd) as llama.cpp does on AVX2.
// paged attention: the shared kernel (paged_attention_kernel.h) on 16 lanes
//   held as two __m256, the same operations (FMA included) as the AVX-512
//   instance.
#include <immintrin.h>

#include <cstdint>

#include "ops/cpu/avx2_util.h"

namespace strata::ops::cpu {
namespace {

using tensor::BlockQ8_0;
using tensor::DType;

constexpr int kChains = 4;    // 8-lane chains per output, one per 8 values of a step
constexpr int kStep = 32;     // values of k per step (kChains x 8)
constexpr int kMaxRowsX = 3;  // rows of x per tile (4 * 3 accumulators)
// weight rows per prefill block (the Q8_0 scratch tile holds kBf16TileRows)
constexpr int64_t kPrefillRows = kBf16TileRows;


STRATA_INLINE float f16_bits_to_f32(uint16_t h) { return _cvtsh_ss(h); }
STRATA_INLINE float bf16_bits_to_f32(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

// 8 bf16 values at p widened to f32 (exact).
STRATA_INLINE __m256 load8_bf16(const uint16_t* p) {
  const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
}

// Σ of the four chains of one output: (c0 + c1) + (c2 + c3), then the 8
// lanes as ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)). The same order for
// every tile.
STRATA_INLINE float reduce_chains(const __m256 (&c)[kChains]) {
  const __m256 v = _mm256_add_ps(_mm256_add_ps(c[0], c[1]), _mm256_add_ps(c[2], c[3]));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// ---- weight rows: 8 values at a time, widened to f32 ----
// begin(row, kk) reads what a 32-value step shares (Q8_0: the block's
// scale); sub(row, kk, s, ctx) returns values kk + 8s .. kk + 8s + 7.
// widen1(row, i) is value i alone (the tail of k; not for Q8_0, k % 32 == 0).

struct NoCtx {};

struct WeightF32 {
  static STRATA_INLINE int64_t row_bytes(int64_t k) { return k * 4; }
  static STRATA_INLINE NoCtx begin(const char*, int64_t) { return {}; }
  static STRATA_INLINE __m256 sub(const char* row, int64_t kk, int s, NoCtx) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + kk + 8 * s);
  }
  static STRATA_INLINE float widen1(const char* row, int64_t i) {
    float f;
    __builtin_memcpy(&f, row + 4 * i, 4);
    return f;
  }
};
struct WeightF16 {
  static STRATA_INLINE int64_t row_bytes(int64_t k) { return k * 2; }
  static STRATA_INLINE NoCtx begin(const char*, int64_t) { return {}; }
  static STRATA_INLINE __m256 sub(const char* row, int64_t kk, int s, NoCtx) {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * (kk + 8 * s))));
  }
  static STRATA_INLINE float widen1(const char* row, int64_t i) {
    uint16_t h;
    __builtin_memcpy(&h, row + 2 * i, 2);
    return f16_bits_to_f32(h);
  }
};
struct WeightBF16 {
  static STRATA_INLINE int64_t row_bytes(int64_t k) { return k * 2; }
  static STRATA_INLINE NoCtx begin(const char*, int64_t) { return {}; }
  static STRATA_INLINE __m256 sub(const char* row, int64_t kk, int s, NoCtx) {
    return load8_bf16(reinterpret_cast<const uint16_t*>(row) + kk + 8 * s);
  }
  static STRATA_INLINE float widen1(const char* row, int64_t i) {
    uint16_t h;
    __builtin_memcpy(&h, row + 2 * i, 2);
    return bf16_bits_to_f32(h);
  }
};
// One 34-byte block per step: q[i] * d, exact in f32.
struct WeightQ8 {
  static STRATA_INLINE int64_t row_bytes(int64_t k) { return k / 32 * 34; }
  static STRATA_INLINE __m256 begin(const char* row, int64_t kk) {
    const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(row) + kk / 32;
    return _mm256_set1_ps(f16_bits_to_f32(b->scale_f16));
  }
  static STRATA_INLINE __m256 sub(const char* row, int64_t kk, int s, __m256 d) {
    const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(row) + kk / 32;
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->values + 8 * s));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d);
  }
  static STRATA_INLINE float widen1(const char*, int64_t) { return 0.0f; }  // never: no tail
};

// ---- rows of x: 8 values at a time as f32 ----
// x [rows, stride]; value l of row i is x[i * stride + l - k_off] (k_off:
// where a block of widened x starts in k).
struct XF32 {
  const float* x;
  int64_t stride;
  int64_t k_off = 0;
  STRATA_INLINE __m256 sub(int i, int64_t kk, int s) const {
    return _mm256_loadu_ps(x + i * stride + (kk - k_off) + 8 * s);
  }
  STRATA_INLINE float at(int i, int64_t l) const { return x[i * stride + (l - k_off)]; }
};
struct XBF16 {
  const uint16_t* x;
  int64_t stride;
  STRATA_INLINE __m256 sub(int i, int64_t kk, int s) const {
    return load8_bf16(x + i * stride + kk + 8 * s);
  }
  STRATA_INLINE float at(int i, int64_t l) const { return bf16_bits_to_f32(x[i * stride + l]); }
};

// acc[i][s] += x row i (values kk + 8s..) * w (the same) for one step.
template <class WL, int MR, class X, class Ctx>
STRATA_INLINE void tile_step(const char* row, int64_t kk, Ctx ctx, const X& x,
                             __m256 (&acc)[MR][kChains]) {
#pragma GCC unroll 4
  for (int s = 0; s < kChains; ++s) {
    const __m256 w = WL::sub(row, kk, s, ctx);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) acc[i][s] = _mm256_fmadd_ps(x.sub(i, kk, s), w, acc[i][s]);
  }
}

// Rows i of x (X) against weight row `row` over k values [k0, k1) (k0 a
// multiple of kStep, k1 = k or a multiple of kStep), added to acc. A tail of
// fewer than 32 values is widened into zero-padded buffers first and run as
// one more full step (zeros add nothing, so every tile sums the same values
// in the same chains).
template <class WL, int MR, class X>
STRATA_INLINE void tile_k(const char* row, int64_t k0, int64_t k1, const X& x,
                          __m256 (&acc)[MR][kChains]) {
  int64_t kk = k0;
  for (; kk + kStep <= k1; kk += kStep) {
    _mm_prefetch(row + WL::row_bytes(kk + 512), _MM_HINT_T0);
    tile_step<WL, MR>(row, kk, WL::begin(row, kk), x, acc);
  }
  if (kk < k1) {
    float wt[kStep], xt[MR][kStep];
    for (int l = 0; l < kStep; ++l) {
      const bool in = kk + l < k1;
      wt[l] = in ? WL::widen1(row, kk + l) : 0.0f;
      for (int i = 0; i < MR; ++i) xt[i][l] = in ? x.at(i, kk + l) : 0.0f;
    }
    const XF32 xs{&xt[0][0], kStep, 0};
    tile_step<WeightF32, MR>(reinterpret_cast<const char*>(wt), 0, NoCtx{}, xs, acc);
  }
}

template <int MR>
STRATA_INLINE void zero_acc(__m256 (&acc)[MR][kChains]) {
  for (int i = 0; i < MR; ++i)
    for (int s = 0; s < kChains; ++s) acc[i][s] = _mm256_setzero_ps();
}

// y[i * y_stride] (= or +=) Σ acc[i] (+ bias), i < MR.
template <int MR>
STRATA_INLINE void store_acc(const __m256 (&acc)[MR][kChains], float* y, int64_t y_stride,
                             const float* bias, bool accumulate) {
  for (int i = 0; i < MR; ++i) {
    float v = reduce_chains(acc[i]);
    if (accumulate) v += y[i * y_stride];
    if (bias != nullptr) v += *bias;
    y[i * y_stride] = v;
  }
}

// One weight row j against rows [i0, i0 + MR) of x over all of k, as
// prefill_bf16 sums it: per block of kBf16TileK values the chains reduced to
// a partial, y = ((p0 + p1) + p2 ...) + bias. Decode and prefill so give
// every output the same bits, whatever the chunk of tokens it is in.
template <class WL, int MR, class X>
STRATA_INLINE void row_tile(const MatmulArgs& a, const char* row, int64_t i0, int64_t j,
                            const X& x) {
  X xi = x;
  xi.x += i0 * x.stride;
  float* y = a.y + i0 * a.n + j;
  for (int64_t k0 = 0; k0 < a.k; k0 += kBf16TileK) {
    __m256 acc[MR][kChains];
    zero_acc(acc);
    tile_k<WL, MR>(row, k0, min64(k0 + kBf16TileK, a.k), xi, acc);
    const bool last = k0 + kBf16TileK >= a.k;
    store_acc<MR>(acc, y, a.n, last && a.bias != nullptr ? a.bias + j : nullptr, k0 > 0);
  }
}

// f(RowCount) for a run-time count of 1..kMaxRowsX rows.
template <int N>
struct RowCount {
  static constexpr int kValue = N;
};
template <class F>
STRATA_INLINE void with_rows(int64_t rows, F&& f) {
  if (rows >= 3) return f(RowCount<3>{});
  if (rows == 2) return f(RowCount<2>{});
  f(RowCount<1>{});
}

// Decode (m <= kDecodeMaxRows): each weight row is read once, by every chunk
// of up to kMaxRowsX rows of x in turn (alternating direction per row, so
// the chunk a row starts with is still in L1), a single stream over the
// weights.
template <class WL, class X>
void decode_rows(const MatmulArgs& a, const X& x, int64_t n_begin, int64_t n_end) {
  const int64_t row_bytes = WL::row_bytes(a.k);
  const char* w = static_cast<const char*>(a.w);
  const int64_t chunks = (a.m + kMaxRowsX - 1) / kMaxRowsX;
  for (int64_t j = n_begin; j < n_end; ++j) {
    const char* row = w + j * row_bytes;
    _mm_prefetch(row + row_bytes, _MM_HINT_T0);
    const bool forward = (j - n_begin) % 2 == 0;
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t i0 = (forward ? c : chunks - 1 - c) * kMaxRowsX;
      with_rows(a.m - i0, [&](auto mr) { row_tile<WL, decltype(mr)::kValue>(a, row, i0, j, x); });
    }
  }
}

// Prefill with f32 x: blocks of kPrefillRows weight rows against each chunk
// of x over all of k (the block's rows stay in L2 for the next chunk).
template <class WL>
void prefill_rows_f32(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  const int64_t row_bytes = WL::row_bytes(a.k);
  const char* w = static_cast<const char*>(a.w);
  const XF32 x{a.x, a.k, 0};
  for (int64_t jb = n_begin; jb < n_end; jb += kPrefillRows) {
    const int64_t je = min64(jb + kPrefillRows, n_end);
    for (int64_t i0 = 0; i0 < a.m; i0 += kMaxRowsX) {
      with_rows(a.m - i0, [&](auto mr) {
        for (int64_t j = jb; j < je; ++j) {
          row_tile<WL, decltype(mr)::kValue>(a, w + j * row_bytes, i0, j, x);
        }
      });
    }
  }
}

template <class WL>
void matmul_f32_typed(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  if (a.m <= kDecodeMaxRows) return decode_rows<WL>(a, XF32{a.x, a.k, 0}, n_begin, n_end);
  prefill_rows_f32<WL>(a, n_begin, n_end);
}

void matmul_f32_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  switch (a.w_dtype) {
    case DType::kF32:
      return matmul_f32_typed<WeightF32>(a, n_begin, n_end);
    case DType::kF16:
      return matmul_f32_typed<WeightF16>(a, n_begin, n_end);
    case DType::kBF16:
      return matmul_f32_typed<WeightBF16>(a, n_begin, n_end);
    case DType::kQ8_0:
      return matmul_f32_typed<WeightQ8>(a, n_begin, n_end);
    default:
      return generic_kernels().matmul_f32_range(a, n_begin, n_end);
  }
}

// As tensor::f32_to_bf16 on 8 finite lanes, returned widened: round to
// nearest even on the bits.
STRATA_INLINE __m256 round_to_bf16(__m256 v) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_add_epi32(b, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}

// Q8_0 rows [j0, j0 + rows) x k-values [k0, k0 + kc) (multiples of 32) as
// bf16 (q * d in f32, rounded to bf16, as the portable kernel and the
// AVX-512 tiles do) into out [rows, out_stride].
void dequant_q8_bf16(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0, int64_t kc,
                     uint16_t* out, int64_t out_stride) {
  const int64_t row_bytes = WeightQ8::row_bytes(a.k);
  for (int64_t r = 0; r < rows; ++r) {
    const char* row = static_cast<const char*>(a.w) + (j0 + r) * row_bytes;
    for (int64_t kk = 0; kk < kc; kk += kStep) {
      const __m256 d = WeightQ8::begin(row, k0 + kk);
      for (int s = 0; s < kChains; ++s) {
        const __m256i bits = _mm256_srli_epi32(
            _mm256_castps_si256(round_to_bf16(WeightQ8::sub(row, k0 + kk, s, d))), 16);
        const __m128i packed =
            _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + r * out_stride + kk + 8 * s), packed);
      }
    }
  }
}

// Prefill in kBF16 mode (BF16 weights, or Q8_0 dequantized to bf16 tiles in
// scratch): per block of kPrefillRows weight rows and kBf16TileK values of
// k, each chunk of x has its values widened to f32 once and used by every
// weight row of the block; outputs accumulate over the k-blocks.
void prefill_bf16(const MatmulArgs& a, int64_t n_begin, int64_t n_end, uint16_t* scratch) {
  const bool q8 = a.w_dtype == DType::kQ8_0;
  const uint16_t* w = static_cast<const uint16_t*>(a.w);
  float xf[kMaxRowsX * kBf16TileK];
  for (int64_t jb = n_begin; jb < n_end; jb += kPrefillRows) {
    const int64_t je = min64(jb + kPrefillRows, n_end);
    for (int64_t k0 = 0; k0 < a.k; k0 += kBf16TileK) {
      const int64_t kc = min64(kBf16TileK, a.k - k0);
      const int64_t kc_pad = (kc + kStep - 1) / kStep * kStep;  // x is zero padded
      if (q8) dequant_q8_bf16(a, jb, je - jb, k0, kc, scratch, kBf16TileK);
      const bool last = k0 + kBf16TileK >= a.k;
      for (int64_t i0 = 0; i0 < a.m; i0 += kMaxRowsX) {
        with_rows(a.m - i0, [&](auto mr) {
          constexpr int MR = decltype(mr)::kValue;
          for (int i = 0; i < MR; ++i) {
            const uint16_t* xr = a.x_bf16 + (i0 + i) * a.k_pad + k0;
            for (int64_t l = 0; l < kc_pad; l += 8) {
              _mm256_storeu_ps(xf + i * kBf16TileK + l, load8_bf16(xr + l));
            }
          }
          const XF32 x{xf, kBf16TileK, 0};
          for (int64_t j = jb; j < je; ++j) {
            // Weight row j from value k0 on, indexed from 0 like xf.
            const uint16_t* row = q8 ? scratch + (j - jb) * kBf16TileK : w + j * a.k + k0;
            __m256 acc[MR][kChains];
            zero_acc(acc);
            tile_k<WeightBF16, MR>(reinterpret_cast<const char*>(row), 0, kc, x, acc);
            store_acc<MR>(acc, a.y + i0 * a.n + j, a.n,
                          last && a.bias != nullptr ? a.bias + j : nullptr, k0 > 0);
          }
        });
      }
    }
  }
}

void matmul_bf16_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end, uint16_t* scratch) {
  const bool bf16 = a.w_dtype == DType::kBF16;
  if (bf16 && a.m <= kDecodeMaxRows) {
    return decode_rows<WeightBF16>(a, XBF16{a.x_bf16, a.k_pad}, n_begin, n_end);
  }
  if (bf16 || a.w_dtype == DType::kQ8_0) return prefill_bf16(a, n_begin, n_end, scratch);
  generic_kernels().matmul_bf16_range(a, n_begin, n_end, scratch);
}

// As tensor::f32_to_bf16: round to nearest even on the bits, NaN kept quiet.
STRATA_INLINE uint16_t round_bf16(uint32_t b) {
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40);
  return static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

void x_to_bf16(const float* x, int64_t rows, int64_t k, int64_t k_pad, uint16_t* out) {
  const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    uint16_t* o = out + r * k_pad;
    int64_t l = 0;
    for (; l + 8 <= k; l += 8) {
      const __m256i b = _mm256_castps_si256(_mm256_loadu_ps(xr + l));
      if (!_mm256_testz_si256(_mm256_cmpgt_epi32(_mm256_and_si256(b, abs_mask), inf),
                              _mm256_set1_epi32(-1))) {
        break;  // a NaN: these 8 and the rest one by one
      }
      const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), one);
      const __m256i rounded =
          _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(bias, lsb)), 16);
      const __m128i packed =
          _mm_packus_epi32(_mm256_castsi256_si128(rounded), _mm256_extracti128_si256(rounded, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + l), packed);
    }
    for (; l < k; ++l) {
      uint32_t b;
      __builtin_memcpy(&b, xr + l, 4);
      o[l] = round_bf16(b);
    }
    for (; l < k_pad; ++l) o[l] = 0;
  }
}

// ---- Q8_0 decode with int8 activations (llama.cpp's AVX2 scheme) ----
// x is quantized per 32-block once per call (x_to_q8, the layout of
// MatmulArgs::x_q8: u8 = q + 128, per-pair scales); each (x block, weight
// block) pair is one exact int32 sum, |w| (u8) times x with w's sign (s8)
// by vpmaddubsw (pairs at most 2 * 128 * 127, no saturation) and vpmaddwd,
// scaled by d_x * d_w in f32. Two chains per output (even and odd blocks),
// added at the end, for every tile: batch invariant.

// 32 floats of one block quantized: returns d = max|x| / 127, *q the 32
// values round-to-nearest-even(x * (1 / d)) as int8 in order.
STRATA_INLINE float quantize_block32(const float* x, __m256i* q) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int s = 0; s < 4; ++s) {
    v[s] = _mm256_loadu_ps(x + 8 * s);
    amax = _mm256_max_ps(amax, _mm256_and_ps(v[s], abs_mask));
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  const float d = _mm_cvtss_f32(m) / 127.0f;
  const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  __m256i i32[4];
  for (int s = 0; s < 4; ++s) i32[s] = _mm256_cvtps_epi32(_mm256_mul_ps(v[s], id));
  // packs work per 128-bit lane: bytes come out as groups of 4 values
  // (0-3 of each vector in lane 0, 4-7 in lane 1), put back in order.
  const __m256i p16a = _mm256_packs_epi32(i32[0], i32[1]);
  const __m256i p16b = _mm256_packs_epi32(i32[2], i32[3]);
  const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
  *q = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  return d;
}

void x_to_q8(const float* x, int64_t rows, int64_t k, int64_t k_pad64, uint8_t* xq, float* scales) {
  const __m256i k80 = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    uint8_t* qr = xq + r * k_pad64;
    float* sr = scales + r * (k_pad64 / 4);
    for (int64_t b = 0; b < k_pad64 / 32; ++b) {
      float d = 0.0f;
      __m256i q = _mm256_setzero_si256();
      if (b * 32 < k) d = quantize_block32(xr + b * 32, &q);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qr + b * 32), _mm256_xor_si256(q, k80));
      _mm256_storeu_ps(sr + (b / 2) * 16 + (b % 2) * 8, _mm256_set1_ps(d));
    }
  }
}

// Weight row `row` (Q8_0 blocks) against MR rows of x from i0; y[i * n].
template <int MR>
STRATA_INLINE void q8q8_row_tile(const MatmulArgs& a, const char* row, int64_t i0, int64_t j) {
  const __m256i k80 = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  const BlockQ8_0* w = reinterpret_cast<const BlockQ8_0*>(row);
  const int64_t nb = a.k / 32;
  auto block = [&](int64_t b, int chain) {
    const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].values));
    const __m256i aw = _mm256_sign_epi8(wv, wv);  // |w| as u8 (|-128| = 128)
    const float dw = f16_bits_to_f32(w[b].scale_f16);
    for (int i = 0; i < MR; ++i) {
      const int64_t r = i0 + i;
      const __m256i xv = _mm256_xor_si256(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x_q8 + r * a.k_pad64 + b * 32)),
          k80);
      const __m256i p16 = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv, wv));
      const __m256 sum = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, ones));
      const float dx = a.x_q8_scale[r * (a.k_pad64 / 4) + (b / 2) * 16 + (b % 2) * 8];
      acc[i][chain] = _mm256_fmadd_ps(sum, _mm256_set1_ps(dx * dw), acc[i][chain]);
    }
  };
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    _mm_prefetch(row + (b + 16) * 34, _MM_HINT_T0);
    block(b, 0);
    block(b + 1, 1);
  }
  if (b < nb) block(b, 0);
  store_two_chains<MR>(acc, nullptr, a, i0, j);
}

// Each weight row once, against every chunk of up to 4 rows of x
// (alternating direction per row, as decode_rows).
void matmul_q8q8_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  const int64_t row_bytes = WeightQ8::row_bytes(a.k);
  const char* w = static_cast<const char*>(a.w);
  constexpr int64_t kRows = 4;
  const int64_t chunks = (a.m + kRows - 1) / kRows;
  for (int64_t j = n_begin; j < n_end; ++j) {
    const char* row = w + j * row_bytes;
    const bool forward = (j - n_begin) % 2 == 0;
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t i0 = (forward ? c : chunks - 1 - c) * kRows;
      const int64_t rows = min64(kRows, a.m - i0);
      if (rows >= 4) {
        q8q8_row_tile<4>(a, row, i0, j);
      } else if (rows == 3) {
        q8q8_row_tile<3>(a, row, i0, j);
      } else if (rows == 2) {
        q8q8_row_tile<2>(a, row, i0, j);
      } else {
        q8q8_row_tile<1>(a, row, i0, j);
      }
    }
  }
}

// ---- paged attention: 16 lanes as two __m256 ----
struct V256x2 {
  __m256 lo, hi;
  static STRATA_INLINE V256x2 zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static STRATA_INLINE V256x2 set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
  static STRATA_INLINE V256x2 load(const float* p) {
    return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
  }
  static STRATA_INLINE void store(float* p, V256x2 a) {
    _mm256_storeu_ps(p, a.lo);
    _mm256_storeu_ps(p + 8, a.hi);
  }
  static STRATA_INLINE V256x2 load_bf16(const uint8_t* p) {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
    return {load8_bf16(h), load8_bf16(h + 8)};
  }
  static STRATA_INLINE V256x2 load_f16(const uint8_t* p) {
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)))};
  }
  // 16 halves (as 16-bit lanes of h) to f32.
  static STRATA_INLINE V256x2 halves(__m256i h) {
    return {_mm256_cvtph_ps(_mm256_castsi256_si128(h)),
            _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1))};
  }
  // e5m2 is the top byte of a half.
  static STRATA_INLINE V256x2 load_fp8_e5m2(const uint8_t* p) {
    const __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return halves(_mm256_slli_epi16(x, 8));
  }
  // e4m3: sign to bit 15, exponent and mantissa to bits 7..13 of a half
  // (2^-8 of the value, subnormals included: exact), times 256.
  static STRATA_INLINE V256x2 load_fp8_e4m3(const uint8_t* p) {
    const __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(x, _mm256_set1_epi16(0x80)), 8);
    const __m256i mag = _mm256_slli_epi16(_mm256_and_si256(x, _mm256_set1_epi16(0x7f)), 7);
    return mul(halves(_mm256_or_si256(sign, mag)), set1(256.0f));
  }
  static STRATA_INLINE V256x2 add(V256x2 a, V256x2 b) {
    return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)};
  }
  static STRATA_INLINE V256x2 sub(V256x2 a, V256x2 b) {
    return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)};
  }
  static STRATA_INLINE V256x2 mul(V256x2 a, V256x2 b) {
    return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)};
  }
  static STRATA_INLINE V256x2 max(V256x2 a, V256x2 b) {
    return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)};
  }
  static STRATA_INLINE V256x2 fmadd(V256x2 a, V256x2 b, V256x2 c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  // e^x for x <= 0, the polynomial of the AVX-512 and portable versions:
  // exactly 0 below -87 (and for -inf), exactly 1 at 0.
  static STRATA_INLINE __m256 exp8(__m256 x) {
    const __m256 lowest = _mm256_set1_ps(-87.0f);
    const __m256 t = _mm256_mul_ps(_mm256_max_ps(x, lowest), _mm256_set1_ps(1.44269504088896341f));
    const __m256 k = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 f = _mm256_mul_ps(_mm256_sub_ps(t, k), _mm256_set1_ps(0.693147180559945309f));
    __m256 p = _mm256_set1_ps(1.0f / 720.0f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    const __m256i bits =
        _mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_cvtps_epi32(k), 23));
    const __m256 keep = _mm256_cmp_ps(x, lowest, _CMP_GE_OQ);
    return _mm256_and_ps(keep, _mm256_castsi256_ps(bits));
  }
  static STRATA_INLINE V256x2 exp_nonpositive(V256x2 x) { return {exp8(x.lo), exp8(x.hi)}; }
  // Lanes j with first <= tile + j <= last, as all-ones masks.
  static STRATA_INLINE void key_lanes(float tile, float first, float last, __m256* lo, __m256* hi) {
    const __m256 t = _mm256_set1_ps(tile), f = _mm256_set1_ps(first), l = _mm256_set1_ps(last);
    const __m256 k0 = _mm256_add_ps(t, _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 k1 = _mm256_add_ps(t, _mm256_setr_ps(8, 9, 10, 11, 12, 13, 14, 15));
    *lo = _mm256_and_ps(_mm256_cmp_ps(f, k0, _CMP_LE_OQ), _mm256_cmp_ps(k0, l, _CMP_LE_OQ));
    *hi = _mm256_and_ps(_mm256_cmp_ps(f, k1, _CMP_LE_OQ), _mm256_cmp_ps(k1, l, _CMP_LE_OQ));
  }
  static STRATA_INLINE V256x2 visible_keys(V256x2 s, float tile, float first, float last) {
    __m256 lo, hi;
    key_lanes(tile, first, last, &lo, &hi);
    const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
    return {_mm256_blendv_ps(ninf, s.lo, lo), _mm256_blendv_ps(ninf, s.hi, hi)};
  }
  static STRATA_INLINE V256x2 keep_keys(V256x2 s, float tile, float first, float last) {
    __m256 lo, hi;
    key_lanes(tile, first, last, &lo, &hi);
    return {_mm256_and_ps(s.lo, lo), _mm256_and_ps(s.hi, hi)};
  }
  static STRATA_INLINE float reduce_max(V256x2 a) {
    const __m256 m8 = _mm256_max_ps(a.lo, a.hi);
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  static STRATA_INLINE V256x2 visible(V256x2 s, V256x2 first, V256x2 last, float key) {
    const __m256 k = _mm256_set1_ps(key), ninf = _mm256_set1_ps(-__builtin_inff());
    const __m256 lo = _mm256_and_ps(_mm256_cmp_ps(first.lo, k, _CMP_LE_OQ),
                                    _mm256_cmp_ps(k, last.lo, _CMP_LE_OQ));
    const __m256 hi = _mm256_and_ps(_mm256_cmp_ps(first.hi, k, _CMP_LE_OQ),
                                    _mm256_cmp_ps(k, last.hi, _CMP_LE_OQ));
    return {_mm256_blendv_ps(ninf, s.lo, lo), _mm256_blendv_ps(ninf, s.hi, hi)};
  }
};

#include "ops/cpu/paged_attention_kernel.h"

void paged_attention_item(const PagedAttentionBatch& b, const PagedAttentionItem& item,
                          float* scratch) {
  paged_attention_item_for<V256x2>(b, item, scratch);
}

// The portable table's entries where this file has none of its own.
KernelTable make_avx2_table() {
  KernelTable t = generic_kernels();
  t.name = "avx2";
  t.matmul_f32_range = matmul_f32_range;
  t.matmul_bf16_range = matmul_bf16_range;
  t.matmul_prefill_range = nullptr;
  t.x_to_bf16 = x_to_bf16;
  t.matmul_q8q8_range = matmul_q8q8_range;
  t.x_to_q8 = x_to_q8;
  t.paged_attention_item = paged_attention_item;
  t.matmul_lowbit_range = avx2_matmul_lowbit_range;
  t.x_to_q8_groups = avx2_x_to_q8_groups;
  t.lowbit_kernel_for = every_lowbit_type;
  t.lowbit_needs_vnni = false;
  t.matmul_panels_range = avx2_matmul_panels_range;
  t.x_to_q8_blocks = avx2_x_to_q8_blocks;
  return t;
}

}  // namespace

const KernelTable& avx2_kernels() {
  static const KernelTable table = make_avx2_table();
  return table;
}

const KernelTable& avx2_vnni_kernels() {
  static const KernelTable table = [] {
    KernelTable t = make_avx2_table();
    t.name = "avx2_vnni";
    t.matmul_panels_range = avx2_vnni_matmul_panels_range;
    return t;
  }();
  return table;
}

}  // namespace strata::ops::cpu
