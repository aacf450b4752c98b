// Every optimized kernel (generic and, where the CPU has it, AVX-512) against
// ops/reference over many sizes, dtypes and pointer misalignments, plus a few
// hand-computed cases that pin the reference itself to HF semantics.
#include "ops/ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/panels.h"
#include "ops/matmul_test_util.h"
#include "ops/reference.h"
#include "tensor/quant_blocks.h"

namespace strata::ops {
namespace {

using tensor::DType;
using testing::normalized_error;
using testing::random_floats;
using testing::random_stored_weight;
using testing::store_weight;
using testing::StoredWeight;

class KernelTest : public testing::KernelTableTest {};

struct MatmulCase {
  int64_t m, n, k;
};

std::vector<MatmulCase> matmul_cases(DType dtype) {
  std::vector<MatmulCase> cases;
  bool q8 = dtype == DType::kQ8_0;
  std::vector<int64_t> ks = q8 ? std::vector<int64_t>{32, 64, 96, 1088}
                               : std::vector<int64_t>{1, 7, 16, 31, 33, 100, 1056};
  std::vector<int64_t> ns = {1, 3, 4, 5, 16, 17, 67};
  int idx = 0;
  for (int64_t k : ks) {
    for (int64_t n : ns) {
      int64_t m = 1 + (idx++ % 17);  // cycles through 1..17
      cases.push_back({m, n, k});
    }
  }
  cases.push_back({64, 130, q8 ? 320 : 300});  // prefill sizes
  cases.push_back({70, 35, q8 ? 1088 : 1050});
  return cases;
}

void check_matmul(const cpu::KernelTable& t, ThreadPool& pool, DType dtype, MatmulCase c,
                  int offset, bool with_bias) {
  SCOPED_TRACE(std::string(tensor::dtype_name(dtype)) + " m=" + std::to_string(c.m) +
               " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
               " offset=" + std::to_string(offset) + " bias=" + std::to_string(with_bias));
  uint32_t seed = static_cast<uint32_t>(c.m * 7919 + c.n * 31 + c.k);
  std::vector<float> wf = random_floats(c.n * c.k, seed);
  StoredWeight sw = store_weight(wf, c.n, c.k, dtype);
  std::vector<float> xbuf = random_floats(c.m * c.k + offset, seed + 1);
  const float* x = xbuf.data() + offset;
  std::vector<float> bias = random_floats(c.n, seed + 2);
  const float* b = with_bias ? bias.data() : nullptr;
  std::vector<float> ybuf(static_cast<size_t>(c.m * c.n + offset), NAN);
  float* y = ybuf.data() + offset;
  MatmulWeight w = MatmulWeight::prepare(sw.view);
  cpu::run_matmul(t, x, c.m, w, b, y, pool);

  std::vector<float> ref(static_cast<size_t>(c.m * c.n));
  if (dtype == DType::kQ8_0 && cpu::q8_uses_int8_x(t, c.m)) {
    reference::matmul_q8_activations(x, c.m, sw.view, b, ref.data());
  } else if (cpu::matmul_mode(dtype, c.m) == cpu::MatmulMode::kF32) {
    reference::matmul(x, c.m, sw.view, b, ref.data());
  } else {
    reference::matmul_bf16_rounded(x, c.m, sw.view, b, dtype != DType::kBF16, ref.data());
  }
  EXPECT_LT(normalized_error(x, c.m, sw.view, b, y, ref.data()), 1e-5);
}

TEST_P(KernelTest, MatmulMatchesReference) {
  int variant = 0;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0}) {
    for (MatmulCase c : matmul_cases(dtype)) {
      check_matmul(*table_, pool_, dtype, c, variant % 4, variant % 3 != 0);
      ++variant;
    }
  }
}

// Every decode batch size m in [2, 16] on an n-row weight of `dtype` with
// each k of `ks` (with a bias when `with_bias`): each row of the batch has the
// bits of the same row computed alone.
void expect_batch_invariant(const cpu::KernelTable& table, ThreadPool& pool, DType dtype,
                            std::initializer_list<int64_t> ks, int64_t n = 37,
                            bool with_bias = false) {
  for (int64_t k : ks) {
    std::vector<float> wf = random_floats(n * k, 5, -2.0f, 2.0f);
    StoredWeight sw = store_weight(wf, n, k, dtype);
    MatmulWeight w = MatmulWeight::prepare(sw.view);
    std::vector<float> bias_values = random_floats(n, 4);
    const float* bias = with_bias ? bias_values.data() : nullptr;
    for (int64_t m = 2; m <= cpu::kDecodeMaxRows; ++m) {
      std::vector<float> x = random_floats(m * k, static_cast<uint32_t>(6 + m), -3.0f, 3.0f);
      std::vector<float> y_batch(m * n, NAN), y_one(n, NAN);
      cpu::run_matmul(table, x.data(), m, w, bias, y_batch.data(), pool);
      for (int64_t i = 0; i < m; ++i) {
        cpu::run_matmul(table, x.data() + i * k, 1, w, bias, y_one.data(), pool);
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_EQ(y_one[j], y_batch[i * n + j]) << tensor::dtype_name(dtype) << " k " << k
                                                  << " m " << m << " row " << i << " col " << j;
        }
      }
    }
  }
}

