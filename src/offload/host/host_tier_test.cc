#include "offload/host/host_tier.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

namespace strata::offload {
namespace {

ChunkKey key(uint64_t i) { return ChunkKey{i, ~i}; }

std::unique_ptr<HostTier> make(int64_t slots, const std::string& policy = "lru") {
  auto p = make_eviction_policy(policy, slots);
  EXPECT_TRUE(p.ok());
  auto t = HostTier::create(slots, 64, std::move(p).value());
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

TEST(HostTier, WritingChunksAreNeitherReadableNorEvictable) {
  auto host = make(2);
  const ChunkKey ks[] = {key(1), key(2), key(3)};
  auto got = host->prepare_write(ks, {});
  ASSERT_EQ(got.size(), 2u) << "third key finds no slot: both are being written";
  EXPECT_EQ(host->state(key(1)), HostChunkState::kWriting);
  EXPECT_EQ(host->state(key(3)), HostChunkState::kAbsent);
  host->complete_write(key(1), true);
  host->complete_write(key(2), false);
  EXPECT_EQ(host->state(key(1)), HostChunkState::kReady);
  EXPECT_EQ(host->state(key(2)), HostChunkState::kAbsent);
  EXPECT_EQ(host->num_free_slots(), 1);
}

TEST(HostTier, EvictsOnlyUnpinnedReadyChunksOutsideProtect) {
  auto host = make(2);
  const ChunkKey first[] = {key(1), key(2)};
  for (auto& [k, slot] : host->prepare_write(first, {})) host->complete_write(k, true);
  host->acquire(key(1));  // pinned by a reader
  const ChunkKey next[] = {key(3)};
  EXPECT_TRUE(host->prepare_write(next, KeySet{key(2)}).empty()) << "1 pinned, 2 protected";
  auto got = host->prepare_write(next, {});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(host->state(key(2)), HostChunkState::kAbsent);
  EXPECT_EQ(host->take_removed(), std::vector<ChunkKey>{key(2)});
  EXPECT_EQ(host->stats().evictions, 1);
  host->release(key(1));
  host->complete_write(key(3), true);
  EXPECT_EQ(host->clear(), 2);
  EXPECT_EQ(host->num_free_slots(), 2);
}

TEST(HostTier, TouchKeepsThePrefixHeadLongest) {
  auto host = make(3);
  const ChunkKey ks[] = {key(1), key(2), key(3)};
  for (auto& [k, slot] : host->prepare_write(ks, {})) host->complete_write(k, true);
  host->touch(ks);  // a lookup of the prefix 1,2,3: 1 becomes most recent
  const ChunkKey next[] = {key(4)};
  host->prepare_write(next, {});
  EXPECT_EQ(host->state(key(3)), HostChunkState::kAbsent) << "the tail goes first";
  EXPECT_EQ(host->state(key(1)), HostChunkState::kReady);
}

TEST(HostTier, SlotsAreDistinctAndInsideTheRegion) {
  auto host = make(4, "arc");
  const ChunkKey ks[] = {key(1), key(2), key(3), key(4)};
  auto got = host->prepare_write(ks, {});
  ASSERT_EQ(got.size(), 4u);
  std::set<int64_t> slots;
  for (auto& [k, slot] : got) {
    EXPECT_GE(slot, 0);
    EXPECT_LT(slot, 4);
    slots.insert(slot);
    std::memset(host->region().slot(slot), 0xab, 64);  // the mapping is writable
  }
  EXPECT_EQ(slots.size(), 4u);
}

}  // namespace
}  // namespace strata::offload
