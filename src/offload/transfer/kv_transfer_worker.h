// Moves chunk bytes between the KV pool (backend::KvMemory) and host-tier
// slots on a thread of its own, through the backend's copy_blocks: the CPU
// counterpart of a DMA engine with a copy stream. Jobs have ids; completion is
// polled by the engine thread. The worker shares the KV memory and backend
// handles with the runner, so it never outlives what it copies.
//
// Canonical slot layout (offload/tiers/common/chunk_format.h): per layer, K of the
// chunk's tokens then V, each [tokens, kv_heads, head_dim]. KV-pool block
// j of a chunk occupies tokens [j * block_size, (j + 1) * block_size).
//
// Ordering rules the caller guarantees: a store reads pool blocks that are
// computed and pinned (ref-counted) until its result is polled; a load writes
// pool blocks that no one reads until its result is polled; slots are pinned
// by the host tier for the job's lifetime. Loads are served before stores.
//
// Threads: submit/poll/wait on the engine thread; the copy thread owns nothing
// but the job queue.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_memory.h"
#include "offload/tiers/common/chunk_format.h"
#include "offload/tiers/common/secondary_tier.h"
#include "offload/transfer/transfer_job.h"

namespace strata::offload {

class KvTransferWorker {
 public:
  KvTransferWorker(backend::KvMemoryHandle kv, std::shared_ptr<backend::Backend> backend,
                   const HostRegion& region, const ChunkFormat& format);
  ~KvTransferWorker();
  KvTransferWorker(const KvTransferWorker&) = delete;
  KvTransferWorker& operator=(const KvTransferWorker&) = delete;

  void submit(TransferJob job);
  std::vector<TransferResult> poll_finished();
  // Waits up to `timeout` for a result to be ready to poll.
  bool wait_for_result(std::chrono::microseconds timeout);
  // Waits until every submitted job is done.
  void drain();
  int64_t num_in_flight() const;

  // The copy itself, exposed for tests: one chunk between pool and slot.
  static int64_t copy_chunk(backend::Backend& backend, backend::KvMemory& kv,
                            const HostRegion& region, const ChunkFormat& format,
                            TransferDirection direction, const ChunkCopy& copy);

 private:
  void run();

  backend::KvMemoryHandle kv_;
  std::shared_ptr<backend::Backend> backend_;
  HostRegion region_;
  ChunkFormat format_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<TransferJob> loads_;
  std::deque<TransferJob> stores_;
  std::vector<TransferResult> done_;
  int64_t num_in_flight_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace strata::offload
