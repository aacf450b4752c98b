// The KV block pool: bookkeeping for the fixed set of KV blocks in the arena
// (no tensors here). Tracks, per block, how many requests hold it and which
// content hash it carries once full, and keeps the prefix-cache index
// hash -> block.
//
// Life of a block:
//   free (in FreeBlockQueue, maybe still cached) --get_new_blocks/touch-->
//   held (ref_cnt > 0) --free_blocks--> free again (cached ones stay findable).
// A cached free block loses its hash only when it is evicted: popped from the
// queue front by get_new_blocks because space is needed.
//
// Invariants: ref_cnt == 0 <=> block is in the free queue; a hash maps to at
// most one block, and that block carries the hash.
// Not thread-safe: engine thread only (the scheduler's world).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"
#include "kv/free_block_queue.h"
#include "kv/kv_cache_event.h"

namespace strata::kv {

struct KvBlock {
  int32_t ref_cnt = 0;
  std::optional<BlockHash> hash;  // set once the block is full and cached
};

// Counters for /metrics and the engine's prefix-cache statistics.
struct PrefixCacheStats {
  int64_t num_queries_tokens = 0;
  int64_t num_hit_tokens = 0;
  int64_t num_evicted_blocks = 0;
};

class BlockPool {
 public:
  BlockPool(int32_t num_blocks, bool enable_caching);

  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int32_t num_free_blocks() const { return free_queue_.size(); }
  bool enable_caching() const { return enable_caching_; }
  const KvBlock& block(int32_t block_id) const { return blocks_[block_id]; }
  // Fraction of blocks held by requests, in [0, 1].
  double usage() const;

  // The cached block holding `hash`, if any (does not change ref counts).
  std::optional<int32_t> get_cached_block(const BlockHash& hash) const;

  // Takes `n` blocks from the front of the free queue (evicting their cached
  // hashes), with ref_cnt 1. Returns nullopt, changing nothing, when fewer
  // than n are free.
  std::optional<std::vector<int32_t>> get_new_blocks(int32_t n);

  // Adds a reference to each block (prefix hit); free ones leave the queue.
  void touch(const std::vector<int32_t>& block_ids);

  // Drops one reference from each block in order; blocks reaching 0 are
  // appended to the free queue in that order (so pass a request's blocks
  // tail-first to have its last blocks evicted first).
  void free_blocks(const std::vector<int32_t>& block_ids);

  // Records that `block_id` is full with content `hash` and makes it findable.
  // A block already caching some hash keeps it; if another block already
  // holds `hash`, the index keeps the existing one. Returns true when `hash`
  // became newly findable.
  bool cache_block(int32_t block_id, const BlockHash& hash);

  // Forgets every cached hash (blocks in use keep their data but become
  // unfindable). Returns false if requests still hold blocks (vLLM semantics:
  // only a fully idle pool resets).
  bool reset_prefix_cache();

  // KV events (off by default): evictions and resets are recorded here;
  // KvCacheManager adds the stores. take_events() hands them over in order.
  void enable_events(bool on) { events_enabled_ = on; }
  bool events_enabled() const { return events_enabled_; }
  void add_event(KvCacheEvent event) { events_.push_back(std::move(event)); }
  std::vector<KvCacheEvent> take_events();

  PrefixCacheStats& stats() { return stats_; }
  const PrefixCacheStats& stats() const { return stats_; }

 private:
  void evict_hash(int32_t block_id);

  std::vector<KvBlock> blocks_;
  FreeBlockQueue free_queue_;
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> cached_;
  bool enable_caching_;
  PrefixCacheStats stats_;
  bool events_enabled_ = false;
  std::vector<KvCacheEvent> events_;
};

}  // namespace strata::kv
