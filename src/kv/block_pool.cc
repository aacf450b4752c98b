#include "kv/block_pool.h"

#include "base/check.h"

namespace strata::kv {

BlockPool::BlockPool(int32_t num_blocks, bool enable_caching)
    : blocks_(num_blocks), free_queue_(num_blocks), enable_caching_(enable_caching) {
  STRATA_CHECK(num_blocks > 0);
}

double BlockPool::usage() const {
  return 1.0 - static_cast<double>(num_free_blocks()) / static_cast<double>(num_blocks());
}

std::optional<int32_t> BlockPool::get_cached_block(const BlockHash& hash) const {
  if (!enable_caching_) return std::nullopt;
  auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  return it->second;
}

void BlockPool::evict_hash(int32_t block_id) {
  KvBlock& b = blocks_[block_id];
  if (!b.hash) return;
  auto it = cached_.find(*b.hash);
  if (it != cached_.end() && it->second == block_id) {
    cached_.erase(it);
    if (events_enabled_) {
      if (!events_.empty() && events_.back().kind == KvCacheEvent::Kind::kRemoved) {
        events_.back().block_hashes.push_back(*b.hash);
      } else {
        events_.push_back({KvCacheEvent::Kind::kRemoved, {*b.hash}, std::nullopt, {}});
      }
    }
  }
  b.hash.reset();
  ++stats_.num_evicted_blocks;
}

std::optional<std::vector<int32_t>> BlockPool::get_new_blocks(int32_t n) {
  if (n > num_free_blocks()) return std::nullopt;
  std::vector<int32_t> out;
  out.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    int32_t id = free_queue_.pop_front();
    evict_hash(id);
    STRATA_DCHECK(blocks_[id].ref_cnt == 0);
    blocks_[id].ref_cnt = 1;
    out.push_back(id);
  }
  return out;
}

void BlockPool::touch(const std::vector<int32_t>& block_ids) {
  for (int32_t id : block_ids) {
    if (blocks_[id].ref_cnt == 0) free_queue_.remove(id);
    ++blocks_[id].ref_cnt;
  }
}

void BlockPool::free_blocks(const std::vector<int32_t>& block_ids) {
  for (int32_t id : block_ids) {
    STRATA_CHECK(blocks_[id].ref_cnt > 0) << "double free of block " << id;
    if (--blocks_[id].ref_cnt == 0) free_queue_.push_back(id);
  }
}

bool BlockPool::cache_block(int32_t block_id, const BlockHash& hash) {
  if (!enable_caching_) return false;
  KvBlock& b = blocks_[block_id];
  if (b.hash) return false;
  b.hash = hash;
  return cached_.emplace(hash, block_id).second;
}

std::vector<KvCacheEvent> BlockPool::take_events() {
  std::vector<KvCacheEvent> out;
  out.swap(events_);
  return out;
}

bool BlockPool::reset_prefix_cache() {
  if (num_free_blocks() != num_blocks()) return false;
  for (KvBlock& b : blocks_) b.hash.reset();
  cached_.clear();
  if (events_enabled_) events_.push_back({KvCacheEvent::Kind::kAllCleared, {}, std::nullopt, {}});
  return true;
}

}  // namespace strata::kv
