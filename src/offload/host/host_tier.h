// The host tier: one arena of fixed-size chunk slots in host memory, a real
// cache (not a staging buffer) in front of every secondary tier. It is the
// only tier that exchanges bytes with the KV pool.
//
// Slot life cycle (per chunk key):
//   absent --prepare_write--> writing (ref -1: neither readable nor evictable)
//          --complete_write(ok)--> ready (ref 0: evictable by the policy)
//          --complete_write(!ok)--> absent (slot freed)
//   ready --acquire--> ready, ref > 0 (a load or a cascade reads it; pinned)
//         --release--> ref - 1
// Only ready chunks with ref 0 are ever evicted, chosen by the eviction policy
// (LRU or ARC, offload/policy) and never among the caller's protected keys.
//
// The bytes (region()) are written and read by transfer threads while a slot
// is writing or pinned; this class holds only the bookkeeping. Not
// thread-safe: engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "offload/policy/eviction_policy.h"
#include "offload/tiers/common/secondary_tier.h"
#include "offload/tiers/common/tier_stats.h"

namespace strata::offload {

enum class HostChunkState { kAbsent, kWriting, kReady };

using KeySet = std::unordered_set<ChunkKey, kv::BlockHashHasher>;

class HostTier {
 public:
  // `num_slots` chunks of `slot_bytes` each; the arena is mapped lazily (pages
  // are committed on first write). Errors: the mapping fails.
  static StatusOr<std::unique_ptr<HostTier>> create(int64_t num_slots, int64_t slot_bytes,
                                                    std::unique_ptr<EvictionPolicy> policy);
  ~HostTier();
  HostTier(const HostTier&) = delete;
  HostTier& operator=(const HostTier&) = delete;

  const HostRegion& region() const { return region_; }
  HostChunkState state(const ChunkKey& key) const;
  // Slot of a writing or ready chunk.
  std::optional<int64_t> slot_of(const ChunkKey& key) const;

  // Marks keys as recently used (a lookup hit them).
  void touch(std::span<const ChunkKey> keys);

  // Reserves a slot for each key not present, in order, evicting unpinned
  // ready chunks outside `protect` as needed. Stops at the first key that
  // finds no slot (so the result is a prefix of the absent keys). The
  // reserved keys are in state kWriting.
  std::vector<std::pair<ChunkKey, int64_t>> prepare_write(std::span<const ChunkKey> keys,
                                                          const KeySet& protect);
  // Ends a write started by prepare_write: the chunk becomes ready (and
  // evictable) or, on failure, its slot is freed.
  void complete_write(const ChunkKey& key, bool ok);

  // Pins a ready chunk for reading; returns its slot.
  int64_t acquire(const ChunkKey& key);
  void release(const ChunkKey& key);

  // Drops every ready, unpinned chunk (reset_prefix_cache). Returns how many.
  int64_t clear();
  // Keys evicted or cleared since the last call (for KV events).
  std::vector<ChunkKey> take_removed();

  int64_t num_slots() const { return region_.num_slots; }
  int64_t num_free_slots() const { return static_cast<int64_t>(free_slots_.size()); }
  int64_t num_ready() const { return policy_->size(); }
  TierStats& stats() { return stats_; }
  TierStats stats_snapshot() const;

 private:
  struct Entry {
    int64_t slot = -1;
    int32_t ref_cnt = -1;  // -1 writing, 0 ready idle, > 0 pinned by readers
  };
  HostTier(HostRegion region, std::unique_ptr<EvictionPolicy> policy);
  bool make_room(int64_t n, const KeySet& protect);
  void drop(const ChunkKey& key);

  HostRegion region_;
  std::unique_ptr<EvictionPolicy> policy_;
  std::unordered_map<ChunkKey, Entry, kv::BlockHashHasher> entries_;
  std::vector<int64_t> free_slots_;
  std::vector<ChunkKey> removed_;
  TierStats stats_;
};

}  // namespace strata::offload
