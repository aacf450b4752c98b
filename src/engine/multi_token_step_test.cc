// Multi-token steps (the groundwork of speculative decoding) with a real
// model: draft tokens driven through the scheduler and the runner by hand,
// compared with plain one-token decoding. Greedy only.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/test_model_fixture.h"
#include "kv/kv_cache_manager.h"
#include "backend/cpu_backend.h"
#include "runner/model_runner.h"
#include "scheduler/scheduler.h"

namespace strata::engine {
namespace {

constexpr int64_t kBlockSize = 4;  // small, so drafts cross block boundaries

// The scheduler, KV accounting and runner of one engine, stepped by the test.
class Stack {
 public:
  Stack(const model::Model& model, bool caching, double repetition_penalty = 1.0)
      : kv_(kNumBlocks, kBlockSize, caching),
        scheduler_(config(), kv_),
        runner_(model,
                model.make_kv_memory(backend_, kNumBlocks, kBlockSize,
                                     testing::kv_dtype_under_test()),
                backend_, &pool_),
        repetition_penalty_(repetition_penalty) {}

  void add(const std::string& id, std::vector<int32_t> prompt, int64_t max_tokens) {
    scheduler::StopConditions stop;
    stop.max_tokens = max_tokens;
    stop.ignore_eos = true;
    const kv::RequestKey key = next_key_++;
    ASSERT_TRUE(scheduler_
                    .add_request(std::make_unique<scheduler::Request>(
                        id, key, std::move(prompt), stop, kv::root_block_hash({"m", "f32", ""}),
                        kBlockSize))
                    .ok());
    sampling::SamplingParams params;
    params.temperature = 0.0;
    params.repetition_penalty = repetition_penalty_;
    runner_.add_request(key, params, 0);
  }

  // One step; returns the tokens each request gained.
  std::map<std::string, std::vector<int32_t>> step() {
    scheduler::SchedulerOutput plan = scheduler_.schedule();
    for (kv::RequestKey key : plan.finished_request_keys) runner_.remove_request(key);
    last_plan_ = plan;
    runner::StepResult result = runner_.execute(plan, kv_);
    std::vector<std::vector<int32_t>> ids(result.tokens.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      for (const runner::SampledToken& t : result.tokens[i]) ids[i].push_back(t.token_id);
    }
    std::map<std::string, std::vector<int32_t>> gained;
    for (const scheduler::RequestUpdate& u : scheduler_.update_from_output(plan, ids)) {
      gained[u.request->request_id()] = u.new_token_ids;
      if (u.finished) runner_.remove_request(u.request->key());
    }
    scheduler_.release_finished();
    return gained;
  }

  // Runs `id` alone to the end; before each decode step `propose(output so
  // far)` may offer drafts.
  template <typename Propose>
  std::vector<int32_t> run(const std::string& id, Propose propose) {
    std::vector<int32_t> out;
    while (scheduler_.has_unfinished_requests()) {
      if (!out.empty()) scheduler_.set_draft_token_ids(id, propose(out));
      std::vector<int32_t> gained = step()[id];
      out.insert(out.end(), gained.begin(), gained.end());
    }
    return out;
  }
  std::vector<int32_t> run_plain(const std::string& id) {
    return run(id, [](const std::vector<int32_t>&) { return std::vector<int32_t>{}; });
  }

  static scheduler::SchedulerConfig config() {
    scheduler::SchedulerConfig c;
    c.max_model_len = 256;
    c.max_num_batched_tokens = 64;
    return c;
  }

  static constexpr int32_t kNumBlocks = 128;
  ThreadPool pool_{2};
  backend::CpuBackend backend_{pool_};
  kv::KvCacheManager kv_;
  scheduler::Scheduler scheduler_;
  runner::ModelRunner runner_;
  scheduler::SchedulerOutput last_plan_;
  double repetition_penalty_;
  kv::RequestKey next_key_ = 1;
};

class MultiTokenStepTest : public testing::TestModelFixture {
 protected:
  std::vector<int32_t> plain(const std::vector<int32_t>& prompt, int64_t max_tokens,
                             double repetition_penalty = 1.0) {
    Stack s(*model_, /*caching=*/false, repetition_penalty);
    s.add("plain", prompt, max_tokens);
    return s.run_plain("plain");
  }
  // A stack whose request "r" has prefilled `prompt` and sampled ref[0].
  std::unique_ptr<Stack> prefilled(const std::vector<int32_t>& prompt, int64_t max_tokens,
                                   const std::vector<int32_t>& ref, bool caching,
                                   double repetition_penalty = 1.0) {
    auto s = std::make_unique<Stack>(*model_, caching, repetition_penalty);
    s->add("r", prompt, max_tokens);
    EXPECT_EQ(s->step()["r"], std::vector<int32_t>{ref.at(0)});
    return s;
  }
};

std::vector<int32_t> slice(const std::vector<int32_t>& v, size_t from, size_t n) {
  return {v.begin() + static_cast<std::ptrdiff_t>(from),
          v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size(), from + n))};
}

