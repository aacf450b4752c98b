#include "offload/tiers/p2p/p2p_chunk_store.h"

#include "base/check.h"

namespace strata::offload {

P2pChunkStore::PutResult P2pChunkStore::put(const ChunkKey& key, Chunk chunk) {
  STRATA_CHECK(chunk != nullptr);
  const int64_t bytes = static_cast<int64_t>(chunk->size());
  PutResult result;
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.count(key) != 0 || bytes > max_bytes_) return result;
  while (used_bytes_ + bytes > max_bytes_ && !lru_.empty()) {
    auto victim = entries_.find(lru_.front());
    used_bytes_ -= static_cast<int64_t>(victim->second.chunk->size());
    entries_.erase(victim);
    lru_.pop_front();
    ++result.num_evicted;
  }
  lru_.push_back(key);
  entries_.emplace(key, Entry{std::move(chunk), std::prev(lru_.end())});
  used_bytes_ += bytes;
  result.is_stored = true;
  return result;
}

bool P2pChunkStore::contains(const ChunkKey& key) { return get(key) != nullptr; }

P2pChunkStore::Chunk P2pChunkStore::get(const ChunkKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  lru_.splice(lru_.end(), lru_, it->second.lru_pos);
  return it->second.chunk;
}

int64_t P2pChunkStore::used_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_bytes_;
}

int64_t P2pChunkStore::num_chunks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(entries_.size());
}

}  // namespace strata::offload
