// AVX-512 kernels (F/BW/VL + FMA + F16C + AVX512-BF16 + VNNI). This file is
// compiled with those ISA flags (see ops/CMakeLists.txt), and again without
// BF16 as avx512_vnni.cc (the avx512_vnni table: vdpbf16ps and the bf16
// conversions emulated, avx512_util.h); nothing here may run unless
// avx512_supported() (avx512_vnni_supported()) said yes. To keep AVX-512
// instructions out of code shared with portable translation units, this file
// includes no library templates (no <algorithm>, <vector>, std::function):
// only intrinsics, our POD argument structs and local helpers in an anonymous
// namespace.
//
// matmul, kF32 mode: inner products of MR(<=4) x rows with NR(4) weight rows,
//   weights widened to f32 in registers 16 values at a time, 16 accumulators.
// matmul, kBF16 mode: the same tile shape on bf16 pairs with vdpbf16ps, cache
//   blocked as [64 weight rows] x [1024 k]; quantized tiles are first dequantized
//   to bf16 (q*d rounded to bf16) into per-thread scratch. Batched decode
//   (1 < m <= 16) with x in L1: one weight row (two above 8 x rows) against
//   chunks of up to 8 x rows, one stream over the weights (rows_bf16_x_in_l1).
// matmul, Q8_0 / Q4_0 / Q5_0 / IQ4_NL / IQ4_XS on VNNI CPUs: weights in
//   16-row panels, x quantized to int8, vpdpbusd, at every m unless
//   calibration chose bf16 tiles for prefill (avx512_panels.cc).
// Every output element is reduced in the same order whatever its tile, so the
// results do not depend on m or on how n is split across threads.
#include <immintrin.h>

// GCC 12's _mm512_cast*512_*256 expand to an extract from _mm256_undefined_*,
// which -W(maybe-)uninitialized misreports.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstdint>
#include <limits>

#include "ops/cpu/avx512_util.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/onednn_gemm.h"

namespace strata::ops::cpu::STRATA_AVX512_NS {
namespace {

using tensor::BlockQ8_0;
using tensor::DType;

// ---- kF32 mode: weight loaders ----
// Each loader widens kStep values at k offset kk (kk % kStep == 0) of one row
// to kStep / 16 f32 vectors; byte_offset(kk) locates them (for prefetching).

struct LoadF32 {
  static constexpr int kStep = 16, kMr = 4, kNr = 4, kStepBytes = 64;
  static STRATA_INLINE int64_t byte_offset(int64_t kk) { return kk * 4; }
  static STRATA_INLINE void load(const char* row, int64_t kk, __mmask16 m, __m512* out) {
    out[0] = _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + kk);
  }
};
struct LoadF16 {
  static constexpr int kStep = 16, kMr = 4, kNr = 4, kStepBytes = 32;
  static STRATA_INLINE int64_t byte_offset(int64_t kk) { return kk * 2; }
  static STRATA_INLINE void load(const char* row, int64_t kk, __mmask16 m, __m512* out) {
    out[0] =
        _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + kk));
  }
};
struct LoadBF16 {
  static constexpr int kStep = 16, kMr = 4, kNr = 4, kStepBytes = 32;
  static STRATA_INLINE int64_t byte_offset(int64_t kk) { return kk * 2; }
  static STRATA_INLINE void load(const char* row, int64_t kk, __mmask16 m, __m512* out) {
    __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + kk);
    out[0] = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};
// One 34-byte block (k % 32 == 0, so no tail mask). (8 x 2 tiles, sharing the
// widening over more x rows, measured no faster at m = 16 and slower at m = 1.)
struct LoadQ8 {
  static constexpr int kStep = 32, kMr = 4, kNr = 4;
  static STRATA_INLINE int64_t byte_offset(int64_t kk) { return kk / 32 * 34; }
  static STRATA_INLINE void load(const char* row, int64_t kk, __mmask16, __m512* out) {
    const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(row) + kk / 32;
    __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->values));
    __m512 d = _mm512_set1_ps(_cvtsh_ss(b->scale_f16));
    __m512i lo = _mm512_cvtepi8_epi32(_mm256_castsi256_si128(q));
    __m512i hi = _mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1));
    out[0] = _mm512_mul_ps(_mm512_cvtepi32_ps(lo), d);
    out[1] = _mm512_mul_ps(_mm512_cvtepi32_ps(hi), d);
  }
};

// Decode streams each weight row once: short per-row streams that the
// hardware prefetcher does not pick up in time, so every weight line a tile
// loads is also prefetched kPrefetchAheadBytes further on (rows are
// contiguous, so for short rows that is some rows later, for long ones later
// in the same row) into L2 (prefetch_weights: T1, which leaves L1, and so x,
// alone). One core keeps only a few dozen lines in flight: on the Intel AMX
// host of BENCHMARKS.md the earlier choice (T0, one row or at most 4 KiB
// ahead) held a core at 12-15 GB/s; 16 KiB into L2 raised the BF16, F32 and
// Q8_0 GEMVs by 5-60% and decode end to end by 6-11% ("Prefetching further").
// On the Zen 4 host the same prefetch costs the BF16 GEMV at m = 1 15-30%
// (its hardware prefetcher follows one sequential stream alone, faster),
// while tiles of two or four weight rows (interleaved streams) run twice as
// fast with it and Q8_0 needs it throughout: the F32-mode and BF16-mode
// kernels skip it on one-row tiles when a.prefetch_one_row_tiles is false
// (MatmulKernel::kOwnHwPrefetch), which load-time calibration picks per
// shape class where it measures faster. The Q8_0 int8-activation kernel
// always prefetches.
constexpr int64_t kPrefetchAheadBytes = 16384;
STRATA_INLINE void prefetch_weights(const void* line) {
  _mm_prefetch(static_cast<const char*>(line) + kPrefetchAheadBytes, _MM_HINT_T1);
}
template <class L, int MR, int NR>
void tile_f32(const MatmulArgs& a, int64_t row_bytes, int64_t i0, int64_t j0) {
  constexpr int kSub = L::kStep / 16;
  __m512 acc[MR][NR];
  zero_tile(acc);
  const char* w0 = static_cast<const char*>(a.w) + j0 * row_bytes;
  const float* x0 = a.x + i0 * a.k;
  for (int64_t kk = 0; kk < a.k; kk += L::kStep) {
    __mmask16 m = tail_mask16(a.k - kk);  // Q8_0: k % 32 == 0, always full
    __m512 wv[NR][kSub];
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      if (NR > 1 || a.prefetch_one_row_tiles)
        prefetch_weights(w0 + r * row_bytes + L::byte_offset(kk));
      L::load(w0 + r * row_bytes, kk, m, wv[r]);
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 16
      for (int sub = 0; sub < kSub; ++sub) {
        __m512 xv = _mm512_maskz_loadu_ps(m, x0 + i * a.k + kk + 16 * sub);
#pragma GCC unroll 16
        for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_fmadd_ps(xv, wv[r][sub], acc[i][r]);
      }
    }
  }
  store_tile<MR, NR>(acc, a.y + i0 * a.n + j0, a.n, a.bias != nullptr ? a.bias + j0 : nullptr,
                     false);
}