TEST_F(MultiTokenStepTest, CorrectDraftsAreAllAcceptedAndGiveOneMoreToken) {
  for (double penalty : {1.0, 1.3}) {
    const std::vector<int32_t> prompt = random_prompt(9, 3);
    const std::vector<int32_t> ref = plain(prompt, 16, penalty);
    ASSERT_EQ(ref.size(), 16u);
    std::unique_ptr<Stack> stack = prefilled(prompt, 16, ref, /*caching=*/true, penalty);
    Stack& s = *stack;
    constexpr size_t k = 4;
    ASSERT_TRUE(s.scheduler_.set_draft_token_ids("r", slice(ref, 1, k)));
    std::vector<int32_t> gained = s.step()["r"];
    EXPECT_EQ(s.last_plan_.scheduled.at(0).num_draft_tokens(), int64_t{k});
    EXPECT_EQ(s.last_plan_.total_num_scheduled_tokens, int64_t{k + 1});
    EXPECT_EQ(gained, slice(ref, 1, k + 1)) << "k accepted drafts and the bonus token";
    const scheduler::Request* r = s.scheduler_.find("r");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->num_computed_tokens, r->num_tokens() - 1);  // the bonus token is not computed
    std::vector<int32_t> out = slice(ref, 0, 1);
    out.insert(out.end(), gained.begin(), gained.end());
    std::vector<int32_t> rest = s.run_plain("r");
    out.insert(out.end(), rest.begin(), rest.end());
    EXPECT_EQ(out, ref) << "repetition_penalty " << penalty;
  }
}

TEST_F(MultiTokenStepTest, WrongDraftIsRejectedAtTheFirstMismatch) {
  const std::vector<int32_t> prompt = random_prompt(7, 5);
  const std::vector<int32_t> ref = plain(prompt, 12);
  std::unique_ptr<Stack> stack = prefilled(prompt, 12, ref, /*caching=*/true);
  Stack& s = *stack;
  std::vector<int32_t> drafts = slice(ref, 1, 4);
  drafts[2] = ref[3] == 5 ? 6 : 5;  // wrong third draft
  ASSERT_TRUE(s.scheduler_.set_draft_token_ids("r", drafts));
  EXPECT_EQ(s.step()["r"], slice(ref, 1, 3)) << "two accepted, then the correction";
  const scheduler::Request* r = s.scheduler_.find("r");
  EXPECT_EQ(r->num_computed_tokens, r->num_tokens() - 1);  // rolled back over two drafts
  EXPECT_EQ(s.scheduler_.stats().num_draft_tokens, 4);
  EXPECT_EQ(s.scheduler_.stats().num_accepted_tokens, 2);
}

// Drafts that are right, wrong at once, or wrong midway, step after step:
// every continuation equals plain decoding, so the KV left behind by
// rejected drafts is never read as if computed.
TEST_F(MultiTokenStepTest, MixedDraftsGiveThePlainOutput) {
  const std::vector<int32_t> prompt = random_prompt(10, 8);
  const std::vector<int32_t> ref = plain(prompt, 40);
  ASSERT_GT(std::set<int32_t>(ref.begin(), ref.end()).size(), 3u) << "drafts would be trivial";
  Stack s(*model_, /*caching=*/true);
  s.add("r", prompt, 40);
  int round = 0;
  std::vector<int32_t> out = s.run("r", [&](const std::vector<int32_t>& so_far) {
    std::vector<int32_t> d = slice(ref, so_far.size(), 1 + round % 5);
    if (round % 3 != 0 && !d.empty()) d[round % d.size()] = (d[round % d.size()] + 1) % 50 + 3;
    ++round;
    return d;
  });
  EXPECT_EQ(out, ref);
  EXPECT_GT(s.scheduler_.stats().num_accepted_tokens, 0);
  EXPECT_LT(s.scheduler_.stats().num_accepted_tokens, s.scheduler_.stats().num_draft_tokens);
}

// After partially rejected drafts, the request's KV (and the prefix cache
// built from it) continues exactly as a recompute from scratch.
TEST_F(MultiTokenStepTest, KvAfterRejectedDraftsMatchesRecompute) {
  const std::vector<int32_t> prompt = random_prompt(6, 13);
  const std::vector<int32_t> ref = plain(prompt, 14);
  Stack s(*model_, /*caching=*/true);
  s.add("a", prompt, 14);
  std::vector<int32_t> a = s.run("a", [&](const std::vector<int32_t>& so_far) {
    // Three drafts, the last one wrong: two accepted, one rejected each step.
    std::vector<int32_t> d = slice(ref, so_far.size(), 3);
    if (d.size() == 3) d[2] = (d[2] + 1) % 50 + 3;
    return d;
  });
  ASSERT_EQ(a, ref);
  // A new request over a's tokens: most of its prefix comes from a's cached
  // blocks; its continuation must equal one computed with no cache at all.
  std::vector<int32_t> longer = prompt;
  longer.insert(longer.end(), a.begin(), a.end());
  s.add("b", longer, 8);
  std::vector<int32_t> b = s.run_plain("b");
  EXPECT_GT(s.kv_.pool().stats().num_hit_tokens, 0);
  EXPECT_EQ(b, plain(longer, 8));
}

// A draft list that runs past max_tokens is cut so k drafts + 1 fit.
TEST_F(MultiTokenStepTest, DraftsStopAtMaxTokens) {
  const std::vector<int32_t> prompt = random_prompt(5, 21);
  const std::vector<int32_t> ref = plain(prompt, 4);
  std::unique_ptr<Stack> stack = prefilled(prompt, 4, ref, /*caching=*/false);
  Stack& s = *stack;
  ASSERT_TRUE(s.scheduler_.set_draft_token_ids("r", slice(plain(prompt, 10), 1, 8)));
  EXPECT_EQ(s.step()["r"], slice(ref, 1, 3));
  EXPECT_EQ(s.last_plan_.scheduled.at(0).num_draft_tokens(), 2);
  EXPECT_FALSE(s.scheduler_.has_unfinished_requests());
}

}  // namespace
}  // namespace strata::engine
