#include "tensor/kv_cache_dtype.h"

#include <cmath>
#include <cstring>

#include "base/check.h"

namespace strata::tensor {
namespace {

// An 8-bit float with 1 sign bit, mant_bits mantissa bits and exponent bias `bias`.
struct Fp8Params {
  int mant_bits;
  int bias;
  uint32_t max_code;      // largest finite magnitude code
  float min_normal;       // 2^(1 - bias)
  float subnormal_scale;  // 2^(bias - 1 + mant_bits): subnormal value -> its code
};

constexpr Fp8Params kE4M3{3, 7, 0x7e, 0x1p-6f, 0x1p9f};
constexpr Fp8Params kE5M2{2, 15, 0x7b, 0x1p-14f, 0x1p16f};

const Fp8Params& fp8_params(KvCacheDtype dtype) {
  if (dtype == KvCacheDtype::kFp8E4M3) return kE4M3;
  STRATA_CHECK(dtype == KvCacheDtype::kFp8E5M2) << "not an fp8 type";
  return kE5M2;
}

// |x| -> magnitude code, round to nearest even, saturating. Branch-light and
// without library calls: it runs for every K/V value the engine stores.
inline uint32_t encode_magnitude(float a, const Fp8Params& p) {
  if (!(a >= p.min_normal)) {
    // Subnormal range: multiples of 2^(1 - bias - mant_bits). Adding 2^23
    // rounds a value in [0, 2^mant_bits] to the nearest even integer (the
    // default rounding mode); 2^mant_bits is the smallest normal's code.
    const float m = (a * p.subnormal_scale + 8388608.0f) - 8388608.0f;
    return static_cast<uint32_t>(m);
  }
  uint32_t bits;
  std::memcpy(&bits, &a, 4);
  const int drop = 23 - p.mant_bits;
  const uint32_t rounded = bits + (1u << (drop - 1)) - 1 + ((bits >> drop) & 1u);
  const uint32_t exponent = (rounded >> 23) - 127 + static_cast<uint32_t>(p.bias);
  const uint32_t code = exponent << p.mant_bits | ((rounded >> drop) & ((1u << p.mant_bits) - 1));
  return code > p.max_code ? p.max_code : code;
}

inline uint8_t encode_fp8(float x, const Fp8Params& p) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0;  // NaN
  const uint32_t sign = (bits >> 24) & 0x80u;
  bits &= 0x7fffffffu;
  float a;
  std::memcpy(&a, &bits, 4);
  return static_cast<uint8_t>(sign | encode_magnitude(a, p));
}

}  // namespace

const char* kv_cache_dtype_name(KvCacheDtype dtype) {
  switch (dtype) {
    case KvCacheDtype::kF32:
      return "f32";
    case KvCacheDtype::kBF16:
      return "bf16";
    case KvCacheDtype::kF16:
      return "f16";
    case KvCacheDtype::kFp8E4M3:
      return "fp8_e4m3";
    case KvCacheDtype::kFp8E5M2:
      return "fp8_e5m2";
  }
  return "?";
}

