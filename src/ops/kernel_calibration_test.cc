// Kernel calibration: every candidate kernel against its reference, the
// decision rule and the cache, with an injected timer (no timed asserts).
#include "ops/kernel_calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "base/thread_pool.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/onednn_gemm.h"
#include "ops/matmul_choice.h"
#include "ops/matmul_test_util.h"
#include "ops/ops.h"
#include "ops/reference.h"

namespace strata::ops {
namespace {

using tensor::DType;
using testing::normalized_error;
using testing::random_floats;
using testing::random_stored_weight;
using testing::store_weight;
using testing::StoredWeight;

// The reference with the numerics `kernel` promises for (dtype, m).
void reference_for(MatmulKernel kernel, const float* x, int64_t m, const tensor::TensorView& w,
                   const float* bias, float* ref) {
  const DType dtype = w.dtype;
  // (Weights in panels keep int8 x above 16 rows with own-int8 and static,
  // as without oneDNN, STRATA_NO_ONEDNN=1.)
  if (cpu::uses_int8_x(cpu::active_kernels(), dtype, m, kernel)) {
    reference::matmul_q8_activations(x, m, w, bias, ref, cpu::lowbit_x_block(dtype));
  } else if (cpu::matmul_mode(dtype, m) == cpu::MatmulMode::kF32) {
    reference::matmul(x, m, w, bias, ref);
  } else {
    reference::matmul_bf16_rounded(x, m, w, bias, dtype != DType::kBF16, ref);
  }
}

class CalibrationTest : public ::testing::Test {
 protected:
  void TearDown() override { set_matmul_choices({}); }
  ThreadPool pool_{2};
};

// Every kernel calibration may choose, for every class, against the reference
// with that kernel's numerics (the same 1e-5 bound as ops_test).
TEST_F(CalibrationTest, EveryCandidateMatchesReference) {
  int variant = 0, checked = 0;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0}) {
    for (int64_t m : {1, 3, 16, 17, 64}) {
      for (auto [n, k] : {std::pair<int64_t, int64_t>{67, 96}, {130, 320}, {256, 1088}}) {
        const MatmulShapeClass cls{dtype, n, k, matmul_regime(m)};
        for (MatmulKernel kernel : matmul_candidates(cls)) {
          SCOPED_TRACE(std::string(tensor::dtype_name(dtype)) + " m=" + std::to_string(m) +
                       " n=" + std::to_string(n) + " k=" + std::to_string(k) + " " +
                       matmul_kernel_name(kernel));
          const uint32_t seed = static_cast<uint32_t>(variant++);
          StoredWeight s = store_weight(random_floats(n * k, seed), n, k, dtype);
          MatmulWeight w = MatmulWeight::prepare(s.view);
          std::vector<float> x = random_floats(m * k, seed + 1);
          std::vector<float> bias = random_floats(n, seed + 2);
          const float* b = variant % 2 == 0 ? bias.data() : nullptr;
          std::vector<float> y(static_cast<size_t>(m * n), NAN), ref(y.size());
          cpu::run_matmul(cpu::active_kernels(), x.data(), m, w, b, y.data(), pool_, kernel);
          reference_for(kernel, x.data(), m, s.view, b, ref.data());
          EXPECT_LT(normalized_error(x.data(), m, s.view, b, y.data(), ref.data()), 1e-5);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 4 * 5 * 3 - 1);
}

// The low-bit types kept in panels, for every candidate of their classes
// (prefill: the int8 panel kernel and oneDNN on bf16 tiles made from the
// panels), on a prepared weight and on a fused one that keeps only panels.
TEST_F(CalibrationTest, PanelLowbitCandidatesMatchReference) {
  int checked = 0;
  for (DType dtype : {DType::kQ4_0, DType::kQ5_0, DType::kIQ4_NL, DType::kIQ4_XS, DType::kQ2_K,
                      DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    for (int64_t m : {1, 17, 64}) {
      for (auto [n, k] : {std::pair<int64_t, int64_t>{67, 256}, {130, 1280}}) {
        StoredWeight part_a = random_stored_weight(dtype, n - 16, k, 71);
        StoredWeight part_b = random_stored_weight(dtype, 16, k, 72);
        std::vector<uint8_t> rows = part_a.bytes;  // the fused weight's rows
        rows.insert(rows.end(), part_b.bytes.begin(), part_b.bytes.end());
        const tensor::TensorView view{rows.data(), dtype, {n, k}};
        MatmulWeight prepared = MatmulWeight::prepare(view);
        MatmulWeight fused = MatmulWeight::concat_rows({&part_a.view, &part_b.view});
        std::vector<float> x = random_floats(m * k, 73), bias = random_floats(n, 74);
        for (MatmulKernel kernel : matmul_candidates({dtype, n, k, matmul_regime(m)})) {
          for (const MatmulWeight* w : {&prepared, &fused}) {
            SCOPED_TRACE(std::string(tensor::dtype_name(dtype)) + " m=" + std::to_string(m) +
                         " k=" + std::to_string(k) + " " + matmul_kernel_name(kernel) +
                         (w == &fused ? " fused" : ""));
            std::vector<float> y(static_cast<size_t>(m * n), NAN), ref(y.size());
            cpu::run_matmul(cpu::active_kernels(), x.data(), m, *w, bias.data(), y.data(), pool_,
                            kernel);
            reference_for(kernel, x.data(), m, view, bias.data(), ref.data());
            EXPECT_LT(normalized_error(x.data(), m, view, bias.data(), y.data(), ref.data()), 1e-5);
            ++checked;
          }
        }
      }
    }
  }
  if (!cpu::reads_panels(cpu::active_kernels(), DType::kQ4_0)) return;
  // Per type, shape and m: two weights; prefill on panels with oneDNN has two candidates (a
  // table without a prefill GEMM, AVX2: its int8 panel kernel alone).
  const bool onednn_prefill =
      cpu::onednn_enabled() && cpu::active_kernels().matmul_prefill_range != nullptr;
  EXPECT_EQ(checked, 9 * 2 * (2 + 2 * (onednn_prefill ? 2 : 1) * 2));
}

// Decode is one regime for m <= 16: each decode candidate gives bit-identical
// rows whether a row is computed alone or among 16.
TEST_F(CalibrationTest, DecodeCandidatesAreBatchInvariant) {
  const int64_t n = 67, k = 1088, m = cpu::kDecodeMaxRows;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kQ8_0}) {
    StoredWeight s = store_weight(random_floats(n * k, 21), n, k, dtype);
    MatmulWeight w = MatmulWeight::prepare(s.view);
    std::vector<float> x = random_floats(m * k, 22);
    for (MatmulKernel kernel : matmul_candidates({dtype, n, k, MatmulRegime::kDecode})) {
      std::vector<float> batch(m * n), one(n);
      cpu::run_matmul(cpu::active_kernels(), x.data(), m, w, nullptr, batch.data(), pool_, kernel);
      for (int64_t i = 0; i < m; ++i) {
        cpu::run_matmul(cpu::active_kernels(), x.data() + i * k, 1, w, nullptr, one.data(), pool_,
                        kernel);
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_EQ(one[j], batch[i * n + j])
              << tensor::dtype_name(dtype) << " " << matmul_kernel_name(kernel) << " " << i;
        }
      }
    }
  }
}

// Where the AVX-512 kernels run, the decode tile variants (F32 / F16 / BF16:
// no software prefetch on one-row tiles, four-row m = 1 tiles; Q8_0 has
// none) give the same bits as the static kernel, at every
// decode m, on tails of k and of n, split over threads, and through
// ops::matmul and the grouped matmul once installed.
TEST_F(CalibrationTest, DecodeTileVariantsAreBitIdentical) {
  if (!cpu::is_avx512_table(cpu::active_kernels())) GTEST_SKIP() << "no AVX-512 kernels";
  int checked = 0;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0}) {
    for (auto [n, k] :
         {std::pair<int64_t, int64_t>{67, 96}, {130, 1024}, {301, 2080}, {70, 2100}}) {
      if (dtype == DType::kQ8_0 && k % 32 != 0) continue;  // Q8_0 rows are whole blocks
      const MatmulShapeClass cls{dtype, n, k, MatmulRegime::kDecode};
      const std::vector<MatmulKernel> cands = matmul_candidates(cls);
      std::vector<MatmulKernel> variants;
      for (MatmulKernel c : cands) {
        if (c == MatmulKernel::kOwnHwPrefetch || c == MatmulKernel::kOwnFourRows) {
          variants.push_back(c);
        }
      }
      if (dtype == DType::kQ8_0) {  // one kernel, no variants
        ASSERT_TRUE(variants.empty());
        continue;
      } else {
        ASSERT_EQ(variants, (std::vector<MatmulKernel>{MatmulKernel::kOwnHwPrefetch,
                                                       MatmulKernel::kOwnFourRows}));
      }
      StoredWeight s = store_weight(random_floats(n * k, 40 + checked), n, k, dtype);
      MatmulWeight w = MatmulWeight::prepare(s.view);
      std::vector<float> bias = random_floats(n, 41 + checked);
      for (MatmulKernel variant : variants) {
        for (int64_t m : {1, 2, 5, 7, 9, 13, 16}) {
          SCOPED_TRACE(std::string(tensor::dtype_name(dtype)) + " " + std::to_string(n) + "x" +
                       std::to_string(k) + " m=" + std::to_string(m) + " " +
                       matmul_kernel_name(variant));
          std::vector<float> x = random_floats(m * k, 42 + checked);
          std::vector<float> own(m * n, NAN), var(m * n, NAN), via_matmul(m * n, NAN);
          cpu::run_matmul(cpu::active_kernels(), x.data(), m, w, bias.data(), own.data(), pool_,
                          MatmulKernel::kOwn);
          cpu::run_matmul(cpu::active_kernels(), x.data(), m, w, bias.data(), var.data(), pool_,
                          variant);
          EXPECT_EQ(own, var);
          set_matmul_choices({{cls, variant}});
          EXPECT_EQ(chosen_matmul_kernel(dtype, n, k, m), variant);
          matmul(x.data(), m, w, bias.data(), via_matmul.data(), pool_);
          EXPECT_EQ(own, via_matmul);
          std::vector<float> grouped(m * n, NAN);
          GroupedMatmul g;
          g.x = x.data();
          g.m = m;
          g.w = &w;
          g.y = grouped.data();
          cpu::run_grouped_matmul(cpu::active_kernels(), &g, 1, pool_);
          std::vector<float> plain(m * n, NAN);
          cpu::run_matmul(cpu::active_kernels(), x.data(), m, w, nullptr, plain.data(), pool_,
                          MatmulKernel::kOwn);
          EXPECT_EQ(plain, grouped);
          set_matmul_choices({});
          ++checked;
        }
      }
    }
  }
  // 3 dtypes x 4 shapes x 2 variants x 7 m.
  EXPECT_EQ(checked, 3 * 4 * 2 * 7);
  // Never offered where it would change nothing or another kernel runs.
  for (MatmulKernel c : matmul_candidates({DType::kBF16, 896, 896, MatmulRegime::kPrefill})) {
    EXPECT_NE(c, MatmulKernel::kOwnHwPrefetch);
    EXPECT_NE(c, MatmulKernel::kOwnFourRows);
  }
  // Q8_0 in panels: the panel kernel alone (the exact kernel reads rows).
  if (cpu::reads_panels(cpu::active_kernels(), tensor::DType::kQ8_0)) {
    EXPECT_EQ(matmul_candidates({DType::kQ8_0, 896, 896, MatmulRegime::kDecode}),
              std::vector<MatmulKernel>{MatmulKernel::kOwn});
    if (cpu::onednn_enabled()) {
      EXPECT_EQ(matmul_candidates({DType::kQ8_0, 896, 896, MatmulRegime::kPrefill}),
                (std::vector<MatmulKernel>{MatmulKernel::kOwnInt8, MatmulKernel::kOnednn,
                                           MatmulKernel::kOwn}));
    }
  }
  // The low-bit types in panels: the panel kernel, or oneDNN on tiles from them.
  for (DType dtype : {DType::kQ4_0, DType::kIQ4_NL, DType::kQ5_0, DType::kIQ4_XS, DType::kQ2_K,
                      DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    if (!cpu::reads_panels(cpu::active_kernels(), dtype)) continue;
    EXPECT_EQ(matmul_candidates({dtype, 896, 896, MatmulRegime::kDecode}),
              std::vector<MatmulKernel>{MatmulKernel::kOwn});
    if (cpu::onednn_enabled()) {
      EXPECT_EQ(matmul_candidates({dtype, 896, 896, MatmulRegime::kPrefill}),
                (std::vector<MatmulKernel>{MatmulKernel::kOwnInt8, MatmulKernel::kOnednn}));
    }
  }
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kQ4_1}) {
    for (MatmulKernel c : matmul_candidates({dtype, 896, 896, MatmulRegime::kPrefill})) {
      EXPECT_NE(c, MatmulKernel::kOwnInt8) << tensor::dtype_name(dtype);
    }
  }
}

