// AVX2 kernels for GGUF's low-bit weight types (AVX2 + FMA + F16C, no VNNI):
// the avx2 table's matmul_lowbit_range and x_to_q8_groups. Compiled with the
// flags and under the rules of avx2.cc (intrinsics, our POD structs and local
// helpers only; nothing runs unless avx2_supported() said yes).
//
// x is quantized to int8 once per call, per 32 values for the 32-value types
// and IQ4_XS, and per 256 for the K-quants Q2_K ... Q6_K (kernels.h,
// lowbit_x_block; llama.cpp's Q8_0 and Q8_K activations). Products are exact
// integers from vpmaddubsw (u8 x s8 -> pairs of s16; no pair here exceeds
// 2 * 127 * 127) and vpmaddwd:
//   Q4_0, Q5_0, IQ4_NL, IQ4_XS: signed weights w - z, |w - z| (u8) against x
//     with the sign of w - z; one int32 sum per 32-value block (8 lanes),
//     converted and scaled by d_w * d_x in f32 (llama.cpp's AVX2 dot
//     products; IQ4_XS's d_w is d times the block's 6-bit scale - 32).
//   Q4_1, Q5_1: unsigned codes against x as above, plus the min term
//     m * (d_x Σ q) per block from the x sums (sum16).
//   Q2_K ... Q6_K: codes against x, each 16 values' pair sums times the
//     integer scale of their sub-block (vpmaddwd), summed over the 256-value
//     group in int32; one conversion and FMA by d * d_x per group, and the
//     mins (Q3_K: its zero point 4, Q6_K: 32) as Σ_j B_j (d_x Σ q)_j from
//     sum16.
// Every output is two f32 chains (even and odd steps) over k in order, added
// at the end, in every tile shape: results depend neither on m nor on how n is
// split across threads. The table has no prefill GEMM, so these kernels run at
// every m (prefill blocks weight rows so each chunk of x meets them in cache).
#include <immintrin.h>

#include <cstdint>

#include "ops/cpu/avx2_util.h"
#include "tensor/quant_blocks.h"

