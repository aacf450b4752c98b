#include "attention/kv_arena.h"

namespace strata::attention {

KvArena::KvArena(int64_t num_layers, int64_t num_blocks, int64_t block_size,
                 const tensor::KvRowLayout& layout)
    : num_blocks_(num_blocks), block_size_(block_size), layout_(layout) {
  const int64_t bytes = num_blocks * block_size * layout.row_bytes();
  for (int64_t l = 0; l < num_layers; ++l) {
    k_.emplace_back(bytes);
    v_.emplace_back(bytes);
  }
}

int64_t KvArena::bytes_per_block(int64_t num_layers, int64_t block_size,
                                 const tensor::KvRowLayout& layout) {
  return 2 * num_layers * block_size * layout.row_bytes();
}

}  // namespace strata::attention
