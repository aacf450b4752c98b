// grouped_matmul and grouped_matmul_scatter_add against matmul() run one call
// per entry (bit for bit: the grouped path must not change a token's result)
// and against the scalar reference, over both kernel tables, every weight
// dtype, group sizes, decode (1..16) and prefill row counts, shared and
// separate inputs, and widths that are not multiples of the 16-row grain or
// the prefill GEMM's 128-row panels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
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

struct Weight {
  std::string bytes;
  tensor::TensorView view;
  MatmulWeight prepared;
};

std::unique_ptr<Weight> make_weight(DType dtype, int64_t n, int64_t k, uint32_t seed) {
  auto w = std::make_unique<Weight>();
  if (tensor::is_low_bit_quant(dtype)) {
    w->bytes = tensor::testing::random_quantized(dtype, n * k, seed);
  } else {
    std::vector<float> f = random_floats(n * k, seed);
    w->bytes.assign(static_cast<size_t>(tensor::dtype_size_bytes(dtype, n * k)), '\0');
    auto* u16 = reinterpret_cast<uint16_t*>(w->bytes.data());
    for (int64_t i = 0; i < n * k; ++i) {
      if (dtype == DType::kF32) std::memcpy(w->bytes.data() + 4 * i, &f[i], 4);
      if (dtype == DType::kF16) u16[i] = tensor::f32_to_f16(f[i]);
      if (dtype == DType::kBF16) u16[i] = tensor::f32_to_bf16(f[i]);
    }
    if (dtype == DType::kQ8_0) {
      tensor::quantize_q8_0(f.data(), n * k, reinterpret_cast<tensor::BlockQ8_0*>(w->bytes.data()));
    }
  }
  w->view = {w->bytes.data(), dtype, {n, k}};
  w->prepared = MatmulWeight::prepare(w->view);
  return w;
}

std::vector<DType> all_dtypes() {
  std::vector<DType> types = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0};
  for (DType t : tensor::testing::kLowBitQuantTypes) types.push_back(t);
  return types;
}

// One grouped case: `rows[i]` rows for matmul i, weights [n_i, k].
struct Group {
  std::vector<std::unique_ptr<Weight>> weights;
  std::vector<std::vector<float>> x;
  std::vector<GroupedMatmul> mm;
  std::vector<std::vector<float>> y;
  std::vector<std::vector<WeightedRow>> routed;
};

// shared_x: every matmul reads the same x rows (a decode step of one token).
Group make_group(DType dtype, const std::vector<int64_t>& rows, const std::vector<int64_t>& ns,
                 int64_t k, bool shared_x, int64_t num_tokens, uint32_t seed) {
  Group g;
  const size_t count = rows.size();
  g.x.resize(shared_x ? 1 : count);
  g.y.resize(count);
  g.routed.resize(count);
  for (size_t i = 0; i < count; ++i) {
    g.weights.push_back(make_weight(dtype, ns[i], k, seed + 17 * static_cast<uint32_t>(i)));
    if (!shared_x || i == 0) g.x[i] = random_floats(rows[i] * k, seed + 1000 + i, -2.0f, 2.0f);
    g.y[i].assign(static_cast<size_t>(rows[i] * ns[i]), NAN);
    for (int64_t r = 0; r < rows[i]; ++r) {
      // Distinct tokens within one matmul, as routing gives (an expert sees a token once).
      g.routed[i].push_back({static_cast<int32_t>((r * 5 + i) % num_tokens),
                             0.1f + 0.05f * static_cast<float>((r + 3 * i) % 7)});
    }
    g.mm.push_back({g.x[shared_x ? 0 : i].data(), rows[i], &g.weights[i]->prepared,
                    g.y[i].data(), g.routed[i].data()});
  }
  return g;
}

class GroupedMatmulTest : public testing::KernelTableTest {};

struct GroupShape {
  std::vector<int64_t> rows;
  std::vector<int64_t> ns;
  int64_t k;
  bool shared_x;
};

