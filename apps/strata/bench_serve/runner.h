// Drives a list of independent prompts (random, prefix-repetition) against
// the server the way `vllm bench serve` does:
//   - request i becomes due at its arrival time (arrival.h);
//   - at most `max_concurrency` requests are in flight (0 = no limit): a due
//     request waits for a free slot and that wait is its queue time; the
//     measured start is when it actually leaves;
//   - duration runs from the first dispatch to the last completion.
// run_warmups sends requests first, unmeasured (vLLM's --num-warmups).
//
// Thread-safety: call from one thread; it starts and joins its own workers
// (one thread per concurrency slot, each with a blocking connection).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "bench_serve/datasets.h"
#include "bench_serve/openai_client.h"
#include "bench_serve/request_record.h"

namespace strata::bench {

struct RunOptions {
  ClientOptions client;
  double request_rate = INFINITY;  // requests/s
  double burstiness = 1.0;
  int64_t max_concurrency = 0;  // 0 = unlimited
  bool show_progress = true;
  uint64_t seed = 0;
  std::string request_id_prefix = "strata-bench-";  // x-request-id = prefix + index
};

struct RunResult {
  std::vector<RequestRecord> records;
  double duration_s = 0;
};

RunResult run_prompts(const RunOptions& o, const std::vector<DatasetPrompt>& prompts);
void run_warmups(const RunOptions& o, const std::vector<DatasetPrompt>& prompts);

// The request body for one independent prompt (a user message for chat).
std::string prompt_body(const ClientOptions& o, const DatasetPrompt& p);

// Runs fn(worker_idx) on `num_workers` threads and joins them.
void run_workers(int64_t num_workers, const std::function<void(int64_t)>& fn);

}  // namespace strata::bench
