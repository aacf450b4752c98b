// Content identity of full KV blocks, shared by every process and machine.
//
// A full block's hash chains its parent's hash with the block's token ids:
//
//   root          = XXH3_128(extra_keys_bytes,                 seed = kBlockHashSeed)
//   hash(block i) = XXH3_128(parent_hash_le16 || token_ids_le32, seed = kBlockHashSeed)
//
// where parent_hash is `root` for block 0 and extra_keys_bytes is
// ExtraKeys::serialize(): each of model fingerprint, KV dtype and cache salt
// as a u32 little-endian length followed by its bytes. Anything that changes
// the KV bytes of a prefix belongs in the extra keys, so two instances agree on
// a key exactly when the stored KV would be identical. The seed and the byte
// layout are part of the on-disk/on-wire format: change them only with a
// format version bump.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace strata::kv {

// "strata-kv-hash-v1" folded into 64 bits; fixed forever for format v1.
inline constexpr uint64_t kBlockHashSeed = 0x5354524154414b56ull;

struct BlockHash {
  uint64_t low = 0;
  uint64_t high = 0;

  bool operator==(const BlockHash&) const = default;
  std::string to_hex() const;  // 32 lowercase hex digits, high word first
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.low ^ h.high); }
};

struct ExtraKeys {
  std::string model_fingerprint;  // identifies weights + architecture
  std::string kv_dtype;           // e.g. "f32"
  std::string cache_salt;         // per-request isolation; "" = shared

  std::string serialize() const;
};

BlockHash root_block_hash(const ExtraKeys& extra_keys);

// Hash of one full block given its parent (root_block_hash for the first block).
BlockHash hash_block(const BlockHash& parent, std::span<const int32_t> token_ids);

// Hashes of every full block of `token_ids` after the first `num_hashed`
// blocks already in `hashes` (appends in place). Partial trailing blocks are
// not hashed.
void extend_block_hashes(const BlockHash& root, std::span<const int32_t> token_ids,
                         int64_t block_size, std::vector<BlockHash>& hashes);

}  // namespace strata::kv
