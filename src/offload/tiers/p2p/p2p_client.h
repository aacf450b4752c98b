// The fetching side of the peer tier: asks a peer which chunks it holds
// (LOOKUP) and fetches one chunk into a host slot (FETCH), verifying the
// chunk header and payload checksum (chunk_format.h) before reporting ok.
//
// Connections are authenticated once (p2p_protocol.h, mutual HMAC
// challenge-response) and pooled per peer; a pooled connection that the peer
// has closed, or that sat idle longer than idle_reuse_ms, is discarded
// instead of reused. Any error on a connection (timeout, reset, bad frame,
// bad chunk) closes it. A peer that cannot be reached or fails
// authentication is left alone for backoff_ms: calls for it fail at once
// meanwhile (a dead peer costs one connect attempt per backoff, not one per
// chunk).
//
// Threads: the methods block (network I/O, bounded by connect_timeout_ms and
// io_timeout_ms without progress) and are called from the tier's I/O
// threads, any number at once; never from the engine thread. shutdown()
// wakes calls in progress (they fail) and makes later calls fail at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "offload/tiers/common/chunk_format.h"
#include "offload/tiers/p2p/p2p_protocol.h"
#include "offload/tiers/p2p/p2p_socket.h"

namespace strata::offload {

struct PeerAddress {
  std::string host;
  int port = 0;

  bool operator==(const PeerAddress&) const = default;
  auto operator<=>(const PeerAddress&) const = default;
  std::string to_string() const;  // "host:port", "[v6]:port"
};

// "host:port" or "[ipv6]:port", port 1..65535.
StatusOr<PeerAddress> parse_peer_address(std::string_view text);

struct P2pClientConfig {
  std::string secret;
  int connect_timeout_ms = 1000;
  int io_timeout_ms = 5000;
  int max_idle_per_peer = 4;
  int idle_reuse_ms = 30000;  // below the server's idle timeout (60 s)
  int backoff_ms = 1000;
};

struct P2pClientStats {
  int64_t connections_opened = 0;
  int64_t connect_failures = 0;  // refused, unreachable, timed out
  int64_t auth_failures = 0;     // the peer failed our check, or refused our secret
  int64_t wrong_namespace = 0;   // the peer holds another model's chunks
  int64_t errors = 0;            // failed calls after connecting (timeouts, resets, bad frames)
  int64_t fast_failures = 0;     // calls refused during a peer's backoff
};

class P2pClient {
 public:
  P2pClient(const P2pClientConfig& config, const ChunkFormat& format);
  ~P2pClient();
  P2pClient(const P2pClient&) = delete;
  P2pClient& operator=(const P2pClient&) = delete;

  // Which of `keys` the peer holds (any number of keys; sent in batches).
  StatusOr<std::vector<bool>> lookup(const PeerAddress& peer, std::span<const ChunkKey> keys);
  // Fills `payload` (payload_bytes) with `key`'s verified payload. kNotFound
  // when the peer does not hold it; kDataLoss for a bad chunk; kUnavailable
  // for connection, authentication and timeout failures.
  Status fetch(const PeerAddress& peer, const ChunkKey& key, std::span<uint8_t> payload);

  void shutdown();
  P2pClientStats stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Idle {
    p2p::Socket socket;
    Clock::time_point since;
  };

  StatusOr<p2p::Socket> checkout(const PeerAddress& peer);
  void checkin(const PeerAddress& peer, p2p::Socket socket);
  StatusOr<p2p::Socket> open(const PeerAddress& peer);
  Status handshake(int fd, const PeerAddress& peer);
  Status lookup_batch(int fd, std::span<const ChunkKey> keys, std::vector<bool>& out);
  Status fetch_on(int fd, const ChunkKey& key, std::span<uint8_t> payload);
  // Runs `call` on a pooled or new connection; the connection goes back to
  // the pool when the call succeeded or answered kNotFound.
  template <typename Call>
  Status with_connection(const PeerAddress& peer, Call call);
  void count_error();

  const P2pClientConfig config_;
  const ChunkFormat format_;
  const p2p::NamespaceId namespace_id_;
  const uint64_t chunk_body_bytes_;

  mutable std::mutex mu_;
  bool is_shutdown_ = false;
  std::map<PeerAddress, std::deque<Idle>> idle_;
  std::map<PeerAddress, std::pair<Clock::time_point, std::string>> backoff_;  // until, why
  std::set<int> active_fds_;  // connections in use, for shutdown()
  P2pClientStats stats_;
};

}  // namespace strata::offload