// Batched decode (5 <= m <= kDecodeMaxRows) of BF16 weights whose x does not
// fit in L1 whole (m * k bf16 > kDecodeXInL1Bytes: k > 1024 at m = 16) runs
// rows_bf16_x_in_l1's tiles on blocks of k that fit, the k blocks outermost
// within each kBf16TileRows block of weight rows, each tile's accumulators
// carried from one k block to the next in this per-thread buffer. Every
// output stays one chain of vdpbf16ps over k in order, as at m = 1. Before,
// these shapes ran four-by-four tiles over whole rows with x from L2, at
// half the rate of the k <= 1024 shapes (BENCHMARKS.md, "Zen 5"). The
// one-row GEMVs with x in registers (gemv_*_x_in_registers, kBf16TileRows
// weight rows at a time) carry their sums here too.
alignas(64) thread_local float t_decode_carry[kBf16TileRows * kDecodeMaxRows * 16];

// One x row against F32, F16 or BF16 weights in F32 mode (m = 1, kOwn), x
// held in registers: gemv_bf16_x_in_registers's scheme (below) with 16 f32
// values of x per register, kGemvF32XRegs steps per block of k. Each output
// is tile_f32<L, 1, 1>'s chain of FMAs over k in order, the masked tail
// step included, so the bits are the same. Used where x is over 8 KiB
// (k > kGemvF32MinK): on 896 x 896 and 4864 x 896 (x 3.5 KiB, in L1 anyway)
// it measured 0.83-1.26x of the one-row walk, on k = 4864 and 14336 at one
// thread 1.47-1.63x (BENCHMARKS.md, "x in registers").
constexpr int64_t kGemvF32MinK = 2048;
constexpr int kGemvF32XRegs = 28;  // 448 values
constexpr int64_t kGemvF32BlockK = kGemvF32XRegs * 16;
constexpr int64_t kGemvF32PrefetchRows = 4;

template <class L>
void gemv_f32_x_in_registers(const MatmulArgs& a, int64_t row_bytes, int64_t n_begin,
                             int64_t n_end) {
  static_assert(L::kStep == 16);
  // Weight steps per 64-byte line: prefetch once per line.
  constexpr int kStepsPerLine = 64 / L::kStepBytes;
  const float* x = a.x;
  const int64_t k = a.k;
  const int64_t k_regs = k / kGemvF32BlockK * kGemvF32BlockK;
  const int64_t prefetch_bytes = kGemvF32PrefetchRows * row_bytes;
  float* carry = t_decode_carry;
  for (int64_t jb = n_begin; jb < n_end; jb += kBf16TileRows) {
    const int64_t rows = min64(kBf16TileRows, n_end - jb);
    const char* w = static_cast<const char*>(a.w) + jb * row_bytes;
    for (int64_t k0 = 0; k0 < k_regs; k0 += kGemvF32BlockK) {
      __m512 xr[kGemvF32XRegs];
#pragma GCC unroll 32
      for (int i = 0; i < kGemvF32XRegs; ++i) xr[i] = _mm512_loadu_ps(x + k0 + i * 16);
      for (int64_t r = 0; r < rows; ++r) {
        const char* wr = w + r * row_bytes;
        __m512 acc = k0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(carry + r * 16);
#pragma GCC unroll 32
        for (int i = 0; i < kGemvF32XRegs; ++i) {
          const int64_t kk = k0 + i * 16;
          if (i % kStepsPerLine == 0) {
            _mm_prefetch(wr + L::byte_offset(kk) + prefetch_bytes, _MM_HINT_T0);
          }
          __m512 wv[1];
          L::load(wr, kk, static_cast<__mmask16>(0xFFFF), wv);
          acc = _mm512_fmadd_ps(xr[i], wv[0], acc);
        }
        _mm512_store_ps(carry + r * 16, acc);
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      const char* wr = w + r * row_bytes;
      __m512 acc[1][1] = {{k_regs == 0 ? _mm512_setzero_ps() : _mm512_load_ps(carry + r * 16)}};
      for (int64_t kk = k_regs; kk < k; kk += 16) {
        const __mmask16 m = tail_mask16(k - kk);
        _mm_prefetch(wr + L::byte_offset(kk) + prefetch_bytes, _MM_HINT_T0);
        __m512 wv[1];
        L::load(wr, kk, m, wv);
        acc[0][0] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + kk), wv[0], acc[0][0]);
      }
      store_tile<1, 1>(acc, a.y + jb + r, a.n, a.bias != nullptr ? a.bias + jb + r : nullptr,
                       false);
    }
  }
}

template <class L, int MR>
void rows_f32(const MatmulArgs& a, int64_t row_bytes, int64_t i0, int64_t n_begin, int64_t n_end) {
  int64_t j = n_begin;
  // One x row: one weight row at a time (see rows_bf16), unless the variant
  // asks for four (MatmulArgs::gemv_tile_rows).
  if (MR > 1 || a.gemv_tile_rows == 4) {
    for (; j + L::kNr <= n_end; j += L::kNr) tile_f32<L, MR, L::kNr>(a, row_bytes, i0, j);
  }
  for (; j < n_end; ++j) tile_f32<L, MR, 1>(a, row_bytes, i0, j);
}

