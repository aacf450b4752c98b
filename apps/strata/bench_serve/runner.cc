#include "bench_serve/runner.h"

#include <atomic>
#include <thread>

#include "bench_serve/arrival.h"
#include "bench_serve/progress_bar.h"

namespace strata::bench {
namespace {

int64_t num_slots(int64_t max_concurrency, int64_t num_requests) {
  return max_concurrency > 0 ? std::min(max_concurrency, num_requests) : num_requests;
}

}  // namespace

void run_workers(int64_t num_workers, const std::function<void(int64_t)>& fn) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(num_workers));
  for (int64_t w = 0; w < num_workers; ++w) threads.emplace_back(fn, w);
  for (std::thread& t : threads) t.join();
}

std::string prompt_body(const ClientOptions& o, const DatasetPrompt& p) {
  if (o.is_chat) return make_chat_body(o, {{"user", p.prompt.text}}, p.output_len);
  return make_completion_body(o, p.prompt, p.output_len);
}

RunResult run_prompts(const RunOptions& o, const std::vector<DatasetPrompt>& prompts) {
  const int64_t n = static_cast<int64_t>(prompts.size());
  const std::vector<double> due = make_arrival_times(n, o.request_rate, o.burstiness, o.seed);
  RunResult result;
  result.records.resize(prompts.size());
  std::vector<std::string> bodies;
  for (const DatasetPrompt& p : prompts) bodies.push_back(prompt_body(o.client, p));
  ProgressBar bar("benchmark", n, o.show_progress);
  std::atomic<int64_t> next{0};
  const Clock::time_point epoch = Clock::now();
  run_workers(num_slots(o.max_concurrency, n), [&](int64_t) {
    for (int64_t i = next++; i < n; i = next++) {
      const size_t idx = static_cast<size_t>(i);
      const Clock::time_point due_at = epoch + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(due[idx]));
      std::this_thread::sleep_until(due_at);
      const double waited = std::chrono::duration<double>(Clock::now() - due_at).count();
      RequestRecord r = send_streamed(o.client, bodies[idx], prompts[idx].prompt.num_tokens, epoch,
                                      o.request_id_prefix + std::to_string(i));
      r.queue_s = waited;
      result.records[idx] = std::move(r);
      bar.advance();
    }
  });
  result.duration_s = std::chrono::duration<double>(Clock::now() - epoch).count();
  bar.finish();
  return result;
}

void run_warmups(const RunOptions& o, const std::vector<DatasetPrompt>& prompts) {
  if (prompts.empty()) return;
  const int64_t n = static_cast<int64_t>(prompts.size());
  ProgressBar bar("warmup", n, o.show_progress);
  std::atomic<int64_t> next{0};
  const Clock::time_point epoch = Clock::now();
  run_workers(num_slots(o.max_concurrency, n), [&](int64_t) {
    for (int64_t i = next++; i < n; i = next++) {
      const DatasetPrompt& p = prompts[static_cast<size_t>(i)];
      send_streamed(o.client, prompt_body(o.client, p), p.prompt.num_tokens, epoch,
                    o.request_id_prefix + "warmup-" + std::to_string(i));
      bar.advance();
    }
  });
  bar.finish();
}

}  // namespace strata::bench
