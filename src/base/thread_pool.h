// A persistent pool of worker threads for data-parallel kernels.
//
// parallel_for splits [0, n) into one contiguous range per thread; the calling
// thread runs range 0 and the workers the rest, and the call returns when all
// ranges are done. Workers spin briefly for the next job and then sleep, so a
// pool on a shared 2-vCPU machine does not burn the neighbour's core.
//
// Thread-safety: parallel_for may be called from one thread at a time (the
// engine thread). Nested calls from inside a job run serially.
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

  // fn(begin, end, thread_idx) over a partition of [0, n) into at most
  // num_threads() ranges whose sizes differ by at most `grain` (ranges start
  // at multiples of `grain` so SIMD/blocked kernels keep aligned tiles).
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                    int64_t grain = 1);

  // A process-wide pool sized from STRATA_NUM_THREADS or the hardware.
  static ThreadPool& global();

 private:
  void worker_loop(int thread_idx);
  void run_range(int thread_idx);

  const int num_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int64_t, int)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_grain_ = 1;
  int job_parts_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> in_job_{false};
};

}  // namespace strata