// Weights in panels (Q8_0, Q4_0, IQ4_NL, Q5_0, IQ4_XS, Q2_K ... Q6_K), prefill with own-int8 (and
// the static choice, which is it): each row has the bits it gets decoded alone, so a token's logits
// do not depend on whether it was prefilled or decoded, nor on the step's size.
TEST_F(CalibrationTest, PrefillOnPanelsHasTheDecodeBits) {
  if (!cpu::reads_panels(cpu::active_kernels(), DType::kQ8_0)) GTEST_SKIP() << "no panels here";
  for (auto [dtype, n, k] : {std::tuple<DType, int64_t, int64_t>{DType::kQ8_0, 67, 96},
                             {DType::kQ8_0, 130, 1088},
                             {DType::kQ4_0, 67, 96},
                             {DType::kQ4_0, 130, 1088},
                             {DType::kIQ4_NL, 130, 1088},
                             {DType::kQ5_0, 67, 96},
                             {DType::kQ5_0, 130, 1088},
                             {DType::kIQ4_XS, 67, 256},
                             {DType::kIQ4_XS, 130, 1280},
                             {DType::kQ2_K, 67, 256},
                             {DType::kQ2_K, 130, 1280},
                             {DType::kQ3_K, 67, 256},
                             {DType::kQ3_K, 130, 1280},
                             {DType::kQ4_K, 67, 256},
                             {DType::kQ4_K, 130, 1280},
                             {DType::kQ5_K, 67, 256},
                             {DType::kQ5_K, 130, 1280},
                             {DType::kQ6_K, 67, 256},
                             {DType::kQ6_K, 130, 1280}}) {
    SCOPED_TRACE(tensor::dtype_name(dtype));
    const int64_t m = 41;
    StoredWeight s = random_stored_weight(dtype, n, k, 61);
    MatmulWeight w = MatmulWeight::prepare(s.view);
    std::vector<float> x = random_floats(m * k, 62), bias = random_floats(n, 63);
    for (MatmulKernel kernel : {MatmulKernel::kOwnInt8, MatmulKernel::kStatic}) {
      std::vector<float> batch(m * n), one(n);
      cpu::run_matmul(cpu::active_kernels(), x.data(), m, w, bias.data(), batch.data(), pool_,
                      kernel);
      for (int64_t i = 0; i < m; ++i) {
        cpu::run_matmul(cpu::active_kernels(), x.data() + i * k, 1, w, bias.data(), one.data(),
                        pool_, MatmulKernel::kOwn);
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_EQ(one[j], batch[i * n + j])
              << matmul_kernel_name(kernel) << " k=" << k << " row " << i << " col " << j;
        }
      }
    }
  }
}