// BF16 with x inside and outside L1 (the AVX-512 kernel tiles the two
// differently, avx512.cc rows_bf16_x_in_l1), an odd number of weight rows
// and a k that ends mid-vector.
TEST_P(KernelTest, Bf16MatmulIsBatchInvariant) {
  expect_batch_invariant(*table_, pool_, DType::kBF16, {1056, 1070, 1100, 2500});
}

// BF16 batched decode whose x does not fit in L1 cuts k into blocks and
// carries each tile's sums from block to block (avx512.cc decode_block_k):
// several blocks of weight rows (n past 2 x 64, a tail of rows), blocks of k
// with a tail that ends mid-vector, a bias, four- and two-row tiles.
TEST_P(KernelTest, Bf16BlockedDecodeIsBatchInvariant) {
  expect_batch_invariant(*table_, pool_, DType::kBF16, {2500, 4864}, /*n=*/133,
                         /*with_bias=*/true);
}

// A table without a prefill GEMM runs its own kernels at every m: a row of a
// prefill-sized batch (m > kDecodeMaxRows, the prefill tiling) has the bits
// of the same row computed alone, for k past one cache block (kBf16TileK)
// with a tail, with and without bias. (Tables with oneDNN's GEMM differ in
// the last bits there by design: README, "chunk bytes".)
TEST_P(KernelTest, OwnPrefillRowsEqualDecodeRows) {
  if (table_->matmul_prefill_range != nullptr) GTEST_SKIP() << "prefill runs oneDNN's GEMM";
  const int64_t n = 70, m = 37;
  for (DType dtype : {DType::kBF16, DType::kF32}) {
    for (int64_t k : {int64_t{900}, int64_t{2500}}) {
      std::vector<float> wf = random_floats(n * k, 11, -2.0f, 2.0f);
      StoredWeight sw = store_weight(wf, n, k, dtype);
      MatmulWeight w = MatmulWeight::prepare(sw.view);
      std::vector<float> bias = random_floats(n, 12);
      std::vector<float> x = random_floats(m * k, 13, -3.0f, 3.0f);
      std::vector<float> y_batch(m * n), y_one(n);
      cpu::run_matmul(*table_, x.data(), m, w, bias.data(), y_batch.data(), pool_);
      for (int64_t i = 0; i < m; ++i) {
        cpu::run_matmul(*table_, x.data() + i * k, 1, w, bias.data(), y_one.data(), pool_);
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_EQ(y_one[j], y_batch[i * n + j]) << tensor::dtype_name(dtype) << " k " << k
                                                  << " row " << i << " col " << j;
        }
      }
    }
  }
}

// Prefill with rows of ordinary length and long rows (k >= kPrefillLongRowK,
// larger oneDNN calls: cpu::prefill_slice_rows), n past several calls with a
// tail, x cut into parts of rows (few slices, m = 300: run_matmul's
// prefill_part_rows) or not: the same bits at 1, 2 and 3 threads, and the
// reference's values.
TEST_P(KernelTest, PrefillBitsDoNotDependOnThreadCount) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (int64_t k : {int64_t{1000}, cpu::kPrefillLongRowK + 24}) {
      const int64_t m = k < cpu::kPrefillLongRowK ? 300 : 20;
      const int64_t n = 2 * cpu::prefill_slice_rows(dtype, k) + 70;
      SCOPED_TRACE(std::string(tensor::dtype_name(dtype)) + " m=" + std::to_string(m) +
                   " k=" + std::to_string(k));
      std::vector<float> wf = random_floats(n * k, 21, -2.0f, 2.0f);
      StoredWeight sw = store_weight(wf, n, k, dtype);
      MatmulWeight w = MatmulWeight::prepare(sw.view);
      std::vector<float> bias = random_floats(n, 22);
      std::vector<float> x = random_floats(m * k, 23, -3.0f, 3.0f);
      std::vector<float> y_one_thread(m * n, NAN);
      ThreadPool one(1);
      cpu::run_matmul(*table_, x.data(), m, w, bias.data(), y_one_thread.data(), one);
      for (int threads : {2, 3}) {
        ThreadPool pool(threads);
        std::vector<float> y(m * n, NAN);
        cpu::run_matmul(*table_, x.data(), m, w, bias.data(), y.data(), pool);
        for (int64_t i = 0; i < m * n; ++i) {
          ASSERT_EQ(y_one_thread[i], y[i]) << threads << " threads, output " << i;
        }
      }
      std::vector<float> ref(m * n);
      if (cpu::matmul_mode(dtype, m) == cpu::MatmulMode::kF32) {
        reference::matmul(x.data(), m, sw.view, bias.data(), ref.data());
      } else {
        reference::matmul_bf16_rounded(x.data(), m, sw.view, bias.data(), false, ref.data());
      }
      EXPECT_LT(normalized_error(x.data(), m, sw.view, bias.data(), y_one_thread.data(),
                                 ref.data()),
                1e-5);
    }
  }
}

// Q8_0, whichever decode kernel the table has (the AVX512-VNNI one also
// tiles x inside and outside L1 differently).
TEST_P(KernelTest, Q8MatmulIsBatchInvariant) {
  expect_batch_invariant(*table_, pool_, DType::kQ8_0, {1056, 1088, 2560});
}

