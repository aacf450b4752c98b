// Attention over a paged KV cache for a flat batch of sequences.
//
// KV layout of one layer (the KV memory, see backend/kv_memory.h):
//   k_cache, v_cache: num_blocks * block_size token slots in tiles of
//   tensor::KvTileLayout{{kv_dtype, num_kv_heads, head_dim},
//   kv_tile_tokens(block_size)}: 16 slots (or a block, when block_size is
//   not a multiple of 16) grouped by kv head, K transposed.
// A slot s = block_id * block_size + offset addresses one token.
//
// reshape_and_cache writes the new tokens' K/V rows into their slots;
// paged_attention then computes causal grouped-query attention for every
// new token over its sequence's context, reading K/V through the block
// table. Within one layer, all K/V of the step are written before any
// attention reads, so sequences sharing prefix blocks written in this same
// step see them.
//
// Query head h reads kv head h / (num_heads / num_kv_heads); a token at
// position p sees positions j <= p (and p - j < sliding_window when set).
// paged_attention runs the kernel of ops::paged_attention (ops/cpu, chosen
// at run time with the other kernels); paged_attention_reference is the plain
// scalar version the tests compare against.
#pragma once

#include <cstdint>

#include "attention/attention_metadata.h"
#include "base/thread_pool.h"
#include "ops/ops.h"
#include "tensor/kv_cache_dtype.h"

namespace strata::attention {

struct PagedAttentionParams {
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 0;
  float scale = 1.0f;
  int64_t sliding_window = 0;  // 0 = full causal attention
  tensor::KvCacheDtype kv_dtype = tensor::KvCacheDtype::kF32;

  tensor::KvRowLayout kv_layout() const { return {kv_dtype, num_kv_heads, head_dim}; }
  tensor::KvTileLayout kv_tile_layout() const {
    return {kv_layout(), tensor::kv_tile_tokens(block_size)};
  }
};

// k, v: [num_tokens, num_kv_heads, head_dim] f32 -> the caches' slots at
// slot_mapping, each token's row encoded as layout.row (tensor::encode_kv_row)
// and placed as `layout` says (tensor::store_kv_row). k_scale, v_scale > 0:
// fixed fp8 scales (a checkpoint's); 0: per token and head.
void reshape_and_cache(const float* k, const float* v, const AttentionMetadata& md,
                       const tensor::KvTileLayout& layout, float k_scale, float v_scale,
                       uint8_t* k_cache, uint8_t* v_cache);

// The ops kernel's view of one layer's call (pointers into md, q, the caches
// and out; valid while they are).
ops::PagedAttentionBatch paged_attention_batch(const float* q, const uint8_t* k_cache,
                                               const uint8_t* v_cache, const AttentionMetadata& md,
                                               const PagedAttentionParams& p, float* out);

// q, out: [num_tokens, num_heads, head_dim].
void paged_attention(const float* q, const uint8_t* k_cache, const uint8_t* v_cache,
                     const AttentionMetadata& md, const PagedAttentionParams& p, float* out,
                     ThreadPool& pool);

// Reads every K/V row through tensor::load_kv_row and decode_kv_head, then f64
// throughout.
void paged_attention_reference(const float* q, const uint8_t* k_cache, const uint8_t* v_cache,
                               const AttentionMetadata& md, const PagedAttentionParams& p,
                               float* out);

}  // namespace strata::attention
