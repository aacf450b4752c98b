// The canonical chunk layout: per layer, K of the chunk's tokens then V,
// whatever pool blocks the tokens sit in; and a round trip through a slot.
#include "offload/transfer/kv_transfer_worker.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "backend/cpu_backend.h"
#include "tensor/kv_cache_dtype.h"

namespace strata::offload {
namespace {

constexpr int64_t kLayers = 3, kBlocks = 10, kBlockSize = 4, kHeads = 2, kHeadDim = 8;

float value(int64_t layer, int kv, int64_t block, int64_t pos, int64_t f) {
  return static_cast<float>(layer * 100000 + kv * 50000 + block * 1000 + pos * 100 + f);
}

constexpr int64_t kRow = kHeads * kHeadDim;
const tensor::KvRowLayout kF32Rows{tensor::KvCacheDtype::kF32, kHeads, kHeadDim};

std::shared_ptr<backend::Backend> cpu_backend() {
  static ThreadPool pool(1);
  static std::shared_ptr<backend::Backend> backend = std::make_shared<backend::CpuBackend>(pool);
  return backend;
}

float* k_floats(backend::KvMemory& a, int64_t l) { return reinterpret_cast<float*>(a.k(l)); }
float* v_floats(backend::KvMemory& a, int64_t l) { return reinterpret_cast<float*>(a.v(l)); }

// Every row of every block, encoded in the arena's dtype.
void fill(backend::KvMemory& arena) {
  const int64_t row_bytes = arena.row_bytes();
  std::vector<float> x(kRow);
  for (int64_t l = 0; l < kLayers; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      uint8_t* base = kv == 0 ? arena.k(l) : arena.v(l);
      for (int64_t b = 0; b < kBlocks; ++b) {
        for (int64_t p = 0; p < kBlockSize; ++p) {
          for (int64_t f = 0; f < kRow; ++f) x[f] = value(l, kv, b, p, f);
          tensor::encode_kv_row(x.data(), arena.layout(), 0.0f,
                                base + (b * kBlockSize + p) * row_bytes);
        }
      }
    }
  }
}

ChunkFormat format(tensor::KvCacheDtype dtype = tensor::KvCacheDtype::kF32) {
  ChunkFormat f;
  f.kv_dtype = dtype;
  f.model_fingerprint = "test";
  f.num_layers = kLayers;
  f.num_kv_heads = kHeads;
  f.head_dim = kHeadDim;
  f.block_size = kBlockSize;
  f.blocks_per_chunk = 2;
  return f;
}

TEST(KvTransferWorker, SlotHoldsTheCanonicalLayout) {
  backend::KvMemoryHandle pool_kv =
      cpu_backend()->allocate_kv_memory(kLayers, kBlocks, kBlockSize, kF32Rows);
  backend::KvMemory& arena = *pool_kv;
  fill(arena);
  const ChunkFormat fmt = format();
  std::vector<uint8_t> bytes(fmt.payload_bytes() * 2);
  HostRegion region{bytes.data(), 2, fmt.payload_bytes()};
  // Tokens 0..3 of the chunk in pool block 7, tokens 4..7 in block 2.
  ChunkCopy copy{1, 0, {7, 2}};
  EXPECT_EQ(KvTransferWorker::copy_chunk(*cpu_backend(), arena, region, fmt,
                                         TransferDirection::kPoolToHost, copy),
            fmt.payload_bytes());
  const float* slot = reinterpret_cast<const float*>(region.slot(1));
  const int64_t row = kRow, tokens = 8;
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
  backend::KvMemoryHandle pool_kv =
      cpu_backend()->allocate_kv_memory(kLayers, kBlocks, kBlockSize, kF32Rows);
  backend::KvMemory& arena = *pool_kv;
  fill(arena);
  const ChunkFormat fmt = format();
  std::vector<uint8_t> bytes(fmt.payload_bytes());
  HostRegion region{bytes.data(), 1, fmt.payload_bytes()};
  KvTransferWorker worker(pool_kv, cpu_backend(), region, fmt);
  worker.submit({1, TransferDirection::kPoolToHost, {ChunkCopy{0, 0, {3, 4}}}});
  worker.drain();
  // Load only the chunk's second block (its first is "already in the pool") into block 9.
  worker.submit({2, TransferDirection::kHostToPool, {ChunkCopy{0, 1, {9}}}});
  worker.drain();
  std::vector<TransferResult> done = worker.poll_finished();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].job_id, 2);
  EXPECT_EQ(done[1].bytes, fmt.payload_bytes() / 2);
  const int64_t row = kRow;
  for (int64_t l = 0; l < kLayers; ++l) {
    for (int64_t p = 0; p < kBlockSize; ++p) {
      for (int64_t f = 0; f < row; ++f) {
        ASSERT_EQ(k_floats(arena, l)[(9 * kBlockSize + p) * row + f], value(l, 0, 4, p, f));
        ASSERT_EQ(v_floats(arena, l)[(9 * kBlockSize + p) * row + f], value(l, 1, 4, p, f));
      }
    }
  }
  EXPECT_EQ(worker.num_in_flight(), 0);
}

