// Device-agnostic memory: a buffer of `num_elements` values of one dtype on
// one device, owned (move-only), allocated by a Backend. On the CPU it is a
// 64-byte aligned host allocation; a CUDA backend would return device memory
// whose data() the host must not dereference (host_view() is CPU-only).
// Threading: plain owner; whoever holds it decides who touches the bytes.
#pragma once

#include <cstdint>
#include <memory>

#include "tensor/dtype.h"
#include "tensor/tensor_view.h"

namespace strata::backend {

enum class Device { kCpu };

const char* device_name(Device device);  // "cpu"

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Host memory (the CPU backend's allocation). Contents are uninitialized.
  static DeviceBuffer host(tensor::DType dtype, int64_t num_elements);

  Device device() const { return device_; }
  tensor::DType dtype() const { return dtype_; }
  int64_t num_elements() const { return num_elements_; }
  int64_t size_bytes() const { return tensor::dtype_size_bytes(dtype_, num_elements_); }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <typename T>
  T* as() {
    return static_cast<T*>(data());
  }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data());
  }
  // A [num_elements] view of host memory (device() must be kCpu).
  tensor::TensorView host_view() const;

 private:
  struct Free {
    void operator()(void* p) const;
  };
  Device device_ = Device::kCpu;
  tensor::DType dtype_ = tensor::DType::kF32;
  int64_t num_elements_ = 0;
  std::unique_ptr<void, Free> data_;
};

}  // namespace strata::backend
