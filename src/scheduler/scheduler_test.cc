#include "scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <string>

namespace strata::scheduler {
namespace {

constexpr int kBlockSize = 4;

// A fake model: the next token is a function of the whole sequence so far, so
// any mistake in what the scheduler asks to compute changes the output.
int32_t fake_next_token(const std::vector<int32_t>& tokens) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : tokens) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
  return static_cast<int32_t>(h % 50) + 10;
}

class Harness {
 public:
  Harness(int32_t num_blocks, SchedulerConfig config, bool caching = true)
      : kv_(num_blocks, kBlockSize, caching), scheduler_(config, kv_) {}

  Status add(const std::string& id, std::vector<int32_t> prompt, int64_t max_tokens,
             std::vector<int32_t> eos = {}, int64_t min_tokens = 0) {
    StopConditions stop;
    stop.max_tokens = max_tokens;
    stop.min_tokens = min_tokens;
    stop.eos_token_ids = std::move(eos);
    return scheduler_.add_request(std::make_unique<Request>(
        id, next_key_++, std::move(prompt), stop, kv::root_block_hash({"m", "f32", ""}),
        kBlockSize));
  }

  // One engine step with the fake model; checks that the computed ranges are
  // contiguous with what was computed before.
  SchedulerOutput step() {
    SchedulerOutput out = scheduler_.schedule();
    std::vector<std::vector<int32_t>> sampled;
    for (const ScheduledRequest& s : out.scheduled) {
      const auto& ids = s.request->all_token_ids();
      EXPECT_LE(s.num_computed_tokens + s.num_new_tokens, static_cast<int64_t>(ids.size()));
      EXPECT_LE(kv_.block_ids(s.request->key()).size() * kBlockSize,
                static_cast<size_t>(s.num_computed_tokens + s.num_new_tokens + kBlockSize - 1));
      sampled.push_back({s.samples ? fake_next_token(ids) : -1});
    }
    for (const RequestUpdate& u : scheduler_.update_from_output(out, sampled)) {
      std::vector<int32_t>& o = outputs_[u.request->request_id()];
      o.insert(o.end(), u.new_token_ids.begin(), u.new_token_ids.end());
      if (u.finished) reasons_[u.request->request_id()] = u.request->status;
    }
    scheduler_.release_finished();
    return out;
  }

  void run_to_completion(int max_steps = 1000) {
    for (int i = 0; i < max_steps && scheduler_.has_unfinished_requests(); ++i) step();
    ASSERT_FALSE(scheduler_.has_unfinished_requests());
  }

  kv::KvCacheManager kv_;
  Scheduler scheduler_;
  std::map<std::string, std::vector<int32_t>> outputs_;
  std::map<std::string, RequestStatus> reasons_;
  kv::RequestKey next_key_ = 1;
};

std::vector<int32_t> prompt_of(int n, int start) {
  std::vector<int32_t> p(n);
  std::iota(p.begin(), p.end(), start);
  return p;
}

std::vector<int32_t> reference_output(std::vector<int32_t> prompt, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    int32_t t = fake_next_token(prompt);
    prompt.push_back(t);
    out.push_back(t);
  }
  return out;
}

TEST(SchedulerTest, PrefillThenDecodeToMaxTokens) {
  Harness h(64, {.max_num_batched_tokens = 64, .max_model_len = 128});
  ASSERT_TRUE(h.add("a", prompt_of(10, 100), 5).ok());
  h.run_to_completion();
  EXPECT_EQ(h.outputs_["a"], reference_output(prompt_of(10, 100), 5));
  EXPECT_EQ(h.reasons_["a"], RequestStatus::kFinishedLength);
  EXPECT_EQ(h.kv_.pool().num_free_blocks(), 64);
}

