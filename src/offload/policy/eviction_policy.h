// Which resident chunks of a cache tier to evict (control plane: keys only,
// no bytes, no I/O, no threads). The host tier of the tiered KV cache (see the
// tiered-KV issues) keeps one of these over its chunk keys:
//
//   insert(key)   a chunk became resident (its store completed)
//   touch(key)    a lookup hit it
//   remove(key)   the owner dropped it (failed store, corrupt data)
//   evict(n, ok)  picks up to n victims among residents for which ok(key) is
//                 true (the owner passes "not pinned by a transfer, ready"),
//                 and forgets them as residents
//
// Two policies: "lru" (least recently used first) and "arc" (Adaptive
// Replacement Cache, Megiddo & Modha 2003: recency list T1 and frequency list
// T2 with ghost lists B1/B2 that steer the target size of T1, so a one-off scan
// of many new chunks does not flush chunks that are reused).
//
// Keys are kv::BlockHash values (the chunk key is its last block's hash).
// Not thread-safe: one owner thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "kv/block_hash.h"

namespace strata::offload {

using ChunkKey = kv::BlockHash;
using EvictablePredicate = std::function<bool(const ChunkKey&)>;

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual void insert(const ChunkKey& key) = 0;
  virtual void touch(const ChunkKey& key) = 0;
  virtual void remove(const ChunkKey& key) = 0;
  virtual std::vector<ChunkKey> evict(int64_t n, const EvictablePredicate& is_evictable) = 0;
  virtual bool contains(const ChunkKey& key) const = 0;
  virtual int64_t size() const = 0;  // resident chunks
};

// `capacity` = resident chunks the tier holds (ARC sizes its ghost lists and
// its adaptive target from it). Errors name the policy and list the known ones.
StatusOr<std::unique_ptr<EvictionPolicy>> make_eviction_policy(const std::string& name,
                                                               int64_t capacity);

}  // namespace strata::offload
