#include "tensor/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace strata::tensor {
namespace {

TEST(DTypeTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);  // halfway, rounds up to even
  EXPECT_EQ(bf16_to_f32(0xc000), -2.0f);
}

TEST(DTypeTest, F16RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t v = static_cast<uint16_t>(h);
    float f = f16_to_f32(v);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), v) << "h=" << h;
  }
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds to inf
}

TEST(DTypeTest, Q8_0QuantizeWithinHalfStep) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  std::vector<float> x(256), y(256);
  for (float& v : x) v = dist(rng);
  std::vector<BlockQ8_0> q(256 / 32);
  quantize_q8_0(x.data(), 256, q.data());
  dequantize_q8_0(q.data(), 256, y.data());
  for (int b = 0; b < 8; ++b) {
    float d = f16_to_f32(q[b].scale_f16);
    for (int i = 0; i < 32; ++i) {
      EXPECT_NEAR(x[b * 32 + i], y[b * 32 + i], 0.5f * d + 1e-3f * std::fabs(x[b * 32 + i]));
    }
  }
  EXPECT_EQ(dtype_size_bytes(DType::kQ8_0, 64), 68);
}

}  // namespace
}  // namespace strata::tensor