TEST(MatmulKernelName, EveryNameParsesBack) {
  for (MatmulKernel k :
       {MatmulKernel::kStatic, MatmulKernel::kOwn, MatmulKernel::kOwnExact, MatmulKernel::kOnednn,
        MatmulKernel::kOwnHwPrefetch, MatmulKernel::kOwnFourRows, MatmulKernel::kOwnInt8}) {
    MatmulKernel back = MatmulKernel::kStatic;
    EXPECT_TRUE(parse_matmul_kernel(matmul_kernel_name(k), &back)) << matmul_kernel_name(k);
    EXPECT_EQ(back, k);
  }
  MatmulKernel unused;
  EXPECT_FALSE(parse_matmul_kernel("own-prefetch", &unused));
}

TEST(ChooseMatmulKernel, FasterBeyondMarginSomewhereSlowerNowhere) {
  // Static only.
  EXPECT_EQ(choose_matmul_kernel({{1.0, 2.0}}, 0.05), 0u);
  // Equal, or faster by less than the margin: static stays.
  EXPECT_EQ(choose_matmul_kernel({{1.0, 2.0}, {1.0, 2.0}}, 0.05), 0u);
  EXPECT_EQ(choose_matmul_kernel({{1.0, 2.0}, {0.96, 1.92}}, 0.05), 0u);
  // Faster by more than the margin at both probes: it wins.
  EXPECT_EQ(choose_matmul_kernel({{1.0, 2.0}, {0.9, 1.8}}, 0.05), 1u);
  // Faster at one probe, the same (within the margin) at the other: it wins.
  EXPECT_EQ(choose_matmul_kernel({{1.0, 2.0}, {0.5, 2.0}}, 0.05), 1u);
  EXPECT_EQ(choose_matmul_kernel({{1.0, 2.0}, {0.5, 2.08}}, 0.05), 1u);
  // Faster at one probe, slower beyond the margin at the other: static stays.
  EXPECT_EQ(choose_matmul_kernel({{1.0, 2.0}, {0.5, 2.2}}, 0.05), 0u);
  EXPECT_EQ(choose_matmul_kernel({{1.0, 2.0}, {0.6, 4.0}}, 0.05), 0u);
  // Two winners: the smaller mean ratio (candidate 1: 0.5 and 0.9, mean 0.7,
  // beats candidate 2's 0.8 and 0.8).
  EXPECT_EQ(choose_matmul_kernel({{1.0, 2.0}, {0.5, 1.8}, {0.8, 1.6}}, 0.05), 1u);
  EXPECT_EQ(choose_matmul_kernel({{1.0, 2.0}, {0.9, 1.8}, {0.8, 1.6}}, 0.05), 2u);
  // A failed measurement (0 or NaN) never wins.
  EXPECT_EQ(choose_matmul_kernel({{1.0}, {0.0}}, 0.05), 0u);
  EXPECT_EQ(choose_matmul_kernel({{1.0}, {NAN}}, 0.05), 0u);
}