TEST(SchedulerTest, ChunkedPrefillRespectsBudgetAndMixesWithDecodes) {
  Harness h(64, {.max_num_batched_tokens = 16, .max_model_len = 256});
  ASSERT_TRUE(h.add("short", prompt_of(3, 1), 20).ok());
  h.step();  // short prefills
  ASSERT_TRUE(h.add("long", prompt_of(40, 500), 3).ok());
  SchedulerOutput out = h.step();
  ASSERT_EQ(out.scheduled.size(), 2u);
  EXPECT_EQ(out.scheduled[0].num_new_tokens, 1);   // decode of "short"
  EXPECT_EQ(out.scheduled[1].num_new_tokens, 15);  // chunk of "long"
  EXPECT_FALSE(out.scheduled[1].samples);
  EXPECT_EQ(out.total_num_scheduled_tokens, 16);
  h.run_to_completion();
  EXPECT_EQ(h.outputs_["long"], reference_output(prompt_of(40, 500), 3));
  EXPECT_EQ(h.outputs_["short"], reference_output(prompt_of(3, 1), 20));
}

// A prompt that fits a step whole is not cut to fill what another prompt's
// prefill left: it starts, whole, in the next step. Prompts longer than the
// budget, and a prompt that shares its step only with decodes, are chunked.
TEST(SchedulerTest, PromptThatFitsAStepIsNotSplitBehindAnotherPrefill) {
  Harness h(256, {.max_num_batched_tokens = 32, .max_model_len = 256});
  ASSERT_TRUE(h.add("a", prompt_of(20, 1), 4).ok());
  ASSERT_TRUE(h.add("b", prompt_of(20, 300), 4).ok());
  SchedulerOutput first = h.step();
  ASSERT_EQ(first.scheduled.size(), 1u);  // b would get 12 of its 20 tokens: it waits
  EXPECT_EQ(first.scheduled[0].request->request_id(), "a");
  EXPECT_EQ(first.scheduled[0].num_new_tokens, 20);
  SchedulerOutput second = h.step();
  ASSERT_EQ(second.scheduled.size(), 2u);
  EXPECT_EQ(second.scheduled[0].num_new_tokens, 1);   // a decodes
  EXPECT_EQ(second.scheduled[1].num_new_tokens, 20);  // b, whole
  EXPECT_TRUE(second.scheduled[1].samples);

  // Longer than the budget: chunked next to another prefill as before.
  ASSERT_TRUE(h.add("c", prompt_of(10, 600), 4).ok());
  ASSERT_TRUE(h.add("d", prompt_of(50, 700), 4).ok());
  SchedulerOutput third = h.step();
  ASSERT_EQ(third.scheduled.size(), 4u);  // a, b decode; c whole; a 20-token chunk of d
  EXPECT_EQ(third.scheduled[2].num_new_tokens, 10);
  EXPECT_EQ(third.scheduled[3].num_new_tokens, 20);
  EXPECT_FALSE(third.scheduled[3].samples);
  h.run_to_completion();
  EXPECT_EQ(h.outputs_["b"], reference_output(prompt_of(20, 300), 4));
  EXPECT_EQ(h.outputs_["d"], reference_output(prompt_of(50, 700), 4));
}

// With long_prefill_token_threshold below the prompt, no step takes it whole:
// waiting would gain nothing, so it is chunked at once.
TEST(SchedulerTest, PromptOverTheChunkThresholdIsChunkedAtOnce) {
  Harness h(256, {.max_num_batched_tokens = 32, .max_model_len = 256,
                  .long_prefill_token_threshold = 16});
  ASSERT_TRUE(h.add("a", prompt_of(20, 1), 4).ok());
  ASSERT_TRUE(h.add("b", prompt_of(20, 300), 4).ok());
  SchedulerOutput first = h.step();
  ASSERT_EQ(first.scheduled.size(), 2u);
  EXPECT_EQ(first.scheduled[0].num_new_tokens, 16);
  EXPECT_EQ(first.scheduled[1].num_new_tokens, 16);
  h.run_to_completion();
  EXPECT_EQ(h.outputs_["b"], reference_output(prompt_of(20, 300), 4));
}

