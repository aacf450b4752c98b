#include "offload/transfer/offloading_connector_scheduler.h"

#include <algorithm>

#include "base/check.h"
#include "offload/policy/eviction_policy.h"
#include "offload/tiers/builtin_tiers.h"
#include "offload/tiers/p2p/p2p_tier.h"

namespace strata::offload {

StatusOr<std::unique_ptr<OffloadingConnectorScheduler>> OffloadingConnectorScheduler::create(
    const OffloadConfig& config, const ChunkFormat& format, kv::KvCacheManager& kv) {
  const int64_t chunk_bytes = format.payload_bytes();
  const int64_t num_slots = config.cpu_bytes_to_use / chunk_bytes;
  if (num_slots < 1) {
    return invalid_argument("cpu_bytes_to_use is " + std::to_string(config.cpu_bytes_to_use) +
                            " bytes but one KV chunk of this model takes " +
                            std::to_string(chunk_bytes) + " bytes");
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<EvictionPolicy> policy,
                          make_eviction_policy(config.eviction_policy, num_slots));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<HostTier> host,
                          HostTier::create(num_slots, chunk_bytes, std::move(policy)));
  std::unique_ptr<OffloadingConnectorScheduler> c(
      new OffloadingConnectorScheduler(config, format, kv, std::move(host)));
  for (const SecondaryTierConfig& tier_config : config.secondary_tiers) {
    StatusOr<std::unique_ptr<SecondaryTier>> tier =
        builtin_tiers().make(tier_config, format, c->host_->region());
    if (!tier.ok()) {
      return tier.status().with_prefix("secondary tier " +
                                       std::to_string(c->tiers_.size()) + " (" +
                                       tier_config.type + ")");
    }
    c->add_secondary_tier(std::move(tier).value(), tier_config.locality);
  }
  return c;
}

OffloadingConnectorScheduler::OffloadingConnectorScheduler(const OffloadConfig& config,
                                                           const ChunkFormat& format,
                                                           kv::KvCacheManager& kv,
                                                           std::unique_ptr<HostTier> host)
    : config_(config), format_(format), kv_(kv), host_(std::move(host)) {
  STRATA_CHECK(format_.block_size == kv.block_size());
}

OffloadingConnectorScheduler::~OffloadingConnectorScheduler() {
  // Tier threads may still use host slots.
  drain_tiers();
}

void OffloadingConnectorScheduler::add_secondary_tier(std::unique_ptr<SecondaryTier> tier,
                                                      const std::string& locality) {
  for (const auto& jobs : tier_jobs_) STRATA_CHECK(jobs.empty());
  tiers_.push_back(std::move(tier));
  tier_jobs_.emplace_back();
  tier_hit_tokens_.push_back(0);
  tier_locality_.push_back(locality);
  latency_.emplace_back();
  retrying_since_.emplace_back();
}

LookupResult OffloadingConnectorScheduler::timed_lookup(size_t tier_idx, const ChunkKey& key,
                                               const TierLookupContext& context) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const LookupResult result = tiers_[tier_idx]->lookup_for(key, context);
  const Clock::time_point end = Clock::now();
  auto& since = retrying_since_[tier_idx];
  TierLatency& latency = latency_[tier_idx + 1];
  if (result == LookupResult::kRetry) {
    // Keys whose request gave up never resolve here; keep the map bounded.
    if (since.size() >= 65536) since.clear();
    since.emplace(key, start);
    return result;
  }
  latency.lookup_sync.observe(std::chrono::duration<double>(end - start).count());
  auto it = since.find(key);
  if (it != since.end()) {
    latency.lookup_async.observe(std::chrono::duration<double>(end - it->second).count());
    since.erase(it);
  }
  return result;
}

ChunkKey OffloadingConnectorScheduler::chunk_key(const scheduler::Request& r, int64_t chunk_idx) const {
  // A chunk is named after its last block: the chained hash covers the prefix.
  return r.block_hashes()[(chunk_idx + 1) * format_.blocks_per_chunk - 1];
}

