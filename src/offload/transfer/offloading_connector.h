// The tiered KV cache as the engine sees it (vLLM's OffloadingConnector with
// TieringOffloadingSpec), in two halves:
//   scheduler side (offloading_connector_scheduler.h): the host tier and the
//     secondary tiers; lookups with promotion/retry, what to load and store,
//     cascades, hit counting, KV events. No access to the KV pool's memory.
//   data side (offloading_connector_worker.h): the transfer worker that copies
//     between the KV pool and host slots.
// This class owns both and moves copy jobs and their results between them
// (the scheduler side's jobs are handed over as soon as they are decided).
//
//   store:  after each forward pass, chunks that became full and computed are
//           copied pool -> host (their pool blocks pinned until the copy is
//           done); when a copy completes the chunk cascades to every
//           secondary tier (its host slot pinned until each is done).
//   lookup: host tier first; on a miss the secondary tiers in order; the first
//           secondary hit is promoted into a reserved host slot while the
//           request waits (lookup answers "retry"); a failed promotion is a
//           miss. KV-pool blocks are reserved only once the data is in host
//           memory (then start_load copies host -> pool).
//
// Threads: everything on the engine thread; copies run on the transfer
// worker and tier I/O threads and are collected by poll().
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_memory.h"
#include "base/status.h"
#include "kv/kv_cache_manager.h"
#include "offload/transfer/offload_config.h"
#include "offload/transfer/offloading_connector_scheduler.h"
#include "offload/transfer/offloading_connector_worker.h"
#include "scheduler/kv_connector.h"
#include "scheduler/scheduler.h"

namespace strata::offload {

class OffloadingConnector : public scheduler::KvConnector {
 public:
  // Builds the scheduler side (host and secondary tiers) and the data side
  // over the KV memory `kv_memory` (copied by `backend`). Errors: those of OffloadingConnectorScheduler::create.
  static StatusOr<std::unique_ptr<OffloadingConnector>> create(const OffloadConfig& config,
                                                               const ChunkFormat& format,
                                                               kv::KvCacheManager& kv,
                                                               backend::KvMemoryHandle kv_memory,
                                                               std::shared_ptr<backend::Backend> backend);
  ~OffloadingConnector() override;

  // scheduler::KvConnector (the scheduler side's)
  std::optional<int64_t> get_num_new_matched_tokens(const scheduler::Request& r,
                                                    int64_t num_computed_tokens) override {
    return scheduler_->get_num_new_matched_tokens(r, num_computed_tokens);
  }
  void start_load(const scheduler::Request& r, std::span<const int32_t> block_ids,
                  int64_t num_computed_tokens, int64_t num_external_tokens) override;
  // Drops r's state; for a do_remote_decode request, the peer tier's
  // advertised address as the decoder's kv_transfer_params.
  std::optional<scheduler::KvTransferParams> request_finished(
      const scheduler::Request& r) override {
    return scheduler_->request_finished(r);
  }

  // After a forward pass: copies the newly full, computed chunks of the
  // scheduled requests to the host tier.
  void store_computed(const scheduler::SchedulerOutput& plan);

  // Collects finished copies and tier jobs (completes stores, starts
  // cascades, completes promotions); returns the loads that finished.
  std::vector<FinishedLoad> poll();

  bool has_pending_work() const {
    return worker_->has_pending_work() || scheduler_->has_pending_work();
  }
  // Sleeps until some copy completes or `timeout` passes (idle engine only).
  void wait_for_progress(std::chrono::microseconds timeout) { worker_->wait_for_progress(timeout); }
  // Waits for every copy and tier job, then polls (shutdown, tests).
  std::vector<FinishedLoad> drain();
  // Empties the host tier (reset_prefix_cache); secondary tiers keep data.
  void reset_host_tier() { scheduler_->reset_host_tier(); }

  ConnectorStats stats() const { return scheduler_->stats(); }

  // KV events (off by default): what tiers stored or dropped since the last call.
  void enable_events(bool on) { scheduler_->enable_events(on); }
  std::vector<OffloadEvent> take_events() { return scheduler_->take_events(); }
  const ChunkFormat& format() const { return scheduler_->format(); }

  // Test hook: waits for in-flight work, then adds a secondary tier.
  void add_secondary_tier(std::unique_ptr<SecondaryTier> tier);
  const HostRegion& host_region() const { return scheduler_->host_region(); }

 private:
  OffloadingConnector(std::unique_ptr<OffloadingConnectorScheduler> scheduler,
                      backend::KvMemoryHandle kv_memory,
                      std::shared_ptr<backend::Backend> backend);
  void submit_transfer_jobs() { worker_->submit(scheduler_->take_transfer_jobs()); }

  // Declared first: destroyed last, after the data side that copies into its
  // host slots.
  std::unique_ptr<OffloadingConnectorScheduler> scheduler_;
  std::unique_ptr<OffloadingConnectorWorker> worker_;
};

}  // namespace strata::offload
