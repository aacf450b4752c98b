#include "offload/tiers/p2p/p2p_tier.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "base/check.h"
#include "base/log.h"
#include "offload/tiers/common/io_thread_pool.h"
#include "offload/tiers/p2p/p2p_chunk_store.h"
#include "offload/tiers/common/tier_bookkeeping.h"

namespace strata::offload {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMinSecretBytes = 16;
// A positive verdict is trusted this long; then the peer is asked again (it
// may have evicted the chunk; a failed fetch is a miss anyway).
constexpr auto kHitTtl = std::chrono::seconds(30);
// A named peer that does not hold a key yet is asked again this often.
constexpr auto kRemoteRetry = std::chrono::milliseconds(10);
// Settled verdicts stay this long past their expiry before they are dropped,
// so that each probe's answer is delivered at least once.
constexpr auto kSweepGrace = std::chrono::seconds(10);
// Request ids remembered so a refused peer is counted once per request.
constexpr size_t kMaxRefusedRequests = 4096;

class P2pTierImpl final : public P2pTier {
 public:
  P2pTierImpl(const P2pTierConfig& config, std::string secret, std::vector<PeerAddress> peers,
              PeerAllowlist allowlist, const ChunkFormat& format, const HostRegion& region)
      : config_(config),
        peers_(std::move(peers)),
        allowlist_(std::move(allowlist)),
        format_(format),
        region_(region),
        payload_bytes_(format.payload_bytes()),
        store_(config.max_bytes),
        client_(client_config(config, std::move(secret)), format),
        jobs_(static_cast<int>(config.num_threads), 1) {}

  ~P2pTierImpl() override {
    if (server_ != nullptr) server_->stop();
    client_.shutdown();
    jobs_.wait_idle();
  }

  Status start_server(const std::string& secret) {
    P2pServerConfig sc;
    sc.host = config_.host;
    sc.port = static_cast<int>(config_.port);
    sc.secret = secret;
    sc.namespace_id = p2p::namespace_id_of(format_);
    sc.chunk_body_bytes = static_cast<uint64_t>(kHeaderBytes + payload_bytes_);
    sc.io_timeout_ms = static_cast<int>(config_.io_timeout_ms);
    sc.max_connections = std::max(64, static_cast<int>(4 * config_.num_threads));
    sc.debug_serve_delay = config_.debug_serve_delay;
    STRATA_ASSIGN_OR_RETURN(server_, P2pServer::start(sc, store_));
    return Status();
  }

  const std::string& name() const override { return name_; }
  bool publishes_kv_events() const override { return false; }
  int port() const override { return server_->port(); }

  P2pTierStats p2p_stats() const override { return {server_->stats(), client_.stats()}; }

  LookupResult lookup(const ChunkKey& key) override { return lookup_for(key, {}); }

  LookupResult lookup_for(const ChunkKey& key, const TierLookupContext& context) override {
    if (store_.contains(key)) return count_answer(LookupResult::kHit);
    PeerAddress source;  // empty host: the configured peers
    if (!context.remote_host.empty() && context.remote_port > 0) {
      if (!allowlist_.allows(context.remote_host, context.remote_port)) return refuse(context);
      source = {std::string(context.remote_host), static_cast<int>(context.remote_port)};
      if (is_self(source)) return count_answer(LookupResult::kMiss);
    } else if (peers_.empty()) {
      return count_answer(LookupResult::kMiss);
    }
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = Clock::now();
    sweep_locked(now);
    auto it = verdicts_.find(key);
    if (it != verdicts_.end() && it->second.state != State::kProbing &&
        !(it->second.source == source)) {
      verdicts_.erase(it);  // answered for another source: ask this one
      it = verdicts_.end();
    }
    if (it != verdicts_.end()) {
      Verdict& v = it->second;
      switch (v.state) {
        case State::kProbing:
          return LookupResult::kRetry;
        case State::kAbsent:
          if (now < v.until) return LookupResult::kRetry;
          break;  // ask the named peer again
        case State::kHit:
          if (now < v.until) return count_answer_locked(LookupResult::kHit);
          v.first_absent = {};
          break;
        case State::kMiss:
          if (!v.is_delivered || now < v.until) {
            v.is_delivered = true;
            return count_answer_locked(LookupResult::kMiss);
          }
          v.first_absent = {};
          break;
      }
    }
    Verdict& v = verdicts_[key];
    v.source = source;
    v.state = State::kProbing;
    queue_probe_locked(source, key);
    return LookupResult::kRetry;
  }

