// The peer-to-peer tier: Strata instances lend each other KV chunks over TCP,
// host memory to host memory (vLLM's P2P tier, without RDMA). Every instance
// is a symmetric peer: it serves the chunks that reached its host tier and
// fetches chunks from others. Also the transport of prefill/decode
// disaggregation (docs/pd-disaggregation.md).
//
// Serving: chunks arrive through submit_store (the host tier's cascade, like
// any secondary tier) and are copied, framed, into a bounded in-memory store
// (P2pChunkStore: LRU, max_bytes) that the server threads (P2pServer) answer
// LOOKUP and FETCH from. The copy exists because the host tier's bookkeeping
// is engine-thread-only and its slots are reused at will; it costs up to
// max_bytes of memory beyond the host tier (each chunk kHeaderBytes +
// payload). Chunks promoted into this instance's host tier from another tier
// are not re-exposed (they reach the host tier without a cascade).
//
// Fetching (lookup_for, submit_load):
//   * a chunk in the local store is a hit and loads from memory;
//   * a request that names a peer (TierLookupContext remote_host/port, from
//     kv_transfer_params) asks that peer only, if the operator allows it:
//     one of `peers` or matched by `allowed_remote_peers` (peer_allowlist.h).
//     A peer not allowed is never contacted: the lookup is a miss (the
//     request recomputes), counted in remote_peers_refused once per request
//     and logged. Without a named peer the configured `peers` are asked in
//     order, the first that holds the chunk wins;
//   * verdicts are cached per key: unknown keys answer kRetry while an I/O
//     thread asks (one LOOKUP per peer for all keys queued meanwhile);
//     negative verdicts expire after miss_ttl_ms, positive ones after 30 s;
//   * a named peer that does not hold a key YET answers kRetry (P/D: the
//     prefiller may still be storing it) and is asked again every
//     kRemoteRetryMs, for up to remote_wait_ms; then kMiss. The connector's
//     max_load_wait_s bounds how long the request itself waits;
//   * submit_load FETCHes into the reserved host slot and verifies the
//     chunk header and payload checksum.
// Every failure is a miss: an unreachable or dead peer, a timeout, a wrong
// secret, a bad chunk reports the key not ok (counted in load_failures or
// probe_failures), forgets the verdict, and never blocks the engine thread.
//
// Authentication: a shared secret (config "secret", else $STRATA_P2P_SECRET,
// at least 16 bytes; no secret, no transfer), HMAC-SHA256 challenge-response
// in both directions (p2p_protocol.h). The secret never crosses the wire.
// Peers must also agree on the chunk format (model, dtype, chunk size).
//
// Threads: num_threads I/O threads for lookups and fetches, one for copying
// stores, the server's accept and connection threads. Public methods of
// SecondaryTier: engine thread, except stats() (any thread); they only take
// a short lock and queue work. The destructor stops the server, interrupts
// transfers in progress and waits for queued jobs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "offload/tiers/p2p/p2p_client.h"
#include "offload/tiers/p2p/p2p_server.h"
#include "offload/tiers/p2p/peer_allowlist.h"
#include "offload/tiers/common/secondary_tier.h"

namespace strata::offload {

struct P2pTierConfig {
  std::string host = "127.0.0.1";        // address the server listens on
  int64_t port = 5710;                   // 0 = any free port (tests; see P2pTier::port())
  std::string advertise_host;            // given to P/D decoders; "" = host
  std::vector<std::string> peers;        // "host:port", asked in order
  // Peers a request may name besides `peers` (peer_allowlist.h syntax:
  // "host:5710", "10.0.0.0/8:5700-5799", "[fd00::/8]:*"). Empty: only `peers`.
  std::vector<std::string> allowed_remote_peers;
  std::string secret;                    // "" = $STRATA_P2P_SECRET
  int64_t max_bytes = int64_t{1} << 30;  // memory for served chunks
  int64_t num_threads = 4;
  int64_t connect_timeout_ms = 1000;
  int64_t io_timeout_ms = 5000;
  int64_t miss_ttl_ms = 1000;
  int64_t remote_wait_ms = 5000;
  // Testing only: the server pauses this long inside every CHUNK it sends
  // (a slow peer). Also read from $STRATA_P2P_TEST_SERVE_DELAY_MS.
  std::chrono::milliseconds debug_serve_delay{0};

  const std::string& advertised_host() const {
    return advertise_host.empty() ? host : advertise_host;
  }
};

struct P2pTierStats {
  P2pServerStats server;
  P2pClientStats client;
};

class P2pTier : public SecondaryTier {
 public:
  // The port the server listens on (the configured one, or the one picked
  // for port 0).
  virtual int port() const = 0;
  virtual P2pTierStats p2p_stats() const = 0;
};

// Starts the server and the I/O threads. Errors (each names the setting):
// no secret or a short one, a bad peer address or allowed_remote_peers entry,
// a port in use, bad sizes.
StatusOr<std::unique_ptr<SecondaryTier>> make_p2p_tier(const P2pTierConfig& config,
                                                       const ChunkFormat& format,
                                                       const HostRegion& region);
// The same, as a P2pTier (tests, benchmarks).
StatusOr<std::unique_ptr<P2pTier>> create_p2p_tier(const P2pTierConfig& config,
                                                   const ChunkFormat& format,
                                                   const HostRegion& region);

}  // namespace strata::offload
