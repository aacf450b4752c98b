#include "tensor/quant_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tensor/quant_testing.h"

namespace strata::tensor {
namespace {

using testing::kLowBitQuantTypes;

std::string random_row(DType t, int64_t k, uint32_t seed) {
  return testing::random_quantized(t, k, seed);
}

TEST(QuantBlocks, SizesMatchGgml) {
  EXPECT_EQ(dtype_block_bytes(DType::kQ4_K), 144);
  EXPECT_EQ(dtype_block_bytes(DType::kQ6_K), 210);
  EXPECT_EQ(dtype_block_size(DType::kQ6_K), 256);
  EXPECT_EQ(dtype_block_size(DType::kQ5_1), 32);
  EXPECT_EQ(dtype_size_bytes(DType::kIQ4_XS, 512), 272);
  EXPECT_EQ(dtype_size_bytes(DType::kQ5_0, 896), 28 * 22);
  for (DType t : kLowBitQuantTypes) {
    EXPECT_TRUE(is_low_bit_quant(t)) << dtype_name(t);
    EXPECT_TRUE(is_quantized(t));
  }
  EXPECT_FALSE(is_low_bit_quant(DType::kQ8_0));
  EXPECT_TRUE(is_quantized(DType::kQ8_0));
  EXPECT_FALSE(is_quantized(DType::kBF16));
}

// Hand-built blocks whose values follow from the format description alone.
TEST(QuantBlocks, HandBuiltBlocks) {
  {
    BlockQ4_0 b{};
    b.d = f32_to_f16(0.5f);
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
    float y[32];
    dequantize_row(&b, DType::kQ4_0, 32, y);
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(y[j], 0.5f * (j - 8));
      EXPECT_EQ(y[j + 16], 0.5f * (15 - j - 8));
    }
  }
  {
    BlockQ5_1 b{};
    b.d = f32_to_f16(2.0f);
    b.m = f32_to_f16(-1.0f);
    uint32_t qh = 0x80000001u;  // fifth bit of values 0 and 31
    std::memcpy(b.qh, &qh, 4);
    for (int j = 0; j < 16; ++j) b.qs[j] = 0x21;  // low nibble 1, high nibble 2
    float y[32];
    dequantize_row(&b, DType::kQ5_1, 32, y);
    EXPECT_EQ(y[0], 2.0f * 17 - 1);
    EXPECT_EQ(y[1], 2.0f * 1 - 1);
    EXPECT_EQ(y[16], 2.0f * 2 - 1);
    EXPECT_EQ(y[31], 2.0f * 18 - 1);
  }
  {
    BlockQ6_K b{};
    b.d = f32_to_f16(1.0f);
    for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(j - 8);
    // value 200 = second half, third quarter (high nibble of ql[64 + 8]), l = 8
    b.ql[64 + 8] = 0x70;            // high nibble 7
    b.qh[32 + 8] = 2 << 4;          // bits 4-5: 2 -> code 7 | 2 << 4 = 39
    float y[256];
    dequantize_row(&b, DType::kQ6_K, 256, y);
    EXPECT_EQ(y[200], static_cast<float>(200 / 16 - 8) * (39 - 32));
    EXPECT_EQ(y[0], static_cast<float>(0 - 8) * (0 - 32));
  }
  {
    BlockQ4_K b{};
    b.d = f32_to_f16(1.0f);
    b.dmin = f32_to_f16(0.5f);
    // sub-block 5: scale = (s[9] & 15) | (s[1] >> 6) << 4, min = (s[9] >> 4) | (s[5] >> 6) << 4
    b.scales[9] = 0x3A;   // scale low 10, min low 3
    b.scales[1] = 0xC0;   // scale high bits 3 -> scale 58
    b.scales[5] = 0x40;   // min high bits 1 -> min 19
    b.qs[32 * 2 + 4] = 0x90;  // sub-block 5 = high nibbles of qs[64..95]; value 164 -> 9
    float y[256];
    dequantize_row(&b, DType::kQ4_K, 256, y);
    EXPECT_EQ(y[5 * 32 + 4], 58.0f * 9 - 0.5f * 19);
    EXPECT_EQ(y[5 * 32 + 5], -0.5f * 19);
  }
  {
    BlockIQ4_XS b{};
    b.d = f32_to_f16(0.25f);
    b.scales_l[1] = 0x05;               // sub-block 2: low bits 5
    b.scales_h = static_cast<uint16_t>(2 << 4);  // sub-block 2: high bits 2 -> 37
    b.qs[32] = 0xF0;                    // value 64: table[0], value 80: table[15]
    float y[256];
    dequantize_row(&b, DType::kIQ4_XS, 256, y);
    EXPECT_EQ(y[64], 0.25f * 5 * -127);
    EXPECT_EQ(y[80], 0.25f * 5 * 113);
  }
}

TEST(QuantBlocks, Q3KScalesUnpack) {
  uint8_t packed[12];
  for (int i = 0; i < 12; ++i) packed[i] = static_cast<uint8_t>(i * 37 + 11);
  uint8_t sc[16];
  q3k_scales(packed, sc);
  for (int j = 0; j < 16; ++j) {
    // scale j: 4 low bits in nibble (j / 8) of byte j % 8, 2 high bits at
    // bit 2 * (j / 4) of byte 8 + j % 4.
    int low = (packed[j % 8] >> (4 * (j / 8))) & 0xF;
    int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    EXPECT_EQ(sc[j], low | high << 4) << j;
  }
}

// A·u - B reproduces the dequantized values for every type and group,
// including the partial last group of 32-value-block rows (k = 896).
TEST(QuantBlocks, UnpackGroupMatchesDequantize) {
  for (DType t : kLowBitQuantTypes) {
    for (int64_t k : {256, 512, 896, 1280}) {
      if (k % dtype_block_size(t) != 0) continue;
      std::string row = random_row(t, k, static_cast<uint32_t>(k) * 7 + static_cast<int>(t));
      std::vector<float> ref(static_cast<size_t>(k));
      dequantize_row(row.data(), t, k, ref.data());
      for (int64_t g = 0; g * kQuantGroup < k; ++g) {
        UnpackedGroup ug;
        unpack_group(row.data(), t, k, g, &ug);
        for (int64_t i = 0; i < kQuantGroup; ++i) {
          int64_t e = g * kQuantGroup + i;
          float w = ug.a[i / 16] * ug.u[i] - ug.b[i / 16];
          if (e >= k) {
            EXPECT_EQ(w, 0.0f);
            continue;
          }
          float tol = 4e-7f * (std::fabs(ug.a[i / 16]) * 255 + std::fabs(ug.b[i / 16]));
          ASSERT_NEAR(w, ref[static_cast<size_t>(e)], tol)
              << dtype_name(t) << " k=" << k << " value " << e;
        }
      }
    }
  }
}

// Q8_0 unpacks too (u = q + 128), so every quantized type has one form.
TEST(QuantBlocks, UnpackQ8_0) {
  std::string row = random_row(DType::kQ8_0, 320, 3);
  std::vector<float> ref(320);
  dequantize_row(row.data(), DType::kQ8_0, 320, ref.data());
  UnpackedGroup ug;
  unpack_group(row.data(), DType::kQ8_0, 320, 1, &ug);
  for (int i = 0; i < 64; ++i) {
    EXPECT_NEAR(ug.a[i / 16] * ug.u[i] - ug.b[i / 16], ref[256 + i], 1e-6f);
  }
  for (int i = 64; i < 256; ++i) EXPECT_EQ(ug.u[i], 0);
}

// llama.cpp's own dequantization of blocks llama.cpp quantized (the ctest
// golden.blocks_vs_llamacpp writes them and sets STRATA_LLAMACPP_DEQUANT_DIR).
TEST(QuantBlocksVsLlamaCpp, DequantizeMatchesGgml) {
  const char* dir = std::getenv("STRATA_LLAMACPP_DEQUANT_DIR");
  if (dir == nullptr) GTEST_SKIP() << "run through the ctest golden.blocks_vs_llamacpp";
  for (const char* name : testing::kLlamaCppBlockFiles) {
    testing::LlamaCppBlocks b;
    const std::string path = std::string(dir) + "/" + name + ".bin";
    ASSERT_TRUE(testing::read_llamacpp_blocks(path, &b)) << "missing or truncated " << path;
    ASSERT_TRUE(is_quantized(b.dtype)) << path;
    ASSERT_EQ(static_cast<int64_t>(b.bytes.size()), dtype_size_bytes(b.dtype, b.rows * b.cols));
    const int64_t row_bytes = dtype_size_bytes(b.dtype, b.cols);
    std::vector<float> got(static_cast<size_t>(b.cols));
    int64_t mismatches = 0;
    for (int64_t r = 0; r < b.rows; ++r) {
      dequantize_row(b.bytes.data() + r * row_bytes, b.dtype, b.cols, got.data());
      for (int64_t c = 0; c < b.cols; ++c) {
        float w = b.values[static_cast<size_t>(r * b.cols + c)], g = got[static_cast<size_t>(c)];
        // Same formulas, same order: equal, except where the compiler that
        // built libggml fused a multiply-add (one rounding instead of two).
        if (std::fabs(w - g) > std::fabs(w) * 1.2e-7f + 1e-30f && ++mismatches <= 5) {
          ADD_FAILURE() << name << " row " << r << " col " << c << ": strata " << g
                        << " llama.cpp " << w;
        }
      }
    }
    EXPECT_EQ(mismatches, 0) << name;
  }
}

}  // namespace
}  // namespace strata::tensor
