#include "offload/transfer/kv_transfer_worker.h"

#include <cstring>

#include "base/check.h"

namespace strata::offload {

KvTransferWorker::KvTransferWorker(attention::KvArena& arena, const HostRegion& region,
                                   const ChunkFormat& format)
    : arena_(arena), region_(region), format_(format), thread_([this] { run(); }) {}

KvTransferWorker::~KvTransferWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

int64_t KvTransferWorker::copy_chunk(attention::KvArena& arena, const HostRegion& region,
                                     const ChunkFormat& format, TransferDirection direction,
                                     const ChunkCopy& copy) {
  STRATA_CHECK(arena.row_bytes() == format.row_layout().row_bytes() &&
               arena.block_size() == format.block_size)
      << "the chunk format does not match the KV pool";
  const int64_t block_bytes = arena.block_bytes();
  // K or V of one layer: the pool's rows byte for byte (no conversion).
  const int64_t section_bytes = format.tokens_per_chunk() * arena.row_bytes();
  STRATA_CHECK(copy.first_block_in_chunk + static_cast<int64_t>(copy.pool_block_ids.size()) ==
               format.blocks_per_chunk);
  uint8_t* slot = region.slot(copy.slot);
  int64_t bytes = 0;
  for (int64_t layer = 0; layer < arena.num_layers(); ++layer) {
    uint8_t* pools[2] = {arena.k(layer), arena.v(layer)};
    for (int kv = 0; kv < 2; ++kv) {
      uint8_t* section = slot + (layer * 2 + kv) * section_bytes;
      for (size_t j = 0; j < copy.pool_block_ids.size(); ++j) {
        uint8_t* host = section + (copy.first_block_in_chunk + static_cast<int64_t>(j)) * block_bytes;
        uint8_t* pool = pools[kv] + int64_t{copy.pool_block_ids[j]} * block_bytes;
        if (direction == TransferDirection::kPoolToHost) {
          std::memcpy(host, pool, block_bytes);
        } else {
          std::memcpy(pool, host, block_bytes);
        }
        bytes += block_bytes;
      }
    }
  }
  return bytes;
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
      result.bytes += copy_chunk(arena_, region_, format_, job.direction, c);
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
