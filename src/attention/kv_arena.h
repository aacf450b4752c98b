// The KV pool's memory: for every layer, K and V for num_blocks blocks of
// block_size token slots, each slot one row of tensor::KvRowLayout (the
// --kv-cache-dtype element type, plus per-head scales for fp8). Block ids
// come from kv::BlockPool; this class only owns the bytes, in the layout
// paged attention reads:
//
//   k(layer), v(layer): [num_blocks, block_size] rows of row_bytes()
//   (f32: [num_blocks, block_size, num_kv_heads, head_dim] floats)
//
// Single-threaded ownership (engine thread); kernels read it in parallel.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/kv_row_layout.h"
#include "tensor/tensor_view.h"

namespace strata::attention {

class KvArena {
 public:
  KvArena(int64_t num_layers, int64_t num_blocks, int64_t block_size,
          const tensor::KvRowLayout& layout);

  // Bytes one block occupies across all layers (K and V).
  static int64_t bytes_per_block(int64_t num_layers, int64_t block_size,
                                 const tensor::KvRowLayout& layout);

  int64_t num_layers() const { return static_cast<int64_t>(k_.size()); }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  const tensor::KvRowLayout& layout() const { return layout_; }
  int64_t row_bytes() const { return layout_.row_bytes(); }
  int64_t block_bytes() const { return block_size_ * layout_.row_bytes(); }  // one layer, K or V

  uint8_t* k(int64_t layer) { return k_[layer].data(); }
  uint8_t* v(int64_t layer) { return v_[layer].data(); }
  const uint8_t* k(int64_t layer) const { return k_[layer].data(); }
  const uint8_t* v(int64_t layer) const { return v_[layer].data(); }

 private:
  int64_t num_blocks_;
  int64_t block_size_;
  tensor::KvRowLayout layout_;
  std::vector<tensor::AlignedBuffer<uint8_t>> k_;
  std::vector<tensor::AlignedBuffer<uint8_t>> v_;
};

}  // namespace strata::attention
