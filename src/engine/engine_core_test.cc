// Engine invariants (issue: serving core): with greedy sampling, the tokens a
// request gets must not depend on what else runs, on prefix caching, on
// preemption, or on prefill chunking. Runs on a random-weight checkpoint made
// by tools/reference/make_checkpoint.py (ctest fixture; its next-token
// distributions are peaked so numerical noise cannot flip a greedy choice).
#include "engine/engine_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "engine/test_model_fixture.h"
#include "structured/grammar_compiler.h"
#include "structured/grammar_matcher.h"
#include "structured/token_vocabulary.h"

namespace strata::engine {
namespace {

class EngineInvariantTest : public testing::TestModelFixture {
 protected:
  static EngineConfig config(int64_t num_blocks, bool caching = true) {
    EngineConfig c;
    c.block_size = 4;
    c.num_blocks = num_blocks;
    c.enable_prefix_caching = caching;
    c.scheduler.max_model_len = std::min<int64_t>(2048, num_blocks * c.block_size);
    c.scheduler.max_num_batched_tokens = 256;
    c.kv_cache_dtype = testing::kv_dtype_under_test();
    return c;
  }

  struct Run {
    std::map<std::string, std::vector<int32_t>> outputs;
    EngineStats stats;
  };

  // Adds all requests (in order), steps to completion, returns every output.
  Run run(const EngineConfig& cfg, const std::vector<EngineRequest>& requests) {
    ThreadPool pool(2);
    auto core = EngineCore::create(*model_, cfg, pool);
    EXPECT_TRUE(core.ok()) << core.status().to_string();
    Run r;
    for (const EngineRequest& req : requests) {
      Status s = (*core)->add_request(req);
      EXPECT_TRUE(s.ok()) << s.to_string();
    }
    for (int i = 0; i < 100000 && (*core)->has_unfinished_requests(); ++i) {
      for (const RequestOutput& out : (*core)->step()) {
        for (const auto& t : out.new_tokens) r.outputs[out.request_id].push_back(t.token_id);
      }
    }
    EXPECT_FALSE((*core)->has_unfinished_requests());
    r.stats = (*core)->stats();
    return r;
  }

