#include "offload/policy/eviction_policy.h"

#include <gtest/gtest.h>

#include <set>

namespace strata::offload {
namespace {

ChunkKey K(uint64_t v) { return {v, v * 31 + 7}; }

const EvictablePredicate kAll = [](const ChunkKey&) { return true; };

std::unique_ptr<EvictionPolicy> make(const std::string& name, int64_t capacity) {
  auto p = make_eviction_policy(name, capacity);
  EXPECT_TRUE(p.ok());
  return std::move(*p);
}

// What a tier does when a chunk arrives: evict down to capacity - 1, then insert.
void admit(EvictionPolicy& policy, const ChunkKey& key, int64_t capacity) {
  if (!policy.contains(key) && policy.size() >= capacity) {
    policy.evict(policy.size() - capacity + 1, kAll);
  }
  policy.insert(key);
}

TEST(EvictionPolicyTest, LruEvictsLeastRecentlyUsedFirst) {
  auto lru = make("lru", 8);
  for (uint64_t i = 1; i <= 4; ++i) lru->insert(K(i));
  lru->touch(K(1));
  EXPECT_EQ(lru->evict(2, kAll), (std::vector<ChunkKey>{K(2), K(3)}));
  EXPECT_EQ(lru->size(), 2);
  EXPECT_TRUE(lru->contains(K(1)));
  EXPECT_FALSE(lru->contains(K(2)));
}

TEST(EvictionPolicyTest, PinnedChunksAreNeverEvicted) {
  for (const char* name : {"lru", "arc"}) {
    auto policy = make(name, 4);
    for (uint64_t i = 1; i <= 3; ++i) policy->insert(K(i));
    const EvictablePredicate only_3 = [](const ChunkKey& k) { return k == K(3); };
    EXPECT_EQ(policy->evict(3, only_3), std::vector<ChunkKey>{K(3)}) << name;
    EXPECT_TRUE(policy->evict(1, [](const ChunkKey&) { return false; }).empty()) << name;
    EXPECT_EQ(policy->size(), 2) << name;
  }
}

TEST(EvictionPolicyTest, RemoveForgetsResidents) {
  for (const char* name : {"lru", "arc"}) {
    auto policy = make(name, 4);
    policy->insert(K(1));
    policy->insert(K(2));
    policy->touch(K(2));
    policy->remove(K(2));
    EXPECT_FALSE(policy->contains(K(2))) << name;
    EXPECT_EQ(policy->evict(5, kAll), std::vector<ChunkKey>{K(1)}) << name;
  }
}

TEST(EvictionPolicyTest, ArcResistsScansThatFlushLru) {
  constexpr int64_t kCapacity = 4;
  for (const char* name : {"lru", "arc"}) {
    auto policy = make(name, kCapacity);
    // Two hot chunks, reused.
    admit(*policy, K(1), kCapacity);
    admit(*policy, K(2), kCapacity);
    policy->touch(K(1));
    policy->touch(K(2));
    // A long one-off scan (e.g. many distinct prompts).
    for (uint64_t i = 100; i < 120; ++i) admit(*policy, K(i), kCapacity);
    const bool kept = policy->contains(K(1)) && policy->contains(K(2));
    if (std::string(name) == "arc") {
      EXPECT_TRUE(kept) << "ARC must keep reused chunks through a scan";
    } else {
      EXPECT_FALSE(kept) << "LRU flushes them (the behaviour ARC exists to avoid)";
    }
    EXPECT_EQ(policy->size(), kCapacity) << name;
  }
}

TEST(EvictionPolicyTest, ArcGhostHitPromotesToFrequentList) {
  constexpr int64_t kCapacity = 4;
  auto arc = make("arc", kCapacity);
  admit(*arc, K(50), kCapacity);
  arc->touch(K(50));  // one frequent chunk, so the recency list is not the whole cache
  for (uint64_t i = 1; i <= 4; ++i) admit(*arc, K(i), kCapacity);  // evicts K(1) to a ghost
  EXPECT_FALSE(arc->contains(K(1)));
  admit(*arc, K(1), kCapacity);  // ghost hit: K(1) returns as a frequent chunk
  EXPECT_TRUE(arc->contains(K(1)));
  // Fresh one-off chunks now go before K(1).
  for (uint64_t i = 5; i <= 8; ++i) admit(*arc, K(i), kCapacity);
  EXPECT_TRUE(arc->contains(K(1)));
  EXPECT_TRUE(arc->contains(K(50)));
  EXPECT_TRUE(arc->contains(K(8)));
  // The same sequence under LRU loses K(1).
  auto lru = make("lru", kCapacity);
  admit(*lru, K(50), kCapacity);
  lru->touch(K(50));
  for (uint64_t i = 1; i <= 4; ++i) admit(*lru, K(i), kCapacity);
  admit(*lru, K(1), kCapacity);
  for (uint64_t i = 5; i <= 8; ++i) admit(*lru, K(i), kCapacity);
  EXPECT_FALSE(lru->contains(K(1)));
}

TEST(EvictionPolicyTest, ArcStaysBoundedUnderChurn) {
  constexpr int64_t kCapacity = 16;
  auto arc = make("arc", kCapacity);
  std::set<uint64_t> reused = {1, 2, 3};
  for (uint64_t i = 0; i < 5000; ++i) {
    admit(*arc, K(i % 7 == 0 ? 1 + i % 3 : 1000 + i), kCapacity);
    ASSERT_LE(arc->size(), kCapacity);
  }
  for (uint64_t r : reused) EXPECT_TRUE(arc->contains(K(r))) << r;
}

TEST(EvictionPolicyTest, UnknownPolicyIsAClearError) {
  auto p = make_eviction_policy("fifo", 4);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "eviction_policy 'fifo' is not known; use \"lru\" or \"arc\"");
}

}  // namespace
}  // namespace strata::offload