namespace strata::ops::cpu {
namespace {

using tensor::DType;

STRATA_INLINE float f16(uint16_t h) { return _cvtsh_ss(h); }

// How far ahead in the weight stream a step prefetches (none, 1, 4 and 8 KiB
// measured with STRATA_CPU=avx2 on Zen 5: 4 KiB best for Q4_K, Q5_0 flat).
constexpr int64_t kPrefetchBytes = 4096;
// Rows of x per tile (two chains each, 8 of the 16 ymm registers).
constexpr int64_t kTileRowsX = 4;
// Weight rows that stay in cache while every chunk of x's rows passes them.
constexpr int64_t kWeightRowsPerPass = 16;

// ---- 32-value blocks ----

template <DType T>
struct Block32;
template <>
struct Block32<DType::kQ4_0> {
  using B = tensor::BlockQ4_0;
};
template <>
struct Block32<DType::kQ4_1> {
  using B = tensor::BlockQ4_1;
};
template <>
struct Block32<DType::kQ5_0> {
  using B = tensor::BlockQ5_0;
};
template <>
struct Block32<DType::kQ5_1> {
  using B = tensor::BlockQ5_1;
};
template <>
struct Block32<DType::kIQ4_NL> {
  using B = tensor::BlockIQ4_NL;
};

// Types whose weights are d * (u - z): their codes go in signed.
template <DType T>
constexpr bool has_zero_point() {
  return T == DType::kQ4_0 || T == DType::kQ5_0 || T == DType::kIQ4_NL || T == DType::kIQ4_XS;
}

// Bytes of weight per 32 values (IQ4_XS: a 256-value block's 136 / 8).
template <DType T>
constexpr int64_t bytes_per_32() {
  if constexpr (T == DType::kIQ4_XS) {
    return static_cast<int64_t>(sizeof(tensor::BlockIQ4_XS)) / 8;
  } else {
    return static_cast<int64_t>(sizeof(typename Block32<T>::B));
  }
}

// 32 nibble codes of a block's 16 bytes: values 0-15 (low nibbles), then 16-31.
STRATA_INLINE __m256i nibbles32(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// 0xFF in byte j where bit j of the little-endian u32 at p is set.
STRATA_INLINE __m256i bytes_from_bits(const uint8_t* p) {
  uint32_t bits;
  __builtin_memcpy(&bits, p, 4);
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

STRATA_INLINE __m256i iq4_levels(__m256i nib) {
  const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tensor::kIq4Values));
  return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(levels), nib);
}

// A block's 32 codes in value order: signed w - z for types with a zero
// point, else unsigned u.
template <DType T>
STRATA_INLINE __m256i block_codes(const typename Block32<T>::B& b) {
  const __m256i nib = nibbles32(b.qs);
  if constexpr (T == DType::kQ4_0) {
    return _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
  } else if constexpr (T == DType::kQ5_0) {  // nib + 16 bit - 16: nib | 0xF0 where the bit is clear
    return _mm256_or_si256(
        nib, _mm256_andnot_si256(bytes_from_bits(b.qh), _mm256_set1_epi8(static_cast<char>(0xF0))));
  } else if constexpr (T == DType::kQ5_1) {
    return _mm256_or_si256(nib, _mm256_and_si256(bytes_from_bits(b.qh), _mm256_set1_epi8(16)));
  } else if constexpr (T == DType::kIQ4_NL) {
    return iq4_levels(nib);
  } else {
    static_assert(T == DType::kQ4_1);
    return nib;
  }
}

// The codes and factors of 32 values of a row (a 32-value block, or a
// sub-block of IQ4_XS): codes in value order (signed w - z for types with a
// zero point, else unsigned u), w = d * code (- m for Q4_1, Q5_1).
struct Block32View {
  __m256i codes;
  float d, m;
};

// An IQ4_XS block's eight factors d * (6-bit scale - 32), one per 32 values
// (scale ib: bits 4 ib.. of scales_l, bits 2 ib.. of scales_h on top).
STRATA_INLINE void iq4_xs_factors(const tensor::BlockIQ4_XS& blk, float (&dw)[8]) {
  uint32_t low;
  __builtin_memcpy(&low, blk.scales_l, 4);
  const __m256i lo =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(low)),
                                         _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                       _mm256_set1_epi32(0xF));
  const __m256i hi =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(blk.scales_h),
                                         _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                       _mm256_set1_epi32(3));
  const __m256i ls = _mm256_or_si256(lo, _mm256_slli_epi32(hi, 4));
  _mm256_storeu_ps(dw,
                   _mm256_mul_ps(_mm256_set1_ps(f16(blk.d)),
                                 _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32)))));
}

// Block b of a row of a 32-value type.
template <DType T>
STRATA_INLINE Block32View block32_at(const char* row, int64_t b) {
  const auto& blk = reinterpret_cast<const typename Block32<T>::B*>(row)[b];
  float m = 0.0f;
  if constexpr (T == DType::kQ4_1 || T == DType::kQ5_1) m = f16(blk.m);
  return {block_codes<T>(blk), f16(blk.d), m};
}