// rows_f32<L, rem> for a run-time rem in [1, MR].
template <class L, int MR>
void rows_f32_rem(const MatmulArgs& a, int64_t row_bytes, int64_t i0, int64_t n_begin,
                  int64_t n_end, int64_t rem) {
  if constexpr (MR > 0) {
    if (rem == MR) return rows_f32<L, MR>(a, row_bytes, i0, n_begin, n_end);
    rows_f32_rem<L, MR - 1>(a, row_bytes, i0, n_begin, n_end, rem);
  }
}

template <class L>
void matmul_f32_typed(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  int64_t row_bytes =
      tensor::dtype_block_bytes(a.w_dtype) * a.k / tensor::dtype_block_size(a.w_dtype);
  if constexpr (L::kStep == 16) {
    if (a.m == 1 && a.k > kGemvF32MinK && a.gemv_tile_rows == 0 && a.prefetch_one_row_tiles) {
      return gemv_f32_x_in_registers<L>(a, row_bytes, n_begin, n_end);
    }
  }
  // Column blocks of 64 weight rows keep the rows hot in L1/L2 while all m
  // rows of x pass over them.
  for (int64_t jb = n_begin; jb < n_end; jb += 64) {
    int64_t je = min64(jb + 64, n_end);
    int64_t i = 0;
    for (; i + L::kMr <= a.m; i += L::kMr) rows_f32<L, L::kMr>(a, row_bytes, i, jb, je);
    if (i < a.m) rows_f32_rem<L, L::kMr - 1>(a, row_bytes, i, jb, je, a.m - i);
  }
}

void matmul_f32_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  switch (a.w_dtype) {
    case DType::kF32:
      return matmul_f32_typed<LoadF32>(a, n_begin, n_end);
    case DType::kF16:
      return matmul_f32_typed<LoadF16>(a, n_begin, n_end);
    case DType::kBF16:
      return matmul_f32_typed<LoadBF16>(a, n_begin, n_end);
    case DType::kQ8_0:
      return matmul_f32_typed<LoadQ8>(a, n_begin, n_end);
    default:
      return;
  }
}

// Calls f(RowCount<m>{}) for a run-time m in [1, MR].
template <int MR, class F>
STRATA_INLINE void with_row_count(int64_t m, F&& f) {
  if constexpr (MR >= 1) {
    if (m == MR) return f(RowCount<MR>{});
    with_row_count<MR - 1>(m, f);
  }
}

constexpr int64_t kDecodeChunkRows = 8;  // x rows per decode tile (MR)
// x of at most this size (m rows of k_pad bf16) counts as fitting in L1.
constexpr int64_t kDecodeXInL1Bytes = 32 * 1024;

// Calls f(RowCount<rows>{}, i0) for the chunks of up to kDecodeChunkRows of
// the m rows of x, first to last (forward) or last to first: batched decode
// visits them in alternating order per weight row, so the chunk a row starts
// with is still in L1 from the row before.
template <class F>
STRATA_INLINE void for_decode_chunks(int64_t m, bool forward, F&& f) {
  const int64_t chunks = (m + kDecodeChunkRows - 1) / kDecodeChunkRows;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t i0 = (forward ? c : chunks - 1 - c) * kDecodeChunkRows;
    with_row_count<kDecodeChunkRows>(min64(kDecodeChunkRows, m - i0),
                                     [&](auto mr) { f(mr, i0); });
  }
}

// ---- kBF16 mode ----

// Operands of one cache block: x [m, kc] with row stride k_pad (zero padded
// past k), w [rows, kc] bf16 with row stride w_stride; kc may end mid-pair
// only at the true end of k (then w is masked and x's padding is zero).
struct Bf16Block {
  const uint16_t* x;
  int64_t x_stride;
  const uint16_t* w;
  int64_t w_stride;
  int64_t kc;
  bool prefetch_one_row;  // MatmulArgs::prefetch_one_row_tiles
  bool four_row_gemv;     // MatmulArgs::gemv_tile_rows == 4
  // Batched decode with k cut into blocks (decode_block_k; tile_bf16's
  // kBlocked): the tiles' accumulators carried from one block to the next,
  // acc[i][r] of the tile at (i0, jr) at carry[((jr + r) * carry_x_rows + i0
  // + i) * 16], and the weights prefetched prefetch_ahead bytes on.
  int64_t prefetch_ahead = kPrefetchAheadBytes;
  float* carry = nullptr;
  int64_t carry_x_rows = 0;
  bool carry_in = false;   // continue the sums the previous block left in carry
  bool carry_out = false;  // not the last block: leave the sums in carry
};

// Compile-time flag for a tile's k step: masked (the tail) or not.
template <bool B>
struct MaskedStep {
  static constexpr bool value = B;
};

