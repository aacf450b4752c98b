#include "base/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>

#include "base/check.h"
#include "base/cpu_features.h"

namespace strata {
namespace {
constexpr int kSpinIterations = 4000;  // a few microseconds before sleeping
constexpr int64_t kChunksPerThread = 4;
}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int i = 1; i < num_threads_; ++i) {
    workers_.emplace_back([this, i] { worker_loop(i); });
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  wake_.fetch_add(1);
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks(int thread_idx) {
  uint64_t v = claim_.load(std::memory_order_acquire);
  while (true) {
    const uint64_t next = (v >> kChunkBits) & kChunkMask;
    const uint64_t total = v & kChunkMask;
    if (next >= total) return;
    if (!claim_.compare_exchange_weak(v, v + (uint64_t{1} << kChunkBits),
                                      std::memory_order_acq_rel, std::memory_order_acquire)) {
      continue;
    }
    // The job cannot change until this chunk is counted done.
    const int64_t begin = static_cast<int64_t>(next) * job_chunk_items_;
    const int64_t end = std::min(job_n_, begin + job_chunk_items_);
    (*job_)(begin, end, thread_idx);
    chunks_done_.fetch_add(1, std::memory_order_acq_rel);
    v = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop(int thread_idx) {
  uint32_t seen = wake_.load();
  while (!stop_.load(std::memory_order_acquire)) {
    run_chunks(thread_idx);
    int spins = 0;
    uint32_t now = wake_.load(std::memory_order_acquire);
    while (now == seen && ++spins < kSpinIterations) {
      _mm_pause();
      now = wake_.load(std::memory_order_acquire);
    }
    if (now == seen) {
      num_sleeping_.fetch_add(1, std::memory_order_acq_rel);
      wake_.wait(seen, std::memory_order_acquire);
      num_sleeping_.fetch_sub(1, std::memory_order_acq_rel);
    }
    seen = wake_.load(std::memory_order_acquire);
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                              int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t grains = (n + grain - 1) / grain;
  const bool nested = in_job_.exchange(true);
  if (nested || num_threads_ == 1 || grains == 1) {
    fn(0, n, 0);
    if (!nested) in_job_.store(false);
    return;
  }
  const int64_t max_chunks = std::min<int64_t>(grains, kChunksPerThread * num_threads_);
  const int64_t grains_per_chunk = (grains + max_chunks - 1) / max_chunks;
  job_ = &fn;
  job_n_ = n;
  job_chunk_items_ = grains_per_chunk * grain;
  const int64_t num_chunks = (n + job_chunk_items_ - 1) / job_chunk_items_;
  STRATA_CHECK(num_chunks <= static_cast<int64_t>(kChunkMask));
  chunks_done_.store(0, std::memory_order_relaxed);
  generation_ = (generation_ + 1) & 0xffffff;
  claim_.store(generation_ << (2 * kChunkBits) | static_cast<uint64_t>(num_chunks),
               std::memory_order_release);
  wake_.fetch_add(1, std::memory_order_acq_rel);
  if (num_sleeping_.load(std::memory_order_acquire) > 0) wake_.notify_all();
  run_chunks(0);
  // Only chunks a worker claimed and is running can still be outstanding.
  int spins = 0;
  while (chunks_done_.load(std::memory_order_acquire) != num_chunks) {
    if (++spins < kSpinIterations) {
      _mm_pause();
    } else {
      std::this_thread::yield();
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
