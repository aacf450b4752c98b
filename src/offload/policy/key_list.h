// An ordered set of chunk keys with O(1) insert at the MRU end, removal of any
// key, and iteration from the LRU end: the building block of the LRU and ARC
// policies. Not thread-safe.
#pragma once

#include <list>
#include <unordered_map>

#include "offload/policy/eviction_policy.h"

namespace strata::offload {

class KeyList {
 public:
  using Iterator = std::list<ChunkKey>::const_iterator;

  bool contains(const ChunkKey& key) const { return index_.count(key) != 0; }
  int64_t size() const { return static_cast<int64_t>(order_.size()); }
  bool empty() const { return order_.empty(); }

  // Adds `key` as most recently used (moving it if present).
  void push_mru(const ChunkKey& key) {
    erase(key);
    order_.push_back(key);
    index_[key] = std::prev(order_.end());
  }
  // Returns false if absent.
  bool erase(const ChunkKey& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    order_.erase(it->second);
    index_.erase(it);
    return true;
  }
  const ChunkKey& lru() const { return order_.front(); }
  Iterator begin() const { return order_.begin(); }  // LRU first
  Iterator end() const { return order_.end(); }

 private:
  std::list<ChunkKey> order_;
  std::unordered_map<ChunkKey, std::list<ChunkKey>::iterator, kv::BlockHashHasher> index_;
};

}  // namespace strata::offload
