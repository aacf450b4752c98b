// The KV pool's memory: for every layer, K and V for num_blocks blocks of
// block_size token slots, each slot one row of tensor::KvRowLayout (the
// --kv-cache-dtype element type, plus per-head scales for fp8) worth of
// bytes, on the backend's device. Block ids come from kv::BlockPool; this
// class only owns the bytes, in the layout paged attention reads:
//
//   k(layer), v(layer): num_blocks * block_size slots, block_bytes() a
//   block, in tiles of tile_layout() (tensor/kv_row_layout.h: 16 slots
//   grouped by kv head, K transposed)
//
// Ownership: allocated by Backend::allocate_kv_memory next to the KV
// accounting (the engine core) and shared through KvMemoryHandle by the
// runner (forward passes write and read it) and the transfer side of the
// tiered cache (copy_blocks), so neither depends on the other's lifetime.
// Threading: the engine thread schedules who touches which blocks; the
// forward pass and the transfer worker never touch the same block at once
// (offload/transfer's ordering rules).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/device_buffer.h"
#include "tensor/kv_row_layout.h"

namespace strata::backend {

class KvMemory {
 public:
  KvMemory(Device device, std::vector<DeviceBuffer> k, std::vector<DeviceBuffer> v,
           int64_t num_blocks, int64_t block_size, const tensor::KvRowLayout& layout);

  // Bytes one block occupies across all layers (K and V).
  static int64_t bytes_per_block(int64_t num_layers, int64_t block_size,
                                 const tensor::KvRowLayout& layout);

  Device device() const { return device_; }
  int64_t num_layers() const { return static_cast<int64_t>(k_.size()); }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  const tensor::KvRowLayout& layout() const { return layout_; }
  int64_t row_bytes() const { return layout_.row_bytes(); }
  int64_t block_bytes() const { return block_size_ * layout_.row_bytes(); }  // one layer, K or V
  tensor::KvTileLayout tile_layout() const {
    return {layout_, tensor::kv_tile_tokens(block_size_)};
  }

  uint8_t* k(int64_t layer) { return k_[layer].as<uint8_t>(); }
  uint8_t* v(int64_t layer) { return v_[layer].as<uint8_t>(); }
  const uint8_t* k(int64_t layer) const { return k_[layer].as<uint8_t>(); }
  const uint8_t* v(int64_t layer) const { return v_[layer].as<uint8_t>(); }

 private:
  Device device_;
  int64_t num_blocks_;
  int64_t block_size_;
  tensor::KvRowLayout layout_;
  std::vector<DeviceBuffer> k_;  // [num_layers] of [num_blocks * block_size * row_bytes] bytes
  std::vector<DeviceBuffer> v_;
};

using KvMemoryHandle = std::shared_ptr<KvMemory>;

}  // namespace strata::backend
