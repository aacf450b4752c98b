// The scheduler side of the tiered KV cache (vLLM's
// OffloadingConnectorScheduler with TieringOffloadingSpec's manager): a host
// tier in front of an ordered list of secondary tiers; it decides what is
// looked up, loaded and stored, and counts hits. The copies between the KV
// pool and host slots it decides are queued as TransferJobs, which the data
// side (offloading_connector_worker.h) runs; their results come back through
// on_transfer_done. It never touches the KV pool's memory.
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
// Every served chunk is attributed to exactly one tier (hit_tokens): the
// host tier, or the secondary tier it was promoted from for this request.
//
// Threads: everything on the engine thread; tier I/O runs on the tiers'
// threads and is collected by poll_tiers().
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/kv_cache_manager.h"
#include "offload/host/host_tier.h"
#include "offload/tiers/common/secondary_tier.h"
#include "offload/transfer/offload_config.h"
#include "offload/transfer/transfer_job.h"
#include "scheduler/kv_connector.h"
#include "scheduler/scheduler.h"

namespace strata::offload {

struct FinishedLoad {
  std::string request_id;
  int64_t num_tokens = 0;  // tokens now in the request's blocks
};

// A change in what a tier holds, for KV events (medium "CPU" for the host
// tier, "STORAGE" for filesystem, object-store and plugin tiers; the peer
// tier holds other instances' KV and announces nothing). Keys are chunk
// keys: with blocks_per_chunk 1 (the default) each is a block hash.
// Secondary tiers also announce removals (evicted or deleted chunks, from
// SecondaryTier::take_removed), and carry their config's vLLM `locality`.
struct OffloadEvent {
  bool removed = false;
  std::string medium;
  std::vector<ChunkKey> keys;
  std::string locality;  // "LOCAL" | "REMOTE" | "" (unset; always so for "CPU")
};

struct ConnectorStats {
  std::vector<TierStats> tiers;     // "cpu" first, then the secondary tiers in order
  int64_t promotion_failures = 0;   // secondary -> host copies that failed (recomputed)
  int64_t promotion_allocation_failures = 0;  // no host slot for a secondary hit
  int64_t load_wait_timeouts = 0;   // requests that stopped waiting for a slow tier
  int64_t active_promotions = 0;
  int64_t active_cascades = 0;
};

class OffloadingConnectorScheduler : public scheduler::KvConnector {
 public:
  // Builds the host tier (cpu_bytes_to_use / chunk bytes slots) and the
  // secondary tiers. Errors: too little host memory for one chunk, an
  // unknown tier type or eviction policy, a tier that cannot start.
  static StatusOr<std::unique_ptr<OffloadingConnectorScheduler>> create(
      const OffloadConfig& config, const ChunkFormat& format, kv::KvCacheManager& kv);
  ~OffloadingConnectorScheduler() override;

  // scheduler::KvConnector
  std::optional<int64_t> get_num_new_matched_tokens(const scheduler::Request& r,
                                                    int64_t num_computed_tokens) override;
  void start_load(const scheduler::Request& r, std::span<const int32_t> block_ids,
                  int64_t num_computed_tokens, int64_t num_external_tokens) override;
  // Drops r's state; for a do_remote_decode request (a P/D prefill), the
  // first peer tier's advertised address, for the decoder to fetch from.
  std::optional<scheduler::KvTransferParams> request_finished(
      const scheduler::Request& r) override;

  // After a forward pass: queues copies of the newly full, computed chunks
  // of the scheduled requests to the host tier.
  void store_computed(const scheduler::SchedulerOutput& plan);

  // The copies decided since the last call (start_load, store_computed), for
  // the data side, in order.
  std::vector<TransferJob> take_transfer_jobs();
  // A copy the data side finished: completes a store (and starts its
  // cascade) or a load (appended to `loads`).
  void on_transfer_done(const TransferResult& result, std::vector<FinishedLoad>& loads);

