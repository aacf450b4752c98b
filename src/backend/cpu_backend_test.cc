#include "backend/cpu_backend.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tensor/kv_row_layout.h"

namespace strata::backend {
namespace {

constexpr tensor::KvRowLayout kRows{tensor::KvCacheDtype::kF32, 2, 4};  // 32 bytes a row

// Every byte of block b of layer l's K (which 0) or V (1) set to a distinct value.
void fill(KvMemory& kv) {
  for (int64_t l = 0; l < kv.num_layers(); ++l) {
    for (int which = 0; which < 2; ++which) {
      uint8_t* base = which == 0 ? kv.k(l) : kv.v(l);
      for (int64_t b = 0; b < kv.num_blocks(); ++b) {
        std::memset(base + b * kv.block_bytes(), static_cast<int>(1 + l * 32 + which * 16 + b),
                    static_cast<size_t>(kv.block_bytes()));
      }
    }
  }
}

TEST(CpuBackend, AllocatesKvMemoryOfTheLayout) {
  ThreadPool pool(1);
  CpuBackend backend(pool);
  KvMemoryHandle kv = backend.allocate_kv_memory(3, 10, 4, kRows);
  EXPECT_EQ(kv->device(), Device::kCpu);
  EXPECT_EQ(kv->num_layers(), 3);
  EXPECT_EQ(kv->num_blocks(), 10);
  EXPECT_EQ(kv->block_bytes(), 4 * 32);
  EXPECT_EQ(KvMemory::bytes_per_block(3, 4, kRows), 2 * 3 * 4 * 32);
  DeviceBuffer b = backend.allocate(tensor::DType::kF32, 17);
  EXPECT_EQ(b.size_bytes(), 17 * 4);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
}

// Blocks 7 and 2 go to block positions 1 and 2 of a 3-block host run, and
// come back into blocks 0 and 5 unchanged.
TEST(CpuBackend, CopyBlocksRoundTripsThroughTheCanonicalLayout) {
  ThreadPool pool(1);
  CpuBackend backend(pool);
  KvMemoryHandle kv = backend.allocate_kv_memory(2, 8, 4, kRows);
  fill(*kv);
  const int64_t section = 3 * kv->block_bytes();
  std::vector<uint8_t> host(2 * 2 * section, 0);
  const std::vector<int32_t> out_ids = {7, 2};
  EXPECT_EQ(
      backend.copy_blocks(*kv, {host.data(), section, 1, out_ids}, CopyDirection::kPoolToHost),
      2 * 2 * 2 * kv->block_bytes());
  for (int64_t l = 0; l < 2; ++l) {
    for (int which = 0; which < 2; ++which) {
      const uint8_t* s = host.data() + (l * 2 + which) * section;
      const uint8_t* pool_base = which == 0 ? kv->k(l) : kv->v(l);
      EXPECT_EQ(s[0], 0);  // block position 0 untouched
      EXPECT_EQ(std::memcmp(s + kv->block_bytes(), pool_base + 7 * kv->block_bytes(),
                            static_cast<size_t>(kv->block_bytes())),
                0);
      EXPECT_EQ(std::memcmp(s + 2 * kv->block_bytes(), pool_base + 2 * kv->block_bytes(),
                            static_cast<size_t>(kv->block_bytes())),
                0);
    }
  }
  const std::vector<int32_t> in_ids = {0, 5};
  backend.copy_blocks(*kv, {host.data(), section, 1, in_ids}, CopyDirection::kHostToPool);
  for (int64_t l = 0; l < 2; ++l) {
    EXPECT_EQ(std::memcmp(kv->k(l), kv->k(l) + 7 * kv->block_bytes(),
                          static_cast<size_t>(kv->block_bytes())),
              0);
    EXPECT_EQ(std::memcmp(kv->v(l) + 5 * kv->block_bytes(), kv->v(l) + 2 * kv->block_bytes(),
                          static_cast<size_t>(kv->block_bytes())),
              0);
  }
}

TEST(CpuBackend, KernelsAreTheOps) {
  ThreadPool pool(2);
  CpuBackend backend(pool);
  std::vector<float> x = {1, 2, 3, 4}, w = {1, 1, 1, 1}, y(4), ref(4);
  backend.rms_norm(x.data(), w.data(), 1, 4, 1e-6f, y.data());
  ops::rms_norm(x.data(), w.data(), 1, 4, 1e-6f, ref.data());
  EXPECT_EQ(y, ref);
  backend.add_inplace(y.data(), x.data(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], ref[i] + x[i]);
  EXPECT_NE(backend.name().find("cpu"), std::string::npos);
}

}  // namespace
}  // namespace strata::backend