  // 16 requests of mixed lengths; some share a prefix.
  static std::vector<EngineRequest> mixed_batch() {
    std::vector<EngineRequest> reqs;
    std::vector<int32_t> shared = random_prompt(21, 99);
    for (int i = 0; i < 16; ++i) {
      std::vector<int32_t> p = random_prompt(3 + 7 * i % 41, 1000 + i);
      if (i % 3 == 0) p.insert(p.begin(), shared.begin(), shared.end());
      reqs.push_back(greedy("r" + std::to_string(i), p, 6 + i % 9));
    }
    return reqs;
  }
};

TEST_F(EngineInvariantTest, AloneEqualsInsideBatch) {
  std::vector<EngineRequest> batch = mixed_batch();
  Run together = run(config(512), batch);
  for (const EngineRequest& req : batch) {
    Run alone = run(config(512), {req});
    EXPECT_EQ(alone.outputs[req.request_id], together.outputs[req.request_id]) << req.request_id;
    EXPECT_EQ(static_cast<int64_t>(alone.outputs[req.request_id].size()), req.stop.max_tokens);
  }
}

TEST_F(EngineInvariantTest, PrefixCachingOnEqualsOff) {
  std::vector<EngineRequest> batch = mixed_batch();
  Run on = run(config(512, true), batch);
  Run off = run(config(512, false), batch);
  EXPECT_EQ(on.outputs, off.outputs);
  EXPECT_GT(on.stats.prefix_cache_hits, 0);
  EXPECT_EQ(off.stats.prefix_cache_hits, 0);
}

TEST_F(EngineInvariantTest, PreemptionEqualsLargePool) {
  std::vector<EngineRequest> batch = mixed_batch();
  Run large = run(config(512), batch);
  Run tight = run(config(40), batch);
  EXPECT_GT(tight.stats.num_preemptions, 0);
  EXPECT_EQ(large.outputs, tight.outputs);
}

TEST_F(EngineInvariantTest, SevenTokenChunksEqualUnchunked) {
  std::vector<EngineRequest> batch = mixed_batch();
  Run whole = run(config(512), batch);
  EngineConfig chunked = config(512);
  chunked.scheduler.long_prefill_token_threshold = 7;
  Run pieces = run(chunked, batch);
  EXPECT_EQ(whole.outputs, pieces.outputs);
  EXPECT_GT(pieces.stats.num_steps, whole.stats.num_steps);
}

TEST_F(EngineInvariantTest, SeededSamplesIndependentOfBatch) {
  // Like n = 4: four samples of one prompt with seeds s..s+3 run together
  // (sharing the prompt's blocks) equal the same four requests run alone.
  std::vector<int32_t> prompt = random_prompt(37, 77);
  std::vector<EngineRequest> children;
  for (int i = 0; i < 4; ++i) {
    EngineRequest r = greedy("sample-" + std::to_string(i), prompt, 12);
    // The test model is very peaked; a high temperature makes sampling real.
    r.sampling.temperature = 25.0;
    r.sampling.top_p = 0.95;
    r.sampling.seed = 1234 + i;
    children.push_back(r);
  }
  Run together = run(config(512), children);
  EXPECT_GE(together.stats.prefix_cache_hits, 3 * 36);  // children 2-4 reuse 9 blocks each
  std::set<std::vector<int32_t>> distinct;
  for (const EngineRequest& r : children) {
    Run alone = run(config(512), {r});
    EXPECT_EQ(alone.outputs[r.request_id], together.outputs[r.request_id]) << r.request_id;
    distinct.insert(alone.outputs[r.request_id]);
  }
  EXPECT_GT(distinct.size(), 1u);  // the seeds really differ
}

// Structured outputs: a grammar over a synthetic vocabulary (token i is the
// letter "abcdefghij"[i % 10]) constrains sampled requests; what they
// generate matches the grammar and ends with the stop token, and — as for
// any request — does not depend on the batch, on prefix caching or on
// preemption (constraints never touch the KV cache).
TEST_F(EngineInvariantTest, GrammarConstrainedRequestsKeepTheInvariants) {
  const int64_t vocab = model_->vocab_size();
  const int32_t stop = static_cast<int32_t>(vocab - 1);
  std::vector<std::string> bytes;
  for (int64_t i = 0; i < vocab; ++i) bytes.push_back(std::string(1, "abcdefghij"[i % 10]));
  bytes.back() = "<stop>";
  auto grammar = structured::compile_gbnf(R"(root ::= [ab]{2,5} "c" ("d" | "ee"))",
                                          structured::make_token_vocabulary(bytes, {stop}, {}));
  ASSERT_TRUE(grammar.ok()) << grammar.status().message();
  std::vector<EngineRequest> batch = mixed_batch();
  for (int i = 0; i < 6; ++i) {
    EngineRequest r = greedy("g" + std::to_string(i), random_prompt(9 + 5 * i, 500 + i), 12);
    r.sampling.temperature = 25.0;  // the test model is peaked; make the choices real
    r.sampling.seed = 77 + i;
    r.stop.eos_token_ids = {stop};
    r.constraints.grammar = *grammar;
    batch.push_back(r);
  }
  Run together = run(config(512), batch);
  Run no_cache = run(config(512, false), batch);
  Run tight = run(config(40), batch);
  EXPECT_GT(tight.stats.num_preemptions, 0);
  std::set<std::string> distinct;
  for (int i = 0; i < 6; ++i) {
    // (The unconstrained requests are there to share the batch; on bf16
    // weights their greedy near-ties may flip with the chunking, see
    // PreemptionEqualsLargePool's models.)
    const std::string id = "g" + std::to_string(i);
    const std::vector<int32_t>& out = together.outputs[id];
    EXPECT_EQ(no_cache.outputs[id], out) << id;
    EXPECT_EQ(tight.outputs[id], out) << id;
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.back(), stop);
    std::string text;
    for (size_t k = 0; k + 1 < out.size(); ++k) text += bytes[static_cast<size_t>(out[k])];
    EXPECT_TRUE(structured::GrammarMatcher(*grammar).accept_string(text)) << text;
    const bool shape_ok = text.size() >= 4 && text.find('c') != std::string::npos &&
                          (text.ends_with("cd") || text.ends_with("cee"));
    EXPECT_TRUE(shape_ok) << text;
    distinct.insert(text);
    EngineRequest alone = batch[batch.size() - 6 + static_cast<size_t>(i)];
    EXPECT_EQ(run(config(512), {alone}).outputs[alone.request_id], out) << alone.request_id;
  }
  EXPECT_GT(distinct.size(), 1u);
}

TEST_F(EngineInvariantTest, PromptLogprobsMatchFullForwardAndChunking) {
  std::vector<int32_t> prompt = random_prompt(23, 8);
  EngineRequest r = greedy("p", prompt, 2);
  r.num_prompt_logprobs = 3;
  auto collect = [&](const EngineConfig& cfg) {
    ThreadPool pool(2);
    auto core = EngineCore::create(*model_, cfg, pool);
    EXPECT_TRUE(core.ok());
    // A cached copy of the prompt must not hide positions from prompt logprobs.
    EXPECT_TRUE((*core)->add_request(greedy("warm", prompt, 1)).ok());
    while ((*core)->has_unfinished_requests()) (*core)->step();
    EXPECT_TRUE((*core)->add_request(r).ok());
    std::vector<PromptLogprob> got;
    while ((*core)->has_unfinished_requests()) {
      for (RequestOutput& out : (*core)->step()) {
        got.insert(got.end(), out.prompt_logprobs.begin(), out.prompt_logprobs.end());
      }
    }
    return got;
  };
  std::vector<PromptLogprob> whole = collect(config(512));
  EngineConfig chunked = config(512);
  chunked.scheduler.long_prefill_token_threshold = 5;
  std::vector<PromptLogprob> pieces = collect(chunked);
  ASSERT_EQ(whole.size(), prompt.size() - 1);
  ASSERT_EQ(pieces.size(), prompt.size() - 1);
  // Reference: logits of every prompt position from one plain forward pass.
  ThreadPool pool(1);
  backend::CpuBackend backend(pool);
  backend::KvMemoryHandle kv =
      model_->make_kv_memory(backend, 1, 64, testing::kv_dtype_under_test());
  const int64_t vocab = model_->vocab_size();
  std::vector<float> logits(prompt.size() * vocab);
  model::Workspace workspace = model_->make_workspace(backend);
  model_->forward(model::ForwardBatch::single_sequence(prompt.data(), prompt.size(), 0, 64, true),
                  *kv, workspace, logits.data(), backend);
  // Chunks of 5 tokens run the decode matmul kernel, the whole prompt the
  // prefill GEMM; with bf16 weights both round activations to bf16 but sum in
  // different orders (tests/golden/README.md bounds that at 2e-2 of the
  // largest logit), with f32 weights they agree to float rounding.
  const double tol = has_f32_weights() ? 1e-4 : 5e-2;
  for (size_t i = 0; i + 1 < prompt.size(); ++i) {
    const float* row = logits.data() + i * vocab;
    EXPECT_EQ(whole[i].token_id, prompt[i + 1]);
    EXPECT_NEAR(whole[i].logprob, sampling::token_logprob(row, vocab, prompt[i + 1]), tol);
    EXPECT_NEAR(pieces[i].logprob, whole[i].logprob, tol);
    ASSERT_EQ(whole[i].top_logprobs.size(), 3u);
    EXPECT_EQ(whole[i].top_logprobs[0].first, sampling::argmax(row, vocab));
  }
}

TEST_F(EngineInvariantTest, LogitBiasAndPenaltiesReachTheSampler) {
  std::vector<int32_t> prompt = random_prompt(12, 21);
  const int32_t forced = 5;
  // +1000 makes `forced` win; a presence penalty of 2000 bans it once generated.
  EngineRequest presence = greedy("presence", prompt, 6);
  presence.sampling.logit_bias = {{forced, 1000.0f}};
  presence.sampling.presence_penalty = 2000.0;
  // A frequency penalty of 400 lets it win while 1000 - 400 * count stays high.
  EngineRequest frequency = greedy("frequency", prompt, 6);
  frequency.sampling.logit_bias = {{forced, 1000.0f}};
  frequency.sampling.frequency_penalty = 400.0;
  // Repetition penalty on a prompt token: a huge positive bias divided by 1e6
  // no longer wins.
  EngineRequest repetition = greedy("repetition", prompt, 3);
  repetition.sampling.logit_bias = {{prompt[0], 1000.0f}};
  repetition.sampling.repetition_penalty = 1e6;
  EngineRequest plain = greedy("plain", prompt, 3);
  Run together = run(config(512), {presence, frequency, repetition, plain});
  const auto& p = together.outputs["presence"];
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0], forced);
  for (size_t i = 1; i < p.size(); ++i) EXPECT_NE(p[i], forced) << i;
  const auto& f = together.outputs["frequency"];
  EXPECT_EQ(std::vector<int32_t>(f.begin(), f.begin() + 3), std::vector<int32_t>(3, forced));
  EXPECT_NE(f[3], forced);
  EXPECT_EQ(together.outputs["repetition"], together.outputs["plain"]);
  // And the same outputs when each runs alone.
  EXPECT_EQ(run(config(512), {frequency}).outputs["frequency"], f);
}