// Weight row `row` against x rows [i0, i0 + MR); writes y[i][j].
template <DType T, int MR>
STRATA_INLINE void blocks32_row_tile(const MatmulArgs& a, const char* row, int64_t i0, int64_t j) {
  constexpr bool kSigned = has_zero_point<T>();
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[MR][2];
  float min_sum[MR];
  for (int i = 0; i < MR; ++i) {
    acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    min_sum[i] = 0.0f;
  }
  auto block = [&](int64_t b, int chain, const Block32View& w) {
    const __m256i aw = kSigned ? _mm256_sign_epi8(w.codes, w.codes) : w.codes;
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const int64_t r = i0 + i;
      const __m256i xv =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x_q8s + r * a.k_pad256 + b * 32));
      const __m256i p16 = _mm256_maddubs_epi16(aw, kSigned ? _mm256_sign_epi8(xv, w.codes) : xv);
      const __m256 sum = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, ones));
      const float dx = a.x_q8_scale[r * (a.k_pad256 / 4) + (b / 2) * 16 + (b % 2) * 8];
      acc[i][chain] = _mm256_fmadd_ps(sum, _mm256_set1_ps(dx * w.d), acc[i][chain]);
      if constexpr (!kSigned) {
        const float* xs = a.x_q8_sum16 + r * (a.k_pad256 / 16) + 2 * b;
        min_sum[i] += w.m * (xs[0] + xs[1]);
      }
    }
  };
  if constexpr (T == DType::kIQ4_XS) {  // 256-value blocks of eight 32-value sub-blocks
    const auto* blk = reinterpret_cast<const tensor::BlockIQ4_XS*>(row);
    for (int64_t g = 0; g < a.k / 256; ++g) {
      const char* at = reinterpret_cast<const char*>(blk + g) + kPrefetchBytes;
      _mm_prefetch(at, _MM_HINT_T0);
      _mm_prefetch(at + 64, _MM_HINT_T0);
      _mm_prefetch(at + 128, _MM_HINT_T0);
      float dw[8];
      iq4_xs_factors(blk[g], dw);
#pragma GCC unroll 8
      for (int ib = 0; ib < 8; ++ib) {
        block(8 * g + ib, ib % 2, {iq4_levels(nibbles32(blk[g].qs + 16 * ib)), dw[ib], 0.0f});
      }
    }
  } else {
    const int64_t nb = a.k / 32;
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
      _mm_prefetch(row + b * bytes_per_32<T>() + kPrefetchBytes, _MM_HINT_T0);
      block(b, 0, block32_at<T>(row, b));
      block(b + 1, 1, block32_at<T>(row, b + 1));
    }
    if (b < nb) block(b, 0, block32_at<T>(row, b));
  }
  store_two_chains<MR>(acc, kSigned ? nullptr : min_sum, a, i0, j);
}

// ---- Q2_K ... Q6_K: 256-value groups ----

// A group as codes, integer scales and min factors: value 32 z + l has code
// u[z] byte l, its pair sums scale s[z] (int16 lanes 0-7: values 32 z + 0..15,
// lanes 8-15: 32 z + 16..31), and Σ w x = d Σ s u q - Σ_t b_t (Σ q)_t over
// 16-value halves t (b[0]: t = 0..7, b[1]: t = 8..15).
struct KGroup {
  __m256i u[8];
  __m256i s[8];
  __m256 b[2];
  float d;
};

template <DType T>
struct KBlock;
template <>
struct KBlock<DType::kQ4_K> {
  using B = tensor::BlockQ4_K;
};
template <>
struct KBlock<DType::kQ5_K> {
  using B = tensor::BlockQ5_K;
};

// Q4_K / Q5_K: the eight 6-bit scales (*sc, byte j = sub-block j) and mins
// (*mn) packed in 12 bytes (tensor::k4_scale_min's layout), four at a time:
// bytes 0-3 hold scales 0-3 and the top bits of scales 4-7, bytes 4-7 mins
// 0-3 and the top bits of mins 4-7, bytes 8-11 the low nibbles of both.
STRATA_INLINE void scales_mins_k4(const uint8_t* q, uint64_t* sc, uint64_t* mn) {
  uint32_t w[3];
  __builtin_memcpy(w, q, 12);
  const uint32_t six = 0x3f3f3f3fu, four = 0x0f0f0f0fu, two = 0x03030303u;
  const uint32_t sc_hi = (w[2] & four) | ((w[0] >> 6) & two) << 4;
  const uint32_t mn_hi = ((w[2] >> 4) & four) | ((w[1] >> 6) & two) << 4;
  *sc = static_cast<uint64_t>(w[0] & six) | static_cast<uint64_t>(sc_hi) << 32;
  *mn = static_cast<uint64_t>(w[1] & six) | static_cast<uint64_t>(mn_hi) << 32;
}

