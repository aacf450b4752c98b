// What the scheduler asks of the tiered KV cache (vLLM's KVConnector,
// scheduler side). Implemented by offload/transfer's OffloadingConnector; the
// scheduler sees only this interface and plain numbers.
//
// Flow for a waiting request r (engine thread, inside Scheduler::schedule):
//   1. pool hit: the leading blocks already in the KV pool
//   2. get_num_new_matched_tokens(r, pool_hit_tokens) -> how many further
//      tokens the tiers can load (whole chunks), or nullopt = "not known yet,
//      ask again next step" (a lower tier is promoting data into host memory)
//   3. if > 0: the scheduler allocates KV-pool blocks for pool_hit + external
//      tokens and calls start_load(); r waits (kWaitingForRemoteKvs) while the
//      copy runs and other requests keep computing
//   4. the engine reports the finished load (Scheduler::finish_kv_load), after
//      which r is scheduled from the first token no tier had
// When r finishes (Scheduler::finish), request_finished(r) drops the
// connector's state for it and may return KvTransferParams for r's final
// output (P/D: where a decoder loads r's KV from).
// After every forward pass the engine calls the connector to store newly
// computed full chunks (that does not involve the scheduler).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace strata::scheduler {

class Request;

// Per-request instructions for the tiers, from the request's
// kv_transfer_params (as a KV-aware router or a P/D proxy sets them).
struct KvTransferHints {
  // A peer instance that holds this prompt's KV (P/D prefiller, or the
  // instance a router saw it on): the peer tier fetches from it.
  std::string remote_host;
  int64_t remote_port = 0;
  int64_t max_load_tokens = -1;     // cap on tokens loaded from tiers; 0 = none, -1 = no cap
  int64_t max_offload_tokens = -1;  // offload only the first N tokens; 0 = none, -1 = all
  bool do_remote_decode = false;    // this instance prefills for a decoder elsewhere
};

// What the connector returns for a finished request (vLLM's
// request_finished -> kv_transfer_params): for a do_remote_decode prefill,
// the peer that serves this prompt's KV to the decoder.
struct KvTransferParams {
  std::string remote_host;
  int64_t remote_port = 0;
  bool do_remote_prefill = false;  // the receiver of these params loads the KV remotely
  bool do_remote_decode = false;
};

class KvConnector {
 public:
  virtual ~KvConnector() = default;

  // Tokens after `num_computed_tokens` that the tiers can supply for `r`
  // (a multiple of the chunk size, leaving at least the last prompt token to
  // compute), or nullopt to retry next step.
  virtual std::optional<int64_t> get_num_new_matched_tokens(const Request& r,
                                                            int64_t num_computed_tokens) = 0;

  // Starts loading tokens [num_computed_tokens, num_computed_tokens +
  // num_external_tokens) of `r` into its blocks `block_ids` (its whole block
  // table). Completion is reported to Scheduler::finish_kv_load by the engine.
  virtual void start_load(const Request& r, std::span<const int32_t> block_ids,
                          int64_t num_computed_tokens, int64_t num_external_tokens) = 0;

  // `r` finished (any reason): drop per-request state. Returns the
  // kv_transfer_params for r's final output, or nullopt. Unlike vLLM's, it
  // never asks to delay freeing r's blocks: chunks a peer will fetch are
  // served from host memory.
  virtual std::optional<KvTransferParams> request_finished(const Request& r) = 0;
};

}  // namespace strata::scheduler