// One MR x NR tile over the block's kc: acc[i][r] is a 16-lane partial sum
// of x row i0 + i against weight row jr + r, one chain over k in order.
// kBlocked: a block of k in a k-blocked pass (b.carry): the chain continues
// across blocks, the same operations in the same order as one block over
// all of k. (A template flag, so the whole-row tiles keep their constant
// prefetch offset and no carry checks: with a run-time offset and the
// checks, m = 1 decoded 3-5% slower end to end on the Zen 5 host.)
template <int MR, int NR, bool kBlocked = false>
void tile_bf16(const Bf16Block& b, int64_t i0, int64_t jr, float* y, int64_t y_stride,
               const float* bias, bool accumulate) {
  __m512 acc[MR][NR];
  auto carried = [&](int i, int r) { return b.carry + ((jr + r) * b.carry_x_rows + i0 + i) * 16; };
  if (kBlocked && b.carry_in) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_load_ps(carried(i, r));
  } else {
    zero_tile(acc);
  }
  const uint16_t* x0 = b.x + i0 * b.x_stride;
  const uint16_t* w0 = b.w + jr * b.w_stride;
  // One k step of 32 values; the masked form only for a tail of kc that is
  // not a multiple of 32 (masked-off lanes of w are zero, x is zero padded,
  // so both forms add the same values).
  auto step = [&](int64_t kk, auto masked) {
    __m512i wv[NR];
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      if (kBlocked) {
        _mm_prefetch(reinterpret_cast<const char*>(w0 + r * b.w_stride + kk) + b.prefetch_ahead,
                     _MM_HINT_T1);
      } else if (NR > 1 || b.prefetch_one_row) {
        prefetch_weights(w0 + r * b.w_stride + kk);
      }
      if constexpr (decltype(masked)::value) {
        wv[r] = _mm512_maskz_loadu_epi16(tail_mask32(b.kc - kk), w0 + r * b.w_stride + kk);
      } else {
        wv[r] = _mm512_loadu_si512(w0 + r * b.w_stride + kk);
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      __m512i xv = _mm512_loadu_si512(x0 + i * b.x_stride + kk);
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r) {
        acc[i][r] = dot_bf16_pairs(acc[i][r], xv, wv[r]);
      }
    }
  };
  const int64_t kc_full = b.kc & ~int64_t{31};
  int64_t kk = 0;
  for (; kk < kc_full; kk += 32) step(kk, MaskedStep<false>{});
  if (kk < b.kc) step(kk, MaskedStep<true>{});
  if (kBlocked && b.carry_out) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r) _mm512_store_ps(carried(i, r), acc[i][r]);
    return;
  }
  store_tile<MR, NR>(acc, y, y_stride, bias, accumulate);
}

// Weight rows [jr, jr + NR) against all m rows of x (for_decode_chunks).
template <int NR, bool kBlocked>
STRATA_INLINE void group_bf16(const Bf16Block& b, int64_t m, int64_t jr, bool forward, float* y,
                              int64_t y_stride, const float* bias, bool accumulate) {
  for_decode_chunks(m, forward, [&](auto mr, int64_t i0) {
    tile_bf16<decltype(mr)::kValue, NR, kBlocked>(b, i0, jr, y + i0 * y_stride + jr, y_stride,
                                                  bias != nullptr ? bias + jr : nullptr,
                                                  accumulate);
  });
}

// Batched decode (1 < m <= 16) on this block (of k, when x does not fit in
// L1 whole: decode_block_k), with x in L1 (kDecodeXInL1Bytes): each group of
// adjacent weight rows is read once and used by every x chunk before the
// next, the chunks visited in alternating order so that the one a group
// starts with is still in L1 from the group before. Up to four x rows the
// groups are single weight rows (one sequential stream, as at m = 1; four-row
// groups measured no faster end to end at m = 2-4 on the Zen 5 host); above,
// pairs of rows (8 x 2 tiles at m = 16: 16 accumulators, 10 loads per 16
// vdpbf16ps), each row prefetched in software (without it, interleaved
// streams ran at half the rate on the Zen 4 host: BENCHMARKS.md, "Batched
// decode"; pairs from m = 5 instead of m = 9 decoded 10-17% faster at m = 6-8
// on the Zen 5 host: "Zen 5").
template <bool kBlocked>
void rows_bf16_x_in_l1(const Bf16Block& b, int64_t m, int64_t rows, float* y, int64_t y_stride,
                       const float* bias, bool accumulate) {
  int64_t j = 0;
  bool forward = true;
  if (m > 4) {
    for (; j + 2 <= rows; j += 2, forward = !forward) {
      group_bf16<2, kBlocked>(b, m, j, forward, y, y_stride, bias, accumulate);
    }
  }
  for (; j < rows; ++j, forward = !forward) {
    group_bf16<1, kBlocked>(b, m, j, forward, y, y_stride, bias, accumulate);
  }
}

// The block's rows against MR rows of x from i0. One x row (at m = 1 under
// the variants kOwnHwPrefetch and kOwnFourRows, and Q8_0's dequantized tiles;
// kOwn at m = 1 runs gemv_bf16_x_in_registers) walks the weight
// rows one at a time (a single sequential stream, see above), or four at a
// time where b.four_row_gemv (on long rows, four independent vdpbf16ps
// chains hide the chain's latency: BENCHMARKS.md, "Zen 5"); with more x
// rows, four weight rows per tile amortize the x loads, which come from L2
// when x does not fit in L1.
template <int MR>
void rows_bf16(const Bf16Block& b, int64_t i0, int64_t rows, float* y, int64_t y_stride,
               const float* bias, bool accumulate) {
  int64_t j = 0;
  if (MR > 1 || b.four_row_gemv) {
    for (; j + 4 <= rows; j += 4) {
      tile_bf16<MR, 4>(b, i0, j, y + j, y_stride, bias != nullptr ? bias + j : nullptr,
                       accumulate);
    }
  }
  for (; j < rows; ++j) {
    tile_bf16<MR, 1>(b, i0, j, y + j, y_stride, bias != nullptr ? bias + j : nullptr, accumulate);
  }
}

// Dequantizes rows [j0, j0 + rows) x k-values [k0, k0 + kc) of a Q8_0 weight
// to bf16 in out [rows, out_stride].
void dequant_q8_tile(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0, int64_t kc,
                     uint16_t* out, int64_t out_stride) {
  const BlockQ8_0* w = static_cast<const BlockQ8_0*>(a.w);
  int64_t blocks_per_row = a.k / 32;
  for (int64_t r = 0; r < rows; ++r) {
    const BlockQ8_0* blk = w + (j0 + r) * blocks_per_row + k0 / 32;
    for (int64_t bi = 0; bi < kc / 32; ++bi) {
      __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[bi].values));
      __m512 d = _mm512_set1_ps(_cvtsh_ss(blk[bi].scale_f16));
      __m512 lo =
          _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q))), d);
      __m512 hi = _mm512_mul_ps(
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1))), d);
      _mm512_storeu_si512(out + r * out_stride + bi * 32, bf16_from_f32x2(hi, lo));
    }
  }
}

