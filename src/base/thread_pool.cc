#include "base/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>

#include "base/check.h"
#include "base/cpu_features.h"

namespace strata {
namespace {
constexpr int kSpinIterations = 20000;  // ~tens of microseconds before sleeping
}

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int i = 1; i < num_threads_; ++i) {
    workers_.emplace_back([this, i] { worker_loop(i); });
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_range(int thread_idx) {
  if (thread_idx >= job_parts_) return;
  int64_t chunks = (job_n_ + job_grain_ - 1) / job_grain_;
  int64_t begin_chunk = chunks * thread_idx / job_parts_;
  int64_t end_chunk = chunks * (thread_idx + 1) / job_parts_;
  int64_t begin = std::min(job_n_, begin_chunk * job_grain_);
  int64_t end = std::min(job_n_, end_chunk * job_grain_);
  if (begin < end) (*job_)(begin, end, thread_idx);
}

void ThreadPool::worker_loop(int thread_idx) {
  uint64_t seen = 0;
  while (true) {
    int spins = 0;
    uint64_t gen = generation_.load(std::memory_order_acquire);
    while (gen == seen) {
      if (++spins < kSpinIterations) {
        _mm_pause();
      } else {
        generation_.wait(seen, std::memory_order_acquire);
      }
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load()) return;
    run_range(thread_idx);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                              int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int64_t chunks = (n + grain - 1) / grain;
  bool nested = in_job_.exchange(true);
  if (nested || num_threads_ == 1 || chunks == 1) {
    fn(0, n, 0);
    if (!nested) in_job_.store(false);
    return;
  }
  job_ = &fn;
  job_n_ = n;
  job_grain_ = grain;
  job_parts_ = static_cast<int>(std::min<int64_t>(num_threads_, chunks));
  pending_.store(num_threads_ - 1, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  run_range(0);
  int spins = 0;
  for (int left = pending_.load(std::memory_order_acquire); left != 0;
       left = pending_.load(std::memory_order_acquire)) {
    if (++spins < kSpinIterations) {
      _mm_pause();
    } else {
      pending_.wait(left, std::memory_order_acquire);
    }
  }
  job_ = nullptr;
  in_job_.store(false);
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool([] {
    const char* env = std::getenv("STRATA_NUM_THREADS");
    int n = env != nullptr ? std::atoi(env) : 0;
    return n > 0 ? n : num_hardware_threads();
  }());
  return pool;
}

}  // namespace strata