TEST(SchedulerTest, PromptNextToDecodesOnlyIsStillChunked) {
  Harness h(256, {.max_num_batched_tokens = 8, .max_model_len = 256});
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(h.add("r" + std::to_string(i), prompt_of(1, 10 * i + 1), 9).ok());
  }
  h.step();  // four one-token prompts
  ASSERT_TRUE(h.add("p", prompt_of(6, 900), 2).ok());
  SchedulerOutput out = h.step();
  ASSERT_EQ(out.scheduled.size(), 5u);
  // 8 - 4 decodes: deferred, it would wait forever.
  EXPECT_EQ(out.scheduled[4].num_new_tokens, 4);
  h.run_to_completion();
  EXPECT_EQ(h.outputs_["p"], reference_output(prompt_of(6, 900), 2));
}

TEST(SchedulerTest, PreemptionByRecomputeGivesSameOutputs) {
  std::vector<std::vector<int32_t>> prompts = {prompt_of(9, 1), prompt_of(7, 40),
                                                prompt_of(12, 80), prompt_of(5, 200)};
  Harness tight(8, {.max_num_batched_tokens = 32, .max_model_len = 64});
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(tight.add("r" + std::to_string(i), prompts[i], 12).ok());
  }
  tight.run_to_completion();
  EXPECT_GT(tight.scheduler_.stats().num_preemptions, 0);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(tight.outputs_["r" + std::to_string(i)], reference_output(prompts[i], 12)) << i;
  }
  EXPECT_EQ(tight.kv_.pool().num_free_blocks(), 8);
}

TEST(SchedulerTest, RepeatedPromptComputesOnlyUncachedTail) {
  Harness h(64, {.max_num_batched_tokens = 64, .max_model_len = 128});
  ASSERT_TRUE(h.add("first", prompt_of(30, 7), 2).ok());
  h.run_to_completion();
  const int64_t before = h.scheduler_.stats().num_prompt_tokens_computed;
  ASSERT_TRUE(h.add("second", prompt_of(30, 7), 2).ok());
  SchedulerOutput out = h.step();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].num_computed_tokens, 28);  // 7 full blocks of 4
  EXPECT_EQ(out.scheduled[0].request->num_cached_tokens, 28);
  EXPECT_EQ(h.scheduler_.stats().num_prompt_tokens_computed - before, 2);
  h.run_to_completion();
  EXPECT_EQ(h.outputs_["second"], h.outputs_["first"]);
}

TEST(SchedulerTest, AbortFreesBlocksAtOnce) {
  Harness h(16, {.max_num_batched_tokens = 64, .max_model_len = 64});
  ASSERT_TRUE(h.add("a", prompt_of(20, 1), 30).ok());
  h.step();
  EXPECT_LT(h.kv_.pool().num_free_blocks(), 16);
  EXPECT_TRUE(h.scheduler_.finish_request("a", RequestStatus::kFinishedAborted));
  EXPECT_EQ(h.kv_.pool().num_free_blocks(), 16);
  EXPECT_FALSE(h.scheduler_.has_unfinished_requests());
  EXPECT_FALSE(h.scheduler_.finish_request("a", RequestStatus::kFinishedAborted));
}

TEST(SchedulerTest, StopsOnEosAfterMinTokens) {
  std::vector<int32_t> prompt = prompt_of(6, 3);
  std::vector<int32_t> ref = reference_output(prompt, 6);
  Harness h(32, {.max_num_batched_tokens = 64, .max_model_len = 64});
  ASSERT_TRUE(h.add("eos", prompt, 6, {ref[0]}).ok());
  ASSERT_TRUE(h.add("min", prompt, 6, {ref[0]}, 2).ok());
  h.run_to_completion();
  EXPECT_EQ(h.outputs_["eos"], std::vector<int32_t>{ref[0]});
  EXPECT_EQ(h.reasons_["eos"], RequestStatus::kFinishedStopped);
  // With min_tokens 2 the first EOS is ignored; generation stops at the next one.
  size_t expected = ref.size();
  for (size_t i = 1; i < ref.size(); ++i) {
    if (ref[i] == ref[0]) {
      expected = i + 1;
      break;
    }
  }
  EXPECT_GT(h.outputs_["min"].size(), 1u);
  EXPECT_EQ(h.outputs_["min"], std::vector<int32_t>(ref.begin(), ref.begin() + expected));
}