TEST_F(EngineInvariantTest, RepeatedLongPromptComputesOnlyUncachedTail) {
  ThreadPool pool(2);
  EngineConfig cfg = config(1024);
  cfg.block_size = 16;
  cfg.scheduler.max_num_batched_tokens = 2048;
  auto core = EngineCore::create(*model_, cfg, pool);
  ASSERT_TRUE(core.ok()) << core.status().to_string();
  std::vector<int32_t> prompt = random_prompt(1000, 5);
  std::map<std::string, std::vector<int32_t>> outputs;
  auto finish = [&] {
    while ((*core)->has_unfinished_requests()) {
      for (const RequestOutput& out : (*core)->step()) {
        for (const auto& t : out.new_tokens) outputs[out.request_id].push_back(t.token_id);
        if (out.finished && out.request_id == "second") {
          EXPECT_EQ(out.num_cached_tokens, 992);  // 62 full blocks of 16
        }
      }
    }
  };
  ASSERT_TRUE((*core)->add_request(greedy("first", prompt, 4)).ok());
  finish();
  const int64_t computed_before = (*core)->stats().num_prompt_tokens_computed;
  EXPECT_EQ(computed_before, 1000);
  ASSERT_TRUE((*core)->add_request(greedy("second", prompt, 4)).ok());
  finish();
  EXPECT_EQ((*core)->stats().num_prompt_tokens_computed - computed_before, 8);
  EXPECT_EQ(outputs["first"], outputs["second"]);
}