// A timer whose answers are given per kernel (seconds scaled by the class's
// size so rates are finite), counting its calls.
struct FakeTimer {
  std::map<MatmulKernel, double> factor;
  int calls = 0;
  MatmulTimer get() {
    return [this](const MatmulShapeClass& c, MatmulKernel kernel, int64_t m) {
      ++calls;
      return factor.at(kernel) * 1e-9 * static_cast<double>(c.n * c.k * m);
    };
  }
};

// Timed calls of one set of rounds of `cands` (median_seconds): a warm-up
// when asked and `reps` rounds per probe, where a tile variant running the
// static kernel's code at a probe is not timed.
int expected_timer_calls(const std::vector<MatmulKernel>& cands, MatmulRegime regime, int reps,
                         bool warm_up) {
  int calls = 0;
  for (int64_t m : calibration_probe_rows(regime)) {
    for (size_t i = 0; i < cands.size(); ++i) {
      const bool timed =
          i == 0 || cands[0] != MatmulKernel::kOwn || decode_variant_matters_at(cands[i], m);
      if (timed) calls += reps + (warm_up ? 1 : 0);
    }
  }
  return calls;
}

std::vector<MatmulShapeClass> model_shapes() {
  return {{DType::kBF16, 1152, 896, MatmulRegime::kDecode},
          {DType::kBF16, 896, 4864, MatmulRegime::kDecode},
          {DType::kQ8_0, 896, 896, MatmulRegime::kDecode},
          {DType::kF32, 128, 896, MatmulRegime::kDecode}};
}