// vpshufb control: int16 lanes of the low 128-bit lane take word `lo` of
// their lane, of the high lane word `hi`.
STRATA_INLINE __m256i word_pick(int lo, int hi) {
  const int wl = (2 * lo + 1) << 24 | (2 * lo) << 16 | (2 * lo + 1) << 8 | (2 * lo);
  const int wh = (2 * hi + 1) << 24 | (2 * hi) << 16 | (2 * hi + 1) << 8 | (2 * hi);
  return _mm256_setr_epi32(wl, wl, wl, wl, wh, wh, wh, wh);
}

// Sixteen int8 sub-block scales (16 values each) as the s[8] of a KGroup:
// s[z] lanes 0-7 scale 2 z, lanes 8-15 scale 2 z + 1.
STRATA_INLINE void scales16(__m128i sc8, bool is_signed, __m256i (&s)[8]) {
  const __m256i sc16 = is_signed ? _mm256_cvtepi8_epi16(sc8) : _mm256_cvtepu8_epi16(sc8);
  const __m256i halves[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00),
                             _mm256_permute2x128_si256(sc16, sc16, 0x11)};
#pragma GCC unroll 8
  for (int z = 0; z < 8; ++z) {
    s[z] = _mm256_shuffle_epi8(halves[z / 4], word_pick(2 * (z % 4), 2 * (z % 4) + 1));
  }
}

// Sixteen int8 factors as f32: b[0] lanes 0-7, b[1] lanes 8-15, times f.
STRATA_INLINE void factors16(__m128i v8, bool is_signed, float f, __m256 (&b)[2]) {
  const __m128i hi = _mm_unpackhi_epi64(v8, v8);
  const __m256i w0 = is_signed ? _mm256_cvtepi8_epi32(v8) : _mm256_cvtepu8_epi32(v8);
  const __m256i w1 = is_signed ? _mm256_cvtepi8_epi32(hi) : _mm256_cvtepu8_epi32(hi);
  b[0] = _mm256_mul_ps(_mm256_set1_ps(f), _mm256_cvtepi32_ps(w0));
  b[1] = _mm256_mul_ps(_mm256_set1_ps(f), _mm256_cvtepi32_ps(w1));
}

// Q3_K's sixteen 6-bit scales (tensor::q3k_scales's layout), minus 32.
STRATA_INLINE __m128i scales_q3_k(const uint8_t* packed) {
  uint32_t w[3];
  __builtin_memcpy(w, packed, 12);
  const uint32_t four = 0x0f0f0f0fu, two = 0x03030303u;
  const __m128i sc =
      _mm_setr_epi32(static_cast<int>((w[0] & four) | (w[2] & two) << 4),
                     static_cast<int>((w[1] & four) | ((w[2] >> 2) & two) << 4),
                     static_cast<int>(((w[0] >> 4) & four) | ((w[2] >> 4) & two) << 4),
                     static_cast<int>(((w[1] >> 4) & four) | ((w[2] >> 6) & two) << 4));
  return _mm_sub_epi8(sc, _mm_set1_epi8(32));
}

// Q2_K / Q3_K's 2-bit codes: value 128 h + 32 j + l (part 4 h + j) is bits
// 2 j, 2 j + 1 of qs[32 h + l].
STRATA_INLINE void codes_2bit(const uint8_t* qs, __m256i (&u)[8]) {
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * h));
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      u[4 * h + j] = _mm256_and_si256(_mm256_srli_epi16(v, 2 * j), _mm256_set1_epi8(3));
    }
  }
}

