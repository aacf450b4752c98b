#include "backend/kv_memory.h"

#include <utility>

#include "base/check.h"

namespace strata::backend {

KvMemory::KvMemory(Device device, std::vector<DeviceBuffer> k, std::vector<DeviceBuffer> v,
                   int64_t num_blocks, int64_t block_size, const tensor::KvRowLayout& layout)
    : device_(device),
      num_blocks_(num_blocks),
      block_size_(block_size),
      layout_(layout),
      k_(std::move(k)),
      v_(std::move(v)) {
  STRATA_CHECK(k_.size() == v_.size());
  for (size_t l = 0; l < k_.size(); ++l) {
    STRATA_CHECK(k_[l].size_bytes() == num_blocks * block_bytes() &&
                 v_[l].size_bytes() == num_blocks * block_bytes());
  }
}

int64_t KvMemory::bytes_per_block(int64_t num_layers, int64_t block_size,
                                  const tensor::KvRowLayout& layout) {
  return 2 * num_layers * block_size * layout.row_bytes();
}

}  // namespace strata::backend