TEST_F(CalibrationTest, ChoosesTheFastestGivenTimings) {
  CalibrationOptions o;
  o.mode = CalibrationMode::kForce;
  o.budget_seconds = 1e9;
  // Every non-static candidate at `other` times the static kernel's time.
  for (double other : {1.0, 0.97, 0.5, 2.0}) {
    int calls = 0;
    MatmulTimer timer = [&](const MatmulShapeClass& c, MatmulKernel k, int64_t m) {
      ++calls;
      const double f = k == matmul_candidates(c)[0] ? 1.0 : other;
      return f * 1e-9 * static_cast<double>(c.n * c.k * m);
    };
    CalibrationReport r = calibrate_matmul_kernels(model_shapes(), o, timer);
    ASSERT_EQ(r.classes.size(), 8u);  // 4 shapes x 2 regimes
    int expected_calls = 0;
    for (const ClassCalibration& c : r.classes) {
      const std::vector<MatmulKernel> cands = matmul_candidates(c.cls);
      SCOPED_TRACE(std::string(tensor::dtype_name(c.cls.dtype)) + " " + std::to_string(c.cls.n) +
                   "x" + std::to_string(c.cls.k) + " " + matmul_regime_name(c.cls.regime) +
                   " other=" + std::to_string(other));
      EXPECT_TRUE(c.measured);
      EXPECT_EQ(c.static_kernel, cands[0]);
      EXPECT_EQ(c.chosen, other < 0.95 && cands.size() > 1 ? cands[1] : cands[0]);
      EXPECT_GT(c.chosen_rate, 0.0);
      if (c.chosen != c.static_kernel) {
        EXPECT_NEAR(c.chosen_rate, c.static_rate / other, 1e-6);
      }
      // A warm-up, then reps rounds; a change is confirmed by reps more rounds
      // of the static kernel and the winner.
      expected_calls += expected_timer_calls(cands, c.cls.regime, o.reps, true);
      if (c.chosen != c.static_kernel) {
        expected_calls += expected_timer_calls({cands[0], c.chosen}, c.cls.regime, o.reps, false);
      }
    }
    EXPECT_EQ(calls, expected_calls);
  }
}

// A candidate that wins the first rounds but not the confirming ones (a burst
// of noise) does not replace the static kernel; one that wins both does.
TEST_F(CalibrationTest, AChangeMustWinTwice) {
  CalibrationOptions o;
  o.mode = CalibrationMode::kForce;
  o.budget_seconds = 1e9;
  const MatmulShapeClass shape{DType::kBF16, 896, 896, MatmulRegime::kDecode};
  const MatmulShapeClass prefill{DType::kBF16, 896, 896, MatmulRegime::kPrefill};
  if (matmul_candidates(prefill).size() < 2) GTEST_SKIP() << "one prefill candidate here";
  for (bool repeats : {false, true}) {
    int other_calls = 0;
    MatmulTimer timer = [&](const MatmulShapeClass& c, MatmulKernel k, int64_t) {
      // Only the prefill class's calls count (the decode class may have a
      // choice too; it keeps its static kernel here).
      if (k == matmul_candidates(c)[0] || !(c == prefill)) return 1.0;
      // Warm-up + reps calls in the first set; the confirming set after.
      return ++other_calls <= 1 + o.reps || repeats ? 0.5 : 1.0;
    };
    CalibrationReport r = calibrate_matmul_kernels({shape}, o, timer);
    for (const ClassCalibration& c : r.classes) {
      if (!(c.cls == prefill)) continue;
      EXPECT_EQ(c.chosen, repeats ? matmul_candidates(prefill)[1] : c.static_kernel) << repeats;
    }
  }
}