// Rows [j0, j0 + rows) x k-values [k0, k0 + kc) of a quantized weight as
// bf16 in out [rows, out_stride].
void dequant_tile(const MatmulArgs& a, int64_t j0, int64_t rows, int64_t k0, int64_t kc,
                  uint16_t* out, int64_t out_stride) {
  if (a.w_panels != nullptr)
    return avx512_dequant_panels_bf16(a, j0, rows, k0, kc, out, out_stride);
  if (a.w_dtype == DType::kQ8_0) return dequant_q8_tile(a, j0, rows, k0, kc, out, out_stride);
  avx512_dequant_lowbit_bf16(a, j0, rows, k0, kc, out, out_stride);
}

// Weight rows ahead of the current one that a k-blocked pass prefetches (its
// weight reads are runs of one block of a row, one row after the other).
constexpr int64_t kBlockedPrefetchRows = 4;
// Up to four x rows, four-by-four tiles over whole rows (x from L2) stay
// faster than one-row tiles on blocks of k: the blocks are for m >= 5.
constexpr int64_t kBlockedDecodeMinRows = 5;

// The k block of batched BF16 decode: all m rows of x for it fit in
// kDecodeXInL1Bytes (a multiple of 32 values), or all of k when they do.
int64_t decode_block_k(int64_t m, int64_t k_pad) {
  const int64_t kc = (kDecodeXInL1Bytes / (m * 2)) & ~int64_t{31};
  return kc >= k_pad ? k_pad : kc;
}

// One x row against BF16 weights (m = 1, MatmulKernel::kOwn), x held in
// registers: k in blocks of kGemvXRegs steps of 32 values, x's block loaded
// into as many registers once per kBf16TileRows weight rows, and each row's
// run over the block is only weight loads and vdpbf16ps, its sum carried
// from block to block in t_decode_carry. With x loaded from memory at every
// step instead, x's lines (2 bytes per value, 28 KiB at k = 14336) leave L1
// under the weight stream and come back from L2 row after row: on the Zen 5
// host, one thread, the one-row walk read 15-17 GB/s on 4096 x 14336 and
// this 26 (1.4-1.6x), 1.4-1.6x more on 896 x 4864, 1.0-1.4x on the k = 896
// shapes (BENCHMARKS.md, "x in registers"). Each output is the same chain of
// vdpbf16ps over k in order as tile_bf16<1, 1> (the variants kOwnHwPrefetch
// and kOwnFourRows still walk that way), so the bits are the same. The
// weights are prefetched into L1 kGemvPrefetchRows rows ahead: the next
// rows' runs over the same block.
constexpr int kGemvXRegs = 28;  // 896 values: Qwen2.5-0.5B's k = 896 in one block
constexpr int64_t kGemvBlockK = kGemvXRegs * 32;
constexpr int64_t kGemvPrefetchRows = 4;

void gemv_bf16_x_in_registers(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  const uint16_t* x = a.x_bf16;
  const int64_t k = a.k;
  const int64_t k_regs = k / kGemvBlockK * kGemvBlockK;  // k covered by whole blocks
  const int64_t k_full = k & ~int64_t{31};
  const int64_t prefetch_bytes = kGemvPrefetchRows * k * 2;
  float* carry = t_decode_carry;
  for (int64_t jb = n_begin; jb < n_end; jb += kBf16TileRows) {
    const int64_t rows = min64(kBf16TileRows, n_end - jb);
    const uint16_t* w = static_cast<const uint16_t*>(a.w) + jb * k;
    for (int64_t k0 = 0; k0 < k_regs; k0 += kGemvBlockK) {
      __m512i xr[kGemvXRegs];
#pragma GCC unroll 32
      for (int i = 0; i < kGemvXRegs; ++i) xr[i] = _mm512_loadu_si512(x + k0 + i * 32);
      for (int64_t r = 0; r < rows; ++r) {
        const uint16_t* wr = w + r * k + k0;
        __m512 acc = k0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(carry + r * 16);
#pragma GCC unroll 32
        for (int i = 0; i < kGemvXRegs; ++i) {
          _mm_prefetch(reinterpret_cast<const char*>(wr + i * 32) + prefetch_bytes, _MM_HINT_T0);
          acc = dot_bf16_pairs(acc, xr[i], _mm512_loadu_si512(wr + i * 32));
        }
        _mm512_store_ps(carry + r * 16, acc);
      }
    }
    // The rest of k (less than a block) with x from memory, then the sums.
    for (int64_t r = 0; r < rows; ++r) {
      const uint16_t* wr = w + r * k;
      __m512 acc[1][1] = {{k_regs == 0 ? _mm512_setzero_ps() : _mm512_load_ps(carry + r * 16)}};
      int64_t kk = k_regs;
      for (; kk < k_full; kk += 32) {
        _mm_prefetch(reinterpret_cast<const char*>(wr + kk) + prefetch_bytes, _MM_HINT_T0);
        acc[0][0] =
            dot_bf16_pairs(acc[0][0], _mm512_loadu_si512(x + kk), _mm512_loadu_si512(wr + kk));
      }
      if (kk < k) {
        const __m512i wv = _mm512_maskz_loadu_epi16(tail_mask32(k - kk), wr + kk);
        acc[0][0] = dot_bf16_pairs(acc[0][0], _mm512_loadu_si512(x + kk), wv);
      }
      store_tile<1, 1>(acc, a.y + jb + r, a.n, a.bias != nullptr ? a.bias + jb + r : nullptr,
                       false);
    }
  }
}

