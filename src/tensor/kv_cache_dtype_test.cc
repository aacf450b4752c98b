#include "tensor/kv_cache_dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace strata::tensor {
namespace {

constexpr KvCacheDtype kE4M3 = KvCacheDtype::kFp8E4M3;
constexpr KvCacheDtype kE5M2 = KvCacheDtype::kFp8E5M2;

bool finite_code(uint8_t c, KvCacheDtype t) {
  return t == kE4M3 ? (c & 0x7f) != 0x7f : ((c >> 2) & 0x1f) != 0x1f;
}

// The format's values from first principles (not through fp8_to_f32's half trick).
double fp8_value(uint8_t c, KvCacheDtype t) {
  const int mant_bits = t == kE4M3 ? 3 : 2, bias = t == kE4M3 ? 7 : 15;
  const int e = (c & 0x7f) >> mant_bits, m = c & ((1 << mant_bits) - 1);
  const double mag = e == 0 ? std::ldexp(m, 1 - bias - mant_bits)
                            : std::ldexp(1.0 + m / double(1 << mant_bits), e - bias);
  return c & 0x80 ? -mag : mag;
}

TEST(KvCacheDtypeTest, Fp8DecodesToTheFormatsValues) {
  for (KvCacheDtype t : {kE4M3, kE5M2}) {
    for (int c = 0; c < 256; ++c) {
      if (!finite_code(static_cast<uint8_t>(c), t)) continue;
      ASSERT_EQ(fp8_to_f32(static_cast<uint8_t>(c), t), fp8_value(static_cast<uint8_t>(c), t))
          << kv_cache_dtype_name(t) << " code " << c;
    }
  }
  EXPECT_EQ(fp8_to_f32(0x7e, kE4M3), 448.0f);
  EXPECT_EQ(fp8_to_f32(0x38, kE4M3), 1.0f);
  EXPECT_EQ(fp8_to_f32(0x01, kE4M3), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_to_f32(0x7b, kE5M2), 57344.0f);
  EXPECT_EQ(fp8_to_f32(0x3c, kE5M2), 1.0f);
  EXPECT_EQ(fp8_to_f32(0x01, kE5M2), std::ldexp(1.0f, -16));
}

TEST(KvCacheDtypeTest, Fp8EncodeRoundTripsEveryFiniteCode) {
  for (KvCacheDtype t : {kE4M3, kE5M2}) {
    for (int c = 0; c < 256; ++c) {
      const uint8_t code = static_cast<uint8_t>(c);
      if (!finite_code(code, t)) continue;
      ASSERT_EQ(f32_to_fp8(fp8_to_f32(code, t), t), code) << kv_cache_dtype_name(t) << " " << c;
    }
  }
}

// Nearest finite value, ties to the even code, saturating: checked against a
// search over all codes for random values and every midpoint between codes.
TEST(KvCacheDtypeTest, Fp8EncodeRoundsToNearestEvenAndSaturates) {
  std::mt19937 rng(5);
  for (KvCacheDtype t : {kE4M3, kE5M2}) {
    std::vector<float> xs;
    std::vector<double> values;
    for (int c = 0; c < 128; ++c) {
      if (finite_code(static_cast<uint8_t>(c), t)) values.push_back(fp8_value(c, t));
    }
    for (size_t i = 0; i + 1 < values.size(); ++i) {
      xs.push_back(static_cast<float>((values[i] + values[i + 1]) / 2));  // exact midpoints
    }
    std::uniform_real_distribution<float> logmag(-22.0f, 18.0f);
    for (int i = 0; i < 20000; ++i) xs.push_back(std::exp2(logmag(rng)));
    for (float x : xs) {
      // Expected: the nearest code; on a tie the even one; beyond max, max.
      int best = 0;
      for (int c = 1; c < static_cast<int>(values.size()); ++c) {
        const double dc = std::fabs(values[c] - x), db = std::fabs(values[best] - x);
        if (dc < db || (dc == db && c % 2 == 0)) best = c;
      }
      for (float sx : {x, -x}) {
        const uint8_t want = static_cast<uint8_t>(best | (sx < 0 ? 0x80 : 0));
        ASSERT_EQ(f32_to_fp8(sx, t), want) << kv_cache_dtype_name(t) << " x=" << sx;
      }
    }
    const uint8_t max_code = t == kE4M3 ? 0x7e : 0x7b;
    EXPECT_EQ(f32_to_fp8(1e30f, t), max_code);
    EXPECT_EQ(f32_to_fp8(-INFINITY, t), max_code | 0x80);
    EXPECT_EQ(f32_to_fp8(NAN, t), 0);
  }
}

TEST(KvCacheDtypeTest, RowLayoutPutsScalesAfterTheValues) {
  const KvRowLayout f32{KvCacheDtype::kF32, 2, 64}, bf16{KvCacheDtype::kBF16, 2, 64},
      fp8{kE4M3, 2, 64};
  EXPECT_EQ(f32.row_bytes(), 512);
  EXPECT_EQ(bf16.row_bytes(), 256);
  EXPECT_EQ(fp8.row_bytes(), 128 + 8);
  EXPECT_EQ(fp8.head_offset(1), 64);
  EXPECT_EQ(fp8.scale_offset(1), 132);
}

std::vector<float> random_row(int64_t n, uint32_t seed, float spread) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

std::vector<float> round_trip(const std::vector<float>& x, const KvRowLayout& l, float fixed) {
  std::vector<uint8_t> row(l.row_bytes());
  encode_kv_row(x.data(), l, fixed, row.data());
  std::vector<float> out(x.size());
  for (int64_t h = 0; h < l.num_kv_heads; ++h) {
    decode_kv_head(row.data(), l, h, out.data() + h * l.head_dim);
  }
  return out;
}

TEST(KvCacheDtypeTest, PlainTypesRoundLikeTheirScalarConversions) {
  const std::vector<float> x = random_row(3 * 40, 1, 3.0f);
  const std::vector<float> f32 = round_trip(x, {KvCacheDtype::kF32, 3, 40}, 0);
  const std::vector<float> bf = round_trip(x, {KvCacheDtype::kBF16, 3, 40}, 0);
  const std::vector<float> h = round_trip(x, {KvCacheDtype::kF16, 3, 40}, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(f32[i], x[i]);
    ASSERT_EQ(bf[i], bf16_to_f32(f32_to_bf16(x[i])));
    ASSERT_EQ(h[i], f16_to_f32(f32_to_f16(x[i])));
  }
}

// Per-head scales: each head's error is bounded by its own amax (a head of
// tiny values next to a head of large ones keeps its precision).
TEST(KvCacheDtypeTest, Fp8RowsKeepRelativePrecisionPerHead) {
  for (KvCacheDtype t : {kE4M3, kE5M2}) {
    const KvRowLayout l{t, 2, 64};
    std::vector<float> x = random_row(128, 2, 1.0f);
    for (int d = 64; d < 128; ++d) x[d] *= 1e-4f;
    const std::vector<float> y = round_trip(x, l, 0);
    const double rel = t == kE4M3 ? 1.0 / 16 : 1.0 / 8;  // half an ulp of 3 / 2 mantissa bits
    for (int h = 0; h < 2; ++h) {
      float amax = 0;
      for (int d = 0; d < 64; ++d) amax = std::max(amax, std::fabs(x[h * 64 + d]));
      const double floor = amax / fp8_max_finite(t) * std::ldexp(1.0, t == kE4M3 ? -10 : -17);
      for (int d = 0; d < 64; ++d) {
        const float a = x[h * 64 + d];
        ASSERT_LE(std::fabs(y[h * 64 + d] - a), rel * std::fabs(a) * 1.0001 + floor)
            << kv_cache_dtype_name(t) << " head " << h << " d " << d;
      }
    }
    // The largest magnitude of a head is represented to within rounding of max finite.
    std::vector<uint8_t> row(l.row_bytes());
    encode_kv_row(x.data(), l, 0, row.data());
    float scale;
    std::memcpy(&scale, row.data() + l.scale_offset(1), 4);
    float amax1 = 0;
    for (int d = 64; d < 128; ++d) amax1 = std::max(amax1, std::fabs(x[d]));
    EXPECT_FLOAT_EQ(scale, amax1 / fp8_max_finite(t));
  }
}

TEST(KvCacheDtypeTest, Fp8FixedScaleSaturatesBeyondItsRange) {
  const KvRowLayout l{kE4M3, 1, 16};
  std::vector<float> x(16, 0.5f);
  x[3] = 1000.0f;
  const std::vector<float> y = round_trip(x, l, 0.01f);  // range +-4.48
  EXPECT_FLOAT_EQ(y[3], 4.48f);
  EXPECT_NEAR(y[0], 0.5f, 0.5f / 16);
}

TEST(KvCacheDtypeTest, ZeroRowsEncodeAsZeros) {
  const KvRowLayout l{kE4M3, 2, 16};
  const std::vector<float> x(32, 0.0f);
  for (float v : round_trip(x, l, 0)) ASSERT_EQ(v, 0.0f);
}

TEST(KvCacheDtypeTest, ParsesVllmValues) {
  auto parse = [](const char* v, DType model) { return *parse_kv_cache_dtype(v, model); };
  EXPECT_EQ(parse("auto", DType::kBF16), KvCacheDtype::kBF16);
  EXPECT_EQ(parse("auto", DType::kF16), KvCacheDtype::kF16);
  EXPECT_EQ(parse("auto", DType::kF32), KvCacheDtype::kF32);
  EXPECT_EQ(parse("auto", DType::kQ8_0), KvCacheDtype::kF16);
  EXPECT_EQ(parse("bfloat16", DType::kF32), KvCacheDtype::kBF16);
  EXPECT_EQ(parse("float16", DType::kF32), KvCacheDtype::kF16);
  EXPECT_EQ(parse("float32", DType::kBF16), KvCacheDtype::kF32);
  EXPECT_EQ(parse("fp8", DType::kBF16), KvCacheDtype::kFp8E4M3);
  EXPECT_EQ(parse("fp8_e4m3", DType::kBF16), KvCacheDtype::kFp8E4M3);
  EXPECT_EQ(parse("fp8_e5m2", DType::kBF16), KvCacheDtype::kFp8E5M2);
  StatusOr<KvCacheDtype> bad = parse_kv_cache_dtype("int4", DType::kBF16);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'int4'"), std::string::npos);
  KvCacheDtype d;
  for (KvCacheDtype t :
       {KvCacheDtype::kF32, KvCacheDtype::kBF16, KvCacheDtype::kF16, kE4M3, kE5M2}) {
    ASSERT_TRUE(kv_cache_dtype_from_name(kv_cache_dtype_name(t), &d));
    EXPECT_EQ(d, t);
  }
  EXPECT_FALSE(kv_cache_dtype_from_name("fp8", &d));
}

// The pool's tiles (kv_row_layout.h): 16 slots a tile, grouped by head, K
// transposed, V rows, then the fp8 scales [head][slot]; load_kv_row gives
// back the row store_kv_row placed.
TEST(KvTileLayoutTest, PlacesRowsAsDocumented) {
  EXPECT_EQ(kv_tile_tokens(16), 16);
  EXPECT_EQ(kv_tile_tokens(64), 16);
  EXPECT_EQ(kv_tile_tokens(8), 8);
  EXPECT_EQ(kv_tile_tokens(5), 5);
  const KvTileLayout l{{kE4M3, 2, 3}, 16};  // rows of 2 x 3 bytes + 2 scales
  ASSERT_EQ(l.row.row_bytes(), 14);
  ASSERT_EQ(l.tile_bytes(), 16 * 14);
  std::vector<uint8_t> cache(2 * l.tile_bytes(), 0), row(14), back(14);
  for (int i = 0; i < 14; ++i) row[i] = static_cast<uint8_t>(100 + i);
  const int64_t slot = 16 + 5;  // tile 1, index 5
  const int64_t tile = l.tile_bytes();
  store_kv_row(row.data(), l, KvSide::kKey, slot, cache.data());
  // head h, element d at h * 16 * 3 + d * 16 + 5
  EXPECT_EQ(cache[tile + 0 * 48 + 0 * 16 + 5], 100);
  EXPECT_EQ(cache[tile + 0 * 48 + 2 * 16 + 5], 102);
  EXPECT_EQ(cache[tile + 1 * 48 + 1 * 16 + 5], 104);
  // scale of head 1 at 96 + (1 * 16 + 5) * 4
  EXPECT_EQ(cache[tile + 96 + 21 * 4], 100 + 10);
  load_kv_row(cache.data(), l, KvSide::kKey, slot, back.data());
  EXPECT_EQ(back, row);
  std::fill(cache.begin(), cache.end(), 0);
  store_kv_row(row.data(), l, KvSide::kValue, slot, cache.data());
  // head h, element d at h * 16 * 3 + 5 * 3 + d
  EXPECT_EQ(cache[tile + 0 * 48 + 15 + 2], 102);
  EXPECT_EQ(cache[tile + 1 * 48 + 15 + 0], 103);
  EXPECT_EQ(cache[tile + 96 + 5 * 4], 100 + 6);  // head 0's scale
  load_kv_row(cache.data(), l, KvSide::kValue, slot, back.data());
  EXPECT_EQ(back, row);
  // Nothing outside the slot's bytes is written.
  int64_t written = 0;
  for (uint8_t b : cache) written += b != 0;
  EXPECT_EQ(written, 14);
}

}  // namespace
}  // namespace strata::tensor
