// The tiered KV cache as the engine sees it (vLLM's OffloadingConnector with
// TieringOffloadingSpec): a host tier in front of an ordered list of
// secondary tiers, and the copies between the KV pool and the host tier.
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
// Threads: everything on the engine thread; copies run on the transfer
// worker and tier I/O threads and are collected by poll().
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "attention/kv_arena.h"
#include "base/status.h"
#include "kv/kv_cache_manager.h"
#include "offload/tiers/host_tier.h"
#include "offload/tiers/secondary_tier.h"
#include "offload/transfer/kv_transfer_worker.h"
#include "offload/transfer/offload_config.h"
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

class OffloadingConnector : public scheduler::KvConnector {
 public:
  // Builds the host tier (cpu_bytes_to_use / chunk bytes slots) and the
  // secondary tiers. Errors: too little host memory for one chunk, an
  // unknown tier type or eviction policy, a tier that cannot start.
  static StatusOr<std::unique_ptr<OffloadingConnector>> create(const OffloadConfig& config,
                                                               const ChunkFormat& format,
                                                               kv::KvCacheManager& kv,
                                                               attention::KvArena& arena);
  ~OffloadingConnector() override;

  // scheduler::KvConnector
  std::optional<int64_t> get_num_new_matched_tokens(const scheduler::Request& r,
                                                    int64_t num_computed_tokens) override;
  void start_load(const scheduler::Request& r, std::span<const int32_t> block_ids,
                  int64_t num_computed_tokens, int64_t num_external_tokens) override;
  // Drops r's state; for a do_remote_decode request, the peer tier's
  // advertised address as the decoder's kv_transfer_params.
  std::optional<scheduler::KvTransferParams> request_finished(const scheduler::Request& r) override;

  // After a forward pass: copies the newly full, computed chunks of the
  // scheduled requests to the host tier.
  void store_computed(const scheduler::SchedulerOutput& plan);

  // Collects finished copies and tier jobs (completes stores, starts
  // cascades, completes promotions); returns the loads that finished.
  std::vector<FinishedLoad> poll();

  bool has_pending_work() const;
  // Sleeps until some copy completes or `timeout` passes (idle engine only).
  void wait_for_progress(std::chrono::microseconds timeout);
  // Waits for every copy and tier job, then polls (shutdown, tests).
  std::vector<FinishedLoad> drain();
  // Empties the host tier (reset_prefix_cache); secondary tiers keep data.
  void reset_host_tier();

  ConnectorStats stats() const;

  // KV events (off by default): what tiers stored or dropped since the last call.
  void enable_events(bool on) { events_enabled_ = on; }
  std::vector<OffloadEvent> take_events();
  const ChunkFormat& format() const { return format_; }

  // Test hook: waits for in-flight work, then adds a secondary tier.
  void add_secondary_tier(std::unique_ptr<SecondaryTier> tier);
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

  OffloadingConnector(const OffloadConfig& config, const ChunkFormat& format,
                      kv::KvCacheManager& kv, attention::KvArena& arena,
                      std::unique_ptr<HostTier> host);
  ChunkLookup lookup_chunk(const ChunkKey& key, const KeySet& protect,
                           const TierLookupContext& context);
  bool promote(size_t tier_idx, const ChunkKey& key, const KeySet& protect);
  void on_transfer_done(const TransferResult& result, std::vector<FinishedLoad>& loads);
  void on_tier_job_done(size_t tier_idx, const TierJobResult& result);
  void cascade(const std::vector<ChunkKey>& keys);
  ChunkKey chunk_key(const scheduler::Request& r, int64_t chunk_idx) const;

  OffloadConfig config_;
  ChunkFormat format_;
  kv::KvCacheManager& kv_;
  std::unique_ptr<HostTier> host_;
  std::vector<std::unique_ptr<SecondaryTier>> tiers_;
  KvTransferWorker worker_;
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
