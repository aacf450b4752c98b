// The data side of the tiered KV cache (vLLM's OffloadingConnectorWorker
// with the spec's transfer handlers): runs the copies the scheduler side
// decides between the KV pool and host-tier slots, on the transfer worker's
// thread, and reports them done.
//
// The KV pool's memory reaches the offload code only here, through the
// constructor: a KvMemoryHandle (shared with the runner) and the backend whose
// copy_blocks moves the bytes, so this object never outlives what it copies.
//
// Threads: every call on the engine thread; copies run on the worker's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_memory.h"
#include "offload/tiers/common/chunk_format.h"
#include "offload/tiers/common/secondary_tier.h"
#include "offload/transfer/kv_transfer_worker.h"
#include "offload/transfer/transfer_job.h"

namespace strata::offload {

class OffloadingConnectorWorker {
 public:
  // `kv_memory`: the KV pool; `host`: the host tier's slots (borrowed).
  OffloadingConnectorWorker(backend::KvMemoryHandle kv_memory,
                            std::shared_ptr<backend::Backend> backend, const HostRegion& host,
                            const ChunkFormat& format);

  void submit(std::vector<TransferJob> jobs);
  // Copies that completed since the last call.
  std::vector<TransferResult> poll_finished() { return worker_.poll_finished(); }
  bool has_pending_work() const { return worker_.num_in_flight() > 0; }
  // Sleeps until some copy completes or `timeout` passes (idle engine only).
  void wait_for_progress(std::chrono::microseconds timeout);
  // Blocks until every submitted copy has completed (results still come from
  // poll_finished).
  void drain() { worker_.drain(); }

 private:
  KvTransferWorker worker_;
};

}  // namespace strata::offload
