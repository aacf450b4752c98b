#include "backend/device_buffer.h"

#include <algorithm>
#include <cstdlib>

#include "base/check.h"

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
  // Not huge-page advised: the KV pool is touched block by block while
  // serving, and with THP in madvise mode each first touch of a 2 MiB page
  // would zero it and may compact memory inside a request's time to first
  // token (weights, copied once at load, are: ops::MatmulWeight::concat_rows).
  const size_t bytes = std::max<size_t>(64, (static_cast<size_t>(b.size_bytes()) + 63) / 64 * 64);
  b.data_.reset(std::aligned_alloc(64, bytes));
  STRATA_CHECK(b.data_ != nullptr) << "out of host memory allocating " << bytes << " bytes";
  return b;
}

tensor::TensorView DeviceBuffer::host_view() const {
  STRATA_CHECK(device_ == Device::kCpu) << "host_view of " << device_name(device_) << " memory";
  return {data(), dtype_, {num_elements_}};
}

}  // namespace strata::backend
