#include "kv/block_pool.h"

#include <gtest/gtest.h>

namespace strata::kv {
namespace {

BlockHash H(uint64_t v) { return {v, ~v}; }

TEST(FreeBlockQueueTest, PopRemovePush) {
  FreeBlockQueue q(4);
  EXPECT_EQ(q.to_vector(), (std::vector<int32_t>{0, 1, 2, 3}));
  q.remove(2);
  EXPECT_EQ(q.pop_front(), 0);
  q.push_back(0);
  EXPECT_EQ(q.to_vector(), (std::vector<int32_t>{1, 3, 0}));
  EXPECT_FALSE(q.contains(2));
  EXPECT_EQ(q.size(), 3);
}

TEST(BlockPoolTest, AllocateFreeAndOutOfSpaceIsAValue) {
  BlockPool pool(4, true);
  auto a = pool.get_new_blocks(3);
  ASSERT_TRUE(a);
  EXPECT_EQ(pool.num_free_blocks(), 1);
  EXPECT_FALSE(pool.get_new_blocks(2));  // nothing changes on failure
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.free_blocks(*a);
  EXPECT_EQ(pool.num_free_blocks(), 4);
}

TEST(BlockPoolTest, CachedFreeBlocksSurviveUntilEvictedInLruOrder) {
  BlockPool pool(3, true);
  auto a = *pool.get_new_blocks(3);
  for (int i = 0; i < 3; ++i) pool.cache_block(a[i], H(i));
  // Free tail-first: block a[2] becomes the first to evict.
  pool.free_blocks({a[2], a[1], a[0]});
  EXPECT_EQ(pool.get_cached_block(H(0)), a[0]);
  // A prefix hit revives a[0] (leaves the free queue).
  pool.touch({a[0]});
  EXPECT_EQ(pool.block(a[0]).ref_cnt, 1);
  EXPECT_EQ(pool.num_free_blocks(), 2);
  // Needing one block evicts the least recently freed: a[2].
  auto b = *pool.get_new_blocks(1);
  EXPECT_EQ(b[0], a[2]);
  EXPECT_FALSE(pool.get_cached_block(H(2)));
  EXPECT_TRUE(pool.get_cached_block(H(1)));
  EXPECT_EQ(pool.stats().num_evicted_blocks, 1);
}

TEST(BlockPoolTest, SharedBlocksAreRefCounted) {
  BlockPool pool(2, true);
  auto a = *pool.get_new_blocks(1);
  pool.cache_block(a[0], H(7));
  pool.touch(a);  // a second request shares it
  pool.free_blocks(a);
  EXPECT_EQ(pool.num_free_blocks(), 1);  // still held once
  pool.free_blocks(a);
  EXPECT_EQ(pool.num_free_blocks(), 2);
}

TEST(BlockPoolTest, DisabledCachingNeverHits) {
  BlockPool pool(2, false);
  auto a = *pool.get_new_blocks(1);
  pool.cache_block(a[0], H(1));
  EXPECT_FALSE(pool.get_cached_block(H(1)));
}

TEST(BlockPoolTest, ResetOnlyWhenIdle) {
  BlockPool pool(2, true);
  auto a = *pool.get_new_blocks(1);
  pool.cache_block(a[0], H(1));
  EXPECT_FALSE(pool.reset_prefix_cache());
  pool.free_blocks(a);
  EXPECT_TRUE(pool.reset_prefix_cache());
  EXPECT_FALSE(pool.get_cached_block(H(1)));
}

}  // namespace
}  // namespace strata::kv