void matmul_bf16_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end, uint16_t* scratch) {
  if (!tensor::is_quantized(a.w_dtype) && a.m == 1 && a.gemv_tile_rows == 0 &&
      a.prefetch_one_row_tiles) {
    return gemv_bf16_x_in_registers(a, n_begin, n_end);
  }
  bool q8 = tensor::is_quantized(a.w_dtype);
  // BF16 weights are read in place, each row in one pass over k, except in
  // batched decode when x does not fit in L1 (decode_block_k); Q8_0 rows are
  // dequantized tile by tile into the scratch.
  const bool batched_decode = !q8 && a.m >= kBlockedDecodeMinRows && a.m <= kDecodeMaxRows;
  const int64_t tile_k = q8 ? kBf16TileK : batched_decode ? decode_block_k(a.m, a.k_pad) : a.k;
  const bool blocked = batched_decode && tile_k < a.k;
  const bool x_in_l1 = !q8 && a.m > 1 && (batched_decode || a.m * a.k_pad * 2 <= kDecodeXInL1Bytes);
  for (int64_t jb = n_begin; jb < n_end; jb += kBf16TileRows) {
    int64_t rows = min64(kBf16TileRows, n_end - jb);
    const float* bias = a.bias != nullptr ? a.bias + jb : nullptr;
    for (int64_t k0 = 0; k0 < a.k; k0 += tile_k) {
      Bf16Block b;
      b.kc = min64(tile_k, a.k - k0);
      b.prefetch_one_row = a.prefetch_one_row_tiles;
      b.four_row_gemv = a.gemv_tile_rows == 4;
      b.x = a.x_bf16 + k0;
      b.x_stride = a.k_pad;
      if (q8) {
        dequant_tile(a, jb, rows, k0, b.kc, scratch, kBf16TileK);
        b.w = scratch;
        b.w_stride = kBf16TileK;
      } else {
        b.w = static_cast<const uint16_t*>(a.w) + jb * a.k + k0;
        b.w_stride = a.k;
      }
      bool last = k0 + tile_k >= a.k;
      const float* chunk_bias = last ? bias : nullptr;
      bool accumulate = k0 > 0 && !blocked;
      if (blocked) {
        b.carry = t_decode_carry;
        b.carry_x_rows = a.m;
        b.carry_in = k0 > 0;
        b.carry_out = !last;
        b.prefetch_ahead = kBlockedPrefetchRows * a.k * 2;
      }
      float* y = a.y + jb;
      if (x_in_l1) {
        if (blocked) {
          rows_bf16_x_in_l1<true>(b, a.m, rows, y, a.n, chunk_bias, accumulate);
        } else {
          rows_bf16_x_in_l1<false>(b, a.m, rows, y, a.n, chunk_bias, accumulate);
        }
        continue;
      }
      for_row_chunks(a.m, [&](auto mr, int64_t i) {
        rows_bf16<decltype(mr)::kValue>(b, i, rows, y + i * a.n, a.n, chunk_bias, accumulate);
      });
    }
  }
}

// ---- prefill: oneDNN GEMM on slices of n (falls back to our kernels) ----

bool prefill_quantized(const MatmulArgs& a, int64_t n_begin, int64_t n_end, uint16_t* scratch) {
  for (int64_t j = n_begin; j < n_end; j += kPrefillTileRows) {
    int64_t rows = min64(kPrefillTileRows, n_end - j);
    dequant_tile(a, j, rows, 0, a.k, scratch, a.k);
    if (!onednn_gemm(GemmType::kBF16, a.x_bf16, a.k_pad, a.m, scratch, a.k, rows, a.k, a.y + j,
                     a.n)) {
      return false;
    }
  }
  return true;
}

void add_bias(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  for (int64_t i = 0; i < a.m; ++i) {
    float* y = a.y + i * a.n;
    for (int64_t j = n_begin; j < n_end; j += 16) {
      __mmask16 m = tail_mask16(n_end - j);
      __m512 v =
          _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + j), _mm512_maskz_loadu_ps(m, a.bias + j));
      _mm512_mask_storeu_ps(y + j, m, v);
    }
  }
}

// oneDNN runs one call per prefill_slice_rows() weight rows, at fixed column
// offsets (the callers' ranges start at multiples of it): every call has the
// same shape whatever the thread count, so neither are the results' bits.
void matmul_prefill_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end, uint16_t* scratch) {
  bool done = false;
  if (a.w_dtype == DType::kF32 || a.w_dtype == DType::kBF16) {
    done = true;
    const int64_t slice = prefill_slice_rows(a.w_dtype, a.k);
    for (int64_t j = n_begin; j < n_end && done; j += slice) {
      const int64_t rows = min64(slice, n_end - j);
      done = a.w_dtype == DType::kF32
                 ? onednn_gemm(GemmType::kF32, a.x, a.k, a.m,
                               static_cast<const float*>(a.w) + j * a.k, a.k, rows, a.k, a.y + j,
                               a.n)
                 : onednn_gemm(GemmType::kBF16, a.x_bf16, a.k_pad, a.m,
                               static_cast<const uint16_t*>(a.w) + j * a.k, a.k, rows, a.k,
                               a.y + j, a.n);
    }
  } else if (tensor::is_quantized(a.w_dtype)) {
    done = prefill_quantized(a, n_begin, n_end, scratch);
  }
  if (done) {
    if (a.bias != nullptr) add_bias(a, n_begin, n_end);
  } else if (a.x_bf16 != nullptr) {
    matmul_bf16_range(a, n_begin, n_end, scratch);
  } else {
    matmul_f32_range(a, n_begin, n_end);
  }
}

void x_to_bf16(const float* x, int64_t rows, int64_t k, int64_t k_pad, uint16_t* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    for (int64_t kk = 0; kk < k_pad; kk += 32) {
      int64_t left = k - kk;
      __m512 lo = _mm512_maskz_loadu_ps(left > 0 ? tail_mask16(left) : 0, xr + kk);
      __m512 hi = _mm512_maskz_loadu_ps(left > 16 ? tail_mask16(left - 16) : 0, xr + kk + 16);
      _mm512_storeu_si512(out + r * k_pad + kk, bf16_from_f32x2(hi, lo));
    }
  }
}

// ---- element-wise ops ----

// e^x for f32 lanes (Cephes-style: 2^n * p(r), |r| <= ln2/2); ~2 ulp.
// Exactly 0 below -86.5, where e^x nears f32's smallest normal: an
// instruction that makes a subnormal costs a microcode assist on x86 (~100x
// its time), and a softmax over a confident model's vocabulary would make one
// in nearly every lane (the Qwen shape's logits span ~400).
STRATA_INLINE __m512 exp512(__m512 x) {
  const __mmask16 normal = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-86.5f), _CMP_GE_OQ);
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-86.5f)), _mm512_set1_ps(88.3762626647949f));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_maskz_scalef_ps(normal, p, n);
}