std::vector<GroupShape> shapes() {
  return {
      {{1}, {48}, 256, true},
      {{1, 1, 1, 1}, {64, 64, 64, 64}, 256, true},       // decode, top-4
      {{1, 1, 1, 1, 1}, {64, 64, 64, 64, 40}, 512, true},  // + a narrower shared expert
      {{3, 1, 16, 2}, {67, 67, 67, 67}, 256, false},     // a few tokens, uneven load
      {{2, 7}, {33, 130}, 512, false},
      {{40, 17, 3, 64}, {256, 256, 256, 256}, 256, false},  // prefill: GEMM panels
      {{130, 20}, {200, 200}, 512, false},                  // a partial panel
  };
}

TEST_P(GroupedMatmulTest, MatchesPerMatmulCallsBitForBit) {
  uint32_t seed = 1;
  for (DType dtype : all_dtypes()) {
    for (const GroupShape& s : shapes()) {
      SCOPED_TRACE(std::string(tensor::dtype_name(dtype)) + " count=" +
                   std::to_string(s.rows.size()) + " k=" + std::to_string(s.k));
      Group g = make_group(dtype, s.rows, s.ns, s.k, s.shared_x, 256, seed++);
      cpu::run_grouped_matmul(*table_, g.mm.data(), static_cast<int64_t>(g.mm.size()), pool_);
      for (size_t i = 0; i < g.mm.size(); ++i) {
        const GroupedMatmul& mm = g.mm[i];
        std::vector<float> want(static_cast<size_t>(mm.m * mm.w->n()));
        cpu::run_matmul(*table_, mm.x, mm.m, *mm.w, nullptr, want.data(), pool_);
        ASSERT_EQ(0, std::memcmp(want.data(), mm.y, want.size() * sizeof(float))) << "matmul " << i;
        // And near the scalar reference (exact f32 math on the stored weights).
        std::vector<float> ref(want.size());
        reference::matmul(mm.x, mm.m, g.weights[i]->view, nullptr, ref.data());
        EXPECT_LT(normalized_error(mm.x, mm.m, g.weights[i]->view, nullptr, mm.y, ref.data()),
                  2e-2);
      }
    }
  }
}

// Matmuls of different dtypes on the same x rows: each reads x prepared in
// its own layout (per 32 or per 256 values, chunks in value or plane order),
// never another dtype's.
TEST_P(GroupedMatmulTest, MixedDtypesOnSharedXMatchPerMatmulCalls) {
  const std::vector<DType> dtypes = {DType::kQ4_K, DType::kQ2_K,   DType::kQ6_K, DType::kQ3_K,
                                     DType::kQ4_0, DType::kIQ4_XS, DType::kQ8_0, DType::kQ5_K};
  for (int64_t m : {1, 3, 20}) {
    SCOPED_TRACE("m=" + std::to_string(m));
    const int64_t k = 512;
    std::vector<float> x = random_floats(m * k, 7 + static_cast<uint32_t>(m), -2.0f, 2.0f);
    std::vector<std::unique_ptr<Weight>> weights;
    std::vector<std::vector<float>> y(dtypes.size());
    std::vector<GroupedMatmul> mm;
    for (size_t i = 0; i < dtypes.size(); ++i) {
      weights.push_back(make_weight(dtypes[i], 48, k, 300 + static_cast<uint32_t>(i)));
      y[i].assign(static_cast<size_t>(m * 48), NAN);
      mm.push_back({x.data(), m, &weights[i]->prepared, y[i].data(), nullptr});
    }
    cpu::run_grouped_matmul(*table_, mm.data(), static_cast<int64_t>(mm.size()), pool_);
    for (size_t i = 0; i < mm.size(); ++i) {
      std::vector<float> want(static_cast<size_t>(m * 48));
      cpu::run_matmul(*table_, x.data(), m, weights[i]->prepared, nullptr, want.data(), pool_);
      ASSERT_EQ(0, std::memcmp(want.data(), y[i].data(), want.size() * sizeof(float)))
          << tensor::dtype_name(dtypes[i]);
    }
  }
}

