#include "tensor/dtype.h"

#include <cmath>

#include "base/check.h"
#include "tensor/quant_blocks.h"

namespace strata::tensor {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kQ8_0: return "Q8_0";
    case DType::kI32: return "I32";
    case DType::kI64: return "I64";
    case DType::kI8: return "I8";
    case DType::kU8: return "U8";
    case DType::kQ4_0: return "Q4_0";
    case DType::kQ4_1: return "Q4_1";
    case DType::kQ5_0: return "Q5_0";
    case DType::kQ5_1: return "Q5_1";
    case DType::kIQ4_NL: return "IQ4_NL";
    case DType::kQ2_K: return "Q2_K";
    case DType::kQ3_K: return "Q3_K";
    case DType::kQ4_K: return "Q4_K";
    case DType::kQ5_K: return "Q5_K";
    case DType::kQ6_K: return "Q6_K";
    case DType::kIQ4_XS: return "IQ4_XS";
  }
  return "?";
}

bool is_low_bit_quant(DType dtype) {
  switch (dtype) {
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS: return true;
    default: return false;
  }
}

int64_t dtype_block_size(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL: return 32;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS: return kQkK;
    default: return 1;
  }
}

int64_t dtype_block_bytes(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kI32: return 4;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kQ8_0: return kQ8_0BlockBytes;
    case DType::kI64: return 8;
    case DType::kI8:
    case DType::kU8: return 1;
    case DType::kQ4_0: return sizeof(BlockQ4_0);
    case DType::kQ4_1: return sizeof(BlockQ4_1);
    case DType::kQ5_0: return sizeof(BlockQ5_0);
    case DType::kQ5_1: return sizeof(BlockQ5_1);
    case DType::kIQ4_NL: return sizeof(BlockIQ4_NL);
    case DType::kQ2_K: return sizeof(BlockQ2_K);
    case DType::kQ3_K: return sizeof(BlockQ3_K);
    case DType::kQ4_K: return sizeof(BlockQ4_K);
    case DType::kQ5_K: return sizeof(BlockQ5_K);
    case DType::kQ6_K: return sizeof(BlockQ6_K);
    case DType::kIQ4_XS: return sizeof(BlockIQ4_XS);
  }
  return 0;
}

int64_t dtype_size_bytes(DType dtype, int64_t num_elements) {
  int64_t block = dtype_block_size(dtype);
  STRATA_CHECK(num_elements % block == 0) << num_elements << " not a multiple of " << block;
  return num_elements / block * dtype_block_bytes(dtype);
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;      // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;     // overflow -> inf (rounds past 65504)
  if (abs < 0x38800000u) {                           // subnormal or zero in f16
    if (abs < 0x33000000u) return sign;              // rounds to zero
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    int shift = 113 - static_cast<int>(abs >> 23) + 13;  // 126 - 14 - exp + 13
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t h = ((abs >> 13) - (112u << 10));
  uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<uint16_t>(h);
}

void quantize_q8_0(const float* x, int64_t n, BlockQ8_0* out) {
  STRATA_CHECK(n % kQ8_0BlockSize == 0);
  for (int64_t b = 0; b < n / kQ8_0BlockSize; ++b) {
    const float* v = x + b * kQ8_0BlockSize;
    float amax = 0.0f;
    for (int i = 0; i < kQ8_0BlockSize; ++i) amax = std::fmax(amax, std::fabs(v[i]));
    float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].scale_f16 = f32_to_f16(d);
    for (int i = 0; i < kQ8_0BlockSize; ++i) {
      out[b].values[i] = static_cast<int8_t>(std::lround(v[i] * id));
    }
  }
}

void dequantize_q8_0(const BlockQ8_0* blocks, int64_t n, float* out) {
  STRATA_CHECK(n % kQ8_0BlockSize == 0);
  for (int64_t b = 0; b < n / kQ8_0BlockSize; ++b) {
    float d = f16_to_f32(blocks[b].scale_f16);
    for (int i = 0; i < kQ8_0BlockSize; ++i) {
      out[b * kQ8_0BlockSize + i] = d * static_cast<float>(blocks[b].values[i]);
    }
  }
}

void convert_to_f32(const void* src, DType dtype, int64_t n, float* out) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(out, src, n * sizeof(float));
      return;
    case DType::kF16: {
      const uint16_t* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(h[i]);
      return;
    }
    case DType::kBF16: {
      const uint16_t* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(h[i]);
      return;
    }
    case DType::kQ8_0:
      dequantize_q8_0(static_cast<const BlockQ8_0*>(src), n, out);
      return;
    default:
      if (is_low_bit_quant(dtype)) return dequantize_row(src, dtype, n, out);
      STRATA_CHECK(false) << "convert_to_f32: unsupported dtype " << dtype_name(dtype);
  }
}

}  // namespace strata::tensor
