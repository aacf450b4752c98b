#include "offload/transfer/offloading_connector.h"

#include <utility>

namespace strata::offload {

StatusOr<std::unique_ptr<OffloadingConnector>> OffloadingConnector::create(
    const OffloadConfig& config, const ChunkFormat& format, kv::KvCacheManager& kv,
    backend::KvMemoryHandle kv_memory, std::shared_ptr<backend::Backend> backend) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<OffloadingConnectorScheduler> scheduler,
                          OffloadingConnectorScheduler::create(config, format, kv));
  return std::unique_ptr<OffloadingConnector>(new OffloadingConnector(
      std::move(scheduler), std::move(kv_memory), std::move(backend)));
}

OffloadingConnector::OffloadingConnector(std::unique_ptr<OffloadingConnectorScheduler> scheduler,
                                         backend::KvMemoryHandle kv_memory,
                                         std::shared_ptr<backend::Backend> backend)
    : scheduler_(std::move(scheduler)),
      worker_(std::make_unique<OffloadingConnectorWorker>(
          std::move(kv_memory), std::move(backend), scheduler_->host_region(),
          scheduler_->format())) {}

OffloadingConnector::~OffloadingConnector() {
  // Tier and copy threads may still use host slots and pool blocks.
  scheduler_->drain_tiers();
  worker_->drain();
}

void OffloadingConnector::start_load(const scheduler::Request& r,
                                     std::span<const int32_t> block_ids,
                                     int64_t num_computed_tokens, int64_t num_external_tokens) {
  scheduler_->start_load(r, block_ids, num_computed_tokens, num_external_tokens);
  submit_transfer_jobs();
}

void OffloadingConnector::store_computed(const scheduler::SchedulerOutput& plan) {
  scheduler_->store_computed(plan);
  submit_transfer_jobs();
}

std::vector<FinishedLoad> OffloadingConnector::poll() {
  std::vector<FinishedLoad> loads;
  scheduler_->poll_tiers();
  for (const TransferResult& result : worker_->poll_finished()) {
    scheduler_->on_transfer_done(result, loads);
  }
  submit_transfer_jobs();  // none today: a finished copy starts tier jobs only
  return loads;
}

std::vector<FinishedLoad> OffloadingConnector::drain() {
  std::vector<FinishedLoad> loads;
  while (has_pending_work()) {
    scheduler_->drain_tiers();
    worker_->drain();
    std::vector<FinishedLoad> more = poll();
    loads.insert(loads.end(), more.begin(), more.end());
  }
  return loads;
}

void OffloadingConnector::add_secondary_tier(std::unique_ptr<SecondaryTier> tier) {
  drain();
  scheduler_->add_secondary_tier(std::move(tier));
}

}  // namespace strata::offload
