// The canonical chunk layout: per layer, K of the chunk's tokens then V,
// whatever pool blocks the tokens sit in; and a round trip through a slot.
#include "offload/transfer/kv_transfer_worker.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::offload {
namespace {

constexpr int64_t kLayers = 3, kBlocks = 10, kBlockSize = 4, kHeads = 2, kHeadDim = 8;

float value(int64_t layer, int kv, int64_t block, int64_t pos, int64_t f) {
  return static_cast<float>(layer * 100000 + kv * 50000 + block * 1000 + pos * 100 + f);
}

void fill(attention::KvArena& arena) {
  const int64_t row = arena.row_floats();
  for (int64_t l = 0; l < kLayers; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      float* base = kv == 0 ? arena.k(l) : arena.v(l);
      for (int64_t b = 0; b < kBlocks; ++b) {
        for (int64_t p = 0; p < kBlockSize; ++p) {
          for (int64_t f = 0; f < row; ++f) base[(b * kBlockSize + p) * row + f] = value(l, kv, b, p, f);
        }
      }
    }
  }
}

ChunkFormat format() {
  ChunkFormat f;
  f.model_fingerprint = "test";
  f.num_layers = kLayers;
  f.num_kv_heads = kHeads;
  f.head_dim = kHeadDim;
  f.block_size = kBlockSize;
  f.blocks_per_chunk = 2;
  return f;
}

TEST(KvTransferWorker, SlotHoldsTheCanonicalLayout) {
  attention::KvArena arena(kLayers, kBlocks, kBlockSize, kHeads, kHeadDim);
  fill(arena);
  const ChunkFormat fmt = format();
  std::vector<uint8_t> bytes(fmt.payload_bytes() * 2);
  HostRegion region{bytes.data(), 2, fmt.payload_bytes()};
  // Tokens 0..3 of the chunk in pool block 7, tokens 4..7 in block 2.
  ChunkCopy copy{1, 0, {7, 2}};
  EXPECT_EQ(KvTransferWorker::copy_chunk(arena, region, fmt, TransferDirection::kPoolToHost, copy),
            fmt.payload_bytes());
  const float* slot = reinterpret_cast<const float*>(region.slot(1));
  const int64_t row = kHeads * kHeadDim, tokens = 8;
  for (int64_t l = 0; l < kLayers; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      for (int64_t t = 0; t < tokens; ++t) {
        const int64_t block = t < 4 ? 7 : 2;
        for (int64_t f = 0; f < row; ++f) {
          ASSERT_EQ(slot[((l * 2 + kv) * tokens + t) * row + f], value(l, kv, block, t % 4, f))
              << "layer " << l << " kv " << kv << " token " << t;
        }
      }
    }
  }
}

TEST(KvTransferWorker, JobsRoundTripAndPartialChunkLoads) {
  attention::KvArena arena(kLayers, kBlocks, kBlockSize, kHeads, kHeadDim);
  fill(arena);
  const ChunkFormat fmt = format();
  std::vector<uint8_t> bytes(fmt.payload_bytes());
  HostRegion region{bytes.data(), 1, fmt.payload_bytes()};
  KvTransferWorker worker(arena, region, fmt);
  worker.submit({1, TransferDirection::kPoolToHost, {ChunkCopy{0, 0, {3, 4}}}});
  worker.drain();
  // Load only the chunk's second block (its first is "already in the pool") into block 9.
  worker.submit({2, TransferDirection::kHostToPool, {ChunkCopy{0, 1, {9}}}});
  worker.drain();
  std::vector<TransferResult> done = worker.poll_finished();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].job_id, 2);
  EXPECT_EQ(done[1].bytes, fmt.payload_bytes() / 2);
  const int64_t row = arena.row_floats();
  for (int64_t l = 0; l < kLayers; ++l) {
    for (int64_t p = 0; p < kBlockSize; ++p) {
      for (int64_t f = 0; f < row; ++f) {
        ASSERT_EQ(arena.k(l)[(9 * kBlockSize + p) * row + f], value(l, 0, 4, p, f));
        ASSERT_EQ(arena.v(l)[(9 * kBlockSize + p) * row + f], value(l, 1, 4, p, f));
      }
    }
  }
  EXPECT_EQ(worker.num_in_flight(), 0);
}

}  // namespace
}  // namespace strata::offload