template <DType T>
STRATA_INLINE void unpack_kgroup(const char* row, int64_t g, KGroup& q) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  if constexpr (T == DType::kQ2_K) {
    const auto& b = reinterpret_cast<const tensor::BlockQ2_K*>(row)[g];
    codes_2bit(b.qs, q.u);
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    scales16(_mm_and_si128(sc, _mm_set1_epi8(0x0F)), false, q.s);
    factors16(_mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(0x0F)), false, f16(b.dmin), q.b);
    q.d = f16(b.d);
  } else if constexpr (T == DType::kQ3_K) {
    const auto& b = reinterpret_cast<const tensor::BlockQ3_K*>(row)[g];
    codes_2bit(b.qs, q.u);
    // u += 4 where bit p of hmask[l] is set, for value 32 p + l (w = d s (u - 4)).
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) {
      const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << p));
      const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit);
      q.u[p] = _mm256_or_si256(q.u[p], _mm256_and_si256(set, _mm256_set1_epi8(4)));
    }
    const __m128i sc = scales_q3_k(b.scales);
    scales16(sc, true, q.s);
    q.d = f16(b.d);
    factors16(sc, true, 4.0f * q.d, q.b);
  } else if constexpr (T == DType::kQ4_K || T == DType::kQ5_K) {
    using B = typename KBlock<T>::B;
    const B& blk = reinterpret_cast<const B*>(row)[g];
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {  // sub-blocks 2c (low nibbles) and 2c + 1 (high)
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * c));
      q.u[2 * c] = _mm256_and_si256(v, low4);
      q.u[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      if constexpr (T == DType::kQ5_K) {  // bit 2c (2c + 1) of qh[l]: fifth bit of value l
        const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh));
        const __m256i b0 = _mm256_set1_epi8(static_cast<char>(1 << (2 * c)));
        const __m256i b1 = _mm256_set1_epi8(static_cast<char>(1 << (2 * c + 1)));
        const __m256i sixteen = _mm256_set1_epi8(16);
        q.u[2 * c] = _mm256_or_si256(
            q.u[2 * c],
            _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(high, b0), b0), sixteen));
        q.u[2 * c + 1] = _mm256_or_si256(
            q.u[2 * c + 1],
            _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(high, b1), b1), sixteen));
      }
    }
    uint64_t sc, mn;
    scales_mins_k4(blk.scales, &sc, &mn);
    // The scales as 8 int16 in both 128-bit lanes; s[z] = scale z everywhere.
    const __m256i sc16 = _mm256_broadcastsi128_si256(
        _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sc))));
#pragma GCC unroll 8
    for (int z = 0; z < 8; ++z) q.s[z] = _mm256_shuffle_epi8(sc16, word_pick(z, z));
    // b_t = dmin * the min of the sub-block holding half t: t / 2.
    const __m256 m8 = _mm256_mul_ps(
        _mm256_set1_ps(f16(blk.dmin)),
        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(mn)))));
    const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    q.b[0] = _mm256_permutevar8x32_ps(m8, dup);
    q.b[1] = _mm256_permutevar8x32_ps(m8, _mm256_add_epi32(dup, _mm256_set1_epi32(4)));
    q.d = f16(blk.d);
  } else {
    static_assert(T == DType::kQ6_K);
    const auto& b = reinterpret_cast<const tensor::BlockQ6_K*>(row)[g];
    const __m256i low2 = _mm256_set1_epi8(3);
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    scales16(sc, true, q.s);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {  // values 128 h + 32 quarter + l
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32));
      const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
      const __m256i lows[4] = {_mm256_and_si256(l0, low4), _mm256_and_si256(l1, low4),
                               _mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                               _mm256_and_si256(_mm256_srli_epi16(l1, 4), low4)};
#pragma GCC unroll 4
      for (int qq = 0; qq < 4; ++qq) {
        const __m256i top = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * qq), low2);
        q.u[4 * h + qq] = _mm256_or_si256(lows[qq], _mm256_slli_epi16(top, 4));
      }
    }
    q.d = f16(b.d);
    // The zero point: w = d sc (u - 32), b_t = 32 d sc_t.
    factors16(sc, true, 32.0f * q.d, q.b);
  }
}

