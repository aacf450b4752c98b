// Matmuls with GGUF's low-bit weight types (Q4_0 ... Q6_K, IQ4_*) on every
// kernel table against ops/reference: the int8-activation decode kernels
// against the reference with the same activation quantization, the prefill
// path against bf16-rounded math, and the invariants (batch, thread count).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "ops/cpu/kernels.h"
#include "ops/matmul_test_util.h"
#include "ops/ops.h"
#include "ops/reference.h"
#include "tensor/quant_testing.h"

namespace strata::ops {
namespace {

using tensor::DType;
using testing::normalized_error;
using testing::random_floats;
using tensor::testing::kLowBitQuantTypes;


struct QuantWeight {
  std::string bytes;
  tensor::TensorView view;
};

QuantWeight random_weight(DType t, int64_t n, int64_t k, uint32_t seed) {
  QuantWeight w;
  w.bytes = tensor::testing::random_quantized(t, n * k, seed);
  w.view.data = w.bytes.data();
  w.view.dtype = t;
  w.view.shape = {n, k};
  return w;
}


void run_matmul_active(const float* x, int64_t m, const MatmulWeight& w, float* y,
                       ThreadPool& pool) {
  cpu::run_matmul(cpu::active_kernels(), x, m, w, nullptr, y, pool);
}

class QuantMatmulTest : public testing::KernelTableTest {};

std::vector<int64_t> ks_for(DType t) {
  if (tensor::dtype_block_size(t) == 32) return {32, 96, 256, 896, 1088};
  return {256, 512, 1280};
}

TEST_P(QuantMatmulTest, MatchesReference) {
  int variant = 0;
  for (DType t : kLowBitQuantTypes) {
    for (int64_t k : ks_for(t)) {
      for (int64_t m : {1, 2, 3, 4, 5, 9, 16, 17, 40}) {
        if (m > 16 && k > 512) continue;  // prefill sizes: two per type are enough
        for (int64_t n : {1, 3, 17, 67}) {
          SCOPED_TRACE(std::string(tensor::dtype_name(t)) + " m=" + std::to_string(m) +
                       " n=" + std::to_string(n) + " k=" + std::to_string(k));
          uint32_t seed = static_cast<uint32_t>(m * 131 + n * 7 + k + 1000 * static_cast<int>(t));
          QuantWeight qw = random_weight(t, n, k, seed);
          MatmulWeight w = MatmulWeight::prepare(qw.view);
          int xoff = variant % 5, yoff = (variant + 2) % 3;
          std::vector<float> xbuf = random_floats(m * k + xoff, seed + 1, -3.0f, 3.0f);
          for (int64_t i = 0; i < m; ++i) xbuf[xoff + i * k + (i * 37) % k] = 40.0f;  // outliers
          const float* x = xbuf.data() + xoff;
          std::vector<float> bias = random_floats(n, seed + 2);
          const float* bp = variant % 2 == 0 ? bias.data() : nullptr;
          std::vector<float> ybuf(static_cast<size_t>(m * n + yoff), NAN), ref(m * n);
          float* y = ybuf.data() + yoff;
          cpu::run_matmul(*table_, x, m, w, bp, y, pool_);
          double tol;
          if (cpu::uses_int8_x(*table_, t, m)) {
            reference::matmul_q8_activations(x, m, qw.view, bp, ref.data(),
                                             cpu::lowbit_x_block(t));
            tol = 2e-6;  // int32 sums exact; f32 scaling and summation order differ
          } else if (cpu::matmul_mode(t, m) == cpu::MatmulMode::kF32) {
            reference::matmul(x, m, qw.view, bp, ref.data());
            tol = 1e-5;
          } else {
            reference::matmul_bf16_rounded(x, m, qw.view, bp, true, ref.data());
            tol = 1e-5;
          }
          ASSERT_LT(normalized_error(x, m, qw.view, bp, y, ref.data()), tol);
          ++variant;
        }
      }
    }
  }
}

// Each row of a batch gets the same bits as when it runs alone, and the
// thread count does not change them (decode and prefill sizes).
TEST_P(QuantMatmulTest, BatchAndThreadInvariant) {
  ThreadPool one(1);
  for (DType t : kLowBitQuantTypes) {
    // 32-value types: an even and an odd number of blocks (a lone last block).
    for (int64_t k : tensor::dtype_block_size(t) == 32 ? std::vector<int64_t>{896, 928}
                                                       : std::vector<int64_t>{768}) {
      const int64_t n = 150;
      QuantWeight qw = random_weight(t, n, k, 77 + static_cast<int>(t));
      MatmulWeight w = MatmulWeight::prepare(qw.view);
      for (int64_t m : {9, 40}) {
        SCOPED_TRACE(std::string(tensor::dtype_name(t)) + " k=" + std::to_string(k) +
                     " m=" + std::to_string(m));
        std::vector<float> x = random_floats(m * k, 78);
        std::vector<float> y2(m * n), y1(m * n), row(n);
        cpu::run_matmul(*table_, x.data(), m, w, nullptr, y2.data(), pool_);
        cpu::run_matmul(*table_, x.data(), m, w, nullptr, y1.data(), one);
        ASSERT_EQ(y1, y2);
        if (m > cpu::kDecodeMaxRows) continue;  // a single row is decode, not prefill
        for (int64_t i = 0; i < m; ++i) {
          cpu::run_matmul(*table_, x.data() + i * k, 1, w, nullptr, row.data(), pool_);
          for (int64_t j = 0; j < n; ++j) ASSERT_EQ(row[j], y2[i * n + j]) << i << "," << j;
        }
      }
    }
  }
}

// Where a table runs its int8 kernel at prefill sizes too (AVX2, which has no
// prefill GEMM; AVX-512 on the panels of Q4_0, Q5_0, IQ4_NL, IQ4_XS and
// Q2_K ... Q6_K, and
// for every type with STRATA_NO_ONEDNN=1), a row of a 40-row chunk
// gets the bits it gets when decoded alone, so a token's logits do not depend
// on the chunk it is computed in.
TEST_P(QuantMatmulTest, Int8PrefillRowsEqualDecodeRows) {
  int covered = 0;
  for (DType t : kLowBitQuantTypes) {
    if (!cpu::uses_int8_x(*table_, t, 40)) continue;
    ++covered;
    const int64_t n = 70, m = 40;
    for (int64_t k : tensor::dtype_block_size(t) == 32 ? std::vector<int64_t>{928}
                                                       : std::vector<int64_t>{768}) {
      SCOPED_TRACE(std::string(tensor::dtype_name(t)) + " k=" + std::to_string(k));
      QuantWeight qw = random_weight(t, n, k, 91 + static_cast<int>(t));
      MatmulWeight w = MatmulWeight::prepare(qw.view);
      std::vector<float> x = random_floats(m * k, 92);
      std::vector<float> y(m * n), row(n);
      cpu::run_matmul(*table_, x.data(), m, w, nullptr, y.data(), pool_);
      for (int64_t i = 0; i < m; ++i) {
        cpu::run_matmul(*table_, x.data() + i * k, 1, w, nullptr, row.data(), pool_);
        for (int64_t j = 0; j < n; ++j) ASSERT_EQ(row[j], y[i * n + j]) << i << "," << j;
      }
    }
  }
  if (GetParam() == "avx2" || GetParam() == "avx2_vnni") {
    // The AVX2 tables run their int8 kernels for every low-bit type at every m.
    EXPECT_EQ(covered, static_cast<int>(std::size(kLowBitQuantTypes)));
    EXPECT_TRUE(cpu::uses_lowbit_kernel(*table_, DType::kQ3_K, 1));
    EXPECT_TRUE(cpu::uses_lowbit_kernel(*table_, DType::kQ6_K, 512));
  } else if (&*table_ == &cpu::active_kernels() && cpu::panels_in_use(DType::kQ4_0)) {
    EXPECT_EQ(covered, 9);  // the panel types: Q4_0, Q5_0, IQ4_NL, IQ4_XS, Q2_K ... Q6_K
  } else if (covered == 0) {
    GTEST_SKIP() << "this table runs no int8 low-bit kernel at prefill sizes";
  }
}

// A weight fused from parts (QKV, gate/up) computes each part's columns as the
// part alone does: exactly for decode rows; prefill GEMMs may block n
// differently, so there only to float rounding.
TEST_P(QuantMatmulTest, ConcatRowsMatchesParts) {
  std::vector<DType> types(std::begin(kLowBitQuantTypes), std::end(kLowBitQuantTypes));
  types.push_back(DType::kQ8_0);
  for (DType t : types) {
    const int64_t k = tensor::dtype_block_size(t) == 32 ? 896 : 768;
    QuantWeight a = random_weight(t, 96, k, 11), b = random_weight(t, 64, k, 12);
    ASSERT_TRUE(MatmulWeight::can_concat_rows({&a.view, &b.view}));
    MatmulWeight fused = MatmulWeight::concat_rows({&a.view, &b.view});
    ASSERT_EQ(fused.n(), 160);
    QuantWeight ab;  // the fused rows as stored (a fused Q8_0 weight may keep only panels)
    ab.bytes = a.bytes + b.bytes;
    ab.view = {ab.bytes.data(), t, {160, k}};
    MatmulWeight wa = MatmulWeight::prepare(a.view), wb = MatmulWeight::prepare(b.view);
    for (int64_t m : {1, 9, 40}) {
      SCOPED_TRACE(std::string(tensor::dtype_name(t)) + " m=" + std::to_string(m));
      std::vector<float> x = random_floats(m * k, 13);
      std::vector<float> y(m * 160), ya(m * 96), yb(m * 64);
      cpu::run_matmul(*table_, x.data(), m, fused, nullptr, y.data(), pool_);
      cpu::run_matmul(*table_, x.data(), m, wa, nullptr, ya.data(), pool_);
      cpu::run_matmul(*table_, x.data(), m, wb, nullptr, yb.data(), pool_);
      std::vector<float> parts(m * 160);
      for (int64_t i = 0; i < m; ++i) {
        std::copy(ya.begin() + i * 96, ya.begin() + (i + 1) * 96, parts.begin() + i * 160);
        std::copy(yb.begin() + i * 64, yb.begin() + (i + 1) * 64, parts.begin() + i * 160 + 96);
      }
      if (m <= cpu::kDecodeMaxRows) {
        ASSERT_EQ(y, parts);
      } else {  // relative to Σ|x·w|, far inside the prefill bound (3.3e-4)
        EXPECT_LT(normalized_error(x.data(), m, ab.view, nullptr, y.data(), parts.data()),
                  2e-5);
      }
    }
  }
  QuantWeight q = random_weight(DType::kQ8_0, 32, 768, 14);
  QuantWeight other = random_weight(DType::kQ4_K, 32, 768, 15);
  EXPECT_FALSE(MatmulWeight::can_concat_rows({&q.view, &other.view}));
}

// Error of int8 activations against exact math with the stored weights,
// relative to Σ|x·w| (the same bound as Q8_0's, BENCHMARKS.md).
TEST_P(QuantMatmulTest, ActivationErrorBound) {
  if (!cpu::uses_lowbit_kernel(*table_, DType::kQ4_K, 1)) {
    GTEST_SKIP() << "no int8 low-bit decode kernel in this table / on this CPU";
  }
  for (DType t : kLowBitQuantTypes) {
    const int64_t m = 4, n = 32, k = 1024;
    QuantWeight qw = random_weight(t, n, k, 5);
    MatmulWeight w = MatmulWeight::prepare(qw.view);
    std::vector<float> x = random_floats(m * k, 6);
    std::vector<float> y(m * n), ref(m * n);
    cpu::run_matmul(*table_, x.data(), m, w, nullptr, y.data(), pool_);
    reference::matmul(x.data(), m, qw.view, nullptr, ref.data());
    EXPECT_LT(normalized_error(x.data(), m, qw.view, nullptr, y.data(), ref.data()), 1e-2)
        << tensor::dtype_name(t);
  }
}

// Blocks llama.cpp quantized itself (SQDQ files from `llama_run dequant`; the
// ctest golden.blocks_vs_llamacpp sets STRATA_LLAMACPP_DEQUANT_DIR): the
// kernels' products against llama.cpp's dequantized values of the same bytes,
// with x quantized as the decode kernels do (m <= 16) or bf16-rounded math
// (prefill).
using tensor::testing::LlamaCppBlocks;

// Reference with the given f32 weights of a `dtype` weight: x quantized as
// the kernels do for that type.
void q8_reference(const float* x, int64_t m, DType dtype, const std::vector<float>& w, int64_t n,
                  int64_t k, float* y) {
  tensor::TensorView wv;
  wv.data = w.data();
  wv.dtype = DType::kF32;
  wv.shape = {n, k};
  reference::matmul_q8_activations(x, m, wv, nullptr, y,
                                   dtype == DType::kQ8_0 ? 32 : cpu::lowbit_x_block(dtype));
}

TEST(QuantMatmulVsLlamaCpp, DecodeKernelsOnLlamaCppBlocks) {
  const char* dir = std::getenv("STRATA_LLAMACPP_DEQUANT_DIR");
  if (dir == nullptr) GTEST_SKIP() << "run through the ctest golden.blocks_vs_llamacpp";
  ThreadPool pool(2);
  for (const char* name : tensor::testing::kLlamaCppBlockFiles) {
    LlamaCppBlocks b;
    ASSERT_TRUE(tensor::testing::read_llamacpp_blocks(std::string(dir) + "/" + name + ".bin", &b)) << name;
    ASSERT_TRUE(tensor::is_quantized(b.dtype)) << name;
    tensor::TensorView wv;
    wv.data = b.bytes.data();
    wv.dtype = b.dtype;
    wv.shape = {b.rows, b.cols};
    MatmulWeight w = MatmulWeight::prepare(wv);
    for (int64_t m : {1, 7}) {
      std::vector<float> x = random_floats(m * b.cols, 21, -2.0f, 2.0f);
      std::vector<float> y(m * b.rows), ref(m * b.rows);
      run_matmul_active(x.data(), m, w, y.data(), pool);
      q8_reference(x.data(), m, b.dtype, b.values, b.rows, b.cols, ref.data());
      double tol = cpu::uses_int8_x(cpu::active_kernels(), b.dtype, m)
                       ? 2e-6
                       : 1e-2;  // portable kernels: exact f32 weights and x, vs int8 x
      ASSERT_LT(normalized_error(x.data(), m, wv, nullptr, y.data(), ref.data()), tol)
          << name << " m=" << m;
    }
  }
}

TEST(QuantMatmulVsLlamaCpp, PrefillOnLlamaCppBlocks) {
  const char* dir = std::getenv("STRATA_LLAMACPP_DEQUANT_DIR");
  if (dir == nullptr) GTEST_SKIP() << "run through the ctest golden.blocks_vs_llamacpp";
  ThreadPool pool(2);
  for (const char* name : {"q4_0", "q5_1", "q3_K", "q4_K", "q6_K", "iq4_xs"}) {
    LlamaCppBlocks b;
    ASSERT_TRUE(tensor::testing::read_llamacpp_blocks(std::string(dir) + "/" + name + ".bin", &b)) << name;
    tensor::TensorView wv;
    wv.data = b.bytes.data();
    wv.dtype = b.dtype;
    wv.shape = {b.rows, b.cols};
    MatmulWeight w = MatmulWeight::prepare(wv);
    const int64_t m = 33;
    std::vector<float> x = random_floats(m * b.cols, 22);
    std::vector<float> y(m * b.rows), ref(m * b.rows);
    run_matmul_active(x.data(), m, w, y.data(), pool);
    tensor::TensorView fv;
    fv.data = b.values.data();
    fv.dtype = DType::kF32;
    fv.shape = {b.rows, b.cols};
    double tol = 1e-5;
    if (cpu::uses_int8_x(cpu::active_kernels(), b.dtype, m)) {  // panels, or STRATA_NO_ONEDNN=1
      q8_reference(x.data(), m, b.dtype, b.values, b.rows, b.cols, ref.data());
      tol = 2e-6;
    } else {
      reference::matmul_bf16_rounded(x.data(), m, fv, nullptr, true, ref.data());
    }
    ASSERT_LT(normalized_error(x.data(), m, wv, nullptr, y.data(), ref.data()), tol) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Tables, QuantMatmulTest,
                         ::testing::Values("generic", "avx2", "avx2_vnni", "avx512", "avx512_vnni"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace strata::ops
