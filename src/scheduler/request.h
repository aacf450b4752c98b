// One generation request as the scheduler sees it: token ids and the two
// counters that drive everything (vLLM v1):
//
//   num_computed_tokens  tokens whose K/V are in the KV pool
//   num_tokens()         prompt + generated tokens so far
//
// A step computes num_tokens() - num_computed_tokens tokens (or a chunk of
// them). Prefill, chunked prefill, decode, prefix-cache hits and resumption
// after preemption are all this one rule. When a step's tokens reach
// num_tokens(), the runner samples one new token, which is appended here
// (or, when the step also verified draft tokens, the accepted drafts and one
// more; num_computed_tokens then steps back over the rejected ones).
//
// Owned by the Scheduler; touched only on the engine thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kv/block_hash.h"
#include "kv/kv_cache_manager.h"
#include "scheduler/kv_connector.h"

namespace strata::scheduler {

enum class RequestStatus {
  kWaiting,
  kWaitingForRemoteKvs,  // KV-pool blocks allocated; a tier is copying its prefix in
  kRunning,
  kPreempted,
  kFinishedStopped,   // EOS, a stop token or a stop string
  kFinishedLength,    // max_tokens or max_model_len reached
  kFinishedAborted,   // client went away or asked
};

bool is_finished(RequestStatus status);

// When generation ends, decided on token ids (stop strings are matched on
// text by the engine's output processor, which then finishes the request).
struct StopConditions {
  int64_t max_tokens = 16;
  int64_t min_tokens = 0;                 // stop tokens are ignored before this many
  std::vector<int32_t> stop_token_ids;    // in addition to EOS
  std::vector<int32_t> eos_token_ids;
  bool ignore_eos = false;
};

class Request {
 public:
  Request(std::string request_id, kv::RequestKey key, std::vector<int32_t> prompt_token_ids,
          StopConditions stop, const kv::BlockHash& root_hash, int64_t block_size);

  const std::string& request_id() const { return request_id_; }
  kv::RequestKey key() const { return key_; }
  const StopConditions& stop() const { return stop_; }

  int64_t num_prompt_tokens() const { return num_prompt_tokens_; }
  int64_t num_tokens() const { return static_cast<int64_t>(all_token_ids_.size()); }
  int64_t num_output_tokens() const { return num_tokens() - num_prompt_tokens_; }
  const std::vector<int32_t>& all_token_ids() const { return all_token_ids_; }
  const std::vector<kv::BlockHash>& block_hashes() const { return block_hashes_; }

  int64_t num_computed_tokens = 0;
  // Prompt tokens served from the KV pool or a tier at first scheduling
  // (usage's cached_tokens); -1 until then.
  int64_t num_cached_tokens = -1;
  // Of those, the tokens a tier loaded (the rest were KV-pool hits).
  int64_t num_external_cached_tokens = 0;
  // num_computed_tokens already counts KV a tier loaded into this request's
  // blocks: admit it from there without another lookup.
  bool has_loaded_kv = false;
  int64_t num_preemptions = 0;
  RequestStatus status = RequestStatus::kWaiting;
  // Prompt logprobs need every prompt position computed, so such requests
  // never take blocks from the prefix cache (vLLM does the same).
  bool skip_prefix_cache = false;
  KvTransferHints kv_transfer;
  // Set when the request finishes: what the connector returned for it.
  std::optional<KvTransferParams> kv_transfer_params;
  // Tokens proposed to follow the last token, verified in the next step
  // (Scheduler::set_draft_token_ids); never part of all_token_ids() until
  // accepted.
  std::vector<int32_t> draft_token_ids;

  // Appends a sampled token and extends the block hashes.
  void append_output_token(int32_t token);

 private:
  std::string request_id_;
  kv::RequestKey key_;
  StopConditions stop_;
  int64_t num_prompt_tokens_;
  std::vector<int32_t> all_token_ids_;
  kv::BlockHash root_hash_;
  int64_t block_size_;
  std::vector<kv::BlockHash> block_hashes_;
};

}  // namespace strata::scheduler
