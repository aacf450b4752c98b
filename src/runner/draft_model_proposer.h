// Draft-model speculation (vLLM's "draft_model" method): a smaller model with
// the target's vocabulary proposes each decoding request's next k tokens by
// greedy decoding; the target verifies them in its own step (ModelRunner),
// so the drafts only decide how many tokens a step gains, never which.
//
//   propose(requests)   up to k greedy drafts per request, all requests'
//                       draft forward passes batched together
//   remove_request(key) frees the request's draft KV (finished or aborted)
//
// The proposer owns the draft model's KV memory: a fixed pool of num_blocks
// blocks of block_size token slots, handed out per request from a free list,
// and per request the tokens whose KV it holds (`processed`: the request's
// tokens as of the last proposal plus the drafts it fed back). A proposal
// first rolls `processed` back to its longest common prefix with the
// request's tokens now (after a rejection, the accepted length: positions
// past it are simply rewritten), feeds the tokens it has not seen in one
// forward pass (long catch-ups in chunks of kMaxChunkTokens first), then runs
// k - 1 more single-token steps, each feeding back the previous draft. So a
// proposal of k drafts costs k draft forward passes over the whole batch.
//
// A request whose KV does not fit in the free blocks gets no drafts this
// time (never an error); its blocks stay with it until remove_request.
//
// Engine thread only; the forward passes run on `backend` (the target's
// compute pool), so no threads of its own.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_memory.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "tensor/kv_cache_dtype.h"

namespace strata::runner {

struct DraftRequest {
  kv::RequestKey key = 0;
  std::span<const int32_t> tokens;  // the request's prompt + output so far (non-empty)
  int64_t num_drafts = 0;           // k, at most this many drafts wanted
};

class DraftModelProposer {
 public:
  static constexpr int64_t kMaxChunkTokens = 512;

  // `model` and `backend` outlive the proposer. num_blocks >= 1.
  DraftModelProposer(const model::Model& model, backend::Backend& backend, int64_t num_blocks,
                     int64_t block_size, tensor::KvCacheDtype kv_dtype);

  // [requests.size()][0..num_drafts]: request i's greedy drafts (empty when
  // it wanted none, does not fit, or is past the draft model's context).
  std::vector<std::vector<int32_t>> propose(std::span<const DraftRequest> requests);
  void remove_request(kv::RequestKey key);

  int64_t num_blocks() const { return kv_->num_blocks(); }
  int64_t num_free_blocks() const { return static_cast<int64_t>(free_blocks_.size()); }
  int64_t num_forward_tokens() const { return num_forward_tokens_; }

 private:
  struct Sequence {
    std::vector<int32_t> blocks;     // block table in the draft pool
    std::vector<int32_t> processed;  // tokens whose KV sits at positions 0..n-1
  };
  // A request in this proposal: the tokens it feeds next, the drafts so far.
  struct Active {
    size_t index;
    Sequence* seq;
    int64_t num_drafts;
    std::vector<int32_t> pending;
  };

  // Rolls seq back, makes room for `num_positions` positions; false (no
  // blocks taken) when the pool cannot hold them.
  bool prepare(Sequence& seq, std::span<const int32_t> tokens, int64_t num_positions);
  // One forward pass feeding each active request its pending tokens; returns
  // the argmax after each request's last one.
  std::vector<int32_t> step(std::span<Active> active);
  void add_token(model::ForwardBatch& batch, const Sequence& seq, int32_t token_id,
                 int64_t pos) const;

  const model::Model& model_;
  backend::Backend& backend_;
  backend::KvMemoryHandle kv_;
  model::Workspace workspace_;
  std::vector<float> logits_;  // [num_seqs, vocab]
  std::vector<int32_t> free_blocks_;
  std::unordered_map<kv::RequestKey, Sequence> sequences_;
  int64_t num_forward_tokens_ = 0;
};

}  // namespace strata::runner