TEST_P(GroupedMatmulTest, ScatterAddMatchesPerMatmulCallsBitForBit) {
  uint32_t seed = 100;
  const int64_t num_tokens = 256;
  for (DType dtype : all_dtypes()) {
    for (GroupShape s : shapes()) {
      for (int64_t& n : s.ns) n = s.ns[0];  // one output width
      SCOPED_TRACE(std::string(tensor::dtype_name(dtype)) + " count=" +
                   std::to_string(s.rows.size()) + " k=" + std::to_string(s.k));
      Group g = make_group(dtype, s.rows, s.ns, s.k, s.shared_x, num_tokens, seed++);
      const int64_t n = s.ns[0];
      std::vector<float> init = random_floats(num_tokens * n, seed + 7);
      std::vector<float> out = init, want = init;
      std::vector<double> ref(init.begin(), init.end());
      cpu::run_grouped_matmul_scatter_add(*table_, g.mm.data(),
                                          static_cast<int64_t>(g.mm.size()), out.data(), pool_);
      for (size_t i = 0; i < g.mm.size(); ++i) {
        const GroupedMatmul& mm = g.mm[i];
        std::vector<float> y(static_cast<size_t>(mm.m * n));
        cpu::run_matmul(*table_, mm.x, mm.m, *mm.w, nullptr, y.data(), pool_);
        weighted_scatter_add(y.data(), mm.m, n, mm.rows, want.data());
        std::vector<float> yr(y.size());
        reference::matmul(mm.x, mm.m, g.weights[i]->view, nullptr, yr.data());
        for (int64_t r = 0; r < mm.m; ++r) {
          for (int64_t j = 0; j < n; ++j) {
            ref[mm.rows[r].token * n + j] += double{mm.rows[r].weight} * yr[r * n + j];
          }
        }
      }
      ASSERT_EQ(0, std::memcmp(want.data(), out.data(), out.size() * sizeof(float)));
      double worst = 0, largest = 0;
      for (size_t j = 0; j < out.size(); ++j) {
        worst = std::max(worst, std::fabs(out[j] - ref[j]));
        largest = std::max(largest, std::fabs(ref[j]));
      }
      EXPECT_LT(worst, 2e-2 * largest);
    }
  }
}

TEST(WeightedScatterAdd, AddsWeightedRowsInOrder) {
  // y: 3 rows of width 2 into 2 tokens; token 1 gets rows 0 and 2.
  const float y[] = {1, 2, 10, 20, 100, 200};
  const WeightedRow rows[] = {{1, 0.5f}, {0, 2.0f}, {1, 0.25f}};
  float out[] = {1, 1, 1, 1};
  weighted_scatter_add(y, 3, 2, rows, out);
  EXPECT_FLOAT_EQ(out[0], 21.0f);
  EXPECT_FLOAT_EQ(out[1], 41.0f);
  EXPECT_FLOAT_EQ(out[2], 1.0f + 0.5f + 25.0f);
  EXPECT_FLOAT_EQ(out[3], 1.0f + 1.0f + 50.0f);
}

TEST(GroupedMatmulDeathTest, RejectsEmptyMatmuls) {
  std::unique_ptr<Weight> w = make_weight(DType::kF32, 16, 32, 3);
  std::vector<float> x(32), y(16);
  GroupedMatmul mm{x.data(), 0, &w->prepared, y.data(), nullptr};
  ThreadPool pool(1);
  EXPECT_DEATH(grouped_matmul(&mm, 1, pool), "must be at least 1");
}

INSTANTIATE_TEST_SUITE_P(Tables, GroupedMatmulTest,
                         ::testing::Values("generic", "avx2", "avx2_vnni", "avx512",
                                           "avx512_vnni"));

}  // namespace
}  // namespace strata::ops