TEST_F(EngineInvariantTest, AbortFreesAndReportsAbort) {
  ThreadPool pool(2);
  auto core = EngineCore::create(*model_, config(256), pool);
  ASSERT_TRUE(core.ok());
  ASSERT_TRUE((*core)->add_request(greedy("a", random_prompt(30, 1), 100)).ok());
  std::vector<RequestOutput> first = (*core)->step();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_GE(first[0].queue_time_s, 0.0);  // the first output reports its queue time
  EXPECT_GT((*core)->stats().kv_cache_usage, 0.0);
  EXPECT_TRUE((*core)->abort_request("a"));
  EXPECT_EQ((*core)->stats().kv_cache_usage, 0.0);
  std::vector<RequestOutput> outs = (*core)->step();
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].finish_reason, FinishReason::kAbort);
  EXPECT_LT(outs[0].queue_time_s, 0.0);  // the first output already carried it
  EXPECT_FALSE((*core)->has_unfinished_requests());
}

// vLLM's per-request phase histograms and tokens per step: the first output
// carries queue and prefill time, the final one decode and inference time
// (= prefill + decode, measured from the same instants), and every step is
// counted once in the iteration-tokens buckets.
TEST_F(EngineInvariantTest, OutputsCarryPhaseTimesAndStepsAreCounted) {
  ThreadPool pool(2);
  EngineConfig cfg = config(256);
  cfg.scheduler.max_num_batched_tokens = 16;  // a 30-token prompt takes two steps
  auto core = EngineCore::create(*model_, cfg, pool);
  ASSERT_TRUE(core.ok());
  ASSERT_TRUE((*core)->add_request(greedy("a", random_prompt(30, 1), 5)).ok());
  std::vector<RequestOutput> outs;
  while ((*core)->has_unfinished_requests()) {
    for (RequestOutput& o : (*core)->step()) outs.push_back(std::move(o));
  }
  ASSERT_EQ(outs.size(), 5u);
  EXPECT_GE(outs[0].queue_time_s, 0.0);
  EXPECT_GT(outs[0].prefill_time_s, 0.0);
  for (size_t i = 1; i < outs.size(); ++i) {
    EXPECT_LT(outs[i].queue_time_s, 0.0);
    EXPECT_LT(outs[i].prefill_time_s, 0.0);
  }
  for (size_t i = 0; i + 1 < outs.size(); ++i) EXPECT_LT(outs[i].decode_time_s, 0.0);
  const RequestOutput& last = outs.back();
  ASSERT_TRUE(last.finished);
  EXPECT_GT(last.decode_time_s, 0.0);
  EXPECT_NEAR(last.inference_time_s, outs[0].prefill_time_s + last.decode_time_s, 1e-9);
  const EngineStats s = (*core)->stats();
  ASSERT_EQ(s.iteration_tokens_counts.size(), iteration_token_buckets().size() + 1);
  int64_t steps = 0;
  for (int64_t c : s.iteration_tokens_counts) steps += c;
  EXPECT_EQ(steps, s.num_steps);
  EXPECT_EQ(steps, 2 + 4);                     // two prefill chunks (16 + 14 tokens), four decodes
  EXPECT_EQ(s.iteration_tokens_counts[0], 4);  // the decodes: 1 token each
  EXPECT_EQ(s.iteration_tokens_sum, 30 + 4);
  EXPECT_GT(s.step_times.forward_s, 0.0);
}

