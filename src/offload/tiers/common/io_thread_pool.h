// Threads for a tier's blocking I/O, with two queues: reads (loads, probes)
// and writes (stores). Read threads take from the read queue first and write
// threads from the write queue first; either kind takes from the other queue
// when its own is empty, so neither direction starves the other while both
// use every thread when only one has work (vLLM's DualQueueThreadPool).
//
// Tasks are plain callables run once each, FIFO within a queue. The
// destructor runs every task already queued, then joins the threads.
//
// Thread-safety: submit and wait_idle may be called from any thread, including
// from a task (a task must not call wait_idle).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::offload {

class IoThreadPool {
 public:
  enum class Queue { kRead = 0, kWrite = 1 };

  // At least one thread in total; either count may be 0.
  IoThreadPool(int num_read_threads, int num_write_threads);
  ~IoThreadPool();
  IoThreadPool(const IoThreadPool&) = delete;
  IoThreadPool& operator=(const IoThreadPool&) = delete;

  void submit(Queue queue, std::function<void()> task);

  // Blocks until both queues are empty and no task is running.
  void wait_idle();

  // Tasks queued (not yet started) in `queue`.
  int64_t num_queued(Queue queue) const;

 private:
  void worker_loop(Queue preferred);
  // Pops the next task for a thread preferring `preferred`; false if both are empty.
  bool pop_task(Queue preferred, std::function<void()>& task);

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queues_[2];
  int num_running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace strata::offload
