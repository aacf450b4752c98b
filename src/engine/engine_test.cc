// The threaded Engine front: requests from several threads, outputs through
// callbacks, aborts from outside, and the same tokens as the core alone.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <memory>
#include <thread>

#include "model/model.h"
#include "tensor/dtype.h"

namespace strata::engine {
namespace {

class Collector {
 public:
  OutputCallback callback() {
    return [this](const RequestOutput& out) {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& t : out.new_tokens) tokens_[out.request_id].push_back(t.token_id);
      if (out.finished) {
        reasons_[out.request_id] = out.finish_reason;
        cv_.notify_all();
      }
    };
  }
  bool wait_for(size_t n, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return reasons_.size() >= n; });
  }
  std::map<std::string, std::vector<int32_t>> tokens() {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_;
  }
  std::map<std::string, FinishReason> reasons() {
    std::lock_guard<std::mutex> lock(mu_);
    return reasons_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<int32_t>> tokens_;
  std::map<std::string, FinishReason> reasons_;
};

std::unique_ptr<model::Model> load_model() {
  const char* dir = std::getenv("STRATA_TEST_MODEL_DIR");
  if (dir == nullptr) return nullptr;
  auto files = model::open_model(dir);
  if (!files.ok()) return nullptr;
  auto m = model::Model::load(std::move(*files));
  return m.ok() ? std::move(*m) : nullptr;
}

EngineRequest greedy(const std::string& id, int n, int max_tokens) {
  EngineRequest r;
  r.request_id = id;
  for (int i = 0; i < n; ++i) r.prompt_token_ids.push_back(3 + (i * 37 + n) % 200);
  r.sampling.temperature = 0.0;
  r.stop.max_tokens = max_tokens;
  return r;
}

// Resets the prefix cache and waits for the engine's answer.
bool reset_prefix_cache(Engine& engine) {
  std::promise<bool> done;
  engine.reset_prefix_cache([&done](bool ok) { done.set_value(ok); });
  return done.get_future().get();
}

EngineConfig small_config() {
  EngineConfig c;
  c.block_size = 4;
  c.num_blocks = 256;
  c.scheduler.max_model_len = 512;
  return c;
}

TEST(EngineTest, ConcurrentClientsGetTheCoreTokens) {
  auto model = load_model();
  if (!model) GTEST_SKIP() << "STRATA_TEST_MODEL_DIR not set";
  // Expected tokens: each request alone through the core.
  std::map<std::string, std::vector<int32_t>> expected;
  ThreadPool pool(1);
  for (int i = 0; i < 8; ++i) {
    auto core = EngineCore::create(*model, small_config(), pool);
    ASSERT_TRUE(core.ok());
    ASSERT_TRUE((*core)->add_request(greedy("r" + std::to_string(i), 5 + 3 * i, 10)).ok());
    while ((*core)->has_unfinished_requests()) {
      for (auto& out : (*core)->step()) {
        for (auto& t : out.new_tokens) expected[out.request_id].push_back(t.token_id);
      }
    }
  }
  auto engine = Engine::create(*model, small_config(), 2);
  ASSERT_TRUE(engine.ok());
  Collector collector;
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = c; i < 8; i += 4) {
        Status s = (*engine)->add_request(greedy("r" + std::to_string(i), 5 + 3 * i, 10),
                                          collector.callback());
        EXPECT_TRUE(s.ok()) << s.to_string();
      }
    });
  }
  for (auto& t : clients) t.join();
  ASSERT_TRUE(collector.wait_for(8));
  EXPECT_EQ(collector.tokens(), expected);
  for (auto& [id, reason] : collector.reasons()) EXPECT_EQ(reason, FinishReason::kLength) << id;
  EXPECT_EQ((*engine)->stats().num_running, 0);
}

