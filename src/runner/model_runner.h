// Executes one scheduled engine step: turns the scheduler's plan into a flat
// ForwardBatch (token ids, positions, slot mapping, block tables), runs the
// model once over all of it, and samples one token for every request whose
// step reaches the end of its sequence.
//
// Owns the KV arena (the KV pool's memory) and each request's sampler, whose
// seeded RNG lives as long as the request, so a seed gives the same tokens
// whatever the batch around it and across preemptions.
// Engine thread only.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "attention/kv_arena.h"
#include "base/thread_pool.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "scheduler/scheduler.h"

namespace strata::runner {

struct SampledToken {
  int32_t token_id = -1;  // -1: this entry did not sample
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top_logprobs;  // best first
};

class ModelRunner {
 public:
  ModelRunner(const model::Model& model, int64_t num_blocks, int64_t block_size,
              ThreadPool& pool);

  // Registers a request's sampling settings before it is first scheduled.
  void add_request(kv::RequestKey key, const sampling::SamplingParams& params,
                   int num_top_logprobs);
  void remove_request(kv::RequestKey key);

  // One forward pass over `output`; result[i] belongs to output.scheduled[i].
  std::vector<SampledToken> execute(const scheduler::SchedulerOutput& output,
                                    const kv::KvCacheManager& kv);

  int64_t num_forward_tokens() const { return num_forward_tokens_; }

 private:
  struct RequestState {
    sampling::Sampler sampler;
    int num_top_logprobs;
  };
  model::ForwardBatch build_batch(const scheduler::SchedulerOutput& output,
                                  const kv::KvCacheManager& kv) const;

  const model::Model& model_;
  attention::KvArena arena_;
  ThreadPool& pool_;
  std::unordered_map<kv::RequestKey, RequestState> requests_;
  int64_t num_forward_tokens_ = 0;
};

}  // namespace strata::runner