bool OffloadingConnectorScheduler::promote(size_t tier_idx, const ChunkKey& key, const KeySet& protect) {
  std::vector<std::pair<ChunkKey, int64_t>> slot = host_->prepare_write({&key, 1}, protect);
  note_evictions();
  if (slot.empty()) {
    ++counters_.promotion_allocation_failures;
    return false;
  }
  const int64_t job_id = next_job_id_++;
  tier_jobs_[tier_idx][job_id] = TierJobInfo{true, {key}};
  ++counters_.active_promotions;
  tiers_[tier_idx]->submit_load(TierJob{job_id, {key}, {slot[0].second}});
  return true;
}

OffloadingConnectorScheduler::ChunkLookup OffloadingConnectorScheduler::lookup_chunk(
    const ChunkKey& key, const KeySet& protect, const TierLookupContext& context) {
  switch (host_->state(key)) {
    case HostChunkState::kReady: return ChunkLookup::kHit;
    case HostChunkState::kWriting: return ChunkLookup::kRetry;  // a store or promotion in flight
    case HostChunkState::kAbsent: break;
  }
  bool any_retry = false;
  for (size_t i = 0; i < tiers_.size(); ++i) {
    switch (timed_lookup(i, key, context)) {
      case LookupResult::kHit:
        // With no host slot to promote into, the chunk is unavailable now.
        return promote(i, key, protect) ? ChunkLookup::kRetry : ChunkLookup::kMiss;
      case LookupResult::kRetry: any_retry = true; break;
      case LookupResult::kMiss: break;
    }
  }
  return any_retry ? ChunkLookup::kRetry : ChunkLookup::kMiss;
}

std::optional<int64_t> OffloadingConnectorScheduler::get_num_new_matched_tokens(
    const scheduler::Request& r, int64_t num_computed_tokens) {
  const int64_t chunk_tokens = format_.tokens_per_chunk();
  // The last token is always computed, so the step produces logits.
  const int64_t num_chunks =
      std::min((r.num_tokens() - 1) / chunk_tokens,
               static_cast<int64_t>(r.block_hashes().size()) / format_.blocks_per_chunk);
  const int64_t first = num_computed_tokens / chunk_tokens;
  if (first >= num_chunks) return 0;
  const scheduler::KvTransferHints& hints = r.kv_transfer;
  if (hints.max_load_tokens == 0) return 0;
  const TierLookupContext context{r.request_id(), hints.remote_host, hints.remote_port};
  std::vector<ChunkKey> keys;
  for (int64_t c = first; c < num_chunks; ++c) keys.push_back(chunk_key(r, c));
  const KeySet protect(keys.begin(), keys.end());
  host_->touch(keys);
  int64_t num_hits = 0;
  bool stopped = false;  // a chunk before this one is not in host memory yet
  bool retry = false;
  bool missed = false;
  for (const ChunkKey& key : keys) {
    const ChunkLookup result = lookup_chunk(key, protect, context);
    if (result == ChunkLookup::kMiss) {
      missed = !stopped;
      break;
    }
    if (stopped) continue;  // keep starting promotions of later chunks meanwhile
    if (result == ChunkLookup::kHit) {
      ++num_hits;
    } else {
      retry = true;
      stopped = true;
    }
  }
  RequestState& state = requests_[r.request_id()];
  const auto now = std::chrono::steady_clock::now();
  if (retry) {
    if (!state.waiting) {
      state.waiting = true;
      state.waiting_since = now;
    }
    if (std::chrono::duration<double>(now - state.waiting_since).count() < config_.max_load_wait_s) {
      return std::nullopt;
    }
    ++counters_.load_wait_timeouts;  // give up waiting: recompute what is not here
  }
  state.waiting = false;
  TierStats& host_stats = host_->stats();
  host_stats.chunk_lookups += num_hits + (missed || retry ? 1 : 0);
  host_stats.chunk_hits += num_hits;
  if (num_hits == 0) return 0;
  int64_t end = (first + num_hits) * chunk_tokens;
  if (hints.max_load_tokens > 0) {
    // Whole chunks only, and never less than the pool already has.
    end = std::min(end, std::max(num_computed_tokens + hints.max_load_tokens, int64_t{0}) /
                            chunk_tokens * chunk_tokens);
  }
  return std::max<int64_t>(0, end - num_computed_tokens);
}