TEST(EngineTest, AbortAndStopEndStreamsAndFreeBlocks) {
  auto model = load_model();
  if (!model) GTEST_SKIP() << "STRATA_TEST_MODEL_DIR not set";
  auto engine = Engine::create(*model, small_config(), 2);
  ASSERT_TRUE(engine.ok());
  Collector collector;
  // Finish each request from inside its first output callback, so the test
  // does not depend on how fast the engine generates 400 tokens.
  Engine* e = engine->get();
  auto finish_on_first = [&collector, e](bool stop) {
    auto forward = collector.callback();
    auto sent = std::make_shared<bool>(false);
    return [forward, sent, e, stop](const RequestOutput& out) {
      if (!*sent) {
        *sent = true;
        stop ? e->finish_stopped(out.request_id) : e->abort(out.request_id);
      }
      forward(out);
    };
  };
  ASSERT_TRUE((*engine)->add_request(greedy("long", 20, 400), finish_on_first(false)).ok());
  ASSERT_TRUE((*engine)->add_request(greedy("stopped", 20, 400), finish_on_first(true)).ok());
  (*engine)->abort("unknown-id");  // ignored
  ASSERT_TRUE(collector.wait_for(2));
  EXPECT_EQ(collector.reasons()["long"], FinishReason::kAbort);
  EXPECT_EQ(collector.reasons()["stopped"], FinishReason::kStop);
  EXPECT_LT(collector.tokens()["long"].size(), 400u);
  for (int i = 0; i < 100 && (*engine)->stats().kv_cache_usage > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ((*engine)->stats().kv_cache_usage, 0.0);
  EXPECT_TRUE(reset_prefix_cache(**engine));
}

// reset_prefix_cache never blocks its caller: the answer comes through the
// callback at a step boundary (no while a request holds blocks).
TEST(EngineTest, ResetPrefixCacheAnswersThroughItsCallback) {
  auto model = load_model();
  if (!model) GTEST_SKIP() << "STRATA_TEST_MODEL_DIR not set";
  auto engine = Engine::create(*model, small_config(), 1);
  ASSERT_TRUE(engine.ok());
  Engine* e = engine->get();
  std::promise<bool> busy;
  auto asked = std::make_shared<bool>(false);
  Collector collector;
  auto forward = collector.callback();
  // Asked from inside the first output: the request still holds its blocks.
  auto on_output = [&busy, asked, e, forward](const RequestOutput& out) {
    if (!*asked) {
      *asked = true;
      e->reset_prefix_cache([&busy](bool ok) { busy.set_value(ok); });
    }
    forward(out);
  };
  ASSERT_TRUE(e->add_request(greedy("busy", 20, 400), on_output).ok());
  EXPECT_FALSE(busy.get_future().get());
  e->abort("busy");
  ASSERT_TRUE(collector.wait_for(1));
  EXPECT_TRUE(reset_prefix_cache(*e));
}

TEST(EngineTest, InvalidRequestIsRejectedSynchronously) {
  auto model = load_model();
  if (!model) GTEST_SKIP() << "STRATA_TEST_MODEL_DIR not set";
  auto engine = Engine::create(*model, small_config(), 1);
  ASSERT_TRUE(engine.ok());
  bool called = false;
  Status s = (*engine)->add_request(greedy("big", 600, 4),
                                    [&](const RequestOutput&) { called = true; });
  EXPECT_EQ(s.message(), "prompt has 600 tokens; the maximum model length is 512");
  EXPECT_FALSE(called);
  EXPECT_TRUE((*engine)->is_healthy());
}

// The step-budget default is computed from this figure (step_budget.h): the
// matmul shapes' FLOPs, attention, then the dense MLP, or the router, top-k
// routed experts and shared expert. Exact for one unquantized dtype; a
// K-quant file mixes block sizes (Q4_K_M: Q4_K and Q6_K), hence the margin.
TEST(EngineTest, PrefillFlopsPerTokenCountsTheLayerMatmuls) {
  auto model = load_model();
  if (!model) GTEST_SKIP() << "STRATA_TEST_MODEL_DIR not set";
  const model::ModelConfig& c = model->config();
  const model::MoeConfig& moe = c.moe;
  const int64_t h = c.hidden_size;
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  int64_t multiply_adds = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    multiply_adds += h * (q + 2 * kv) + q * h;
    if (!moe.is_sparse_layer(i)) {
      multiply_adds += 3 * h * c.intermediate_size;
      continue;
    }
    multiply_adds += h * moe.num_experts;  // the router
    multiply_adds += moe.num_experts_per_tok * 3 * h * moe.moe_intermediate_size;
    if (moe.shared_expert_intermediate_size > 0) {
      multiply_adds += 3 * h * moe.shared_expert_intermediate_size + h;
    }
  }
  if (!tensor::is_quantized(model->weight_dtype())) {
    EXPECT_EQ(model->prefill_flops_per_token(), 2 * multiply_adds);
  } else {
    EXPECT_NEAR(model->prefill_flops_per_token(), 2 * multiply_adds, 0.15 * 2 * multiply_adds);
  }
}

}  // namespace
}  // namespace strata::engine