// A decode tile variant is timed only where it runs code of its own (m = 1),
// and takes the static kernel's time where it runs the same tiles (m = 16):
// faster at m = 1, it wins, however noisy the m = 16 probe would have been.
TEST_F(CalibrationTest, TileVariantsAreTimedOnlyWhereTheyDiffer) {
  EXPECT_TRUE(decode_variant_matters_at(MatmulKernel::kOwnFourRows, 1));
  EXPECT_TRUE(decode_variant_matters_at(MatmulKernel::kOwnHwPrefetch, 1));
  EXPECT_TRUE(decode_variant_matters_at(MatmulKernel::kOwnHwPrefetch, 6));
  for (MatmulKernel v : {MatmulKernel::kOwnFourRows, MatmulKernel::kOwnHwPrefetch}) {
    EXPECT_FALSE(decode_variant_matters_at(v, cpu::kDecodeMaxRows)) << matmul_kernel_name(v);
  }
  EXPECT_TRUE(decode_variant_matters_at(MatmulKernel::kOwnExact, cpu::kDecodeMaxRows));
  EXPECT_TRUE(decode_variant_matters_at(MatmulKernel::kOnednn, 256));

  const MatmulShapeClass shape{DType::kBF16, 896, 4864, MatmulRegime::kDecode};
  const std::vector<MatmulKernel> cands = matmul_candidates(shape);
  if (std::find(cands.begin(), cands.end(), MatmulKernel::kOwnFourRows) == cands.end()) {
    GTEST_SKIP() << "no tile variants here";
  }
  std::map<std::pair<MatmulKernel, int64_t>, int> calls;
  MatmulTimer timer = [&](const MatmulShapeClass& c, MatmulKernel k, int64_t m) {
    if (!(c == shape)) return 1.0;
    ++calls[{k, m}];
    if (k == MatmulKernel::kOwnFourRows) return m == 1 ? 0.5 : 100.0;  // 100: never asked
    return 1.0;
  };
  CalibrationOptions o;
  o.mode = CalibrationMode::kForce;
  o.budget_seconds = 1e9;
  CalibrationReport r = calibrate_matmul_kernels({shape}, o, timer);
  bool seen = false;
  for (const ClassCalibration& c : r.classes) {
    if (!(c.cls == shape)) continue;
    seen = true;
    EXPECT_EQ(c.chosen, MatmulKernel::kOwnFourRows);
  }
  EXPECT_TRUE(seen);
  const std::pair<MatmulKernel, int64_t> own16{MatmulKernel::kOwn, cpu::kDecodeMaxRows};
  const std::pair<MatmulKernel, int64_t> four1{MatmulKernel::kOwnFourRows, 1};
  const std::pair<MatmulKernel, int64_t> four16{MatmulKernel::kOwnFourRows, cpu::kDecodeMaxRows};
  EXPECT_GT(calls[own16], 0);
  EXPECT_GT(calls[four1], 0);
  EXPECT_EQ(calls[four16], 0);
}

TEST_F(CalibrationTest, OffKeepsTheStaticChoiceWithoutTiming) {
  FakeTimer t;
  CalibrationOptions o;
  o.mode = CalibrationMode::kOff;
  o.cache_path = (std::filesystem::temp_directory_path() / "strata-calib-off.txt").string();
  std::filesystem::remove(o.cache_path);
  CalibrationReport r = calibrate_matmul_kernels(model_shapes(), o, t.get());
  EXPECT_EQ(t.calls, 0);
  EXPECT_FALSE(std::filesystem::exists(o.cache_path));
  for (const ClassCalibration& c : r.classes) EXPECT_EQ(c.chosen, c.static_kernel);
  install_calibration(r);
  EXPECT_TRUE(matmul_choices().empty());
  EXPECT_EQ(chosen_matmul_kernel(DType::kBF16, 1152, 896, 1), MatmulKernel::kStatic);
}

class CacheTest : public CalibrationTest {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("strata-calib-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    o_.mode = CalibrationMode::kAuto;
    o_.cache_path = (dir_ / "sub" / "cache.txt").string();  // directory created on write
    o_.signature = "cpu A v1";
    o_.threads = 2;
    o_.budget_seconds = 1e9;
    // Non-static candidates twice as fast, so the cache holds real changes.
    t_.factor = {{MatmulKernel::kOwn, 0.5},
                 {MatmulKernel::kOwnExact, 0.5},
                 {MatmulKernel::kOnednn, 0.5},
                 {MatmulKernel::kOwnHwPrefetch, 0.5},
                 {MatmulKernel::kOwnFourRows, 0.5}};
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    CalibrationTest::TearDown();
  }
  // Static kernels at factor 1.
  MatmulTimer timer() {
    return [this](const MatmulShapeClass& c, MatmulKernel k, int64_t m) {
      ++t_.calls;
      const double f = k == matmul_candidates(c)[0] ? 1.0 : t_.factor.at(k);
      return f * 1e-9 * static_cast<double>(c.n * c.k * m);
    };
  }
  std::filesystem::path dir_;
  CalibrationOptions o_;
  FakeTimer t_;
};