void OffloadingConnectorScheduler::start_load(const scheduler::Request& r,
                                     std::span<const int32_t> block_ids,
                                     int64_t num_computed_tokens, int64_t num_external_tokens) {
  const int64_t chunk_tokens = format_.tokens_per_chunk();
  const int64_t block_size = format_.block_size;
  const int64_t per_chunk = format_.blocks_per_chunk;
  const int64_t end = num_computed_tokens + num_external_tokens;
  STRATA_CHECK(num_external_tokens > 0 && end % chunk_tokens == 0);
  TransferJob job{next_job_id_++, TransferDirection::kHostToPool, {}};
  LoadJob load{r.request_id(), {}, num_external_tokens};
  for (int64_t c = num_computed_tokens / chunk_tokens; c < end / chunk_tokens; ++c) {
    const ChunkKey key = chunk_key(r, c);
    ChunkCopy copy;
    copy.slot = host_->acquire(key);
    copy.first_block_in_chunk = (std::max(num_computed_tokens, c * chunk_tokens) - c * chunk_tokens) /
                                block_size;
    for (int64_t b = copy.first_block_in_chunk; b < per_chunk; ++b) {
      copy.pool_block_ids.push_back(block_ids[c * per_chunk + b]);
    }
    job.copies.push_back(std::move(copy));
    load.keys.push_back(key);
  }
  loads_[job.job_id] = std::move(load);
  transfer_jobs_.push_back(std::move(job));
}

std::optional<scheduler::KvTransferParams> OffloadingConnectorScheduler::request_finished(
    const scheduler::Request& r) {
  requests_.erase(r.request_id());
  if (!r.kv_transfer.do_remote_decode) return std::nullopt;
  // P/D prefill: the decoder fetches this prompt's chunks from our peer
  // tier; they reach it as they are computed (p2p_tier.h).
  for (const SecondaryTierConfig& tier : config_.secondary_tiers) {
    const P2pTierConfig* p2p = tier.settings_if<P2pTierConfig>();
    if (p2p == nullptr) continue;
    return scheduler::KvTransferParams{.remote_host = p2p->advertised_host(),
                                       .remote_port = p2p->port,
                                       .do_remote_prefill = true,
                                       .do_remote_decode = false};
  }
  return std::nullopt;
}

