// A persistent pool of worker threads for data-parallel kernels.
//
// parallel_for cuts [0, n) into chunks aligned to `grain` and the calling
// thread and the workers claim chunks from a shared counter until none are
// left. The caller never waits for a worker that has not started: on a
// shared 2-vCPU machine a descheduled worker simply claims nothing, and the
// caller waits only for chunks a worker is actually running. Idle workers spin
// briefly, then sleep on a futex.
//
// Thread-safety: parallel_for may be called from one thread at a time (the
// engine thread). Nested calls from inside a job run serially on the caller.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace strata {

class ThreadPool {
 public:
  // `num_threads` counts the caller: 1 means no workers (everything inline).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end, thread_idx) over disjoint ranges covering [0, n).
  // Every range except the last starts and ends at a multiple of `grain`;
  // thread_idx < num_threads() identifies the executing thread (for
  // per-thread scratch), and one thread runs one range at a time.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                    int64_t grain = 1);

  // A process-wide pool sized from STRATA_NUM_THREADS or the hardware.
  static ThreadPool& global();

 private:
  // claim_ packs (generation:24 | next_chunk:20 | num_chunks:20) so a chunk
  // can only be claimed while its job is the published one.
  static constexpr int kChunkBits = 20;
  static constexpr uint64_t kChunkMask = (uint64_t{1} << kChunkBits) - 1;

  void worker_loop(int thread_idx);
  // Claims and runs chunks of the current job; returns when none are left.
  void run_chunks(int thread_idx);

  const int num_threads_;
  std::vector<std::thread> workers_;
  // Job description, written by the caller before it publishes claim_.
  const std::function<void(int64_t, int64_t, int)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_chunk_items_ = 1;
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> chunks_done_{0};
  std::atomic<uint32_t> wake_{0};       // futex the workers sleep on
  std::atomic<int> num_sleeping_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> in_job_{false};
  uint64_t generation_ = 0;
};

}  // namespace strata