// The error bound documented in BENCHMARKS.md for bf16 activation rounding,
// against exact f32 math (not the bf16-rounded reference).
TEST_P(KernelTest, Bf16ActivationErrorBound) {
  int64_t m = 33, n = 64, k = 896;
  for (DType dtype : {DType::kBF16, DType::kQ8_0}) {
    std::vector<float> wf = random_floats(n * k, 9);
    StoredWeight sw = store_weight(wf, n, k, dtype);
    MatmulWeight w = MatmulWeight::prepare(sw.view);
    std::vector<float> x = random_floats(m * k, 10);
    std::vector<float> y(m * n), ref(m * n);
    cpu::run_matmul(*table_, x.data(), m, w, nullptr, y.data(), pool_);
    reference::matmul(x.data(), m, sw.view, nullptr, ref.data());
    double err = normalized_error(x.data(), m, sw.view, nullptr, y.data(), ref.data());
    RecordProperty(std::string("bf16_err_") + tensor::dtype_name(dtype), std::to_string(err));
    EXPECT_LT(err, 1e-3) << tensor::dtype_name(dtype);  // measured 2.5e-4 / 3.3e-4
  }
}

// The VNNI Q8_0 decode kernel (x quantized to int8) against its reference:
// int32 block sums, so only the f32 scaling and summation differ.
TEST_P(KernelTest, Q8ActivationsMatchReference) {
  if (!cpu::q8_uses_int8_x(*table_, 1)) {
    GTEST_SKIP() << "no AVX512-VNNI Q8_0 decode kernel in this table / on this CPU";
  }
  int variant = 0;
  for (int64_t k : {32, 64, 96, 896, 1088}) {
    for (int64_t m = 1; m <= cpu::kDecodeMaxRows; ++m) {
      for (int64_t n : {1, 5, 17, 67}) {
        SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) +
                     " k=" + std::to_string(k));
        uint32_t seed = static_cast<uint32_t>(m * 131 + n * 7 + k);
        std::vector<float> wf = random_floats(n * k, seed, -2.0f, 2.0f);
        StoredWeight sw = store_weight(wf, n, k, DType::kQ8_0);
        MatmulWeight w = MatmulWeight::prepare(sw.view);
        int xoff = variant % 5, yoff = (variant + 2) % 3;
        std::vector<float> xbuf = random_floats(m * k + xoff, seed + 1, -3.0f, 3.0f);
        // A few large outliers per row, as in real activations.
        for (int64_t i = 0; i < m; ++i) xbuf[xoff + i * k + (i * 37) % k] = 40.0f;
        const float* x = xbuf.data() + xoff;
        std::vector<float> bias = random_floats(n, seed + 2);
        const float* bp = variant % 2 == 0 ? bias.data() : nullptr;
        std::vector<float> ybuf(static_cast<size_t>(m * n + yoff), NAN), ref(m * n);
        float* y = ybuf.data() + yoff;
        cpu::run_matmul(*table_, x, m, w, bp, y, pool_);
        reference::matmul_q8_activations(x, m, sw.view, bp, ref.data());
        ASSERT_LT(normalized_error(x, m, sw.view, bp, y, ref.data()), 2e-6);
        ++variant;
      }
    }
  }
}

// The error of quantizing x to Q8_0 (VNNI decode) against exact math with the
// stored weights, relative to Σ|x·w| (documented in ops.h / BENCHMARKS.md).
TEST_P(KernelTest, Q8ActivationErrorBound) {
  if (!cpu::q8_uses_int8_x(*table_, 1)) {
    GTEST_SKIP() << "no AVX512-VNNI Q8_0 decode kernel in this table / on this CPU";
  }
  int64_t m = 16, n = 64, k = 896;
  std::vector<float> wf = random_floats(n * k, 11);
  StoredWeight sw = store_weight(wf, n, k, DType::kQ8_0);
  MatmulWeight w = MatmulWeight::prepare(sw.view);
  for (bool outliers : {false, true}) {
    std::vector<float> x = random_floats(m * k, 12);
    if (outliers) {
      for (int64_t i = 0; i < m * k; i += 61) x[i] *= 30.0f;
    }
    std::vector<float> y(m * n), ref(m * n);
    cpu::run_matmul(*table_, x.data(), m, w, nullptr, y.data(), pool_);
    reference::matmul(x.data(), m, sw.view, nullptr, ref.data());
    double err = normalized_error(x.data(), m, sw.view, nullptr, y.data(), ref.data());
    RecordProperty(outliers ? "q8_act_err_outliers" : "q8_act_err_uniform", std::to_string(err));
    std::printf("q8 activation error (%s x): %.3g of sum|x*w|\n", outliers ? "outlier" : "uniform",
                err);
    EXPECT_LT(err, 1e-2);
  }
}