  void submit_store(TierJob job) override {
    auto state = make_job_state(std::move(job), region_);
    std::vector<size_t> to_copy;
    {
      // Whether the local store holds a key is checked on the copying thread.
      std::lock_guard<std::mutex> lock(mu_);
      to_copy = claim_stores(*state, storing_, stats_, [](const ChunkKey&) { return false; });
    }
    jobs_.run_store(std::move(state), to_copy,
                    [this](TierJobState& s, size_t i) { run_store(s, i); });
  }

  void submit_load(TierJob job) override {
    jobs_.run_load(make_job_state(std::move(job), region_),
                   [this](TierJobState& s, size_t i) { run_load(s, i); });
  }

  std::vector<TierJobResult> poll_finished() override { return jobs_.poll_finished(); }

  void drain() override { jobs_.wait_idle(); }

  TierStats stats() const override {
    TierStats out;
    {
      std::lock_guard<std::mutex> lock(mu_);
      out = stats_;
    }
    jobs_.fill_seconds(out);
    out.tier = name_;
    out.used_bytes = store_.used_bytes();
    out.capacity_bytes = store_.max_bytes();
    out.num_chunks = store_.num_chunks();
    return out;
  }

 private:
  enum class State {
    kProbing,  // a LOOKUP is queued or under way
    kHit,      // `holder` has it (until `until`)
    kAbsent,   // the named peer does not have it yet: ask again at `until`
    kMiss,     // nobody has it (until `until`)
  };
  struct Verdict {
    State state = State::kProbing;
    PeerAddress source;  // the named peer, or {} for the configured peers
    PeerAddress holder;  // kHit
    Clock::time_point until{};
    Clock::time_point first_absent{};  // named peer: first "not held" answer of this wait
    Clock::time_point sweep_at{};
    bool is_delivered = false;  // kMiss: returned by a lookup at least once
  };

  static P2pClientConfig client_config(const P2pTierConfig& config, std::string secret) {
    P2pClientConfig c;
    c.secret = std::move(secret);
    c.connect_timeout_ms = static_cast<int>(config.connect_timeout_ms);
    c.io_timeout_ms = static_cast<int>(config.io_timeout_ms);
    c.max_idle_per_peer = static_cast<int>(config.num_threads);
    c.backoff_ms = static_cast<int>(std::max<int64_t>(config.miss_ttl_ms, 100));
    return c;
  }

  bool is_self(const PeerAddress& peer) const {
    return peer.port == port() &&
           (peer.host == config_.host || peer.host == config_.advertised_host());
  }

  // A request named a peer the operator did not allow: no connection, a miss.
  // Counted and logged once per request (its chunks are looked up one by one).
  LookupResult refuse(const TierLookupContext& context) {
    int64_t num_refused = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (refused_requests_.size() >= kMaxRefusedRequests) refused_requests_.clear();
      if (refused_requests_.emplace(context.request_id).second) {
        num_refused = ++stats_.remote_peers_refused;
      }
      count_answer_locked(LookupResult::kMiss);
    }
    if (num_refused > 0 && should_log_failure(num_refused)) {
      STRATA_LOG(kWarning) << "p2p tier: request " << context.request_id
                           << " names peer " << context.remote_host << ":" << context.remote_port
                           << " in kv_transfer_params, which is neither in peers nor matched by "
                              "allowed_remote_peers; not connecting (the request recomputes; "
                           << num_refused << " refused so far)";
    }
    return LookupResult::kMiss;
  }

  LookupResult count_answer(LookupResult result) {
    std::lock_guard<std::mutex> lock(mu_);
    return count_answer_locked(result);
  }

  LookupResult count_answer_locked(LookupResult result) {
    ++stats_.chunk_lookups;
    if (result == LookupResult::kHit) ++stats_.chunk_hits;
    return result;
  }

  std::span<uint8_t> slot(int64_t slot_idx) const {
    return {region_.slot(slot_idx), static_cast<size_t>(payload_bytes_)};
  }

  // ---- verdicts (mu_ held) ----

  void queue_probe_locked(const PeerAddress& source, const ChunkKey& key) {
    std::vector<ChunkKey>& queued = pending_probes_[source];
    const bool is_first = queued.empty();
    queued.push_back(key);
    // One task per source takes every key queued until it runs: one LOOKUP.
    if (is_first) {
      jobs_.submit(IoThreadPool::Queue::kRead, [this, source] { run_probe(source); });
    }
  }