TEST_F(EngineInvariantTest, RejectsBadRequestsWithPreciseErrors) {
  ThreadPool pool(1);
  EngineConfig cfg = config(256);
  cfg.scheduler.max_model_len = 64;
  auto core = EngineCore::create(*model_, cfg, pool);
  ASSERT_TRUE(core.ok());
  Status too_long = (*core)->add_request(greedy("x", random_prompt(65, 1), 1));
  EXPECT_EQ(too_long.message(), "prompt has 65 tokens; the maximum model length is 64");
  Status bad_id = (*core)->add_request(greedy("y", {1, 2, 1 << 30}, 1));
  EXPECT_NE(bad_id.message().find("prompt token 2 is 1073741824"), std::string::npos);
  EXPECT_FALSE((*core)->has_unfinished_requests());
}

TEST_F(EngineInvariantTest, TooSmallKvBudgetIsAClearError) {
  ThreadPool pool(1);
  EngineConfig cfg = config(2);
  cfg.scheduler.max_model_len = 100;
  auto core = EngineCore::create(*model_, cfg, pool);
  ASSERT_FALSE(core.ok());
  EXPECT_NE(core.status().message().find("room for 8 tokens but --max-model-len is 100"),
            std::string::npos)
      << core.status().message();
}

}  // namespace
}  // namespace strata::engine
