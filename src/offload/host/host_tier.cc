#include "offload/host/host_tier.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "base/check.h"

namespace strata::offload {

StatusOr<std::unique_ptr<HostTier>> HostTier::create(int64_t num_slots, int64_t slot_bytes,
                                                     std::unique_ptr<EvictionPolicy> policy) {
  STRATA_CHECK(num_slots > 0 && slot_bytes > 0);
  const size_t bytes = static_cast<size_t>(num_slots) * static_cast<size_t>(slot_bytes);
  // MAP_NORESERVE + lazy faulting: a large cpu_bytes_to_use costs nothing
  // until chunks arrive.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) {
    return resource_exhausted("cannot map " + std::to_string(bytes) +
                              " bytes for the host KV tier (cpu_bytes_to_use): " +
                              std::strerror(errno));
  }
  HostRegion region{static_cast<uint8_t*>(p), num_slots, slot_bytes};
  return std::unique_ptr<HostTier>(new HostTier(region, std::move(policy)));
}

HostTier::HostTier(HostRegion region, std::unique_ptr<EvictionPolicy> policy)
    : region_(region), policy_(std::move(policy)) {
  free_slots_.reserve(region_.num_slots);
  // Hand out low slots first (pop_back), so a mostly empty arena touches few pages.
  for (int64_t i = region_.num_slots - 1; i >= 0; --i) free_slots_.push_back(i);
  stats_.tier = "cpu";
  stats_.capacity_bytes = region_.num_slots * region_.slot_bytes;
}

HostTier::~HostTier() {
  munmap(region_.base, static_cast<size_t>(region_.num_slots) * region_.slot_bytes);
}

HostChunkState HostTier::state(const ChunkKey& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return HostChunkState::kAbsent;
  return it->second.ref_cnt < 0 ? HostChunkState::kWriting : HostChunkState::kReady;
}

std::optional<int64_t> HostTier::slot_of(const ChunkKey& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second.slot;
}

void HostTier::touch(std::span<const ChunkKey> keys) {
  // Last key first, so the first chunk of a prefix ends up most recent: a
  // prefix is useless without its head, so heads must outlive tails.
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    if (state(*it) == HostChunkState::kReady) policy_->touch(*it);
  }
}

bool HostTier::make_room(int64_t n, const KeySet& protect) {
  const int64_t need = n - num_free_slots();
  if (need <= 0) return true;
  std::vector<ChunkKey> victims = policy_->evict(need, [&](const ChunkKey& k) {
    auto it = entries_.find(k);
    return it != entries_.end() && it->second.ref_cnt == 0 && protect.count(k) == 0;
  });
  for (const ChunkKey& k : victims) {
    drop(k);
    removed_.push_back(k);
    ++stats_.evictions;
  }
  return num_free_slots() >= n;
}

void HostTier::drop(const ChunkKey& key) {
  auto it = entries_.find(key);
  STRATA_CHECK(it != entries_.end());
  free_slots_.push_back(it->second.slot);
  entries_.erase(it);
}

std::vector<std::pair<ChunkKey, int64_t>> HostTier::prepare_write(std::span<const ChunkKey> keys,
                                                                  const KeySet& protect) {
  std::vector<std::pair<ChunkKey, int64_t>> out;
  for (const ChunkKey& key : keys) {
    if (entries_.count(key) != 0) {
      ++stats_.stores_skipped;
      continue;
    }
    if (!make_room(1, protect)) break;
    const int64_t slot = free_slots_.back();
    free_slots_.pop_back();
    entries_.emplace(key, Entry{slot, -1});
    out.emplace_back(key, slot);
  }
  return out;
}

void HostTier::complete_write(const ChunkKey& key, bool ok) {
  auto it = entries_.find(key);
  STRATA_CHECK(it != entries_.end() && it->second.ref_cnt == -1) << "no write in flight";
  if (!ok) {
    drop(key);
    return;
  }
  it->second.ref_cnt = 0;
  policy_->insert(key);
}

int64_t HostTier::acquire(const ChunkKey& key) {
  auto it = entries_.find(key);
  STRATA_CHECK(it != entries_.end() && it->second.ref_cnt >= 0) << "chunk not ready";
  ++it->second.ref_cnt;
  return it->second.slot;
}

void HostTier::release(const ChunkKey& key) {
  auto it = entries_.find(key);
  STRATA_CHECK(it != entries_.end() && it->second.ref_cnt > 0) << "release of unpinned chunk";
  --it->second.ref_cnt;
}

int64_t HostTier::clear() {
  std::vector<ChunkKey> idle;
  for (const auto& [key, e] : entries_) {
    if (e.ref_cnt == 0) idle.push_back(key);
  }
  for (const ChunkKey& k : idle) {
    policy_->remove(k);
    drop(k);
    removed_.push_back(k);
  }
  return static_cast<int64_t>(idle.size());
}

std::vector<ChunkKey> HostTier::take_removed() {
  std::vector<ChunkKey> out;
  out.swap(removed_);
  return out;
}

TierStats HostTier::stats_snapshot() const {
  TierStats s = stats_;
  s.num_chunks = static_cast<int64_t>(entries_.size());
  s.used_bytes = s.num_chunks * region_.slot_bytes;
  return s;
}

}  // namespace strata::offload