TEST(SchedulerTest, RejectsTooLongPromptWithPreciseError) {
  Harness h(64, {.max_num_batched_tokens = 64, .max_model_len = 16});
  Status s = h.add("long", prompt_of(17, 0), 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "prompt has 17 tokens; the maximum model length is 16");
}

TEST(SchedulerTest, MaxNumSeqsLimitsRunningSet) {
  Harness h(64, {.max_num_seqs = 2, .max_num_batched_tokens = 64, .max_model_len = 64});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.add("r" + std::to_string(i), prompt_of(4, i), 3).ok());
  SchedulerOutput out = h.step();
  EXPECT_EQ(out.scheduled.size(), 2u);
  EXPECT_EQ(h.scheduler_.num_waiting(), 1);
  h.run_to_completion();
  EXPECT_EQ(h.outputs_.size(), 3u);
}

// Verify steps driven by hand: the scheduler's side of multi-token steps.
class DraftTest : public ::testing::Test {
 protected:
  DraftTest() : h_(32, {.max_num_batched_tokens = 64, .max_model_len = 64}) {}

  // Completes `out` with `tokens` for its only entry.
  std::vector<RequestUpdate> finish_step(const SchedulerOutput& out, std::vector<int32_t> tokens) {
    std::vector<std::vector<int32_t>> sampled = {std::move(tokens)};
    return h_.scheduler_.update_from_output(out, sampled);
  }
  const Request& req(const std::string& id) { return *h_.scheduler_.find(id); }
  bool is_cached(const std::string& id, size_t block_idx) {
    const int32_t block = h_.kv_.block_ids(req(id).key()).at(block_idx);
    return h_.kv_.pool().block(block).hash.has_value();
  }

  Harness h_;
};

// Block size 4; prompt of 6 tokens. Drafts at positions 7.. share block 1
// ([4..7]) with known tokens: that block is not cached while it holds a
// rejected draft's KV, and is cached once the step that rewrites it runs.
TEST_F(DraftTest, BlockWithRejectedDraftKvIsNeverCached) {
  ASSERT_TRUE(h_.add("a", prompt_of(6, 10), 20).ok());
  SchedulerOutput prefill = h_.scheduler_.schedule();
  finish_step(prefill, {70});                                         // token 6
  ASSERT_TRUE(h_.scheduler_.set_draft_token_ids("a", {71, 72, 73}));  // positions 7, 8, 9
  SchedulerOutput verify = h_.scheduler_.schedule();
  ASSERT_EQ(verify.scheduled.size(), 1u);
  EXPECT_EQ(verify.scheduled[0].num_new_tokens, 1);
  EXPECT_EQ(verify.scheduled[0].num_draft_tokens(), 3);
  EXPECT_EQ(verify.total_num_scheduled_tokens, 4);
  EXPECT_EQ(h_.kv_.block_ids(req("a").key()).size(), 3u);  // slots for positions 0..9
  EXPECT_TRUE(is_cached("a", 0));
  EXPECT_FALSE(is_cached("a", 1));
  // The first draft is rejected: 99 is the correction at position 7.
  std::vector<RequestUpdate> u = finish_step(verify, {99});
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].new_token_ids, std::vector<int32_t>{99});
  EXPECT_EQ(req("a").num_computed_tokens, 7);     // positions 7..9 not computed
  EXPECT_EQ(req("a").block_hashes().size(), 2u);  // block 1 is full of known tokens now
  EXPECT_FALSE(is_cached("a", 1)) << "position 7 still holds the rejected draft's KV";
  // A lookup of the same 8 tokens finds only block 0 in the cache.
  EXPECT_EQ(h_.kv_.get_computed_blocks(req("a").block_hashes(), 9).num_computed_tokens, 4);
  SchedulerOutput next = h_.scheduler_.schedule();  // rewrites position 7
  EXPECT_EQ(next.scheduled.at(0).num_computed_tokens, 7);
  EXPECT_TRUE(is_cached("a", 1));
  EXPECT_EQ(h_.kv_.get_computed_blocks(req("a").block_hashes(), 9).num_computed_tokens, 8);
}

