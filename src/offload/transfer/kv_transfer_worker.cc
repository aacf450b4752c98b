#include "offload/transfer/kv_transfer_worker.h"

#include <cstring>

#include "base/check.h"

namespace strata::offload {

KvTransferWorker::KvTransferWorker(backend::KvMemoryHandle kv,
                                   std::shared_ptr<backend::Backend> backend,
                                   const HostRegion& region, const ChunkFormat& format)
    : kv_(std::move(kv)),
      backend_(std::move(backend)),
      region_(region),
      format_(format),
      thread_([this] { run(); }) {}

KvTransferWorker::~KvTransferWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

int64_t KvTransferWorker::copy_chunk(backend::Backend& backend, backend::KvMemory& kv,
                                     const HostRegion& region, const ChunkFormat& format,
                                     TransferDirection direction, const ChunkCopy& copy) {
  STRATA_CHECK(kv.row_bytes() == format.row_layout().row_bytes() &&
               kv.block_size() == format.block_size)
      << "the chunk format does not match the KV pool";
  STRATA_CHECK(copy.first_block_in_chunk + static_cast<int64_t>(copy.pool_block_ids.size()) ==
               format.blocks_per_chunk);
  // K or V of one layer: the pool's rows byte for byte (no conversion).
  const backend::HostBlockRun run{region.slot(copy.slot),
                                  format.tokens_per_chunk() * kv.row_bytes(),
                                  copy.first_block_in_chunk, copy.pool_block_ids};
  return backend.copy_blocks(kv, run,
                             direction == TransferDirection::kPoolToHost
                                 ? backend::CopyDirection::kPoolToHost
                                 : backend::CopyDirection::kHostToPool);
}

void KvTransferWorker::submit(TransferJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++num_in_flight_;
    (job.direction == TransferDirection::kHostToPool ? loads_ : stores_).push_back(std::move(job));
  }
  work_cv_.notify_one();
}

void KvTransferWorker::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [this] { return stop_ || !loads_.empty() || !stores_.empty(); });
    if (stop_ && loads_.empty() && stores_.empty()) return;
    // Loads first: a request is waiting on them; stores only free memory.
    std::deque<TransferJob>& queue = loads_.empty() ? stores_ : loads_;
    TransferJob job = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    TransferResult result{job.job_id, job.direction, 0, 0};
    for (const ChunkCopy& c : job.copies) {
      result.bytes += copy_chunk(*backend_, *kv_, region_, format_, job.direction, c);
    }
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    lock.lock();
    done_.push_back(result);
    --num_in_flight_;
    done_cv_.notify_all();
  }
}

std::vector<TransferResult> KvTransferWorker::poll_finished() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TransferResult> out;
  out.swap(done_);
  return out;
}

bool KvTransferWorker::wait_for_result(std::chrono::microseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return done_cv_.wait_for(lock, timeout, [this] { return !done_.empty(); });
}

void KvTransferWorker::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return num_in_flight_ == 0; });
}

int64_t KvTransferWorker::num_in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_in_flight_;
}

}  // namespace strata::offload
