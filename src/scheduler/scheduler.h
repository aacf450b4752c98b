// Decides, once per engine step, which requests run and how many tokens each
// computes, under one token budget (vLLM v1's scheduler, in plain data).
//
// schedule():
//   1. running requests first, in order: each gets min(remaining, budget)
//      tokens (a decode is 1; a prefill may be a chunk), plus, when the step
//      reaches the end of its sequence, the draft tokens proposed for it
//      (Request::draft_token_ids) to verify, as far as the budget,
//      max_model_len and max_tokens leave room. When the KV pool is
//      out of blocks, the lowest-priority running request (the latest
//      admitted) is preempted: its blocks are freed, its counters reset, and
//      it goes back to the front of the waiting queue (recompute later, with
//      whatever prefix is still cached).
//   2. if nothing was preempted, waiting requests are admitted FCFS while the
//      budget, --max-num-seqs and the KV pool allow, starting after their
//      longest cached prefix. With a KvConnector (tiered KV cache), the
//      connector is then asked how many further tokens its tiers can load: a
//      request with such a hit gets its blocks and waits for the copy
//      (kWaitingForRemoteKvs) while later requests are admitted; a request
//      whose lookup must be retried is skipped this step. A prompt that
//      would fit whole in a step's budget is not cut to fill what another
//      prompt's prefill left of this one: admission stops and it starts next
//      step, whole (it would have finished there anyway, and this step ends
//      sooner for everyone in it). Prompts no step takes whole (over the
//      budget or long_prefill_token_threshold), or one that only decodes
//      share the step with, are chunked as before.
// update_from_output() appends each request's sampled tokens (one, or for a
// verify step the accepted drafts plus one), finishes requests that hit EOS, a
// stop token, max_tokens or max_model_len (dropping the tokens after it), and
// rolls num_computed_tokens back over the rejected drafts.
//
// Multi-token steps (speculative verification): drafts occupy the positions
// right after the request's last token; their KV slots are allocated and
// written, but they are not the request's tokens until accepted. Blocks are
// hashed and cached only over the request's own tokens (all_token_ids), so a
// block holding a rejected draft's KV is never a cached full block: after the
// rollback its slots count as not computed and the next step rewrites them
// before the block can become full and cached.
//
// Out of KV space is never an error: it preempts or waits.
// No tensors, no I/O, no threads: engine thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/kv_cache_manager.h"
#include "scheduler/kv_connector.h"
#include "scheduler/request.h"

namespace strata::scheduler {

struct SchedulerConfig {
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 2048;
  int64_t max_model_len = 2048;
  bool enable_chunked_prefill = true;
  int64_t long_prefill_token_threshold = 0;  // cap per prefill chunk; 0 = budget only
};

// One request's share of a step. The step computes, at consecutive positions
// from num_computed_tokens:
//   [num_new_tokens of the request's own tokens][draft_token_ids]
// i.e. all_token_ids()[num_computed_tokens, +num_new_tokens), then the drafts
// at positions num_tokens() + j. Drafts are only present when `samples`.
struct ScheduledRequest {
  Request* request = nullptr;
  int64_t num_computed_tokens = 0;  // before this step: position of the first new token
  int64_t num_new_tokens = 0;       // the request's own tokens computed (drafts excluded)
  bool samples = false;  // this step reaches the end of the sequence: sample a token
  // Draft tokens to verify this step (empty = an ordinary step). The runner
  // samples at the last own position and at every draft position: up to
  // draft_token_ids.size() + 1 tokens.
  std::vector<int32_t> draft_token_ids;

