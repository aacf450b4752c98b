// Test support shared by the ops tests: random inputs, the matmul error
// measure (relative to the size of the summed terms) and the fixture over
// both kernel tables. For tests only.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "ops/cpu/kernels.h"
#include "tensor/dtype.h"
#include "tensor/quant_testing.h"
#include "tensor/tensor_view.h"

namespace strata::ops::testing {

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(rng);
  return v;
}

// Weight storage in `dtype` (f32, f16, bf16 or q8_0) for f32 values w [n, k];
// `view` points into `bytes`.
struct StoredWeight {
  std::vector<uint8_t> bytes;
  tensor::TensorView view;
};

inline StoredWeight store_weight(const std::vector<float>& w, int64_t n, int64_t k,
                                 tensor::DType dtype) {
  StoredWeight s;
  s.bytes.resize(static_cast<size_t>(tensor::dtype_size_bytes(dtype, n * k)));
  auto* u16 = reinterpret_cast<uint16_t*>(s.bytes.data());
  for (int64_t i = 0; i < n * k; ++i) {
    if (dtype == tensor::DType::kF32) std::memcpy(s.bytes.data() + 4 * i, &w[i], 4);
    if (dtype == tensor::DType::kF16) u16[i] = tensor::f32_to_f16(w[i]);
    if (dtype == tensor::DType::kBF16) u16[i] = tensor::f32_to_bf16(w[i]);
  }
  if (dtype == tensor::DType::kQ8_0) {
    tensor::quantize_q8_0(w.data(), n * k, reinterpret_cast<tensor::BlockQ8_0*>(s.bytes.data()));
  }
  s.view = {s.bytes.data(), dtype, {n, k}};
  return s;
}

// A weight [n, k] of any dtype store_weight takes from random values
// (seeded), or of a low-bit GGUF type as random blocks
// (tensor::testing::random_quantized).
inline StoredWeight random_stored_weight(tensor::DType dtype, int64_t n, int64_t k, uint32_t seed) {
  if (!tensor::is_low_bit_quant(dtype))
    return store_weight(random_floats(n * k, seed), n, k, dtype);
  StoredWeight s;
  const std::string blocks = tensor::testing::random_quantized(dtype, n * k, seed);
  s.bytes.assign(blocks.begin(), blocks.end());
  s.view = {s.bytes.data(), dtype, {n, k}};
  return s;
}

// Max over outputs of |y - ref| / (Σ_l |x_l w_l| + |bias| + tiny): error
// relative to the size of the terms summed.
inline double normalized_error(const float* x, int64_t m, const tensor::TensorView& w,
                               const float* bias, const float* y, const float* ref) {
  int64_t n = w.dim(0), k = w.dim(1);
  std::vector<float> wf(static_cast<size_t>(n * k));
  tensor::convert_to_f32(w.data, w.dtype, n * k, wf.data());
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double scale = 1e-30 + (bias != nullptr ? std::fabs(bias[j]) : 0.0);
      for (int64_t l = 0; l < k; ++l) scale += std::fabs(x[i * k + l] * wf[j * k + l]);
      worst = std::max(worst, std::fabs(double(y[i * n + j]) - ref[i * n + j]) / scale);
    }
  }
  return worst;
}

// Tests parameterized by kernel table ("generic", "avx2", "avx2_vnni",
// "avx512", "avx512_vnni"); the others skip on CPUs without AVX2+FMA+F16C /
// AVX-VNNI / AVX-512 BF16 / AVX-512 VNNI.
class KernelTableTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "generic") {
      table_ = &cpu::generic_kernels();
    } else if (GetParam() == "avx2") {
      if (!cpu::avx2_supported()) GTEST_SKIP() << "CPU lacks AVX2+FMA+F16C";
      table_ = &cpu::avx2_kernels();
    } else if (GetParam() == "avx2_vnni") {
      if (!cpu::avx2_vnni_supported()) GTEST_SKIP() << "CPU lacks AVX2 with AVX-VNNI";
      table_ = &cpu::avx2_vnni_kernels();
    } else if (GetParam() == "avx512_vnni") {
      if (!cpu::avx512_vnni_supported()) GTEST_SKIP() << "CPU lacks AVX-512 VNNI";
      table_ = cpu::avx512_vnni_kernels();
    } else if (cpu::avx512_supported()) {
      table_ = cpu::avx512_kernels();
    } else {
      GTEST_SKIP() << "CPU lacks AVX-512 BF16; avx512 kernels not testable here";
    }
  }
  const cpu::KernelTable* table_ = nullptr;
  ThreadPool pool_{2};
};

}  // namespace strata::ops::testing