  void settle_locked(Verdict& v, const ChunkKey& key, State state, Clock::time_point until,
                     Clock::time_point sweep_at) {
    v.state = state;
    v.until = until;
    v.is_delivered = false;
    v.sweep_at = sweep_at;
    sweep_order_.emplace_back(sweep_at, key);
  }

  void remember_miss_locked(Verdict& v, const ChunkKey& key, Clock::time_point now) {
    const Clock::time_point until = now + std::chrono::milliseconds(config_.miss_ttl_ms);
    settle_locked(v, key, State::kMiss, until, until + kSweepGrace);
  }

  void sweep_locked(Clock::time_point now) {
    while (!sweep_order_.empty() && sweep_order_.front().first <= now) {
      auto it = verdicts_.find(sweep_order_.front().second);
      if (it != verdicts_.end() && it->second.state != State::kProbing &&
          it->second.sweep_at <= now) {
        verdicts_.erase(it);
      }
      sweep_order_.pop_front();
    }
  }

  // ---- I/O threads ----

  void run_probe(const PeerAddress& source) {
    std::vector<ChunkKey> keys;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_probes_.find(source);
      if (it == pending_probes_.end()) return;
      keys.swap(it->second);
      pending_probes_.erase(it);
    }
    const bool is_named = !source.host.empty();
    const std::vector<PeerAddress> asked = is_named ? std::vector<PeerAddress>{source} : peers_;
    std::vector<std::optional<PeerAddress>> holder(keys.size());
    std::vector<size_t> open(keys.size());  // keys no peer has claimed yet
    for (size_t i = 0; i < open.size(); ++i) open[i] = i;
    int64_t num_failed_keys = 0;
    size_t num_peers_failed = 0;
    Status last_error;
    for (const PeerAddress& peer : asked) {
      if (open.empty()) break;
      std::vector<ChunkKey> subset;
      for (size_t i : open) subset.push_back(keys[i]);
      StatusOr<std::vector<bool>> present = client_.lookup(peer, subset);
      if (!present.ok()) {
        num_failed_keys += static_cast<int64_t>(subset.size());
        ++num_peers_failed;
        last_error = present.status();
        continue;
      }
      std::vector<size_t> still_open;
      for (size_t j = 0; j < open.size(); ++j) {
        if ((*present)[j]) {
          holder[open[j]] = peer;
        } else {
          still_open.push_back(open[j]);
        }
      }
      open.swap(still_open);
    }
    // A named peer that answered "not yet" is asked again (P/D); one that
    // could not be asked is a miss.
    const bool is_waiting = is_named && num_peers_failed == 0;
    int64_t num_failures = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const Clock::time_point now = Clock::now();
      for (size_t i = 0; i < keys.size(); ++i) {
        auto it = verdicts_.find(keys[i]);
        if (it == verdicts_.end() || it->second.state != State::kProbing ||
            !(it->second.source == source)) {
          continue;
        }
        apply_probe_locked(it->second, keys[i], holder[i], is_waiting, now);
      }
      stats_.probe_failures += num_failed_keys;
      if (num_peers_failed > 0) num_failures = ++num_failed_probes_;
    }
    if (num_failures > 0 && should_log_failure(num_failures)) {
      STRATA_LOG(kWarning) << "p2p tier: lookup of " << keys.size()
                           << " chunks failed: " << last_error.message() << " (" << num_failures
                           << " failed lookups so far; their chunks are recomputed)";
    }
  }

  void apply_probe_locked(Verdict& v, const ChunkKey& key, const std::optional<PeerAddress>& holder,
                          bool is_waiting, Clock::time_point now) {
    if (holder) {
      v.holder = *holder;
      v.first_absent = {};
      const Clock::time_point until = now + kHitTtl;
      settle_locked(v, key, State::kHit, until, until + kSweepGrace);
      return;
    }
    const auto wait = std::chrono::milliseconds(config_.remote_wait_ms);
    const bool is_new_wait = v.first_absent == Clock::time_point{};
    if (is_waiting && (is_new_wait || now - v.first_absent < wait)) {
      if (is_new_wait) {
        v.first_absent = now;
        settle_locked(v, key, State::kAbsent, now + kRemoteRetry, now + wait + kSweepGrace);
      } else {
        v.state = State::kAbsent;  // already scheduled for sweeping
        v.until = now + kRemoteRetry;
      }
      return;
    }
    remember_miss_locked(v, key, now);
  }

  void run_store(TierJobState& state, size_t i) {
    const ChunkKey& key = state.job.keys[i];
    bool is_stored = false;
    int64_t num_evicted = 0;
    if (!store_.contains(key)) {
      auto framed = std::make_shared<std::vector<uint8_t>>(kHeaderBytes + payload_bytes_);
      const std::span<const uint8_t> payload = slot(state.job.slots[i]);
      std::memcpy(framed->data() + kHeaderBytes, payload.data(), payload.size());
      encode_chunk_header(format_, key, payload,
                          std::span<uint8_t, kHeaderBytes>(framed->data(), kHeaderBytes));
      const P2pChunkStore::PutResult put = store_.put(key, std::move(framed));
      is_stored = put.is_stored;
      num_evicted = put.num_evicted;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      storing_.erase(key);
      if (is_stored) {
        stats_.store_bytes += payload_bytes_;
        state.bytes += payload_bytes_;
      } else {
        ++stats_.stores_skipped;
      }
      stats_.evictions += num_evicted;
    }
    state.ok[i] = 1;
  }

  void run_load(TierJobState& state, size_t i) {
    const ChunkKey& key = state.job.keys[i];
    const Status status = load_chunk(key, slot(state.job.slots[i]));
    int64_t num_failures = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (status.ok()) {
        stats_.load_bytes += payload_bytes_;
        stats_.hit_tokens += format_.tokens_per_chunk();
        state.bytes += payload_bytes_;
      } else {
        num_failures = ++stats_.load_failures;
        remember_miss_locked(verdicts_[key], key, Clock::now());
      }
    }
    state.ok[i] = status.ok();
    warn_chunk_failure(name_, "load", key, status.message(), num_failures, "; recomputed");
  }

  // From the local store when it has the chunk, else from the peer the
  // lookup found; verified either way.
  Status load_chunk(const ChunkKey& key, std::span<uint8_t> out) {
    if (const P2pChunkStore::Chunk chunk = store_.get(key)) {
      STRATA_ASSIGN_OR_RETURN(ChunkHeader header,
                              decode_chunk_header(format_, key, {chunk->data(), kHeaderBytes}));
      std::memcpy(out.data(), chunk->data() + kHeaderBytes, out.size());
      return verify_chunk_payload(header, out);
    }
    std::optional<PeerAddress> holder;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = verdicts_.find(key);
      if (it != verdicts_.end() && it->second.state == State::kHit) holder = it->second.holder;
    }
    if (!holder) return not_found("no peer is known to hold it");
    return client_.fetch(*holder, key, out);
  }

  const P2pTierConfig config_;
  const std::vector<PeerAddress> peers_;
  const PeerAllowlist allowlist_;  // peers a request may name
  const ChunkFormat format_;
  const HostRegion region_;
  const std::string name_ = "p2p";
  const int64_t payload_bytes_;

  P2pChunkStore store_;  // outlives server_, which serves from it
  P2pClient client_;
  std::unique_ptr<P2pServer> server_;

  mutable std::mutex mu_;
  std::unordered_map<ChunkKey, Verdict, kv::BlockHashHasher> verdicts_;
  std::deque<std::pair<Clock::time_point, ChunkKey>> sweep_order_;  // (sweep time, key), FIFO
  std::map<PeerAddress, std::vector<ChunkKey>> pending_probes_;     // per source
  ChunkKeySet storing_;
  TierStats stats_;                // but load/store_seconds, which jobs_ keeps
  int64_t num_failed_probes_ = 0;  // LOOKUPs that failed (stats_ counts their keys)
  std::unordered_set<std::string> refused_requests_;  // counted in remote_peers_refused

  // Last: destroyed (threads joined) before the state above.
  TierJobs jobs_;
};