// bf16 and fp8 pools: the slot holds the pool's compact rows byte for byte
// (payload 1/2 and 1/4 + scales of f32) and they come back unchanged.
TEST(KvTransferWorker, CompactRowsMoveUnchanged) {
  for (tensor::KvCacheDtype dtype : {tensor::KvCacheDtype::kBF16, tensor::KvCacheDtype::kFp8E4M3}) {
    SCOPED_TRACE(tensor::kv_cache_dtype_name(dtype));
    const tensor::KvRowLayout layout{dtype, kHeads, kHeadDim};
    backend::KvMemoryHandle pool_kv =
        cpu_backend()->allocate_kv_memory(kLayers, kBlocks, kBlockSize, layout);
    backend::KvMemory& arena = *pool_kv;
    fill(arena);
    const ChunkFormat fmt = format(dtype);
    const int64_t f32_bytes = format().payload_bytes();
    EXPECT_EQ(fmt.payload_bytes(), dtype == tensor::KvCacheDtype::kBF16
                                       ? f32_bytes / 2
                                       : f32_bytes / 4 + kLayers * 2 * 8 * kHeads * 4);
    std::vector<uint8_t> bytes(fmt.payload_bytes());
    HostRegion region{bytes.data(), 1, fmt.payload_bytes()};
    KvTransferWorker::copy_chunk(*cpu_backend(), arena, region, fmt, TransferDirection::kPoolToHost,
                                 ChunkCopy{0, 0, {6, 1}});
    const int64_t block_bytes = arena.block_bytes();
    for (int64_t l = 0; l < kLayers; ++l) {
      const uint8_t* k_section = region.slot(0) + l * 2 * 2 * block_bytes;
      ASSERT_EQ(std::memcmp(k_section, arena.k(l) + 6 * block_bytes, block_bytes), 0);
      ASSERT_EQ(std::memcmp(k_section + block_bytes, arena.k(l) + 1 * block_bytes, block_bytes), 0);
    }
    KvTransferWorker::copy_chunk(*cpu_backend(), arena, region, fmt, TransferDirection::kHostToPool,
                                 ChunkCopy{0, 0, {8, 9}});
    for (int64_t l = 0; l < kLayers; ++l) {
      ASSERT_EQ(
          std::memcmp(arena.v(l) + 8 * block_bytes, arena.v(l) + 6 * block_bytes, block_bytes), 0);
      ASSERT_EQ(
          std::memcmp(arena.v(l) + 9 * block_bytes, arena.v(l) + 1 * block_bytes, block_bytes), 0);
    }
  }
}

}  // namespace
}  // namespace strata::offload
