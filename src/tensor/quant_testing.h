// Test support: random rows of GGUF quantized blocks (random codes and
// sub-scales, finite moderate f16 fields). For tests only.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace strata::tensor::testing {

// Byte offsets of the f16 fields of one block of `t`.
inline std::vector<int> quant_f16_fields(DType t) {
  switch (t) {
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS:
    case DType::kQ8_0: return {0};
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K: return {0, 2};
    case DType::kQ2_K: return {80, 82};
    case DType::kQ3_K: return {108};
    case DType::kQ6_K: return {208};
    default: return {};
  }
}

// `values` values (a multiple of the block size) of random blocks of `t`
// whose f16 fields are uniform in [-scale, scale].
inline std::string random_quantized(DType t, int64_t values, uint32_t seed, float scale = 0.05f) {
  std::mt19937 rng(seed);
  std::string bytes(static_cast<size_t>(dtype_size_bytes(t, values)), '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xFF);
  std::uniform_real_distribution<float> dist(-scale, scale);
  const int64_t bb = dtype_block_bytes(t);
  for (int64_t b = 0; b < values / dtype_block_size(t); ++b) {
    for (int off : quant_f16_fields(t)) {
      uint16_t v = f32_to_f16(dist(rng));
      std::memcpy(&bytes[static_cast<size_t>(b * bb + off)], &v, 2);
    }
  }
  return bytes;
}

inline constexpr DType kLowBitQuantTypes[] = {
    DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kQ2_K,
    DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS};

}  // namespace strata::tensor::testing
