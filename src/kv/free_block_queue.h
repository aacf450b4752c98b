// The queue of blocks no request holds (ref_cnt == 0), in eviction order:
// the front is evicted first. Blocks that still carry a cached hash stay here
// and can be revived by a prefix hit (remove from the middle in O(1)), so the
// queue doubles as the LRU list of the prefix cache.
//
// Intrusive doubly-linked list over block ids; no allocation after
// construction. Not thread-safe (engine thread only).
#pragma once

#include <cstdint>
#include <vector>

namespace strata::kv {

class FreeBlockQueue {
 public:
  // Starts holding blocks 0..num_blocks-1 in order.
  explicit FreeBlockQueue(int32_t num_blocks);

  int32_t size() const { return size_; }
  bool contains(int32_t block_id) const { return in_queue_[block_id]; }
  int32_t pop_front();                // precondition: size() > 0
  void push_back(int32_t block_id);   // precondition: !contains(block_id)
  void remove(int32_t block_id);      // precondition: contains(block_id)
  std::vector<int32_t> to_vector() const;  // front to back (tests)

 private:
  static constexpr int32_t kNone = -1;
  std::vector<int32_t> prev_;
  std::vector<int32_t> next_;
  std::vector<bool> in_queue_;
  int32_t head_ = kNone;
  int32_t tail_ = kNone;
  int32_t size_ = 0;
};

}  // namespace strata::kv
