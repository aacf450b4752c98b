#include "kv/free_block_queue.h"

#include "base/check.h"

namespace strata::kv {

FreeBlockQueue::FreeBlockQueue(int32_t num_blocks)
    : prev_(num_blocks, kNone), next_(num_blocks, kNone), in_queue_(num_blocks, false) {
  for (int32_t i = 0; i < num_blocks; ++i) push_back(i);
}

int32_t FreeBlockQueue::pop_front() {
  STRATA_CHECK(size_ > 0) << "pop from an empty free-block queue";
  int32_t id = head_;
  remove(id);
  return id;
}

void FreeBlockQueue::push_back(int32_t block_id) {
  STRATA_DCHECK(!in_queue_[block_id]);
  prev_[block_id] = tail_;
  next_[block_id] = kNone;
  if (tail_ != kNone) {
    next_[tail_] = block_id;
  } else {
    head_ = block_id;
  }
  tail_ = block_id;
  in_queue_[block_id] = true;
  ++size_;
}

void FreeBlockQueue::remove(int32_t block_id) {
  STRATA_CHECK(in_queue_[block_id]) << "block " << block_id << " is not in the free queue";
  int32_t p = prev_[block_id];
  int32_t n = next_[block_id];
  if (p != kNone) {
    next_[p] = n;
  } else {
    head_ = n;
  }
  if (n != kNone) {
    prev_[n] = p;
  } else {
    tail_ = p;
  }
  prev_[block_id] = next_[block_id] = kNone;
  in_queue_[block_id] = false;
  --size_;
}

std::vector<int32_t> FreeBlockQueue::to_vector() const {
  std::vector<int32_t> out;
  for (int32_t id = head_; id != kNone; id = next_[id]) out.push_back(id);
  return out;
}

}  // namespace strata::kv
