#include "offload/policy/eviction_policy.h"

#include <algorithm>
#include <optional>

#include "offload/policy/key_list.h"

namespace strata::offload {
namespace {

// Least recently used (inserted or touched) evictable chunk first.
class LruPolicy : public EvictionPolicy {
 public:
  void insert(const ChunkKey& key) override { residents_.push_mru(key); }
  void touch(const ChunkKey& key) override {
    if (residents_.contains(key)) residents_.push_mru(key);
  }
  void remove(const ChunkKey& key) override { residents_.erase(key); }
  bool contains(const ChunkKey& key) const override { return residents_.contains(key); }
  int64_t size() const override { return residents_.size(); }

  std::vector<ChunkKey> evict(int64_t n, const EvictablePredicate& is_evictable) override {
    std::vector<ChunkKey> victims;
    for (const ChunkKey& key : residents_) {
      if (static_cast<int64_t>(victims.size()) == n) break;
      if (is_evictable(key)) victims.push_back(key);
    }
    for (const ChunkKey& key : victims) residents_.erase(key);
    return victims;
  }

 private:
  KeyList residents_;
};

// Adaptive Replacement Cache with eviction on demand: residents live in T1
// (seen once) or T2 (seen again); evicted keys are remembered in ghost lists
// B1/B2, and a later insert of a ghost moves the target size p of T1 towards
// the list that would have kept it.
class ArcPolicy : public EvictionPolicy {
 public:
  explicit ArcPolicy(int64_t capacity) : capacity_(std::max<int64_t>(1, capacity)) {}

  void insert(const ChunkKey& key) override {
    if (contains(key)) return touch(key);
    if (b1_.erase(key)) {
      const int64_t delta = std::max<int64_t>(1, b2_.size() / std::max<int64_t>(1, b1_.size()));
      p_ = std::min(capacity_, p_ + delta);
      t2_.push_mru(key);
    } else if (b2_.erase(key)) {
      const int64_t delta = std::max<int64_t>(1, b1_.size() / std::max<int64_t>(1, b2_.size()));
      p_ = std::max<int64_t>(0, p_ - delta);
      t2_.push_mru(key);
    } else {
      t1_.push_mru(key);
    }
    // Ghosts are trimmed here, after the ghost lookup, so a chunk evicted
    // just before it returns still counts as a ghost hit.
    trim_ghosts();
  }

  void touch(const ChunkKey& key) override {
    if (t1_.erase(key) || t2_.contains(key)) t2_.push_mru(key);
  }

  void remove(const ChunkKey& key) override {
    if (!t1_.erase(key)) t2_.erase(key);
  }

  bool contains(const ChunkKey& key) const override {
    return t1_.contains(key) || t2_.contains(key);
  }
  int64_t size() const override { return t1_.size() + t2_.size(); }

  std::vector<ChunkKey> evict(int64_t n, const EvictablePredicate& is_evictable) override {
    std::vector<ChunkKey> victims;
    while (static_cast<int64_t>(victims.size()) < n) {
      const bool prefer_t1 = t1_.size() > 0 && (t1_.size() > p_ || t2_.empty());
      KeyList& first = prefer_t1 ? t1_ : t2_;
      KeyList& second = prefer_t1 ? t2_ : t1_;
      std::optional<ChunkKey> victim = first_evictable(first, is_evictable);
      KeyList* from = &first;
      if (!victim) {
        victim = first_evictable(second, is_evictable);
        from = &second;
      }
      if (!victim) break;
      from->erase(*victim);
      (from == &t1_ ? b1_ : b2_).push_mru(*victim);
      victims.push_back(*victim);
    }
    return victims;
  }

 private:
  static std::optional<ChunkKey> first_evictable(const KeyList& list,
                                                 const EvictablePredicate& is_evictable) {
    for (const ChunkKey& key : list) {
      if (is_evictable(key)) return key;
    }
    return std::nullopt;
  }

  // Classic ARC bounds: |T1| + |B1| <= c and |T1| + |T2| + |B1| + |B2| <= 2c.
  void trim_ghosts() {
    while (!b1_.empty() && t1_.size() + b1_.size() > capacity_) b1_.erase(b1_.lru());
    while (!b2_.empty() && size() + b1_.size() + b2_.size() > 2 * capacity_) {
      b2_.erase(b2_.lru());
    }
  }

  int64_t capacity_;
  int64_t p_ = 0;  // target size of T1
  KeyList t1_, t2_, b1_, b2_;
};

}  // namespace

StatusOr<std::unique_ptr<EvictionPolicy>> make_eviction_policy(const std::string& name,
                                                               int64_t capacity) {
  if (name == "lru") return std::unique_ptr<EvictionPolicy>(new LruPolicy());
  if (name == "arc") return std::unique_ptr<EvictionPolicy>(new ArcPolicy(capacity));
  return invalid_argument("eviction_policy '" + name + "' is not known; use \"lru\" or \"arc\"");
}

}  // namespace strata::offload