TEST_P(KernelTest, RmsNorm) {
  for (int64_t dim : {1, 15, 16, 17, 64, 896, 1000}) {
    for (int offset = 0; offset < 4; ++offset) {
      int64_t rows = 3;
      std::vector<float> x = random_floats(rows * dim + offset, dim, -3, 3);
      std::vector<float> weight = random_floats(dim, dim + 1);
      std::vector<float> y(rows * dim + offset), ref(rows * dim);
      table_->rms_norm(x.data() + offset, weight.data(), rows, dim, 1e-6f, y.data() + offset);
      reference::rms_norm(x.data() + offset, weight.data(), rows, dim, 1e-6f, ref.data());
      for (int64_t i = 0; i < rows * dim; ++i) {
        ASSERT_NEAR(y[i + offset], ref[i], 1e-5 * (1 + std::fabs(ref[i]))) << dim << " " << i;
      }
      // In place (y aliases x).
      table_->rms_norm(x.data() + offset, weight.data(), rows, dim, 1e-6f, x.data() + offset);
      for (int64_t i = 0; i < rows * dim; ++i) ASSERT_EQ(x[i + offset], y[i + offset]);
    }
  }
}

std::vector<float> rope_inv_freq(int64_t head_dim, float theta) {
  std::vector<float> f(static_cast<size_t>(head_dim / 2));
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    f[i] = 1.0f / std::pow(theta, 2.0f * static_cast<float>(i) / static_cast<float>(head_dim));
  }
  return f;
}

double max_rope_error(const cpu::KernelTable& t, RopeStyle kernel_style, RopeStyle ref_style,
                      int64_t head_dim, int64_t num_heads, int offset) {
  int64_t num_tokens = 5;
  std::vector<int32_t> pos = {0, 1, 7, 4095, 31999};
  std::vector<float> inv_freq = rope_inv_freq(head_dim, 10000.0f);
  int64_t total = num_tokens * num_heads * head_dim;
  std::vector<float> x = random_floats(total + offset, head_dim * 13 + num_heads);
  std::vector<float> ref(x.begin() + offset, x.end());
  cpu::run_rope(t, x.data() + offset, pos.data(), num_tokens, num_heads, head_dim, inv_freq.data(),
                kernel_style);
  reference::rope(ref.data(), pos.data(), num_tokens, num_heads, head_dim, inv_freq.data(),
                  ref_style);
  double worst = 0;
  for (int64_t i = 0; i < total; ++i)
    worst = std::max(worst, double(std::fabs(x[i + offset] - ref[i])));
  return worst;
}

TEST_P(KernelTest, Rope) {
  for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kInterleaved}) {
    for (int64_t head_dim : {2, 6, 20, 32, 34, 64, 128}) {
      for (int64_t heads : {1, 3}) {
        int offset = static_cast<int>(head_dim % 4);
        EXPECT_LT(max_rope_error(*table_, style, style, head_dim, heads, offset), 1e-5)
            << "style=" << int(style) << " head_dim=" << head_dim << " heads=" << heads;
      }
    }
  }
}

// The comparison must be able to fail: swapping the pairing is caught.
TEST_P(KernelTest, RopeDetectsSwappedPairing) {
  EXPECT_GT(max_rope_error(*table_, RopeStyle::kNeox, RopeStyle::kInterleaved, 64, 2, 0), 1e-2);
  EXPECT_GT(max_rope_error(*table_, RopeStyle::kInterleaved, RopeStyle::kNeox, 64, 2, 0), 1e-2);
}

TEST_P(KernelTest, SiluMul) {
  for (int64_t n : {1, 15, 16, 17, 100, 4864}) {
    for (int offset = 0; offset < 4; ++offset) {
      std::vector<float> g = random_floats(n + offset, n, -20, 20);
      std::vector<float> u = random_floats(n + offset, n + 1, -2, 2);
      std::vector<float> out(n + offset), ref(n);
      table_->silu_mul(g.data() + offset, u.data() + offset, n, out.data() + offset);
      reference::silu_mul(g.data() + offset, u.data() + offset, n, ref.data());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(out[i + offset], ref[i], 1e-6 + 1e-5 * std::fabs(ref[i])) << n << " " << i;
      }
      // out aliases gate.
      table_->silu_mul(g.data() + offset, u.data() + offset, n, g.data() + offset);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(g[i + offset], out[i + offset]);
    }
  }
}

TEST_P(KernelTest, Softmax) {
  for (int64_t n : {1, 2, 15, 16, 17, 300, 151936}) {
    int offset = static_cast<int>(n % 4);
    std::vector<float> x = random_floats(n + offset, n, -30, 30);
    std::vector<float> ref(x.begin() + offset, x.end());
    table_->softmax(x.data() + offset, n);
    reference::softmax(ref.data(), n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(x[i + offset], ref[i], 1e-7 + 1e-5 * ref[i]) << n << " " << i;
      sum += x[i + offset];
    }
    EXPECT_NEAR(sum, 1.0, 1e-4);
  }
}