TEST_F(CacheTest, RoundTrip) {
  CalibrationReport first = calibrate_matmul_kernels(model_shapes(), o_, timer());
  EXPECT_GT(t_.calls, 0);
  EXPECT_TRUE(first.warnings.empty());
  ASSERT_TRUE(std::filesystem::exists(o_.cache_path));
  t_.calls = 0;
  CalibrationReport second = calibrate_matmul_kernels(model_shapes(), o_, timer());
  EXPECT_EQ(t_.calls, 0);
  ASSERT_EQ(first.classes.size(), second.classes.size());
  for (size_t i = 0; i < first.classes.size(); ++i) {
    EXPECT_TRUE(first.classes[i].cls == second.classes[i].cls);
    EXPECT_EQ(first.classes[i].chosen, second.classes[i].chosen);
    EXPECT_NEAR(first.classes[i].chosen_rate, second.classes[i].chosen_rate,
                1e-3 + 1e-6 * first.classes[i].chosen_rate);
    EXPECT_TRUE(second.classes[i].from_cache);
  }
  // force measures again even with a valid cache.
  o_.mode = CalibrationMode::kForce;
  calibrate_matmul_kernels(model_shapes(), o_, timer());
  EXPECT_GT(t_.calls, 0);
  // A model with one more shape measures only that shape's classes.
  o_.mode = CalibrationMode::kAuto;
  t_.calls = 0;
  std::vector<MatmulShapeClass> more = model_shapes();
  more.push_back({DType::kBF16, 4864, 896, MatmulRegime::kDecode});
  const CalibrationReport r = calibrate_matmul_kernels(more, o_, timer());
  // Decode: 2 probes per candidate; prefill: 1; each a warm-up and reps
  // rounds, and (the non-static candidates win here) reps confirming rounds
  // of two kernels where there is a choice.
  int expected = 0;
  for (const ClassCalibration& c : r.classes) {
    if (!(c.cls.dtype == DType::kBF16 && c.cls.n == 4864 && c.cls.k == 896)) continue;
    const std::vector<MatmulKernel> cands = matmul_candidates(c.cls);
    expected += expected_timer_calls(cands, c.cls.regime, o_.reps, true);
    if (cands.size() > 1) {
      expected += expected_timer_calls({cands[0], c.chosen}, c.cls.regime, o_.reps, false);
    }
  }
  EXPECT_EQ(t_.calls, expected);
}

TEST_F(CacheTest, CorruptCacheIsIgnoredAndRewritten) {
  std::filesystem::create_directories(std::filesystem::path(o_.cache_path).parent_path());
  for (const std::string& junk : {std::string("garbage\n"),
                                  std::string("strata-kernel-calibration v1\nsignature cpu A v1\n"
                                              "2 BF16 1152 896 decode own 12.0 own\n"),
                                  std::string("strata-kernel-calibration v1\nsignature cpu A v1\n"
                                              "2 XX 1152 896 decode own 1 own 1\n"),
                                  std::string("")}) {
    std::ofstream(o_.cache_path, std::ios::trunc) << junk;
    t_.calls = 0;
    CalibrationReport r = calibrate_matmul_kernels(model_shapes(), o_, timer());
    EXPECT_GT(t_.calls, 0) << junk;
    if (!junk.empty()) {
      ASSERT_EQ(r.warnings.size(), 1u) << junk;
      EXPECT_NE(r.warnings[0].find("ignoring"), std::string::npos);
    }
    // Rewritten: the next run reads it without measuring.
    t_.calls = 0;
    CalibrationReport again = calibrate_matmul_kernels(model_shapes(), o_, timer());
    EXPECT_EQ(t_.calls, 0) << junk;
    EXPECT_TRUE(again.warnings.empty());
  }
}

TEST_F(CacheTest, SignatureMismatchRecalibrates) {
  calibrate_matmul_kernels(model_shapes(), o_, timer());
  o_.signature = "cpu B v1";
  t_.calls = 0;
  CalibrationReport r = calibrate_matmul_kernels(model_shapes(), o_, timer());
  EXPECT_GT(t_.calls, 0);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("another CPU"), std::string::npos);
  std::ifstream in(o_.cache_path);
  std::string header, signature;
  std::getline(in, header);
  std::getline(in, signature);
  EXPECT_EQ(signature, "signature cpu B v1");
}

TEST_F(CacheTest, ThreadCountIsPartOfTheKey) {
  calibrate_matmul_kernels(model_shapes(), o_, timer());
  o_.threads = 1;
  t_.calls = 0;
  calibrate_matmul_kernels(model_shapes(), o_, timer());
  EXPECT_GT(t_.calls, 0);
  // Both thread counts are now cached.
  for (int threads : {1, 2}) {
    o_.threads = threads;
    t_.calls = 0;
    calibrate_matmul_kernels(model_shapes(), o_, timer());
    EXPECT_EQ(t_.calls, 0) << threads;
  }
}

TEST_F(CacheTest, FormatParseRoundTrip) {
  ClassCalibration c;
  c.cls = {DType::kQ8_0, 4864, 896, MatmulRegime::kPrefill};
  c.static_kernel = MatmulKernel::kOnednn;
  c.chosen = MatmulKernel::kOwn;
  c.static_rate = 300.25;
  c.chosen_rate = 350.5;
  const std::string text =
      format_calibration_cache("sig", 3, {c}, {"1 F32 8 32 decode own 1 own 1"});
  std::vector<ClassCalibration> got;
  std::vector<std::string> others;
  ASSERT_TRUE(parse_calibration_cache(text, "sig", 3, &got, &others).ok()) << text;
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].cls == c.cls);
  EXPECT_EQ(got[0].chosen, MatmulKernel::kOwn);
  EXPECT_EQ(got[0].static_kernel, MatmulKernel::kOnednn);
  EXPECT_DOUBLE_EQ(got[0].chosen_rate, 350.5);
  EXPECT_DOUBLE_EQ(got[0].static_rate, 300.25);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_FALSE(parse_calibration_cache(text, "other", 3, &got, &others).ok());
}