STRATA_INLINE float dot512(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask16(n - i);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
  }
  return reduce1(acc);
}

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float mean = dot512(xr, xr, dim) / static_cast<float>(dim);
    __m512 inv = _mm512_set1_ps(1.0f / __builtin_sqrtf(mean + eps));
    for (int64_t i = 0; i < dim; i += 16) {
      __mmask16 m = tail_mask16(dim - i);
      __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, xr + i), inv);
      _mm512_mask_storeu_ps(y + r * dim + i, m,
                            _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, weight + i)));
    }
  }
}

void rope_neox(float* xh, int64_t half, const float* c, const float* s) {
  for (int64_t i = 0; i < half; i += 16) {
    __mmask16 m = tail_mask16(half - i);
    __m512 x0 = _mm512_maskz_loadu_ps(m, xh + i);
    __m512 x1 = _mm512_maskz_loadu_ps(m, xh + half + i);
    __m512 cv = _mm512_maskz_loadu_ps(m, c + i), sv = _mm512_maskz_loadu_ps(m, s + i);
    _mm512_mask_storeu_ps(xh + i, m, _mm512_fmsub_ps(x0, cv, _mm512_mul_ps(x1, sv)));
    _mm512_mask_storeu_ps(xh + half + i, m, _mm512_fmadd_ps(x1, cv, _mm512_mul_ps(x0, sv)));
  }
}

void rope_interleaved(float* xh, int64_t half, const float* c, const float* s) {
  const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  for (int64_t i = 0; i < half; i += 8) {  // 8 pairs = 16 floats per step
    int64_t pairs = min64(8, half - i);
    __mmask16 m = tail_mask16(2 * pairs);
    __mmask16 mp = tail_mask16(pairs);
    __m512 x = _mm512_maskz_loadu_ps(m, xh + 2 * i);
    __m512 cv = _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(mp, c + i));
    __m512 sv = _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(mp, s + i));
    __m512 swapped = _mm512_permute_ps(x, 0xB1);  // (x1, x0) in each pair
    // even lanes x0*c - x1*s, odd lanes x1*c + x0*s
    _mm512_mask_storeu_ps(xh + 2 * i, m, _mm512_fmaddsub_ps(x, cv, _mm512_mul_ps(swapped, sv)));
  }
}

void rope_apply(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, const float* cos,
                const float* sin, RopeStyle style) {
  int64_t half = head_dim / 2;
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t h = 0; h < num_heads; ++h) {
      float* xh = x + (t * num_heads + h) * head_dim;
      if (style == RopeStyle::kNeox) {
        rope_neox(xh, half, cos + t * half, sin + t * half);
      } else {
        rope_interleaved(xh, half, cos + t * half, sin + t * half);
      }
    }
  }
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask16(n - i);
    __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    __m512 u = _mm512_maskz_loadu_ps(m, up + i);
    __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, u));
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  __m512 mx = _mm512_set1_ps(-__builtin_inff());
  for (int64_t i = 0; i < n; i += 16) {
    mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(mx, tail_mask16(n - i), x + i));
  }
  __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask16(n - i);
    __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vmax));
    e = _mm512_maskz_mov_ps(m, e);
    sum = _mm512_add_ps(sum, e);
    _mm512_mask_storeu_ps(x + i, m, e);
  }
  // Probabilities below 2x f32's smallest normal become exactly 0, so the
  // scaling makes no subnormals either (see exp512).
  const float total = reduce1(sum);
  const __m512 inv = _mm512_set1_ps(1.0f / total);
  const __m512 smallest = _mm512_set1_ps(2.0f * std::numeric_limits<float>::min() * total);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask16(n - i);
    const __m512 e = _mm512_maskz_loadu_ps(m, x + i);
    const __mmask16 keep = _mm512_cmp_ps_mask(e, smallest, _CMP_NLT_UQ);  // NaN stays NaN
    _mm512_mask_storeu_ps(x + i, m, _mm512_maskz_mul_ps(keep, e, inv));
  }
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask16(n - i);
    __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_maskz_loadu_ps(m, x + i));
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

// out[d] = Σ_j p[j] * v_j[d], 16 lanes of d at a time kept in a register.
void weighted_sum(const float* p, const float* v, int64_t count, int64_t v_stride, int64_t d,
                  float* out) {
  for (int64_t c = 0; c < d; c += 16) {
    __mmask16 m = tail_mask16(d - c);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < count; ++j) {
      acc = _mm512_fmadd_ps(_mm512_set1_ps(p[j]), _mm512_maskz_loadu_ps(m, v + j * v_stride + c),
                            acc);
    }
    _mm512_mask_storeu_ps(out + c, m, acc);
  }
}

void attention_rows(const float* q, const float* k, const float* v, const AttentionShape& s,
                    int64_t row_begin, int64_t row_end, float* scores, float* out) {
  int64_t group = s.num_heads / s.num_kv_heads;
  int64_t d = s.head_dim;
  int64_t kv_stride = s.num_kv_heads * d;
  for (int64_t row = row_begin; row < row_end; ++row) {
    int64_t t = row / s.num_heads, h = row % s.num_heads, kvh = h / group;
    int64_t p = s.start_pos + t;
    int64_t lo =
        s.sliding_window > 0 && p - s.sliding_window + 1 > 0 ? p - s.sliding_window + 1 : 0;
    const float* qh = q + row * d;
    const float* kb = k + lo * kv_stride + kvh * d;
    for (int64_t j = 0; j <= p - lo; ++j) scores[j] = dot512(qh, kb + j * kv_stride, d) * s.scale;
    softmax(scores, p - lo + 1);
    weighted_sum(scores, v + lo * kv_stride + kvh * d, p - lo + 1, kv_stride, d, out + row * d);
  }
}