template <DType T>
constexpr int64_t kgroup_bytes() {
  if constexpr (T == DType::kQ2_K) return sizeof(tensor::BlockQ2_K);
  if constexpr (T == DType::kQ3_K) return sizeof(tensor::BlockQ3_K);
  if constexpr (T == DType::kQ4_K) return sizeof(tensor::BlockQ4_K);
  if constexpr (T == DType::kQ5_K) return sizeof(tensor::BlockQ5_K);
  return sizeof(tensor::BlockQ6_K);
}

template <DType T, int MR>
STRATA_INLINE void kquant_row_tile(const MatmulArgs& a, const char* row, int64_t i0, int64_t j) {
  static_assert(lowbit_x_block(T) == 256);
  __m256 acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  auto group = [&](int64_t g, int chain) {
    const char* at = row + g * kgroup_bytes<T>() + kPrefetchBytes;
    for (int64_t off = 0; off < kgroup_bytes<T>(); off += 64) _mm_prefetch(at + off, _MM_HINT_T0);
    KGroup q;
    unpack_kgroup<T>(row, g, q);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const int64_t r = i0 + i;
      const int8_t* xq = a.x_q8s + r * a.k_pad256 + g * 256;
      auto part = [&](int z) {
        const __m256i xv = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(xq + 32 * lowbit_x_chunk_slot(T, z)));
        return _mm256_madd_epi16(_mm256_maddubs_epi16(q.u[z], xv), q.s[z]);
      };
      __m256i s0 = part(0), s1 = part(1);
#pragma GCC unroll 3
      for (int z = 2; z < 8; z += 2) {
        s0 = _mm256_add_epi32(s0, part(z));
        s1 = _mm256_add_epi32(s1, part(z + 1));
      }
      const __m256 sum = _mm256_cvtepi32_ps(_mm256_add_epi32(s0, s1));
      const float dx = a.x_q8_scale[r * (a.k_pad256 / 4) + g * 64];
      __m256 v = _mm256_fmadd_ps(sum, _mm256_set1_ps(q.d * dx), acc[i][chain]);
      const float* xs = a.x_q8_sum16 + r * (a.k_pad256 / 16) + g * 16;
      v = _mm256_fnmadd_ps(q.b[0], _mm256_loadu_ps(xs), v);
      acc[i][chain] = _mm256_fnmadd_ps(q.b[1], _mm256_loadu_ps(xs + 8), v);
    }
  };
  const int64_t groups = a.k / 256;
  int64_t g = 0;
  for (; g + 2 <= groups; g += 2) {
    group(g, 0);
    group(g + 1, 1);
  }
  if (g < groups) group(g, 0);
  store_two_chains<MR>(acc, nullptr, a, i0, j);
}

// Types read as 256-value groups with 16-value sub-block scales (KGroup).
template <DType T>
constexpr bool is_kquant() {
  return T == DType::kQ2_K || T == DType::kQ3_K || T == DType::kQ4_K || T == DType::kQ5_K ||
         T == DType::kQ6_K;
}

template <DType T, int MR>
void row_tile(const MatmulArgs& a, const char* row, int64_t i0, int64_t j) {
  if constexpr (is_kquant<T>()) {
    kquant_row_tile<T, MR>(a, row, i0, j);
  } else {
    blocks32_row_tile<T, MR>(a, row, i0, j);
  }
}

template <DType T>
constexpr int64_t row_bytes_of(int64_t k) {
  if constexpr (is_kquant<T>()) {
    return k / 256 * kgroup_bytes<T>();
  } else {
    return k / 32 * bytes_per_32<T>();
  }
}

