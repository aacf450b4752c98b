// The KV cache's element types and the byte layout of one token's row (see
// kv_cache_dtype.h for the conversions). Header-only plain data with no
// library includes, so that kernel translation units built with other ISA
// flags can use it.
#pragma once

#include <cstdint>

namespace strata::tensor {

// The on-disk code (chunk headers) is the enum value: never renumber.
enum class KvCacheDtype : uint8_t { kF32 = 0, kBF16 = 1, kF16 = 2, kFp8E4M3 = 3, kFp8E5M2 = 4 };

constexpr int64_t kv_element_bytes(KvCacheDtype dtype) {
  return dtype == KvCacheDtype::kF32                                       ? 4
         : dtype == KvCacheDtype::kBF16 || dtype == KvCacheDtype::kF16 ? 2
                                                                            : 1;
}
// The fp8 types carry a scale per token and kv head.
constexpr bool kv_cache_dtype_has_scales(KvCacheDtype dtype) {
  return dtype == KvCacheDtype::kFp8E4M3 || dtype == KvCacheDtype::kFp8E5M2;
}

struct KvRowLayout {
  KvCacheDtype dtype = KvCacheDtype::kF32;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;

  int64_t values_bytes() const { return num_kv_heads * head_dim * kv_element_bytes(dtype); }
  int64_t row_bytes() const {
    return values_bytes() + (kv_cache_dtype_has_scales(dtype) ? num_kv_heads * 4 : 0);
  }
  int64_t head_offset(int64_t head) const { return head * head_dim * kv_element_bytes(dtype); }
  int64_t scale_offset(int64_t head) const { return values_bytes() + head * 4; }
};

}  // namespace strata::tensor