// 16 f32 lanes for the paged attention kernel (paged_attention_kernel.h).
struct V512 {
  __m512 v;
  static STRATA_INLINE V512 zero() { return {_mm512_setzero_ps()}; }
  static STRATA_INLINE V512 set1(float x) { return {_mm512_set1_ps(x)}; }
  static STRATA_INLINE V512 load(const float* p) { return {_mm512_loadu_ps(p)}; }
  static STRATA_INLINE void store(float* p, V512 a) { _mm512_storeu_ps(p, a.v); }
  static STRATA_INLINE V512 load_bf16(const uint8_t* p) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return {_mm512_castsi512_ps(_mm512_slli_epi32(h, 16))};
  }
  static STRATA_INLINE V512 load_f16(const uint8_t* p) {
    return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
  }
  // e5m2 is the top byte of a half.
  static STRATA_INLINE V512 load_fp8_e5m2(const uint8_t* p) {
    const __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return {_mm512_cvtph_ps(_mm256_slli_epi16(x, 8))};
  }
  // e4m3: sign to bit 15, exponent and mantissa to bits 7..13 of a half
  // (2^-8 of the value, subnormals included: the conversion is exact), x 256.
  static STRATA_INLINE V512 load_fp8_e4m3(const uint8_t* p) {
    const __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(x, _mm256_set1_epi16(0x80)), 8);
    const __m256i mag = _mm256_slli_epi16(_mm256_and_si256(x, _mm256_set1_epi16(0x7f)), 7);
    return {_mm512_mul_ps(_mm512_cvtph_ps(_mm256_or_si256(sign, mag)), _mm512_set1_ps(256.0f))};
  }
  static STRATA_INLINE V512 add(V512 a, V512 b) { return {_mm512_add_ps(a.v, b.v)}; }
  static STRATA_INLINE V512 sub(V512 a, V512 b) { return {_mm512_sub_ps(a.v, b.v)}; }
  static STRATA_INLINE V512 mul(V512 a, V512 b) { return {_mm512_mul_ps(a.v, b.v)}; }
  static STRATA_INLINE V512 max(V512 a, V512 b) { return {_mm512_max_ps(a.v, b.v)}; }
  static STRATA_INLINE V512 fmadd(V512 a, V512 b, V512 c) {
    return {_mm512_fmadd_ps(a.v, b.v, c.v)};
  }
  // e^x for x <= 0: 2^(x log2 e) as 2^k times a degree-6 polynomial of the
  // remainder; exactly 0 below -87 (and for -inf), exactly 1 at 0.
  static STRATA_INLINE V512 exp_nonpositive(V512 x) {
    const __m512 lowest = _mm512_set1_ps(-87.0f);
    const __m512 t = _mm512_mul_ps(_mm512_max_ps(x.v, lowest), _mm512_set1_ps(1.44269504088896341f));
    const __m512 k = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_mul_ps(_mm512_sub_ps(t, k), _mm512_set1_ps(0.693147180559945309f));
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    const __m512i bits = _mm512_add_epi32(_mm512_castps_si512(p),
                                          _mm512_slli_epi32(_mm512_cvtps_epi32(k), 23));
    const __mmask16 keep = _mm512_cmp_ps_mask(x.v, lowest, _CMP_GE_OQ);
    return {_mm512_maskz_mov_ps(keep, _mm512_castsi512_ps(bits))};
  }
  // Lanes j with first <= tile + j <= last.
  static STRATA_INLINE __mmask16 key_lanes(float tile, float first, float last) {
    const __m512 keys = _mm512_add_ps(
        _mm512_set1_ps(tile),
        _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    return _mm512_cmp_ps_mask(_mm512_set1_ps(first), keys, _CMP_LE_OQ) &
           _mm512_cmp_ps_mask(keys, _mm512_set1_ps(last), _CMP_LE_OQ);
  }
  static STRATA_INLINE V512 visible_keys(V512 s, float tile, float first, float last) {
    return {_mm512_mask_mov_ps(_mm512_set1_ps(-__builtin_inff()), key_lanes(tile, first, last),
                               s.v)};
  }
  static STRATA_INLINE V512 keep_keys(V512 s, float tile, float first, float last) {
    return {_mm512_maskz_mov_ps(key_lanes(tile, first, last), s.v)};
  }
  static STRATA_INLINE float reduce_max(V512 a) { return _mm512_reduce_max_ps(a.v); }
  static STRATA_INLINE V512 visible(V512 s, V512 first, V512 last, float key) {
    const __m512 k = _mm512_set1_ps(key);
    const __mmask16 m =
        _mm512_cmp_ps_mask(first.v, k, _CMP_LE_OQ) & _mm512_cmp_ps_mask(k, last.v, _CMP_LE_OQ);
    return {_mm512_mask_mov_ps(_mm512_set1_ps(-__builtin_inff()), m, s.v)};
  }
};

#include "ops/cpu/paged_attention_kernel.h"

void paged_attention_item(const PagedAttentionBatch& b, const PagedAttentionItem& item,
                          float* scratch) {
  paged_attention_item_for<V512>(b, item, scratch);
}

constexpr KernelTable kAvx512 = {
#if defined(STRATA_AVX512_NO_BF16) && defined(STRATA_HAVE_ONEDNN)
    "avx512_vnni+onednn",
#elif defined(STRATA_AVX512_NO_BF16)
    "avx512_vnni",
#elif defined(STRATA_HAVE_ONEDNN)
    "avx512_bf16+onednn",
#else
    "avx512_bf16",
#endif
    matmul_f32_range,
    matmul_bf16_range,
    matmul_prefill_range,
    x_to_bf16,
    rms_norm,
    rope_apply,
    silu_mul,
    softmax,
    add_inplace,
    attention_rows,
    nullptr,  // Q8_0 decodes from panels (avx512_matmul_panels_range)
    nullptr,
    avx512_matmul_lowbit_range,
    avx512_x_to_q8_groups,
    paged_attention_item,
    avx512_matmul_panels_range,
    avx512_x_to_q8_blocks,
    every_lowbit_type,
    true,  // the low-bit kernels use vpdpbusd
};

}  // namespace
}  // namespace strata::ops::cpu::STRATA_AVX512_NS

namespace strata::ops::cpu {
#ifdef STRATA_AVX512_NO_BF16
const KernelTable* avx512_vnni_kernels() { return &avx512_vnni::kAvx512; }
#else
const KernelTable* avx512_kernels() { return &avx512_bf16::kAvx512; }
#endif
}  // namespace strata::ops::cpu
