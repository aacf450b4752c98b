// The scheduler's side of the tiered KV cache, with a scripted connector:
// retries skip a request without blocking others, loads park a request until
// finish_kv_load, loaded blocks are shared only once their copy is done, and
// a request finished mid-load frees its blocks only when the copy ends.
#include <gtest/gtest.h>

#include <deque>
#include <map>

#include "scheduler/kv_connector.h"
#include "scheduler/scheduler.h"

namespace strata::scheduler {
namespace {

constexpr int kBlockSize = 4;

class ScriptedConnector : public KvConnector {
 public:
  // Answers for request id, in order; the last one repeats.
  std::map<std::string, std::deque<std::optional<int64_t>>> answers;
  struct Load {
    std::string id;
    std::vector<int32_t> block_ids;
    int64_t num_computed = 0;
    int64_t num_external = 0;
  };
  std::vector<Load> loads;
  std::vector<std::string> finished;

  std::optional<int64_t> get_num_new_matched_tokens(const Request& r, int64_t) override {
    auto it = answers.find(r.request_id());
    if (it == answers.end() || it->second.empty()) return 0;
    std::optional<int64_t> a = it->second.front();
    if (it->second.size() > 1) it->second.pop_front();
    return a;
  }
  void start_load(const Request& r, std::span<const int32_t> block_ids, int64_t num_computed,
                  int64_t num_external) override {
    loads.push_back({r.request_id(), {block_ids.begin(), block_ids.end()}, num_computed,
                     num_external});
  }
  std::optional<KvTransferParams> request_finished(const Request& r) override {
    finished.push_back(r.request_id());
    return std::nullopt;
  }
};

class ConnectorHarness : public ::testing::Test {
 protected:
  ConnectorHarness() : kv_(32, kBlockSize, true), scheduler_(config(), kv_, &connector_) {}
  static SchedulerConfig config() {
    SchedulerConfig c;
    c.max_num_batched_tokens = 64;
    c.max_model_len = 128;
    return c;
  }
  void add(const std::string& id, int n, int32_t first_token = 1) {
    std::vector<int32_t> prompt(n);
    for (int i = 0; i < n; ++i) prompt[i] = first_token + i;
    StopConditions stop;
    stop.max_tokens = 2;
    ASSERT_TRUE(scheduler_
                    .add_request(std::make_unique<Request>(id, next_key_++, prompt, stop,
                                                           kv::root_block_hash({"m", "f32", ""}),
                                                           kBlockSize))
                    .ok());
  }
  // What one step scheduled, captured before finished requests are released.
  struct Scheduled {
    std::string id;
    int64_t num_computed_tokens = 0;
    int64_t num_new_tokens = 0;
  };
  using StepResult = std::vector<Scheduled>;

  // Schedules and completes one step (sampling token 7 for every sampler).
  StepResult step() {
    SchedulerOutput out = scheduler_.schedule();
    StepResult result;
    for (const ScheduledRequest& s : out.scheduled) {
      result.push_back({s.request->request_id(), s.num_computed_tokens, s.num_new_tokens});
    }
    std::vector<std::vector<int32_t>> sampled(out.scheduled.size(), {7});
    scheduler_.update_from_output(out, sampled);
    scheduler_.release_finished();
    return result;
  }
  static std::optional<Scheduled> find(const StepResult& out, const std::string& id) {
    for (const Scheduled& s : out) {
      if (s.id == id) return s;
    }
    return std::nullopt;
  }