// A confident model's logits span hundreds (the random-weight Qwen shape's
// ~400): e^(x - max) is then below f32's normal range in nearly every lane.
// The vector kernel gives those lanes exactly 0 and makes no subnormal at all
// (each one would cost a microcode assist); the probabilities still match.
TEST_P(KernelTest, SoftmaxOfAWideSpreadMakesNoSubnormals) {
  for (int64_t n : {17, 300, 151936}) {
    std::vector<float> x = random_floats(n, n, -400, 200);
    x[n / 2] = 300.0f;  // one clear maximum, the others spread below it
    x[n / 3] = 300.0f - 86.0f;   // just above exp's cut
    x[n / 4] = 300.0f - 100.0f;  // e^-100: subnormal in f32
    std::vector<float> ref = x;
    table_->softmax(x.data(), n);
    reference::softmax(ref.data(), n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(x[i], ref[i], 1e-30 + 1e-5 * ref[i]) << n << " " << i;
      if (GetParam() == std::string("avx512")) {
        ASSERT_NE(std::fpclassify(x[i]), FP_SUBNORMAL) << n << " " << i << " " << x[i];
      }
      sum += x[i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
    EXPECT_GT(x[n / 3], 0.0f);  // e^-86 ~ 4.5e-38 survives
  }
}

TEST_P(KernelTest, AddInplace) {
  for (int64_t n : {1, 16, 17, 1000}) {
    for (int offset = 0; offset < 4; ++offset) {
      std::vector<float> y = random_floats(n + offset, n), x = random_floats(n + offset, n + 1);
      std::vector<float> ref(y.begin() + offset, y.end());
      table_->add_inplace(y.data() + offset, x.data() + offset, n);
      reference::add_inplace(ref.data(), x.data() + offset, n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i + offset], ref[i]);
    }
  }
}

struct AttnCase {
  int64_t num_tokens, start_pos, num_heads, num_kv_heads, head_dim, window;
};

TEST_P(KernelTest, Attention) {
  std::vector<AttnCase> cases = {
      {1, 0, 1, 1, 16, 0}, {1, 37, 14, 2, 64, 0},  {7, 0, 4, 2, 64, 0},  {20, 5, 4, 1, 20, 0},
      {9, 3, 6, 6, 33, 4}, {16, 40, 8, 2, 64, 16}, {5, 0, 2, 1, 128, 1}, {33, 0, 2, 2, 8, 0},
  };
  for (const AttnCase& c : cases) {
    SCOPED_TRACE("tokens=" + std::to_string(c.num_tokens) +
                 " start=" + std::to_string(c.start_pos) + " heads=" + std::to_string(c.num_heads) +
                 "/" + std::to_string(c.num_kv_heads) + " d=" + std::to_string(c.head_dim) +
                 " window=" + std::to_string(c.window));
    AttentionShape s{c.num_tokens,   c.start_pos, c.num_heads,
                     c.num_kv_heads, c.head_dim,  1.0f / std::sqrt(static_cast<float>(c.head_dim)),
                     c.window};
    int64_t ctx = c.start_pos + c.num_tokens;
    int offset = static_cast<int>(c.head_dim % 3) + 1;
    std::vector<float> q =
        random_floats(c.num_tokens * c.num_heads * c.head_dim + offset, 1, -2, 2);
    std::vector<float> k = random_floats(ctx * c.num_kv_heads * c.head_dim + offset, 2, -2, 2);
    std::vector<float> v = random_floats(ctx * c.num_kv_heads * c.head_dim + offset, 3);
    int64_t out_size = c.num_tokens * c.num_heads * c.head_dim;
    std::vector<float> out(out_size + offset, NAN), ref(out_size);
    cpu::run_attention(*table_, q.data() + offset, k.data() + offset, v.data() + offset, s,
                       out.data() + offset, pool_);
    reference::attention(q.data() + offset, k.data() + offset, v.data() + offset, s, ref.data());
    for (int64_t i = 0; i < out_size; ++i) {
      ASSERT_NEAR(out[i + offset], ref[i], 1e-5 * (1 + std::fabs(ref[i]))) << i;
    }
  }
}

// repeat_interleave GQA mapping and the window mask, with hand-known answers.
TEST_P(KernelTest, AttentionMappingAndWindow) {
  int64_t d = 4, tokens = 3, heads = 4, kv_heads = 2;
  std::vector<float> q(tokens * heads * d, 0.0f), k(tokens * kv_heads * d, 0.0f);
  std::vector<float> v(tokens * kv_heads * d);
  for (int64_t j = 0; j < tokens; ++j) {
    for (int64_t h = 0; h < kv_heads; ++h) {
      for (int64_t i = 0; i < d; ++i) v[(j * kv_heads + h) * d + i] = float(10 * h + j);
    }
  }
  std::vector<float> out(q.size());
  // Zero scores: uniform weights over the visible positions; window 2 sees {p-1, p}.
  AttentionShape s{tokens, 0, heads, kv_heads, d, 0.5f, 2};
  cpu::run_attention(*table_, q.data(), k.data(), v.data(), s, out.data(), pool_);
  for (int64_t t = 0; t < tokens; ++t) {
    float mean_pos = t == 0 ? 0.0f : float(t) - 0.5f;
    for (int64_t h = 0; h < heads; ++h) {
      float expected = 10.0f * float(h / 2) + mean_pos;  // heads 0,1 -> kv 0; 2,3 -> kv 1
      EXPECT_NEAR(out[(t * heads + h) * d], expected, 1e-6) << "t=" << t << " h=" << h;
    }
  }
}

// y of a one-row BF16 matmul (k = 64, our kernel) whose bits show the order
// in which a vdpbf16ps step adds its two products to the running sum: lane 0
// holds 1 after the first 32 values, then the pair (x[32] w[32], x[33] w[33])
// = (-1, 2^-24). The odd product first (Intel's documented order): 1 + 2^-24
// rounds to 1, then 0. The even one first, or both at once: 2^-24.
float bf16_pair_order_probe(const cpu::KernelTable& t, ThreadPool& pool) {
  std::vector<float> x(64, 0.0f), w(64, 0.0f);
  x[0] = w[0] = 1.0f;
  x[32] = -1.0f;
  w[32] = 1.0f;
  x[33] = w[33] = 0x1p-12f;
  StoredWeight sw = store_weight(w, 1, 64, DType::kBF16);
  MatmulWeight mw = MatmulWeight::prepare(sw.view);
  float y = NAN;
  cpu::run_matmul(t, x.data(), 1, mw, nullptr, &y, pool, MatmulKernel::kOwn);
  return y;
}

// The AVX-512 table built without BF16 (vdpbf16ps as two FMAs, the bf16
// conversions in integer code) adds each pair's products in Intel's
// documented order, and computes the BF16 table's bits: conversions of every
// kind of f32 (ties, NaN, infinities, subnormals, the largest values), and,
// where this CPU's vdpbf16ps follows that order too (Zen 5 does), matmuls of
// each weight family at decode and prefill sizes, our kernels and the static
// choice.
TEST(DispatchTest, Avx512VnniTableComputesTheBf16TablesBits) {
  if (!cpu::avx512_supported() || !cpu::avx512_vnni_supported()) {
    GTEST_SKIP() << "needs AVX-512 BF16 (and so VNNI)";
  }
  const cpu::KernelTable& bf16 = *cpu::avx512_kernels();
  const cpu::KernelTable& vnni = *cpu::avx512_vnni_kernels();
  ThreadPool pool(2);
  ASSERT_EQ(bf16_pair_order_probe(vnni, pool), 0.0f);
  std::vector<float> x = random_floats(4 * 96, 3, -1e3f, 1e3f);
  const uint32_t specials[] = {0x3F808000u, 0x3F818000u, 0x3F807FFFu, 0xBF808001u, 0x7F7FFFFFu,
                               0x7F7F8000u, 0x7F800000u, 0xFF800000u, 0x7FC00001u, 0x7F800001u,
                               0xFFA12345u, 0x00000001u, 0x807FFFFFu, 0x00800000u, 0x80000000u,
                               0x00400000u, 0x0080FFFFu, 0x33800000u};
  for (size_t i = 0; i < std::size(specials); ++i) std::memcpy(&x[7 * i], &specials[i], 4);
  std::vector<uint16_t> a(4 * 96), b(4 * 96);
  bf16.x_to_bf16(x.data(), 4, 90, 96, a.data());
  vnni.x_to_bf16(x.data(), 4, 90, 96, b.data());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "value " << i;

  if (bf16_pair_order_probe(bf16, pool) != 0.0f) {
    GTEST_SKIP() << "this CPU's vdpbf16ps does not add the odd product first: the matmuls' bits "
                    "differ from the emulation's by design";
  }
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K,
                      DType::kQ6_K, DType::kQ2_K, DType::kIQ4_XS}) {
    const int64_t n = 70, k = tensor::is_low_bit_quant(dtype) ? 1024 : 1056;
    StoredWeight sw = random_stored_weight(dtype, n, k, 5);
    MatmulWeight w = MatmulWeight::prepare(sw.view);
    std::vector<float> bias = random_floats(n, 6);
    for (int64_t m : {1, 3, 16, 40, 300}) {
      std::vector<float> xm = random_floats(m * k, 7, -3.0f, 3.0f);
      for (MatmulKernel kernel : {MatmulKernel::kStatic, MatmulKernel::kOwn}) {
        std::vector<float> y_bf16(m * n), y_vnni(m * n);
        cpu::run_matmul(bf16, xm.data(), m, w, bias.data(), y_bf16.data(), pool, kernel);
        cpu::run_matmul(vnni, xm.data(), m, w, bias.data(), y_vnni.data(), pool, kernel);
        ASSERT_EQ(std::memcmp(y_bf16.data(), y_vnni.data(), y_bf16.size() * sizeof(float)), 0)
            << tensor::dtype_name(dtype) << " m " << m << " kernel " << static_cast<int>(kernel);
      }
    }
  }
}