TEST_F(DraftTest, AcceptedDraftsAreAppendedAndRejectedOnesRolledBack) {
  ASSERT_TRUE(h_.add("a", prompt_of(5, 10), 20).ok());
  finish_step(h_.scheduler_.schedule(), {70});
  ASSERT_TRUE(h_.scheduler_.set_draft_token_ids("a", {71, 72, 73, 74}));
  SchedulerOutput verify = h_.scheduler_.schedule();
  EXPECT_EQ(req("a").num_computed_tokens, 10);  // 6 + 4 drafts, until the update
  std::vector<RequestUpdate> u = finish_step(verify, {71, 72, 80});
  EXPECT_EQ(u.at(0).new_token_ids, (std::vector<int32_t>{71, 72, 80}));
  EXPECT_EQ(req("a").num_tokens(), 9);
  EXPECT_EQ(req("a").num_computed_tokens, 8);  // own 6 + 2 accepted; 80 is next
  EXPECT_TRUE(req("a").draft_token_ids.empty());
  EXPECT_EQ(h_.scheduler_.stats().num_draft_tokens, 4);
  EXPECT_EQ(h_.scheduler_.stats().num_accepted_tokens, 2);
  EXPECT_EQ(h_.scheduler_.stats().num_generation_tokens, 4);
  SchedulerOutput next = h_.scheduler_.schedule();
  EXPECT_EQ(next.scheduled.at(0).num_computed_tokens, 8);
  EXPECT_EQ(next.scheduled.at(0).num_new_tokens, 1);
  EXPECT_TRUE(next.scheduled.at(0).draft_token_ids.empty());  // proposals last one step
}

TEST_F(DraftTest, StopTokenInsideTheListDropsTheRest) {
  ASSERT_TRUE(h_.add("a", prompt_of(5, 10), 20, {72}).ok());
  finish_step(h_.scheduler_.schedule(), {70});
  ASSERT_TRUE(h_.scheduler_.set_draft_token_ids("a", {71, 72, 73}));
  std::vector<RequestUpdate> u = finish_step(h_.scheduler_.schedule(), {71, 72, 73, 74});
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].new_token_ids, (std::vector<int32_t>{71, 72}));
  EXPECT_TRUE(u[0].finished);
  EXPECT_EQ(req("a").status, RequestStatus::kFinishedStopped);
  h_.scheduler_.release_finished();
  EXPECT_EQ(h_.kv_.pool().num_free_blocks(), 32);
}

TEST_F(DraftTest, DraftsFitTheBudgetMaxTokensAndMaxModelLen) {
  Harness h(32, {.max_num_batched_tokens = 3, .max_model_len = 12});
  ASSERT_TRUE(h.add("a", prompt_of(2, 10), 5).ok());
  ASSERT_TRUE(h.add("b", prompt_of(8, 30), 20).ok());
  SchedulerOutput first = h.scheduler_.schedule();  // a prefills; b gets one token
  std::vector<std::vector<int32_t>> sampled = {{50}, {}};
  h.scheduler_.update_from_output(first, sampled);
  ASSERT_TRUE(h.scheduler_.set_draft_token_ids("a", {1, 2, 3, 4, 5, 6}));
  SchedulerOutput out = h.scheduler_.schedule();
  EXPECT_EQ(out.scheduled.at(0).num_draft_tokens(), 2);  // budget 3 = 1 own + 2 drafts
  EXPECT_EQ(out.total_num_scheduled_tokens, 3);
  // a has 1 output token and max_tokens 5: at most 3 drafts (+1) fit.
  sampled = {{1, 2, 7}};
  sampled.resize(out.scheduled.size());
  h.scheduler_.update_from_output(out, sampled);
  ASSERT_TRUE(h.scheduler_.set_draft_token_ids("a", {1, 2, 3}));
  out = h.scheduler_.schedule();
  EXPECT_EQ(out.scheduled.at(0).num_draft_tokens(), 0) << "4 output tokens, max_tokens 5";
  EXPECT_FALSE(h.scheduler_.set_draft_token_ids("unknown", {1}));
}

}  // namespace
}  // namespace strata::scheduler
