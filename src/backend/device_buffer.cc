#include "backend/device_buffer.h"

#include <algorithm>
#include <cstdlib>

#include "base/check.h"
#include "base/mapped_file.h"

namespace strata::backend {

const char* device_name(Device device) {
  switch (device) {
    case Device::kCpu:
      return "cpu";
  }
  return "?";
}

void DeviceBuffer::Free::operator()(void* p) const { std::free(p); }

DeviceBuffer DeviceBuffer::host(tensor::DType dtype, int64_t num_elements) {
  DeviceBuffer b;
  b.device_ = Device::kCpu;
  b.dtype_ = dtype;
  b.num_elements_ = num_elements;
  // Large buffers (the KV pool's layers, big activations) are 2 MiB aligned
  // and huge-page backed: attention and matmuls stream them every step.
  const size_t raw = static_cast<size_t>(b.size_bytes());
  const size_t alignment = raw >= kHugePageBytes ? kHugePageBytes : 64;
  const size_t bytes = std::max(alignment, (raw + alignment - 1) / alignment * alignment);
  b.data_.reset(std::aligned_alloc(alignment, bytes));
  STRATA_CHECK(b.data_ != nullptr) << "out of host memory allocating " << bytes << " bytes";
  if (alignment == kHugePageBytes) advise_huge_pages(b.data_.get(), bytes);
  return b;
}

tensor::TensorView DeviceBuffer::host_view() const {
  STRATA_CHECK(device_ == Device::kCpu) << "host_view of " << device_name(device_) << " memory";
  return {data(), dtype_, {num_elements_}};
}

}  // namespace strata::backend