// Weight rows in passes of kWeightRowsPerPass; each pass meets every chunk of
// kTileRowsX rows of x (so with m <= 4 each row is read once, in order).
template <DType T>
void matmul_lowbit_typed(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  const int64_t row_bytes = row_bytes_of<T>(a.k);
  const char* w = static_cast<const char*>(a.w);
  for (int64_t jb = n_begin; jb < n_end; jb += kWeightRowsPerPass) {
    const int64_t je = min64(jb + kWeightRowsPerPass, n_end);
    for (int64_t i0 = 0; i0 < a.m; i0 += kTileRowsX) {
      const int64_t rows = min64(kTileRowsX, a.m - i0);
      for (int64_t j = jb; j < je; ++j) {
        const char* row = w + j * row_bytes;
        if (rows == 4) {
          row_tile<T, 4>(a, row, i0, j);
        } else if (rows == 3) {
          row_tile<T, 3>(a, row, i0, j);
        } else if (rows == 2) {
          row_tile<T, 2>(a, row, i0, j);
        } else {
          row_tile<T, 1>(a, row, i0, j);
        }
      }
    }
  }
}

}  // namespace

void avx2_matmul_lowbit_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  switch (a.w_dtype) {
    case DType::kQ4_0:
      return matmul_lowbit_typed<DType::kQ4_0>(a, n_begin, n_end);
    case DType::kQ4_1:
      return matmul_lowbit_typed<DType::kQ4_1>(a, n_begin, n_end);
    case DType::kQ5_0:
      return matmul_lowbit_typed<DType::kQ5_0>(a, n_begin, n_end);
    case DType::kQ5_1:
      return matmul_lowbit_typed<DType::kQ5_1>(a, n_begin, n_end);
    case DType::kIQ4_NL:
      return matmul_lowbit_typed<DType::kIQ4_NL>(a, n_begin, n_end);
    case DType::kQ2_K:
      return matmul_lowbit_typed<DType::kQ2_K>(a, n_begin, n_end);
    case DType::kQ3_K:
      return matmul_lowbit_typed<DType::kQ3_K>(a, n_begin, n_end);
    case DType::kQ4_K:
      return matmul_lowbit_typed<DType::kQ4_K>(a, n_begin, n_end);
    case DType::kQ5_K:
      return matmul_lowbit_typed<DType::kQ5_K>(a, n_begin, n_end);
    case DType::kQ6_K:
      return matmul_lowbit_typed<DType::kQ6_K>(a, n_begin, n_end);
    case DType::kIQ4_XS:
      return matmul_lowbit_typed<DType::kIQ4_XS>(a, n_begin, n_end);
    default:
      __builtin_trap();  // uses_lowbit_kernel() sends no other type here
  }
}

void avx2_x_to_q8_groups(const float* x, int64_t rows, int64_t k, int64_t k_pad256, DType w_dtype,
                         const Q8GroupsOut& out) {
  const int64_t x_block = lowbit_x_block(w_dtype);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    int8_t* qr = out.q + r * k_pad256;
    float* sr = out.scale + r * (k_pad256 / 4);
    float* s16 = out.sum16 + r * (k_pad256 / 16);
    int32_t* n16 = out.nsum16 + r * (k_pad256 / 16);
    float block_d = 0.0f;
    for (int64_t b = 0; b < k_pad256 / 32; ++b) {
      if (b * 32 % x_block == 0 && b * 32 < k) {  // d of values [32 b, min(32 b + x_block, k))
        block_d = abs_max(xr + b * 32, min64(x_block, k - b * 32)) / 127.0f;
      }
      const float d = b * 32 < k ? block_d : 0.0f;
      const __m256i q = b * 32 < k ? quantize32(xr + b * 32, d) : _mm256_setzero_si256();
      const int64_t slot = b / 8 * 8 + lowbit_x_chunk_slot(w_dtype, b % 8);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qr + slot * 32), q);
      _mm256_storeu_ps(sr + (slot / 2) * 16 + (slot % 2) * 8, _mm256_set1_ps(d));
      int32_t half[2] = {0, 0};
      for (int v = 0; v < 32; ++v) half[v / 16] += qr[slot * 32 + v];
      s16[2 * b] = d * static_cast<float>(half[0]);
      s16[2 * b + 1] = d * static_cast<float>(half[1]);
      n16[2 * slot] = -half[0];  // in q's order, for the K-quant panel kernels
      n16[2 * slot + 1] = -half[1];
    }
  }
}

}  // namespace strata::ops::cpu