  // Collects finished tier jobs (completes cascades and promotions).
  void poll_tiers();
  // Tier jobs, or copies not yet reported done.
  bool has_pending_work() const;
  // Blocks until every tier job has completed (results still come from poll_tiers).
  void drain_tiers();
  // Empties the host tier (reset_prefix_cache); secondary tiers keep data.
  void reset_host_tier();

  ConnectorStats stats() const;

  // KV events (off by default): what tiers stored or dropped since the last call.
  void enable_events(bool on) { events_enabled_ = on; }
  std::vector<OffloadEvent> take_events();
  const ChunkFormat& format() const { return format_; }

  // Adds a secondary tier (no tier job may be in flight).
  void add_secondary_tier(std::unique_ptr<SecondaryTier> tier, const std::string& locality = "");
  const HostRegion& host_region() const { return host_->region(); }

 private:
  struct RequestState {
    int64_t num_stored_chunks = 0;  // chunks handed to the host tier so far
    std::chrono::steady_clock::time_point waiting_since{};
    bool waiting = false;
  };
  struct LoadJob {
    std::string request_id;
    std::vector<ChunkKey> keys;
    int64_t num_tokens = 0;
  };
  struct StoreJob {
    std::vector<ChunkKey> keys;
    std::vector<int32_t> pinned_blocks;
  };
  struct TierJobInfo {
    bool is_promotion = false;
    std::vector<ChunkKey> keys;
  };
  enum class ChunkLookup { kHit, kMiss, kRetry };

  OffloadingConnectorScheduler(const OffloadConfig& config, const ChunkFormat& format,
                               kv::KvCacheManager& kv, std::unique_ptr<HostTier> host);
  ChunkLookup lookup_chunk(const ChunkKey& key, const KeySet& protect,
                           const TierLookupContext& context);
  bool promote(size_t tier_idx, const ChunkKey& key, const KeySet& protect);
  void on_tier_job_done(size_t tier_idx, const TierJobResult& result);
  void cascade(const std::vector<ChunkKey>& keys);
  ChunkKey chunk_key(const scheduler::Request& r, int64_t chunk_idx) const;

  OffloadConfig config_;
  ChunkFormat format_;
  kv::KvCacheManager& kv_;
  std::unique_ptr<HostTier> host_;
  std::vector<std::unique_ptr<SecondaryTier>> tiers_;
  std::vector<TransferJob> transfer_jobs_;  // decided, not yet taken by the data side
  int64_t next_job_id_ = 1;
  std::unordered_map<std::string, RequestState> requests_;
  std::unordered_map<int64_t, LoadJob> loads_;
  std::unordered_map<int64_t, StoreJob> stores_;
  std::vector<std::unordered_map<int64_t, TierJobInfo>> tier_jobs_;  // per tier
  // Chunks promoted into host memory and not yet served: which tier they came from.
  std::unordered_map<ChunkKey, size_t, kv::BlockHashHasher> promoted_from_;
  std::vector<int64_t> tier_hit_tokens_;  // per secondary tier
  ConnectorStats counters_;
  bool events_enabled_ = false;
  std::vector<OffloadEvent> events_;
  void add_event(bool removed, const std::string& medium, std::vector<ChunkKey> keys,
                 const std::string& locality = "");
  std::vector<std::string> tier_locality_;  // per secondary tier, from its config
  // Latency histograms: [0] the host tier, [i + 1] secondary tier i.
  struct TierLatency {
    LatencyHistogram lookup_sync, lookup_async, read, write;
  };
  std::vector<TierLatency> latency_{1};
  // Per secondary tier: keys whose lookup answered "retry", since when.
  std::vector<std::unordered_map<ChunkKey, std::chrono::steady_clock::time_point,
                                 kv::BlockHashHasher>> retrying_since_;
  LookupResult timed_lookup(size_t tier_idx, const ChunkKey& key,
                            const TierLookupContext& context);
  void note_evictions();
};

}  // namespace strata::offload