Status validate(const P2pTierConfig& c, const ChunkFormat& format, const HostRegion& region) {
  const auto fail = [](const std::string& m) { return invalid_argument("p2p tier: " + m); };
  if (c.host.empty()) return fail("host is empty; set the address to listen on");
  if (c.port < 0 || c.port > 65535)
    return fail("port " + std::to_string(c.port) + " is not in [0, 65535]");
  if (c.num_threads < 1 || c.num_threads > 256) {
    return fail("num_threads " + std::to_string(c.num_threads) + " is not in [1, 256]");
  }
  if (c.connect_timeout_ms < 1 || c.io_timeout_ms < 1 || c.connect_timeout_ms > 600000 ||
      c.io_timeout_ms > 600000) {
    return fail("connect_timeout_ms " + std::to_string(c.connect_timeout_ms) +
                " and io_timeout_ms " + std::to_string(c.io_timeout_ms) +
                " must be in [1, 600000]");
  }
  if (c.miss_ttl_ms < 0 || c.remote_wait_ms < 0) {
    return fail("miss_ttl_ms and remote_wait_ms must not be negative");
  }
  STRATA_RETURN_IF_ERROR(check_format_and_region("p2p", format, region));
  const int64_t payload_bytes = format.payload_bytes();
  if (c.max_bytes < kHeaderBytes + payload_bytes) {
    return fail("max_bytes " + std::to_string(c.max_bytes) + " is smaller than one chunk (" +
                std::to_string(kHeaderBytes + payload_bytes) + " bytes)");
  }
  return Status();
}

