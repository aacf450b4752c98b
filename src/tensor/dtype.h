// Element types of stored tensors and the scalar conversions between them.
//
// Activations are always f32; weights keep the type they were stored in
// (f32, f16, bf16) or one of GGUF's block-quantized types, byte for byte as
// llama.cpp writes them (tensor/quant_blocks.h has the layouts):
//   Q8_0: blocks of 32 int8 values with one f16 scale (34 bytes);
//   legacy 32-value blocks Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL;
//   256-value super-blocks ("K-quants") Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace strata::tensor {

enum class DType {
  kF32, kF16, kBF16, kQ8_0, kI32, kI64, kI8, kU8,
  kQ4_0, kQ4_1, kQ5_0, kQ5_1, kIQ4_NL,         // 32-value blocks
  kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kIQ4_XS,  // 256-value super-blocks
};

constexpr int64_t kQ8_0BlockSize = 32;   // values per Q8_0 block
constexpr int64_t kQ8_0BlockBytes = 34;  // f16 scale + 32 x int8

const char* dtype_name(DType dtype);

// Values per storage block: 32 for Q8_0 and the legacy quants, 256 for the
// K-quants and IQ4_XS, 1 for plain types.
int64_t dtype_block_size(DType dtype);
// True for every block-quantized type except Q8_0 (which has its own kernels):
// the types whose matmuls go through ops' quantized-weight kernels.
bool is_low_bit_quant(DType dtype);
// True for Q8_0 and is_low_bit_quant types.
inline bool is_quantized(DType dtype) { return dtype == DType::kQ8_0 || is_low_bit_quant(dtype); }
// Bytes per storage block.
int64_t dtype_block_bytes(DType dtype);
// Bytes for `num_elements` values; num_elements must be a multiple of the block size.
int64_t dtype_size_bytes(DType dtype, int64_t num_elements);

// Round-to-nearest-even f32 -> bf16 (NaN stays NaN).
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// IEEE half precision conversions (portable; kernels use F16C where present).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Q8_0 block, bit-compatible with GGUF files.
struct BlockQ8_0 {
  uint16_t scale_f16;
  int8_t values[kQ8_0BlockSize];
};
static_assert(sizeof(BlockQ8_0) == kQ8_0BlockBytes);

// Quantizes `n` floats (n % 32 == 0) the way llama.cpp does: scale = max|x|/127,
// q = round(x / scale).
void quantize_q8_0(const float* x, int64_t n, BlockQ8_0* out);
void dequantize_q8_0(const BlockQ8_0* blocks, int64_t n, float* out);

// Converts `n` values stored as `dtype` to f32 (any plain or quantized type;
// n a multiple of the block size). Quantized types dequantize with
// llama.cpp's formulas in its order of operations (tensor/quant_blocks.h).
void convert_to_f32(const void* src, DType dtype, int64_t n, float* out);

}  // namespace strata::tensor
