#include "offload/tiers/common/io_thread_pool.h"

#include "base/check.h"

namespace strata::offload {

IoThreadPool::IoThreadPool(int num_read_threads, int num_write_threads) {
  STRATA_CHECK(num_read_threads >= 0 && num_write_threads >= 0 &&
               num_read_threads + num_write_threads > 0)
      << "read threads " << num_read_threads << ", write threads " << num_write_threads;
  threads_.reserve(num_read_threads + num_write_threads);
  for (int i = 0; i < num_read_threads; ++i) {
    threads_.emplace_back([this] { worker_loop(Queue::kRead); });
  }
  for (int i = 0; i < num_write_threads; ++i) {
    threads_.emplace_back([this] { worker_loop(Queue::kWrite); });
  }
}

IoThreadPool::~IoThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void IoThreadPool::submit(Queue queue, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    STRATA_CHECK(!stopping_) << "IoThreadPool::submit after shutdown began";
    queues_[static_cast<int>(queue)].push_back(std::move(task));
  }
  work_cv_.notify_one();
}

void IoThreadPool::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock,
                [this] { return num_running_ == 0 && queues_[0].empty() && queues_[1].empty(); });
}

int64_t IoThreadPool::num_queued(Queue queue) const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queues_[static_cast<int>(queue)].size());
}

bool IoThreadPool::pop_task(Queue preferred, std::function<void()>& task) {
  const int first = static_cast<int>(preferred);
  for (int q : {first, 1 - first}) {
    if (!queues_[q].empty()) {
      task = std::move(queues_[q].front());
      queues_[q].pop_front();
      return true;
    }
  }
  return false;
}

void IoThreadPool::worker_loop(Queue preferred) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    std::function<void()> task;
    work_cv_.wait(lock, [&] { return stopping_ || !queues_[0].empty() || !queues_[1].empty(); });
    if (!pop_task(preferred, task)) {
      return;  // stopping and both queues drained
    }
    ++num_running_;
    lock.unlock();
    task();
    task = nullptr;  // destroy captures outside the lock
    lock.lock();
    --num_running_;
    if (num_running_ == 0 && queues_[0].empty() && queues_[1].empty()) idle_cv_.notify_all();
  }
}

}  // namespace strata::offload
