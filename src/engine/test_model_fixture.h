// Test-only: a gtest fixture that loads the model named by
// $STRATA_TEST_MODEL_DIR once per suite (ctest sets it to a random-weight
// checkpoint or the bundled model; without it the tests skip), plus the
// request helpers the engine tests share. $STRATA_TEST_KV_DTYPE (a
// tensor::kv_cache_dtype_name: f32, bf16, fp8_e4m3, ...) picks the KV pool's
// dtype, so ctest runs the same invariant suites once per dtype.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "tensor/dtype.h"
#include "tensor/kv_cache_dtype.h"

namespace strata::engine::testing {

inline std::string test_model_dir() {
  const char* dir = std::getenv("STRATA_TEST_MODEL_DIR");
  return dir == nullptr ? "" : dir;
}

inline tensor::KvCacheDtype kv_dtype_under_test() {
  const char* name = std::getenv("STRATA_TEST_KV_DTYPE");
  tensor::KvCacheDtype dtype = tensor::KvCacheDtype::kF32;
  if (name != nullptr && !tensor::kv_cache_dtype_from_name(name, &dtype)) {
    ADD_FAILURE() << "STRATA_TEST_KV_DTYPE=" << name << " is not a KV dtype name";
  }
  return dtype;
}

class TestModelFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test_model_dir().empty()) return;
    StatusOr<model::ModelFiles> files = model::open_model(test_model_dir());
    ASSERT_TRUE(files.ok()) << files.status().to_string();
    StatusOr<std::unique_ptr<model::Model>> m = model::Model::load(std::move(*files));
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = m->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    if (model_ == nullptr) GTEST_SKIP() << "STRATA_TEST_MODEL_DIR not set";
  }

  // True when a logits row does not depend on how many rows its step has, so
  // KV recomputed in a chunk of another size has the same bits: f32 weights,
  // or Strata's own GEMM (STRATA_NO_ONEDNN=1). On oneDNN, bf16 weights' steps
  // of more than 16 rows use its GEMM, which rounds differently from the
  // decode kernels and can flip a near-tie.
  static bool rows_independent_of_step_size() {
    return has_f32_weights() || std::getenv("STRATA_NO_ONEDNN") != nullptr;
  }
  static bool has_f32_weights() {
    return model_->files().weights.find("model.embed_tokens.weight")->view.dtype ==
           tensor::DType::kF32;
  }

  // `n` ids drawn uniformly from [3, vocab), deterministic in `seed`.
  static std::vector<int32_t> random_prompt(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> pick(3, static_cast<int32_t>(model_->vocab_size() - 1));
    std::vector<int32_t> p(n);
    for (int32_t& t : p) t = pick(rng);
    return p;
  }

  static EngineRequest greedy(const std::string& id, std::vector<int32_t> prompt, int max_tokens,
                              bool ignore_eos = false) {
    EngineRequest r;
    r.request_id = id;
    r.prompt_token_ids = std::move(prompt);
    r.sampling.temperature = 0.0;
    r.stop.max_tokens = max_tokens;
    r.stop.ignore_eos = ignore_eos;
    return r;
  }

  inline static model::Model* model_ = nullptr;
};

}  // namespace strata::engine::testing