TEST(CalibrationMode, Parse) {
  EXPECT_EQ(*parse_calibration_mode("off"), CalibrationMode::kOff);
  EXPECT_EQ(*parse_calibration_mode("auto"), CalibrationMode::kAuto);
  EXPECT_EQ(*parse_calibration_mode("force"), CalibrationMode::kForce);
  EXPECT_FALSE(parse_calibration_mode("on").ok());
}

TEST(CalibrationCachePath, XdgThenHome) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved = xdg != nullptr ? xdg : "";
  setenv("XDG_CACHE_HOME", "/x/cache", 1);
  const std::string a = default_calibration_cache_path("sig one");
  EXPECT_EQ(a.rfind("/x/cache/strata/kernel-calibration-", 0), 0u) << a;
  EXPECT_NE(a, default_calibration_cache_path("sig two"));
  unsetenv("XDG_CACHE_HOME");
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    EXPECT_EQ(default_calibration_cache_path("s").rfind(std::string(home) + "/.cache/strata/", 0),
              0u);
  }
  if (xdg != nullptr) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

// The table ops::matmul consults: decode entries cover every m <= 16, and
// ops::matmul runs the installed kernel (bits equal to running it directly).
TEST_F(CalibrationTest, InstalledChoiceIsWhatMatmulRuns) {
  const int64_t n = 256, k = 320, m = 40;
  const MatmulShapeClass prefill{DType::kBF16, n, k, MatmulRegime::kPrefill};
  const std::vector<MatmulKernel> cands = matmul_candidates(prefill);
  const MatmulKernel alt = cands.back();
  set_matmul_choices(
      {{prefill, alt}, {{DType::kBF16, n, k, MatmulRegime::kDecode}, MatmulKernel::kOwn}});
  EXPECT_EQ(chosen_matmul_kernel(DType::kBF16, n, k, 17), alt);
  EXPECT_EQ(chosen_matmul_kernel(DType::kBF16, n, k, 16), MatmulKernel::kOwn);
  EXPECT_EQ(chosen_matmul_kernel(DType::kBF16, n, k, 1), MatmulKernel::kOwn);
  EXPECT_EQ(chosen_matmul_kernel(DType::kBF16, n + 1, k, 1), MatmulKernel::kStatic);
  EXPECT_EQ(chosen_matmul_kernel(DType::kF32, n, k, 1), MatmulKernel::kStatic);
  StoredWeight s = store_weight(random_floats(n * k, 3), n, k, DType::kBF16);
  MatmulWeight w = MatmulWeight::prepare(s.view);
  std::vector<float> x = random_floats(m * k, 4), y(m * n), direct(m * n), stat(m * n);
  matmul(x.data(), m, w, nullptr, y.data(), pool_);
  cpu::run_matmul(cpu::active_kernels(), x.data(), m, w, nullptr, direct.data(), pool_, alt);
  EXPECT_EQ(y, direct);
  set_matmul_choices({});
  EXPECT_TRUE(matmul_choices().empty());
  EXPECT_EQ(chosen_matmul_kernel(DType::kBF16, n, k, 17), MatmulKernel::kStatic);
  if (cands.size() > 1) {
    // The alternative really is another kernel here (summation order differs).
    matmul(x.data(), m, w, nullptr, stat.data(), pool_);
    EXPECT_NE(stat, direct);
  }
}

// Prepared weights are listed; the real timer's scratch weights are not.
TEST_F(CalibrationTest, PreparedShapesAndRealTimer) {
  const int64_t n = 48, k = 96;
  StoredWeight s = store_weight(random_floats(n * k, 5), n, k, DType::kF32);
  MatmulWeight w = MatmulWeight::prepare(s.view);
  const MatmulShapeClass listed{DType::kF32, n, k, MatmulRegime::kDecode};
  auto has = [](const MatmulShapeClass& c) {
    for (const MatmulShapeClass& p : prepared_matmul_shapes()) {
      if (p == c) return true;
    }
    return false;
  };
  EXPECT_TRUE(has(listed));
  MatmulTimer timer = make_matmul_timer(pool_);
  const MatmulShapeClass unlisted{DType::kBF16, 80, 160, MatmulRegime::kDecode};
  for (MatmulKernel kernel : matmul_candidates(unlisted)) {
    const double seconds = timer(unlisted, kernel, 1);
    EXPECT_TRUE(std::isfinite(seconds) && seconds > 0);
  }
  const MatmulShapeClass prefill{DType::kBF16, 80, 160, MatmulRegime::kPrefill};
  for (MatmulKernel kernel : matmul_candidates(prefill)) {
    EXPECT_GT(timer(prefill, kernel, 128), 0.0);
  }
  EXPECT_FALSE(has(unlisted));
}

}  // namespace
}  // namespace strata::ops
