// What the KV pool's prefix cache gained or lost, for KV-aware routers
// (published as vLLM's KV events by the engine; see events/). Plain data; the
// pool records them only when events are enabled.
#pragma once

#include <optional>
#include <vector>

#include "kv/block_hash.h"

namespace strata::kv {

struct KvCacheEvent {
  enum class Kind { kStored, kRemoved, kAllCleared };
  Kind kind = Kind::kStored;
  // kStored: consecutive full blocks of one sequence, in order, with the hash
  // of the block before the first (none for a sequence's first block) and
  // the blocks' token ids (block_size per block). kRemoved: evicted hashes.
  std::vector<BlockHash> block_hashes;
  std::optional<BlockHash> parent_block_hash;
  std::vector<int32_t> token_ids;
};

}  // namespace strata::kv
