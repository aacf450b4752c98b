// The KV pool's memory: for every layer, K and V for num_blocks blocks of
// block_size token slots (f32). Block ids come from kv::BlockPool; this class
// only owns the bytes, in the layout paged attention reads:
//
//   k(layer), v(layer): [num_blocks, block_size, num_kv_heads, head_dim]
//
// Single-threaded ownership (engine thread); kernels read it in parallel.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor_view.h"

namespace strata::attention {

class KvArena {
 public:
  KvArena(int64_t num_layers, int64_t num_blocks, int64_t block_size, int64_t num_kv_heads,
          int64_t head_dim);

  // Bytes one block occupies across all layers (K and V).
  static int64_t bytes_per_block(int64_t num_layers, int64_t block_size, int64_t num_kv_heads,
                                 int64_t head_dim);

  int64_t num_layers() const { return static_cast<int64_t>(k_.size()); }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t row_floats() const { return row_floats_; }  // num_kv_heads * head_dim

  float* k(int64_t layer) { return k_[layer].data(); }
  float* v(int64_t layer) { return v_[layer].data(); }
  const float* k(int64_t layer) const { return k_[layer].data(); }
  const float* v(int64_t layer) const { return v_[layer].data(); }

 private:
  int64_t num_blocks_;
  int64_t block_size_;
  int64_t row_floats_;
  std::vector<tensor::AlignedBuffer<float>> k_;
  std::vector<tensor::AlignedBuffer<float>> v_;
};

}  // namespace strata::attention