bool kv_cache_dtype_from_name(std::string_view name, KvCacheDtype* out) {
  for (KvCacheDtype d : {KvCacheDtype::kF32, KvCacheDtype::kBF16, KvCacheDtype::kF16,
                         KvCacheDtype::kFp8E4M3, KvCacheDtype::kFp8E5M2}) {
    if (name == kv_cache_dtype_name(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

StatusOr<KvCacheDtype> parse_kv_cache_dtype(std::string_view value, DType model_dtype) {
  if (value == "auto") {
    switch (model_dtype) {
      case DType::kF32:
        return KvCacheDtype::kF32;
      case DType::kBF16:
        return KvCacheDtype::kBF16;
      default:
        return KvCacheDtype::kF16;
    }
  }
  if (value == "bfloat16" || value == "bf16") return KvCacheDtype::kBF16;
  if (value == "float16" || value == "half" || value == "f16") return KvCacheDtype::kF16;
  if (value == "float32" || value == "float" || value == "f32") return KvCacheDtype::kF32;
  if (value == "fp8" || value == "fp8_e4m3") return KvCacheDtype::kFp8E4M3;
  if (value == "fp8_e5m2") return KvCacheDtype::kFp8E5M2;
  return invalid_argument("--kv-cache-dtype: unknown value '" + std::string(value) +
                          "'; expected one of auto, bfloat16, float16, float32, fp8, fp8_e4m3, "
                          "fp8_e5m2");
}

float fp8_max_finite(KvCacheDtype dtype) {
  return dtype == KvCacheDtype::kFp8E4M3 ? 448.0f : 57344.0f;
}

uint8_t f32_to_fp8(float x, KvCacheDtype dtype) { return encode_fp8(x, fp8_params(dtype)); }

float fp8_to_f32(uint8_t bits, KvCacheDtype dtype) {
  if (dtype == KvCacheDtype::kFp8E5M2) return f16_to_f32(static_cast<uint16_t>(bits) << 8);
  // e4m3 as the kernels read it: the bits placed in a half (exponent bias 15,
  // so the value is 2^-8 of the fp8 value, subnormals included), times 256.
  // S.1111.111 (NaN in e4m3fn, never written) reads as 480.
  const uint16_t half = static_cast<uint16_t>((bits & 0x80u) << 8 | (bits & 0x7fu) << 7);
  return f16_to_f32(half) * 256.0f;
}

void encode_kv_row(const float* x, const KvRowLayout& layout, float fixed_scale, uint8_t* out) {
  const int64_t n = layout.num_kv_heads * layout.head_dim;
  switch (layout.dtype) {
    case KvCacheDtype::kF32:
      std::memcpy(out, x, static_cast<size_t>(n) * 4);
      return;
    case KvCacheDtype::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case KvCacheDtype::kF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case KvCacheDtype::kFp8E4M3:
    case KvCacheDtype::kFp8E5M2:
      break;
  }
  const float max_finite = fp8_max_finite(layout.dtype);
  const Fp8Params& p = fp8_params(layout.dtype);
  for (int64_t h = 0; h < layout.num_kv_heads; ++h) {
    const float* xh = x + h * layout.head_dim;
    float scale = fixed_scale;
    if (!(scale > 0.0f)) {
      float amax = 0.0f;
      for (int64_t d = 0; d < layout.head_dim; ++d) {
        const float a = std::fabs(xh[d]);
        amax = a > amax ? a : amax;  // NaN ignored (it encodes as 0)
      }
      scale = amax > 0.0f && std::isfinite(amax) ? amax / max_finite : 1.0f;
    }
    const float inv = 1.0f / scale;
    uint8_t* values = out + layout.head_offset(h);
    for (int64_t d = 0; d < layout.head_dim; ++d) values[d] = encode_fp8(xh[d] * inv, p);
    std::memcpy(out + layout.scale_offset(h), &scale, 4);
  }
}

void decode_kv_head(const uint8_t* row, const KvRowLayout& layout, int64_t head, float* out) {
  const uint8_t* values = row + layout.head_offset(head);
  const int64_t dim = layout.head_dim;
  switch (layout.dtype) {
    case KvCacheDtype::kF32:
      std::memcpy(out, values, static_cast<size_t>(dim) * 4);
      return;
    case KvCacheDtype::kBF16:
    case KvCacheDtype::kF16:
      for (int64_t d = 0; d < dim; ++d) {
        uint16_t h;
        std::memcpy(&h, values + 2 * d, 2);
        out[d] = layout.dtype == KvCacheDtype::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
      return;
    case KvCacheDtype::kFp8E4M3:
    case KvCacheDtype::kFp8E5M2: {
      float scale;
      std::memcpy(&scale, row + layout.scale_offset(head), 4);
      for (int64_t d = 0; d < dim; ++d) out[d] = fp8_to_f32(values[d], layout.dtype) * scale;
      return;
    }
  }
}

namespace {

// Calls f(row offset, cache offset, bytes) for each contiguous run of the
// row's bytes in slot `slot` of a cache laid out as `layout`.
template <class F>
void for_each_row_run(const KvTileLayout& layout, KvSide side, int64_t slot, F f) {
  const KvRowLayout& r = layout.row;
  const int64_t e = kv_element_bytes(r.dtype);
  const int64_t tile = layout.tile_offset(slot), i = slot % layout.tile_tokens;
  for (int64_t h = 0; h < r.num_kv_heads; ++h) {
    if (side == KvSide::kValue) {
      f(r.head_offset(h), tile + layout.value_offset(side, i, h, 0), r.head_dim * e);
    } else {
      for (int64_t d = 0; d < r.head_dim; ++d) {
        f(r.head_offset(h) + d * e, tile + layout.value_offset(side, i, h, d), e);
      }
    }
    if (kv_cache_dtype_has_scales(r.dtype))
      f(r.scale_offset(h), tile + layout.scale_offset(i, h), 4);
  }
}

}  // namespace

void store_kv_row(const uint8_t* row, const KvTileLayout& layout, KvSide side, int64_t slot,
                  uint8_t* cache) {
  for_each_row_run(layout, side, slot, [&](int64_t from, int64_t to, int64_t n) {
    std::memcpy(cache + to, row + from, static_cast<size_t>(n));
  });
}

void load_kv_row(const uint8_t* cache, const KvTileLayout& layout, KvSide side, int64_t slot,
                 uint8_t* row) {
  for_each_row_run(layout, side, slot, [&](int64_t to, int64_t from, int64_t n) {
    std::memcpy(row + to, cache + from, static_cast<size_t>(n));
  });
}

}  // namespace strata::tensor