void OffloadingConnectorScheduler::store_computed(const scheduler::SchedulerOutput& plan) {
  const int64_t chunk_tokens = format_.tokens_per_chunk();
  const int64_t per_chunk = format_.blocks_per_chunk;
  for (const scheduler::ScheduledRequest& s : plan.scheduled) {
    const scheduler::Request& r = *s.request;
    RequestState& state = requests_[r.request_id()];
    int64_t limit = r.num_computed_tokens;
    if (config_.offload_prompt_only) limit = std::min(limit, r.num_prompt_tokens());
    if (r.kv_transfer.max_offload_tokens >= 0) limit = std::min(limit, r.kv_transfer.max_offload_tokens);
    const int64_t num_chunks =
        std::min(limit / chunk_tokens, static_cast<int64_t>(r.block_hashes().size()) / per_chunk);
    if (num_chunks <= state.num_stored_chunks) continue;
    std::vector<ChunkKey> keys;
    std::unordered_map<ChunkKey, int64_t, kv::BlockHashHasher> chunk_of;
    for (int64_t c = state.num_stored_chunks; c < num_chunks; ++c) {
      keys.push_back(chunk_key(r, c));
      chunk_of[keys.back()] = c;
    }
    state.num_stored_chunks = num_chunks;
    std::vector<std::pair<ChunkKey, int64_t>> reserved = host_->prepare_write(keys, {});
    note_evictions();
    if (reserved.empty()) continue;
    const std::vector<int32_t>& table = kv_.block_ids(r.key());
    TransferJob job{next_job_id_++, TransferDirection::kPoolToHost, {}};
    StoreJob store;
    for (const auto& [key, slot] : reserved) {
      const int64_t c = chunk_of.at(key);
      ChunkCopy copy{slot, 0, {table.begin() + c * per_chunk, table.begin() + (c + 1) * per_chunk}};
      store.pinned_blocks.insert(store.pinned_blocks.end(), copy.pool_block_ids.begin(),
                                 copy.pool_block_ids.end());
      store.keys.push_back(key);
      job.copies.push_back(std::move(copy));
    }
    // The blocks stay put until the copy is done, even if the request ends.
    kv_.pool().touch(store.pinned_blocks);
    stores_[job.job_id] = std::move(store);
    transfer_jobs_.push_back(std::move(job));
  }
}

void OffloadingConnectorScheduler::cascade(const std::vector<ChunkKey>& keys) {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    TierJob job{next_job_id_++, keys, {}};
    for (const ChunkKey& key : keys) job.slots.push_back(host_->acquire(key));
    tier_jobs_[i][job.job_id] = TierJobInfo{false, keys};
    ++counters_.active_cascades;
    tiers_[i]->submit_store(std::move(job));
  }
}

void OffloadingConnectorScheduler::on_transfer_done(const TransferResult& result,
                                           std::vector<FinishedLoad>& loads) {
  TierStats& host_stats = host_->stats();
  if (result.direction == TransferDirection::kHostToPool) {
    auto it = loads_.find(result.job_id);
    STRATA_CHECK(it != loads_.end());
    LoadJob& job = it->second;
    const int64_t chunk_tokens = format_.tokens_per_chunk();
    int64_t tokens_left = job.num_tokens;
    for (auto key = job.keys.rbegin(); key != job.keys.rend(); ++key) {
      // Only the first chunk may be partial (the pool already had its head).
      const int64_t tokens = std::min(tokens_left, chunk_tokens);
      tokens_left -= tokens;
      host_->release(*key);
      auto origin = promoted_from_.find(*key);
      if (origin == promoted_from_.end()) {
        host_stats.hit_tokens += tokens;
      } else {
        tier_hit_tokens_[origin->second] += tokens;
        promoted_from_.erase(origin);
      }
    }
    host_stats.load_bytes += result.bytes;
    host_stats.load_seconds += result.seconds;
    latency_[0].read.observe(result.seconds);
    loads.push_back({job.request_id, job.num_tokens});
    loads_.erase(it);
    return;
  }
  auto it = stores_.find(result.job_id);
  STRATA_CHECK(it != stores_.end());
  kv_.pool().free_blocks(it->second.pinned_blocks);
  for (const ChunkKey& key : it->second.keys) host_->complete_write(key, true);
  add_event(false, "CPU", it->second.keys);
  host_stats.store_bytes += result.bytes;
  host_stats.store_seconds += result.seconds;
  latency_[0].write.observe(result.seconds);
  if (!tiers_.empty()) cascade(it->second.keys);
  stores_.erase(it);
}

