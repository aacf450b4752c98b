// Test support: random rows of GGUF quantized blocks (random codes and
// sub-scales, finite moderate f16 fields). For tests only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/quant_blocks.h"

namespace strata::tensor::testing {

// Byte offsets of the f16 fields of one block of `t` (from the block structs).
inline std::vector<int> quant_f16_fields(DType t) {
  auto at = [](size_t off) { return static_cast<int>(off); };
  switch (t) {
    case DType::kQ4_0: return {at(offsetof(BlockQ4_0, d))};
    case DType::kQ5_0: return {at(offsetof(BlockQ5_0, d))};
    case DType::kIQ4_NL: return {at(offsetof(BlockIQ4_NL, d))};
    case DType::kIQ4_XS: return {at(offsetof(BlockIQ4_XS, d))};
    case DType::kQ8_0: return {at(offsetof(BlockQ8_0, scale_f16))};
    case DType::kQ4_1: return {at(offsetof(BlockQ4_1, d)), at(offsetof(BlockQ4_1, m))};
    case DType::kQ5_1: return {at(offsetof(BlockQ5_1, d)), at(offsetof(BlockQ5_1, m))};
    case DType::kQ4_K: return {at(offsetof(BlockQ4_K, d)), at(offsetof(BlockQ4_K, dmin))};
    case DType::kQ5_K: return {at(offsetof(BlockQ5_K, d)), at(offsetof(BlockQ5_K, dmin))};
    case DType::kQ2_K: return {at(offsetof(BlockQ2_K, d)), at(offsetof(BlockQ2_K, dmin))};
    case DType::kQ3_K: return {at(offsetof(BlockQ3_K, d))};
    case DType::kQ6_K: return {at(offsetof(BlockQ6_K, d))};
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

// DType of a ggml type id, kF32 for ids that are not quantized types Strata reads.
inline DType dtype_for_ggml_type(uint32_t t) {
  switch (t) {
    case 2: return DType::kQ4_0;
    case 3: return DType::kQ4_1;
    case 6: return DType::kQ5_0;
    case 7: return DType::kQ5_1;
    case 8: return DType::kQ8_0;
    case 10: return DType::kQ2_K;
    case 11: return DType::kQ3_K;
    case 12: return DType::kQ4_K;
    case 13: return DType::kQ5_K;
    case 14: return DType::kQ6_K;
    case 20: return DType::kIQ4_NL;
    case 23: return DType::kIQ4_XS;
    default: return DType::kF32;
  }
}

// Blocks llama.cpp quantized and its dequantization of them, from an SQDQ file
// (`tools/llamacpp/llama_run.sh dequant`): "SQDQ", u32 ggml type, u64 rows,
// u64 cols, u64 nbytes, the blocks, rows * cols f32.
struct LlamaCppBlocks {
  DType dtype = DType::kF32;
  int64_t rows = 0, cols = 0;
  std::string bytes;
  std::vector<float> values;
};

// The ggml type names of the SQDQ files the ctest golden.blocks_vs_llamacpp writes.
inline constexpr const char* kLlamaCppBlockFiles[] = {
    "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_nl", "iq4_xs"};

inline bool read_llamacpp_blocks(const std::string& path, LlamaCppBlocks* out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char magic[4];
  uint32_t type = 0;
  uint64_t rows = 0, cols = 0, nbytes = 0;
  bool ok = std::fread(magic, 1, 4, f) == 4 && std::memcmp(magic, "SQDQ", 4) == 0 &&
            std::fread(&type, 4, 1, f) == 1 && std::fread(&rows, 8, 1, f) == 1 &&
            std::fread(&cols, 8, 1, f) == 1 && std::fread(&nbytes, 8, 1, f) == 1;
  if (ok) {
    out->dtype = dtype_for_ggml_type(type);
    out->rows = static_cast<int64_t>(rows);
    out->cols = static_cast<int64_t>(cols);
    out->bytes.resize(nbytes);
    out->values.resize(rows * cols);
    ok = std::fread(out->bytes.data(), 1, nbytes, f) == nbytes &&
         std::fread(out->values.data(), 4, out->values.size(), f) == out->values.size();
  }
  std::fclose(f);
  return ok;
}

}  // namespace strata::tensor::testing