  int64_t num_draft_tokens() const { return static_cast<int64_t>(draft_token_ids.size()); }
  // Tokens this step runs through the model (what the budget and KV slots count).
  int64_t num_scheduled_tokens() const { return num_new_tokens + num_draft_tokens(); }
};

struct SchedulerOutput {
  std::vector<ScheduledRequest> scheduled;
  int64_t total_num_scheduled_tokens = 0;  // sum of num_scheduled_tokens(), drafts included
  std::vector<std::string> preempted_request_ids;
  // Requests finished or aborted since the previous step (runner drops their state).
  std::vector<kv::RequestKey> finished_request_keys;
};

// What a step appended to one request: new_token_ids[i] is the i-th token of
// that request's sampled list (a prefix of it when a stop came first).
struct RequestUpdate {
  Request* request = nullptr;
  std::vector<int32_t> new_token_ids;  // never empty
  bool finished = false;
};

struct SchedulerStats {
  int64_t num_preemptions = 0;
  int64_t num_prompt_tokens_computed = 0;  // prompt tokens actually run (not cache hits)
  int64_t num_generation_tokens = 0;
  // Verify steps: draft tokens scheduled and accepted (vllm:spec_decode_*).
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_tokens = 0;
  // Prompt tokens by origin at each request's first scheduling
  // (vllm:prompt_tokens_by_source_total); the three sum to the prompt tokens.
  int64_t prompt_tokens_local_compute = 0;
  int64_t prompt_tokens_local_cache_hit = 0;
  int64_t prompt_tokens_external = 0;
  // Connector lookups at admission, in tokens (vllm:external_prefix_cache_*).
  int64_t external_queries_tokens = 0;
  int64_t external_hit_tokens = 0;
};

class Scheduler {
 public:
  // `connector` may be null (no tiered KV cache); it must outlive the scheduler.
  Scheduler(SchedulerConfig config, kv::KvCacheManager& kv, KvConnector* connector = nullptr);
  void set_connector(KvConnector* connector) { connector_ = connector; }

  // Queues a request. Errors (nothing queued): a prompt longer than
  // max_model_len, or one that could never fit in the KV pool.
  Status add_request(std::unique_ptr<Request> request);

  // Finishes a request now (client gone, or a stop string matched) and frees
  // its blocks. Returns false for unknown or already finished ids.
  bool finish_request(const std::string& request_id, RequestStatus status);

  SchedulerOutput schedule();

  // sampled_token_ids[i] are the tokens sampled for output.scheduled[i]
  // (ignored when that entry does not sample): for a verify step with k
  // drafts, the accepted drafts (a prefix of them) then one more token, so
  // 1..k+1 tokens; exactly one otherwise. Returns one update per request that
  // appended tokens.
  std::vector<RequestUpdate> update_from_output(
      const SchedulerOutput& output, std::span<const std::vector<int32_t>> sampled_token_ids);

  // Proposes draft tokens to verify in `request_id`'s next step; they follow
  // its last token. Replaced by the next call; dropped once scheduled or once
  // the request gains a token. Returns false for unknown or finished ids.
  bool set_draft_token_ids(const std::string& request_id, std::vector<int32_t> draft_token_ids);

  // Releases finished requests (the caller has consumed their last update).
  void release_finished();

  // A load started by KvConnector::start_load finished with its first
  // `num_loaded_tokens` tokens in place (all of them unless a copy failed).
  // The request becomes schedulable from there; if it was finished while
  // loading, its blocks are freed now.
  void finish_kv_load(const std::string& request_id, int64_t num_loaded_tokens);

  const Request* find(const std::string& request_id) const;
  int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t num_running() const { return static_cast<int64_t>(running_.size()); }
  bool has_unfinished_requests() const { return !waiting_.empty() || !running_.empty(); }
  // Loads in flight (including those of requests finished meanwhile).
  int64_t num_loading() const { return num_loading_; }
  const SchedulerConfig& config() const { return config_; }
  const SchedulerStats& stats() const { return stats_; }

 private:
  int64_t chunk_size(const Request& r, int64_t num_computed, int64_t budget) const;
  // How many of r's drafts fit after `num_new` own tokens under `budget`.
  int64_t num_drafts_to_verify(const Request& r, int64_t num_new, int64_t budget) const;
  void schedule_running(SchedulerOutput& out, int64_t& budget);
  void schedule_waiting(SchedulerOutput& out, int64_t& budget);
  // Admits waiting_[idx] if it fits. Returns how to go on.
  enum class Admit { kScheduled, kLoading, kSkip, kStop, kDefer };
  Admit admit(Request* r, SchedulerOutput& out, int64_t& budget, bool step_has_prefill);
  void record_first_schedule(Request* r, int64_t num_local_hit, int64_t num_external);
  void preempt(Request* victim, SchedulerOutput& out);
  bool check_stop(Request& r, int32_t token);
  void finish(Request* r, RequestStatus status);

  SchedulerConfig config_;
  kv::KvCacheManager& kv_;
  KvConnector* connector_;
  // Requests finished while their load was in flight: key freed at load end.
  std::unordered_map<std::string, kv::RequestKey> free_after_load_;
  int64_t num_loading_ = 0;
  std::unordered_map<std::string, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;
  std::vector<Request*> finished_;
  std::vector<kv::RequestKey> finished_keys_;
  SchedulerStats stats_;
};

}  // namespace strata::scheduler
