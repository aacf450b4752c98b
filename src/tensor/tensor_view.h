// Non-owning view of a row-major tensor, and an owning aligned f32 buffer.
//
// Shapes are outermost-first (row-major, like PyTorch): a linear layer's
// weight is [out_features, in_features]. A view into a memory-mapped weight
// file points straight at the file's bytes.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace strata::tensor {

struct TensorView {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;

  int64_t num_elements() const;
  int64_t size_bytes() const { return dtype_size_bytes(dtype, num_elements()); }
  int64_t dim(int i) const { return shape.at(i); }
  int rank() const { return static_cast<int>(shape.size()); }
  // Bytes per row of the last dimension (row stride of a 2-D weight).
  int64_t row_bytes() const { return dtype_size_bytes(dtype, shape.back()); }
  std::string shape_string() const;  // "[4096, 256]"
};

std::string shape_to_string(const std::vector<int64_t>& shape);

// 64-byte aligned heap buffer of `T` (owner; move-only). Use for activations
// and for weights converted at load time.
template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // `alignment`: a power of two; the allocation is rounded up to it.
  explicit AlignedBuffer(int64_t n, size_t alignment = 64) : size_(n) {
    size_t bytes = (static_cast<size_t>(n) * sizeof(T) + alignment - 1) / alignment * alignment;
    data_.reset(static_cast<T*>(std::aligned_alloc(alignment, bytes == 0 ? alignment : bytes)));
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  int64_t size() const { return size_; }
  T& operator[](int64_t i) { return data_.get()[i]; }
  const T& operator[](int64_t i) const { return data_.get()[i]; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  int64_t size_ = 0;
};

}  // namespace strata::tensor
