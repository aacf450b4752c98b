#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>

namespace strata::kv {
namespace {

std::vector<BlockHash> hashes_of(const std::vector<int32_t>& tokens, int block_size) {
  std::vector<BlockHash> h;
  extend_block_hashes(root_block_hash({"m", "f32", ""}), tokens, block_size, h);
  return h;
}

std::vector<int32_t> iota_tokens(int n, int start = 0) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

TEST(KvCacheManagerTest, KvEventsRecordStoresEvictionsAndResets) {
  KvCacheManager m(3, 4, true);
  m.pool().enable_events(true);
  auto tokens = iota_tokens(10, 100);  // 2 full blocks + 2 tokens
  auto hashes = hashes_of(tokens, 4);
  ASSERT_TRUE(m.allocate_slots(1, 0, 10, {}, hashes, tokens));
  std::vector<KvCacheEvent> ev = m.pool().take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, KvCacheEvent::Kind::kStored);
  EXPECT_EQ(ev[0].block_hashes, hashes);
  EXPECT_FALSE(ev[0].parent_block_hash.has_value());
  EXPECT_EQ(ev[0].token_ids, std::vector<int32_t>(tokens.begin(), tokens.begin() + 8));
  m.free(1);
  auto other = iota_tokens(12, 500);
  auto other_hashes = hashes_of(other, 4);
  ASSERT_TRUE(m.allocate_slots(2, 0, 12, {}, other_hashes, other));  // reuses all 3 blocks
  ev = m.pool().take_events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, KvCacheEvent::Kind::kRemoved);
  EXPECT_EQ(ev[0].block_hashes.size(), 2u);
  EXPECT_EQ(ev[1].kind, KvCacheEvent::Kind::kStored);
  EXPECT_EQ(ev[1].block_hashes.size(), 3u);
  m.free(2);
  ASSERT_TRUE(m.pool().reset_prefix_cache());
  ev = m.pool().take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, KvCacheEvent::Kind::kAllCleared);
}

TEST(KvCacheManagerTest, PrefixHitSharesBlocksAndLeavesLastTokenToCompute) {
  KvCacheManager m(10, 4, true);
  auto tokens = iota_tokens(12);  // exactly 3 full blocks
  auto hashes = hashes_of(tokens, 4);
  ComputedBlocks none = m.get_computed_blocks(hashes, 12);
  EXPECT_EQ(none.num_computed_tokens, 0);
  ASSERT_TRUE(m.allocate_slots(1, 0, 12, none, hashes));
  EXPECT_EQ(m.block_ids(1).size(), 3u);

  // Same prompt: 2 blocks hit (the third would leave nothing to compute).
  ComputedBlocks hit = m.get_computed_blocks(hashes, 12);
  EXPECT_EQ(hit.num_computed_tokens, 8);
  ASSERT_TRUE(m.allocate_slots(2, 8, 4, hit, hashes));
  EXPECT_EQ(m.block_ids(2)[0], m.block_ids(1)[0]);
  EXPECT_EQ(m.block_ids(2)[1], m.block_ids(1)[1]);
  EXPECT_NE(m.block_ids(2)[2], m.block_ids(1)[2]);
  EXPECT_EQ(m.pool().block(m.block_ids(1)[0]).ref_cnt, 2);
}

TEST(KvCacheManagerTest, OutOfBlocksChangesNothing) {
  KvCacheManager m(3, 4, true);
  auto tokens = iota_tokens(16);
  auto hashes = hashes_of(tokens, 4);
  EXPECT_FALSE(m.allocate_slots(1, 0, 16, {}, hashes));
  EXPECT_EQ(m.pool().num_free_blocks(), 3);
  EXPECT_TRUE(m.block_ids(1).empty());
  ASSERT_TRUE(m.allocate_slots(1, 0, 12, {}, hashes));
  EXPECT_FALSE(m.allocate_slots(1, 12, 1, {}, hashes));
  EXPECT_EQ(m.block_ids(1).size(), 3u);
}

TEST(KvCacheManagerTest, ChunkedPrefillCachesOnlyCompletedBlocks) {
  KvCacheManager m(10, 4, true);
  auto tokens = iota_tokens(12);
  auto hashes = hashes_of(tokens, 4);
  // First chunk of 6 tokens: block 0 full, block 1 half computed.
  ASSERT_TRUE(m.allocate_slots(1, 0, 6, {}, hashes));
  EXPECT_TRUE(m.pool().get_cached_block(hashes[0]));
  EXPECT_FALSE(m.pool().get_cached_block(hashes[1]));
  ASSERT_TRUE(m.allocate_slots(1, 6, 6, {}, hashes));
  EXPECT_TRUE(m.pool().get_cached_block(hashes[2]));
}

TEST(KvCacheManagerTest, FreedPrefixStaysReusableUntilEvicted) {
  KvCacheManager m(4, 4, true);
  auto a = iota_tokens(9);
  auto ha = hashes_of(a, 4);
  ASSERT_TRUE(m.allocate_slots(1, 0, 9, {}, ha));
  m.free(1);
  EXPECT_EQ(m.pool().num_free_blocks(), 4);
  ComputedBlocks hit = m.get_computed_blocks(ha, 9);
  EXPECT_EQ(hit.num_computed_tokens, 8);
  // Hits on free blocks count against free space: 4 free - 2 hit = 2 more allowed.
  EXPECT_FALSE(m.allocate_slots(2, 8, 9, hit, ha));  // would need 3 new blocks
  EXPECT_TRUE(m.allocate_slots(2, 8, 1, hit, ha));
  EXPECT_EQ(m.pool().num_free_blocks(), 1);
}

TEST(KvCacheManagerTest, CachingOffNeverHits) {
  KvCacheManager m(8, 4, false);
  auto t = iota_tokens(9);
  auto h = hashes_of(t, 4);
  ASSERT_TRUE(m.allocate_slots(1, 0, 9, {}, h));
  EXPECT_EQ(m.get_computed_blocks(h, 9).num_computed_tokens, 0);
}

}  // namespace
}  // namespace strata::kv
