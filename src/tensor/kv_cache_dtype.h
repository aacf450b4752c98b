// How the KV cache stores one token's K (or V) row: the element type
// (--kv-cache-dtype) and the row's bytes. Every holder of KV (the KV pool,
// host-tier slots, chunk files, objects and peer messages) keeps these rows'
// bytes arranged in tiles (KvTileLayout, kv_row_layout.h); store_kv_row and
// load_kv_row move a row into and out of its slot.
//
// Row of one token, num_kv_heads heads of head_dim values:
//   bytes [0, H * D * e)           head h's values at h * D * e, element type
//                                  of size e (f32 4, bf16/f16 2, fp8 1)
//   bytes [H * D * e, + H * 4)     fp8 only: head h's scale, f32 little-endian
// A value reads back as decode(element) * scale (scale 1 for the plain
// types). fp8 scales are per token and kv head, amax / max_finite of the
// head's values unless a fixed scale is given (a checkpoint's k_scale/v_scale),
// so a row's bytes depend only on its f32 values: the same on every machine,
// thread count and batch.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "tensor/dtype.h"
#include "tensor/kv_row_layout.h"

namespace strata::tensor {

// "f32", "bf16", "f16", "fp8_e4m3", "fp8_e5m2": the name in chunk namespaces,
// logs and vllm:cache_config_info.
const char* kv_cache_dtype_name(KvCacheDtype dtype);
// Inverse of kv_cache_dtype_name; false for anything else.
bool kv_cache_dtype_from_name(std::string_view name, KvCacheDtype* out);

// vLLM's --kv-cache-dtype values: "auto" (the model's weight dtype: bf16 for
// bf16, f16 for f16, f32 for f32, f16 for quantized weights as llama.cpp
// keeps), "bfloat16", "float16" ("half"), "float32" ("float"), "fp8" (=
// "fp8_e4m3"), "fp8_e5m2". Anything else is an error listing the values.
StatusOr<KvCacheDtype> parse_kv_cache_dtype(std::string_view value, DType model_dtype);

// Largest finite magnitude: 448 (e4m3fn), 57344 (e5m2).
float fp8_max_finite(KvCacheDtype dtype);

// f32 -> fp8 bits, round to nearest even, saturating to +-max finite (never
// inf or NaN; NaN input gives 0). e4m3 is the "fn" variant (no infinities,
// S.1111.111 is NaN), e5m2 the IEEE-style one.
uint8_t f32_to_fp8(float x, KvCacheDtype dtype);
float fp8_to_f32(uint8_t bits, KvCacheDtype dtype);

// Writes one token's row. x: [num_kv_heads, head_dim] f32; out: row_bytes().
// fixed_scale > 0: every head's fp8 scale is fixed_scale (values beyond
// fixed_scale * max_finite saturate); 0: per head amax / max_finite.
void encode_kv_row(const float* x, const KvRowLayout& layout, float fixed_scale, uint8_t* out);

// Head `head` of a row back to f32: out [head_dim] = decode(element) * scale,
// exactly what the attention kernels compute for every element.
void decode_kv_head(const uint8_t* row, const KvRowLayout& layout, int64_t head, float* out);

// A row's bytes (KvRowLayout) into slot `slot` of a KV pool laid out as
// `layout` (kv_row_layout.h: tiles grouped by head, K transposed), and back.
// Byte moves only: load_kv_row(store_kv_row(row)) is the row.
void store_kv_row(const uint8_t* row, const KvTileLayout& layout, KvSide side, int64_t slot,
                  uint8_t* cache);
void load_kv_row(const uint8_t* cache, const KvTileLayout& layout, KvSide side, int64_t slot,
                 uint8_t* row);

}  // namespace strata::tensor
