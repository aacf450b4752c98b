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
  return dtype == KvCacheDtype::kF32                                   ? 4
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

// The KV pool (and every chunk of it a tier holds) keeps a layer's K and V
// in tiles of consecutive token slots: kv_tile_tokens(block_size) = 16 when
// the block size is a multiple of 16 (a block is then block_size / 16
// tiles), else the whole block. A tile of W tokens takes W rows' bytes,
// grouped by kv head so that attention reads each head's keys as
// contiguous 16-wide vectors:
//   bytes [0, H * W * D * e): head h's W tokens at h * W * D * e,
//     K: [D][W]  (element d of the tile's W keys side by side)
//     V: [W][D]  (one token's values after another)
//   bytes [H * W * D * e, + H * W * 4): fp8 only, [H][W] f32 scales.
// Slot s (block * block_size + offset) lives in tile s / W at index s % W.
// The bytes of a run of whole tiles depend only on their tokens' rows, not
// on the block size, as long as W is the same.
enum class KvSide : uint8_t { kKey, kValue };

constexpr int64_t kKvTileTokens = 16;
constexpr int64_t kv_tile_tokens(int64_t block_size) {
  return block_size % kKvTileTokens == 0 ? kKvTileTokens : block_size;
}

struct KvTileLayout {
  KvRowLayout row;
  int64_t tile_tokens = kKvTileTokens;  // W

  int64_t tile_bytes() const { return tile_tokens * row.row_bytes(); }
  // Byte offset of slot's tile from the start of the cache.
  int64_t tile_offset(int64_t slot) const { return slot / tile_tokens * tile_bytes(); }
  // Within a tile: element (index i, head h, d) and the scale of (i, h).
  int64_t value_offset(KvSide side, int64_t i, int64_t head, int64_t d) const {
    const int64_t e = kv_element_bytes(row.dtype);
    const int64_t head_base = head * tile_tokens * row.head_dim * e;
    return head_base +
           (side == KvSide::kKey ? (d * tile_tokens + i) * e : (i * row.head_dim + d) * e);
  }
  int64_t scale_offset(int64_t i, int64_t head) const {
    return tile_tokens * row.values_bytes() + (head * tile_tokens + i) * 4;
  }
};

}  // namespace strata::tensor