// Sets every code of the GGUF blocks of a panel dtype to its largest
// magnitude (and the K-quants' sub-block scales and mins to their largest),
// leaving the f16 factors: the int16 sums of the AVX2 kernel at their bound.
void set_extreme_codes(DType dtype, std::vector<uint8_t>& bytes) {
  struct Range {
    size_t block, begin, end;
    uint8_t value;
  };
  const Range r = dtype == DType::kQ8_0     ? Range{34, 2, 34, 0x80}  // -128
                  : dtype == DType::kQ4_0   ? Range{sizeof(tensor::BlockQ4_0), 2, 18, 0xFF}
                  : dtype == DType::kQ5_0   ? Range{sizeof(tensor::BlockQ5_0), 2, 22, 0xFF}
                  : dtype == DType::kIQ4_NL ? Range{sizeof(tensor::BlockIQ4_NL), 2, 18, 0x00}
                  : dtype == DType::kIQ4_XS ? Range{sizeof(tensor::BlockIQ4_XS), 8, 136, 0x00}
                  : dtype == DType::kQ2_K   ? Range{sizeof(tensor::BlockQ2_K), 0, 80, 0xFF}
                  : dtype == DType::kQ3_K   ? Range{sizeof(tensor::BlockQ3_K), 0, 108, 0xFF}
                  : dtype == DType::kQ4_K   ? Range{sizeof(tensor::BlockQ4_K), 4, 144, 0xFF}
                  : dtype == DType::kQ5_K   ? Range{sizeof(tensor::BlockQ5_K), 4, 176, 0xFF}
                                            : Range{sizeof(tensor::BlockQ6_K), 0, 192, 0xFF};
  for (size_t b = 0; b + r.block <= bytes.size(); b += r.block) {
    std::fill(bytes.begin() + b + r.begin, bytes.begin() + b + r.end, r.value);
    if (dtype == DType::kIQ4_XS) {  // scales 63 - 32
      std::fill(bytes.begin() + b + 2, bytes.begin() + b + 8, 0xFF);
    } else if (dtype == DType::kQ6_K) {  // scales -128 and 127
      for (size_t i = 192; i < 208; ++i) bytes[b + i] = i % 2 == 0 ? 0x80 : 0x7F;
    }
  }
}