  kv::KvCacheManager kv_;
  ScriptedConnector connector_;
  Scheduler scheduler_;
  kv::RequestKey next_key_ = 1;
};

TEST_F(ConnectorHarness, RetrySkipsTheRequestButNotTheOthers) {
  connector_.answers["a"] = {std::nullopt, std::nullopt, 0};
  add("a", 10);
  add("b", 6, 100);
  StepResult s1 = step();
  EXPECT_FALSE(find(s1, "a"));
  EXPECT_TRUE(find(s1, "b")) << "a retrying must not block b";
  EXPECT_FALSE(find(step(), "a"));
  std::optional<Scheduled> a = find(step(), "a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->num_computed_tokens, 0);
  EXPECT_EQ(scheduler_.stats().external_queries_tokens, 10 + 6);  // retries are not queries
}

TEST_F(ConnectorHarness, LoadParksTheRequestThenComputesTheRest) {
  connector_.answers["a"] = {8};
  add("a", 13);
  StepResult s1 = step();
  EXPECT_FALSE(find(s1, "a"));
  ASSERT_EQ(connector_.loads.size(), 1u);
  EXPECT_EQ(connector_.loads[0].num_computed, 0);
  EXPECT_EQ(connector_.loads[0].num_external, 8);
  EXPECT_EQ(connector_.loads[0].block_ids.size(), 4u) << "blocks for all 13 tokens";
  EXPECT_EQ(scheduler_.find("a")->status, RequestStatus::kWaitingForRemoteKvs);
  EXPECT_FALSE(find(step(), "a")) << "still loading";
  scheduler_.finish_kv_load("a", 8);
  std::optional<Scheduled> a = find(step(), "a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->num_computed_tokens, 8);
  EXPECT_EQ(a->num_new_tokens, 5);
  const SchedulerStats& st = scheduler_.stats();
  EXPECT_EQ(st.prompt_tokens_external, 8);
  EXPECT_EQ(st.prompt_tokens_local_compute, 5);
  EXPECT_EQ(st.external_hit_tokens, 8);
  EXPECT_EQ(scheduler_.find("a")->num_cached_tokens, 8);
}

TEST_F(ConnectorHarness, LoadedBlocksAreSharedOnlyAfterTheCopy) {
  connector_.answers["a"] = {8};
  add("a", 13);
  step();
  add("b", 13);  // same prompt
  std::optional<Scheduled> b = find(step(), "b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->num_computed_tokens, 0) << "a's blocks are still being written";
}

TEST_F(ConnectorHarness, FinishKvLoadMakesTheLoadedBlocksFindable) {
  connector_.answers["a"] = {8};
  add("a", 13);
  step();
  const Request* a = scheduler_.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(kv_.get_computed_blocks(a->block_hashes(), 13).num_computed_tokens, 0);
  scheduler_.finish_kv_load("a", 8);
  const kv::ComputedBlocks hit = kv_.get_computed_blocks(a->block_hashes(), 13);
  EXPECT_EQ(hit.num_computed_tokens, 8) << "the two loaded blocks, before a computes anything";
  const std::vector<int32_t>& table = kv_.block_ids(a->key());
  ASSERT_GE(table.size(), 2u);
  EXPECT_EQ(hit.block_ids, std::vector<int32_t>(table.begin(), table.begin() + 2));
}

TEST_F(ConnectorHarness, FinishedWhileLoadingFreesBlocksWhenTheCopyEnds) {
  connector_.answers["a"] = {8};
  add("a", 13);
  step();
  const int32_t free_while_loading = kv_.pool().num_free_blocks();
  ASSERT_TRUE(scheduler_.finish_request("a", RequestStatus::kFinishedAborted));
  step();
  EXPECT_EQ(kv_.pool().num_free_blocks(), free_while_loading) << "the copy still writes them";
  EXPECT_EQ(connector_.finished, std::vector<std::string>{"a"});
  EXPECT_EQ(scheduler_.num_loading(), 1);
  scheduler_.finish_kv_load("a", 8);
  EXPECT_EQ(kv_.pool().num_free_blocks(), kv_.pool().num_blocks());
  EXPECT_EQ(scheduler_.num_loading(), 0);
}

TEST_F(ConnectorHarness, LoadedRequestsPassOneThePoolCannotTake) {
  // b (first in line) retries while a loads; then b needs more blocks than are
  // free. a holds its blocks already: it must run, or the pool stays hostage.
  connector_.answers["b"] = {std::nullopt, 0};
  connector_.answers["a"] = {64};
  add("b", 100, 500);
  add("a", 80);
  step();
  ASSERT_EQ(connector_.loads.size(), 1u);
  scheduler_.finish_kv_load("a", 64);
  StepResult s2 = step();
  EXPECT_FALSE(find(s2, "b")) << "its first chunk needs 16 blocks; 12 are free";
  std::optional<Scheduled> a = find(s2, "a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->num_computed_tokens, 64);
  EXPECT_EQ(scheduler_.stats().external_queries_tokens, 80) << "b's failed admissions are not queries";
}

}  // namespace
}  // namespace strata::scheduler