StatusOr<std::string> resolve_secret(const P2pTierConfig& config) {
  std::string secret = config.secret;
  if (secret.empty()) {
    const char* env = std::getenv("STRATA_P2P_SECRET");
    if (env != nullptr) secret = env;
  }
  if (secret.empty()) {
    return invalid_argument(
        "p2p tier: no secret, no transfer: set \"secret\" in the tier's config or "
        "STRATA_P2P_SECRET to the same value on every peer (e.g. `openssl rand -hex 32`)");
  }
  if (secret.size() < kMinSecretBytes) {
    return invalid_argument("p2p tier: the secret has " + std::to_string(secret.size()) +
                            " bytes; use at least " + std::to_string(kMinSecretBytes) +
                            " (e.g. `openssl rand -hex 32`)");
  }
  return secret;
}

}  // namespace

StatusOr<std::unique_ptr<P2pTier>> create_p2p_tier(const P2pTierConfig& config,
                                                   const ChunkFormat& format,
                                                   const HostRegion& region) {
  STRATA_RETURN_IF_ERROR(validate(config, format, region));
  STRATA_ASSIGN_OR_RETURN(std::string secret, resolve_secret(config));
  std::vector<PeerAddress> peers;
  for (size_t i = 0; i < config.peers.size(); ++i) {
    StatusOr<PeerAddress> peer = parse_peer_address(config.peers[i]);
    if (!peer.ok()) return peer.status().with_prefix("p2p tier: peers[" + std::to_string(i) + "]");
    peers.push_back(*peer);
  }
  StatusOr<PeerAllowlist> allowlist =
      PeerAllowlist::create(config.allowed_remote_peers, config.peers);
  if (!allowlist.ok()) return allowlist.status().with_prefix("p2p tier");
  P2pTierConfig effective = config;
  if (const char* delay = std::getenv("STRATA_P2P_TEST_SERVE_DELAY_MS")) {
    effective.debug_serve_delay = std::chrono::milliseconds(std::atoll(delay));
  }
  auto tier = std::make_unique<P2pTierImpl>(effective, secret, peers, std::move(*allowlist),
                                            format, region);
  STRATA_RETURN_IF_ERROR(tier->start_server(secret));
  std::string peer_list;
  for (const PeerAddress& p : peers) peer_list += (peer_list.empty() ? "" : ", ") + p.to_string();
  STRATA_LOG(kInfo) << "p2p tier: serving KV chunks on " << config.host << ":" << tier->port()
                    << " (advertised as " << config.advertised_host() << ":" << tier->port()
                    << "), peers [" << peer_list << "], " << config.allowed_remote_peers.size()
                    << " allowed_remote_peers entries, up to " << config.max_bytes
                    << " bytes of chunks in memory";
  if (effective.debug_serve_delay.count() > 0) {
    STRATA_LOG(kWarning) << "p2p tier: testing: every chunk served pauses "
                         << effective.debug_serve_delay.count() << " ms";
  }
  return std::unique_ptr<P2pTier>(std::move(tier));
}

StatusOr<std::unique_ptr<SecondaryTier>> make_p2p_tier(const P2pTierConfig& config,
                                                       const ChunkFormat& format,
                                                       const HostRegion& region) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<P2pTier> tier, create_p2p_tier(config, format, region));
  return std::unique_ptr<SecondaryTier>(std::move(tier));
}

}  // namespace strata::offload