void check_avx2_panel_bits(const cpu::KernelTable& avx2);

// The AVX2 panel kernels (vpmaddubsw + vpmaddwd; with AVX-VNNI, vpdpbusd on
// ymm) build the same exact int32 block and super-block sums as the
// AVX512-VNNI one (vpdpbusd) and scale them with the same f32 operations in
// the same order, so every output has the same bits: every panel type, x-row
// counts that take each tile shape (1-4 rows, both halves or one per pass)
// and prefill sizes, a last panel with rows in one half and in both, bias, a
// lone last block, Q8_0 codes of -128, zero and large x, and every code at
// its bound (set_extreme_codes).
TEST(DispatchTest, Avx2PanelKernelComputesTheAvx512PanelKernelsBits) {
  if (!cpu::avx2_supported() || !cpu::avx512_vnni_supported()) {
    GTEST_SKIP() << "needs AVX2 and AVX-512 VNNI";
  }
  std::vector<const cpu::KernelTable*> avx2_tables = {&cpu::avx2_kernels()};
  if (cpu::avx2_vnni_supported()) avx2_tables.push_back(&cpu::avx2_vnni_kernels());
  for (const cpu::KernelTable* table : avx2_tables) {
    SCOPED_TRACE(table->name);
    check_avx2_panel_bits(*table);
  }
}

void check_avx2_panel_bits(const cpu::KernelTable& avx2) {
  const cpu::KernelTable& vnni = *cpu::avx512_vnni_kernels();
  ThreadPool pool(2);
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ5_0, DType::kIQ4_NL, DType::kIQ4_XS,
                      DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    ASSERT_TRUE(cpu::reads_panels(avx2, dtype) && cpu::reads_panels(vnni, dtype))
        << tensor::dtype_name(dtype);
    const int64_t k = cpu::panels_read_x_groups(dtype) || dtype == DType::kIQ4_XS ? 1024 : 1056;
    for (int64_t n : {70, 90}) {
      StoredWeight sw = random_stored_weight(dtype, n, k, 11);
      if (dtype == DType::kQ8_0) {  // some codes -128 (34-byte blocks: f16 d, 32 int8)
        for (size_t at = 2; at < sw.bytes.size(); at += 34 * 3 + 5) sw.bytes[at] = 0x80;
      }
      MatmulWeight w = MatmulWeight::prepare(sw.view);
      ASSERT_NE(w.panels(), nullptr);
      std::vector<float> bias = random_floats(n, 12);
      for (int64_t m : {1, 2, 3, 4, 5, 7, 16, 40}) {
        std::vector<float> x = random_floats(m * k, 13 + static_cast<uint32_t>(m), -3.0f, 3.0f);
        for (int64_t v = 0; v < 32; ++v) x[v] = 0.0f;  // a zero block (d = 0)
        x[m * k - 1] = 1e4f;                           // an outlier in the last block
        std::vector<float> y_avx2(m * n), y_vnni(m * n);
        cpu::run_matmul(avx2, x.data(), m, w, bias.data(), y_avx2.data(), pool);
        cpu::run_matmul(vnni, x.data(), m, w, bias.data(), y_vnni.data(), pool);
        ASSERT_EQ(std::memcmp(y_avx2.data(), y_vnni.data(), y_avx2.size() * sizeof(float)), 0)
            << tensor::dtype_name(dtype) << " n " << n << " m " << m;
        std::vector<float> y_nobias(m * n);
        cpu::run_matmul(avx2, x.data(), m, w, nullptr, y_nobias.data(), pool);
        cpu::run_matmul(vnni, x.data(), m, w, nullptr, y_vnni.data(), pool);
        ASSERT_EQ(std::memcmp(y_nobias.data(), y_vnni.data(), y_nobias.size() * sizeof(float)), 0)
            << tensor::dtype_name(dtype) << " n " << n << " m " << m << " without bias";
      }
    }
    // Every code at its largest magnitude against x at +-127 (rows of one
    // sign, and alternating).
    StoredWeight sw = random_stored_weight(dtype, 32, k, 14);
    set_extreme_codes(dtype, sw.bytes);
    MatmulWeight w = MatmulWeight::prepare(sw.view);
    const int64_t m = 3;
    std::vector<float> x(m * k);
    for (int64_t v = 0; v < k; ++v) {
      x[v] = 2.0f;
      x[k + v] = -2.0f;
      x[2 * k + v] = v % 2 == 0 ? 2.0f : -2.0f;
    }
    std::vector<float> y_avx2(m * 32), y_vnni(m * 32);
    cpu::run_matmul(avx2, x.data(), m, w, nullptr, y_avx2.data(), pool);
    cpu::run_matmul(vnni, x.data(), m, w, nullptr, y_vnni.data(), pool);
    ASSERT_EQ(std::memcmp(y_avx2.data(), y_vnni.data(), y_avx2.size() * sizeof(float)), 0)
        << tensor::dtype_name(dtype) << " at the codes' bounds";
  }
}

