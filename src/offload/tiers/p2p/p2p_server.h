// The serving side of the peer tier: a TCP listener that answers LOOKUP and
// FETCH (p2p_protocol.h) from a P2pChunkStore for peers that authenticate
// with the shared secret.
//
// Threads: one accept thread, plus one thread per open connection (at most
// max_connections; more are answered ERROR kBusy and closed). A connection
// must finish the handshake within io_timeout_ms per step; an authenticated
// connection stays open between requests (clients pool them) until it has
// been idle for idle_timeout_ms, the client sends DONE, or anything about it
// is wrong (bad frame, unexpected message, timeout), which closes it. An
// unauthenticated connection never sees a key or a byte of KV.
//
// stop() (also the destructor) closes the listener, shuts down every open
// connection (waking threads blocked on them) and joins all threads; it
// returns within about one io_timeout_ms even if peers misbehave.
//
// Thread-safety: start/stop from one owner thread; stats() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "offload/tiers/p2p/p2p_chunk_store.h"
#include "offload/tiers/p2p/p2p_protocol.h"
#include "offload/tiers/p2p/p2p_socket.h"

namespace strata::offload {

struct P2pServerConfig {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = any free port (see P2pServer::port())
  std::string secret;
  p2p::NamespaceId namespace_id{};
  uint64_t chunk_body_bytes = 0;  // kHeaderBytes + payload bytes
  int io_timeout_ms = 5000;
  int idle_timeout_ms = 60000;
  int max_connections = 64;
  // Testing only: sleep this long between a CHUNK's header and its payload
  // (a slow peer, to kill mid-transfer).
  std::chrono::milliseconds debug_serve_delay{0};
};

struct P2pServerStats {
  int64_t connections_accepted = 0;
  int64_t connections_rejected = 0;  // over max_connections
  int64_t auth_failures = 0;         // connections refused in the handshake (any reason)
  int64_t wrong_namespace = 0;       // authenticated clients with another chunk format
  int64_t protocol_errors = 0;       // bad frames, unexpected messages, timeouts
  int64_t keys_looked_up = 0;
  int64_t chunks_served = 0;
  int64_t bytes_served = 0;  // CHUNK bodies sent
  int64_t chunks_not_found = 0;
};

class P2pServer {
 public:
  // Binds and starts the accept thread. Errors: cannot resolve or bind (the
  // message names the address and the reason, e.g. "Address already in use").
  static StatusOr<std::unique_ptr<P2pServer>> start(const P2pServerConfig& config,
                                                    P2pChunkStore& store);
  ~P2pServer();
  P2pServer(const P2pServer&) = delete;
  P2pServer& operator=(const P2pServer&) = delete;

  void stop();
  int port() const { return port_; }
  P2pServerStats stats() const;

 private:
  struct Connection {
    p2p::Socket socket;
    std::string peer;  // "ip:port", for logs
    std::thread thread;
    std::atomic<bool> is_done{false};
  };

  P2pServer(const P2pServerConfig& config, P2pChunkStore& store, p2p::Socket listener);
  void accept_loop();
  void reap_done_locked();
  void serve(Connection& connection);
  Status serve_requests(int fd);
  Status handshake(int fd);
  Status answer_lookup(int fd, std::span<const uint8_t> body);
  Status answer_fetch(int fd, std::span<const uint8_t> body);
  void send_error(int fd, p2p::ErrorCode code, const std::string& message);
  // Sleeps for `d`; false if stop() cut it short.
  bool interruptible_sleep(std::chrono::milliseconds d);

  const P2pServerConfig config_;
  P2pChunkStore& store_;
  p2p::Socket listener_;
  int port_ = 0;
  int wake_pipe_[2] = {-1, -1};  // written by stop() to wake accept_loop
  std::thread accept_thread_;

  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::list<Connection> connections_;
  P2pServerStats stats_;
};

}  // namespace strata::offload