void OffloadingConnectorScheduler::on_tier_job_done(size_t tier_idx, const TierJobResult& result) {
  auto it = tier_jobs_[tier_idx].find(result.job_id);
  STRATA_CHECK(it != tier_jobs_[tier_idx].end()) << "unknown job " << result.job_id;
  const TierJobInfo& info = it->second;
  STRATA_CHECK(result.ok.size() == info.keys.size());
  if (std::find(result.ok.begin(), result.ok.end(), true) != result.ok.end()) {
    TierLatency& latency = latency_[tier_idx + 1];
    (info.is_promotion ? latency.read : latency.write).observe(result.seconds);
  }
  std::vector<ChunkKey> ok_keys;
  for (size_t k = 0; k < info.keys.size(); ++k) {
    if (result.ok[k]) ok_keys.push_back(info.keys[k]);
  }
  if (info.is_promotion) {
    add_event(false, "CPU", ok_keys);
  } else if (tiers_[tier_idx]->publishes_kv_events()) {
    add_event(false, "STORAGE", ok_keys, tier_locality_[tier_idx]);
  }
  for (size_t k = 0; k < info.keys.size(); ++k) {
    const ChunkKey& key = info.keys[k];
    if (!info.is_promotion) {
      host_->release(key);
      continue;
    }
    host_->complete_write(key, result.ok[k]);
    if (result.ok[k]) {
      promoted_from_[key] = tier_idx;
    } else {
      ++counters_.promotion_failures;  // the tokens are recomputed
    }
  }
  --(info.is_promotion ? counters_.active_promotions : counters_.active_cascades);
  tier_jobs_[tier_idx].erase(it);
}

std::vector<TransferJob> OffloadingConnectorScheduler::take_transfer_jobs() {
  std::vector<TransferJob> jobs;
  jobs.swap(transfer_jobs_);
  return jobs;
}

void OffloadingConnectorScheduler::poll_tiers() {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    for (const TierJobResult& result : tiers_[i]->poll_finished()) on_tier_job_done(i, result);
    // The peer tier holds other instances' KV and announces nothing (vLLM
    // has no event for it); the others say what they dropped.
    std::vector<ChunkKey> removed = tiers_[i]->take_removed();
    if (tiers_[i]->publishes_kv_events()) {
      add_event(true, "STORAGE", std::move(removed), tier_locality_[i]);
    }
  }
}

bool OffloadingConnectorScheduler::has_pending_work() const {
  for (const auto& jobs : tier_jobs_) {
    if (!jobs.empty()) return true;
  }
  return !loads_.empty() || !stores_.empty() || !transfer_jobs_.empty();
}

void OffloadingConnectorScheduler::drain_tiers() {
  for (auto& tier : tiers_) tier->drain();
}

void OffloadingConnectorScheduler::reset_host_tier() {
  host_->clear();
  note_evictions();
}

void OffloadingConnectorScheduler::note_evictions() {
  // Right away, so a key evicted and stored again in one step keeps its order.
  // The list is taken even with events off, so it never grows.
  add_event(true, "CPU", host_->take_removed());
}

void OffloadingConnectorScheduler::add_event(bool removed, const std::string& medium,
                                    std::vector<ChunkKey> keys, const std::string& locality) {
  if (!events_enabled_ || keys.empty()) return;
  events_.push_back({removed, medium, std::move(keys), locality});
}

std::vector<OffloadEvent> OffloadingConnectorScheduler::take_events() {
  std::vector<OffloadEvent> out;
  out.swap(events_);
  return out;
}

ConnectorStats OffloadingConnectorScheduler::stats() const {
  ConnectorStats s = counters_;
  s.tiers.push_back(host_->stats_snapshot());
  for (size_t i = 0; i < tiers_.size(); ++i) {
    TierStats t = tiers_[i]->stats();
    t.hit_tokens = tier_hit_tokens_[i];
    s.tiers.push_back(std::move(t));
  }
  for (size_t i = 0; i < s.tiers.size(); ++i) {
    const TierLatency& latency = latency_[i];
    s.tiers[i].lookup_sync_seconds = latency.lookup_sync;
    s.tiers[i].lookup_async_seconds = latency.lookup_async;
    s.tiers[i].read_seconds = latency.read;
    s.tiers[i].write_seconds = latency.write;
  }
  return s;
}

}  // namespace strata::offload
