#include "attention/kv_arena.h"

namespace strata::attention {

KvArena::KvArena(int64_t num_layers, int64_t num_blocks, int64_t block_size,
                 int64_t num_kv_heads, int64_t head_dim)
    : num_blocks_(num_blocks), block_size_(block_size), row_floats_(num_kv_heads * head_dim) {
  const int64_t floats = num_blocks * block_size * row_floats_;
  for (int64_t l = 0; l < num_layers; ++l) {
    k_.emplace_back(floats);
    v_.emplace_back(floats);
  }
}

int64_t KvArena::bytes_per_block(int64_t num_layers, int64_t block_size, int64_t num_kv_heads,
                                 int64_t head_dim) {
  return 2 * num_layers * block_size * num_kv_heads * head_dim * int64_t{sizeof(float)};
}

}  // namespace strata::attention