INSTANTIATE_TEST_SUITE_P(Tables, KernelTest,
                         ::testing::Values("generic", "avx2", "avx2_vnni", "avx512", "avx512_vnni"),
                         [](const auto& info) { return info.param; });

// Pins the reference to HF rotate-half semantics with hand-computed values.
TEST(ReferenceTest, RopeNeoxHandComputed) {
  float x[4] = {1, 2, 3, 4};  // pairs (x0, x2) and (x1, x3)
  float inv_freq[2] = {1.0f, 0.5f};
  int32_t pos = 2;
  reference::rope(x, &pos, 1, 1, 4, inv_freq, RopeStyle::kNeox);
  float c0 = std::cos(2.0f), s0 = std::sin(2.0f), c1 = std::cos(1.0f), s1 = std::sin(1.0f);
  EXPECT_FLOAT_EQ(x[0], 1 * c0 - 3 * s0);
  EXPECT_FLOAT_EQ(x[2], 3 * c0 + 1 * s0);
  EXPECT_FLOAT_EQ(x[1], 2 * c1 - 4 * s1);
  EXPECT_FLOAT_EQ(x[3], 4 * c1 + 2 * s1);
}

TEST(DispatchTest, BackendNameMatchesCpu) {
  std::string name = cpu_backend_name();
  if (cpu::avx512_supported()) {
    EXPECT_EQ(name.rfind("avx512_bf16", 0), 0u) << name;
  } else if (cpu::avx512_vnni_supported()) {
    EXPECT_EQ(name.rfind("avx512_vnni", 0), 0u) << name;
  } else if (cpu::avx2_vnni_supported()) {
    EXPECT_EQ(name, "avx2_vnni");
  } else if (cpu::avx2_supported()) {
    EXPECT_EQ(name, "avx2");
  } else {
    EXPECT_EQ(name, "generic");
  }
}

}  // namespace
}  // namespace strata::ops

namespace strata::ops {
namespace {

TEST(MoeRoute, MatchesReferenceOverExpertCountsAndTopK) {
  for (int64_t experts : {2, 8, 60, 128}) {
    for (int64_t k : {1, 2, 4, 8}) {
      if (k > experts) continue;
      for (bool renormalize : {false, true}) {
        SCOPED_TRACE("E=" + std::to_string(experts) + " k=" + std::to_string(k));
        const int64_t tokens = 7;
        // Distinct logits a multiple of 1e-2 apart: no near-ties for the two
        // softmax implementations to order differently.
        std::vector<float> logits(tokens * experts);
        std::vector<int> perm(experts);
        for (int64_t t = 0; t < tokens; ++t) {
          for (int64_t e = 0; e < experts; ++e) perm[e] = static_cast<int>(e);
          std::shuffle(perm.begin(), perm.end(), std::mt19937(static_cast<uint32_t>(t + experts)));
          for (int64_t e = 0; e < experts; ++e) logits[t * experts + e] = 0.01f * perm[e] - 0.3f;
        }
        std::vector<int32_t> ids(tokens * k), ref_ids(tokens * k);
        std::vector<float> w(tokens * k), ref_w(tokens * k);
        moe_route(logits.data(), tokens, experts, k, renormalize, ids.data(), w.data());
        reference::moe_route(logits.data(), tokens, experts, k, renormalize, ref_ids.data(),
                             ref_w.data());
        EXPECT_EQ(ids, ref_ids);
        for (int64_t i = 0; i < tokens * k; ++i) EXPECT_NEAR(w[i], ref_w[i], 1e-6f);
        if (renormalize) {
          float sum = 0;
          for (int64_t i = 0; i < k; ++i) sum += w[i];
          EXPECT_NEAR(sum, 1.0f, 1e-6f);
        }
      }
    }
  }
}

TEST(MoeRoute, TiesPickTheLowerExpertFirst) {
  const std::vector<float> logits = {0.5f, 1.0f, 1.0f, 0.5f, 1.0f};
  std::vector<int32_t> ids(3);
  std::vector<float> w(3);
  moe_route(logits.data(), 1, 5, 3, true, ids.data(), w.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2, 4}));
  for (float x : w) EXPECT_NEAR(x, 1.0f / 3, 1e-6f);
}

}  // namespace
}  // namespace strata::ops
