#include "kv/kv_cache_manager.h"

#include <algorithm>

#include "base/check.h"

namespace strata::kv {

KvCacheManager::KvCacheManager(int32_t num_blocks, int32_t block_size, bool enable_caching)
    : pool_(num_blocks, enable_caching), block_size_(block_size) {
  STRATA_CHECK(block_size > 0);
}

int64_t KvCacheManager::num_blocks_for(int64_t num_tokens) const {
  return (num_tokens + block_size_ - 1) / block_size_;
}

ComputedBlocks KvCacheManager::get_computed_blocks(std::span<const BlockHash> block_hashes,
                                                   int64_t num_tokens) const {
  ComputedBlocks out;
  if (!pool_.enable_caching()) return out;
  // At most (num_tokens - 1) tokens may come from the cache.
  const int64_t max_blocks = std::max<int64_t>(0, (num_tokens - 1) / block_size_);
  const int64_t limit = std::min<int64_t>(max_blocks, block_hashes.size());
  for (int64_t i = 0; i < limit; ++i) {
    std::optional<int32_t> id = pool_.get_cached_block(block_hashes[i]);
    if (!id) break;
    out.block_ids.push_back(*id);
  }
  out.num_computed_tokens = static_cast<int64_t>(out.block_ids.size()) * block_size_;
  return out;
}

void KvCacheManager::record_query(int64_t num_tokens, int64_t num_hit_tokens) {
  pool_.stats().num_queries_tokens += num_tokens;
  pool_.stats().num_hit_tokens += num_hit_tokens;
}

bool KvCacheManager::allocate_slots(RequestKey key, int64_t num_computed_tokens,
                                    int64_t num_new_tokens, const ComputedBlocks& new_computed,
                                    std::span<const BlockHash> block_hashes,
                                    std::span<const int32_t> token_ids) {
  RequestBlocks& req = requests_[key];
  const int64_t num_required = num_blocks_for(num_computed_tokens + num_new_tokens);
  const int64_t num_have = static_cast<int64_t>(req.block_ids.size()) +
                           static_cast<int64_t>(new_computed.block_ids.size());
  const int64_t num_to_allocate = std::max<int64_t>(0, num_required - num_have);
  // Prefix-hit blocks sitting in the free queue stop being free once touched.
  int64_t num_free_hits = 0;
  for (int32_t id : new_computed.block_ids) num_free_hits += pool_.block(id).ref_cnt == 0;
  if (num_to_allocate > pool_.num_free_blocks() - num_free_hits) {
    if (req.block_ids.empty()) requests_.erase(key);
    return false;
  }
  pool_.touch(new_computed.block_ids);
  req.block_ids.insert(req.block_ids.end(), new_computed.block_ids.begin(),
                       new_computed.block_ids.end());
  req.num_cached_blocks += static_cast<int64_t>(new_computed.block_ids.size());
  std::optional<std::vector<int32_t>> fresh =
      pool_.get_new_blocks(static_cast<int32_t>(num_to_allocate));
  STRATA_CHECK(fresh.has_value());
  req.block_ids.insert(req.block_ids.end(), fresh->begin(), fresh->end());
  cache_full_blocks(key, block_hashes, num_computed_tokens + num_new_tokens, token_ids);
  return true;
}

void KvCacheManager::cache_full_blocks(RequestKey key, std::span<const BlockHash> block_hashes,
                                       int64_t num_tokens, std::span<const int32_t> token_ids) {
  auto it = requests_.find(key);
  if (it == requests_.end()) return;
  RequestBlocks& req = it->second;
  const int64_t limit = std::min({static_cast<int64_t>(block_hashes.size()),
                                  static_cast<int64_t>(req.block_ids.size()),
                                  num_tokens / block_size_});
  KvCacheEvent stored;
  auto flush = [&] {
    if (!stored.block_hashes.empty()) pool_.add_event(std::move(stored));
    stored = KvCacheEvent{};
  };
  for (int64_t i = req.num_cached_blocks; i < limit; ++i) {
    const bool is_new = pool_.cache_block(req.block_ids[i], block_hashes[i]);
    if (!pool_.events_enabled()) continue;
    if (!is_new) {
      flush();  // one event per run of newly findable blocks
      continue;
    }
    if (stored.block_hashes.empty() && i > 0) stored.parent_block_hash = block_hashes[i - 1];
    stored.block_hashes.push_back(block_hashes[i]);
    if (static_cast<int64_t>(token_ids.size()) >= (i + 1) * block_size_) {
      stored.token_ids.insert(stored.token_ids.end(), token_ids.begin() + i * block_size_,
                              token_ids.begin() + (i + 1) * block_size_);
    }
  }
  flush();
  req.num_cached_blocks = std::max(req.num_cached_blocks, limit);
}

void KvCacheManager::free(RequestKey key) {
  auto it = requests_.find(key);
  if (it == requests_.end()) return;
  std::vector<int32_t> reversed(it->second.block_ids.rbegin(), it->second.block_ids.rend());
  pool_.free_blocks(reversed);
  requests_.erase(it);
}

const std::vector<int32_t>& KvCacheManager::block_ids(RequestKey key) const {
  static const std::vector<int32_t> kEmpty;
  auto it = requests_.find(key);
  return it == requests_.end() ? kEmpty : it->second.block_ids;
}

}  // namespace strata::kv
