#include "offload/tiers/p2p/p2p_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/log.h"

namespace strata::offload {
namespace {

using p2p::ErrorCode;
using p2p::MessageType;

// Warn for the first few, then at powers of two.
bool should_log(int64_t count) { return count <= 4 || (count & (count - 1)) == 0; }

std::string hex_of(const p2p::NamespaceId& id) { return std::string(id.begin(), id.end()); }

}  // namespace

StatusOr<std::unique_ptr<P2pServer>> P2pServer::start(const P2pServerConfig& config,
                                                      P2pChunkStore& store) {
  STRATA_ASSIGN_OR_RETURN(p2p::Socket listener, p2p::listen_tcp(config.host, config.port, 128));
  std::unique_ptr<P2pServer> server(new P2pServer(config, store, std::move(listener)));
  if (::pipe2(server->wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return unavailable(std::string("p2p tier: pipe: ") + std::strerror(errno));
  }
  server->accept_thread_ = std::thread([s = server.get()] { s->accept_loop(); });
  return server;
}

P2pServer::P2pServer(const P2pServerConfig& config, P2pChunkStore& store, p2p::Socket listener)
    : config_(config), store_(store), listener_(std::move(listener)) {
  port_ = p2p::local_port(listener_);
}

P2pServer::~P2pServer() {
  stop();
  for (int fd : wake_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

void P2pServer::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (wake_pipe_[1] >= 0) {
    const uint8_t byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_pipe_[1], &byte, 1);
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  listener_.close();
  std::list<Connection> connections;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Connection& c : connections_) c.socket.shutdown_both();  // no-op once closed
    connections.splice(connections.end(), connections_);
  }
  for (Connection& c : connections) c.thread.join();
}

P2pServerStats P2pServer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void P2pServer::accept_loop() {
  for (;;) {
    pollfd fds[2] = {{listener_.fd(), POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    const int r = ::poll(fds, 2, -1);
    if (r < 0 && errno != EINTR) {
      STRATA_LOG(kError) << "p2p tier: poll on the listener failed: " << std::strerror(errno);
      return;
    }
    if (fds[1].revents != 0) return;  // stop()
    if (r <= 0 || (fds[0].revents & POLLIN) == 0) continue;
    p2p::Socket socket(::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!socket.is_open()) continue;  // the client went away already, or EMFILE
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      reap_done_locked();
      if (static_cast<int>(connections_.size()) < config_.max_connections) {
        ++stats_.connections_accepted;
        Connection& c = connections_.emplace_back();
        c.socket = std::move(socket);
        c.peer = p2p::peer_address_text(c.socket.fd());
        c.thread = std::thread([this, &c] { serve(c); });
        continue;
      }
      ++stats_.connections_rejected;
    }
    send_error(socket.fd(), ErrorCode::kBusy, "too many connections");
  }
}

void P2pServer::reap_done_locked() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (!it->is_done.load()) {
      ++it;
      continue;
    }
    it->thread.join();  // finished: returns at once
    it = connections_.erase(it);
  }
}

void P2pServer::serve(Connection& connection) {
  const int fd = connection.socket.fd();
  const Status shook = handshake(fd);
  const Status served = shook.ok() ? serve_requests(fd) : Status();
  int64_t num_refused = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!shook.ok()) num_refused = ++stats_.auth_failures;
    if (!served.ok()) ++stats_.protocol_errors;
    // Closed here (not when reaped) so the peer sees the end at once; under
    // mu_ because stop() shuts connections down under it.
    connection.socket.close();
    connection.is_done = true;
  }
  if (num_refused > 0 && should_log(num_refused)) {
    STRATA_LOG(kWarning) << "p2p tier: refused peer " << connection.peer << ": " << shook.message()
                         << " (" << num_refused << " refused so far)";
  }
}

Status P2pServer::serve_requests(int fd) {
  const int io_ms = config_.io_timeout_ms;
  for (;;) {
    // Idle (or closed by the client): the end of the connection, not an error.
    if (p2p::wait_readable(fd, config_.idle_timeout_ms) != p2p::WaitResult::kReady) return Status();
    if (p2p::is_closed_by_peer(fd)) return Status();
    STRATA_ASSIGN_OR_RETURN(p2p::FrameHeader header, p2p::read_frame_header(fd, 0, io_ms));
    if (header.type == MessageType::kDone) return Status();
    STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> body, p2p::read_body(fd, header, io_ms));
    if (header.type == MessageType::kLookup) {
      STRATA_RETURN_IF_ERROR(answer_lookup(fd, body));
    } else if (header.type == MessageType::kFetch) {
      STRATA_RETURN_IF_ERROR(answer_fetch(fd, body));
    } else {
      const std::string what = std::string("unexpected ") + p2p::message_type_name(header.type);
      send_error(fd, ErrorCode::kProtocol, what);
      return invalid_argument(what);
    }
  }
}

Status P2pServer::handshake(int fd) {
  const int io_ms = config_.io_timeout_ms;
  STRATA_ASSIGN_OR_RETURN(p2p::FrameHeader header, p2p::read_frame_header(fd, 0, io_ms));
  if (header.type != MessageType::kHello) {
    send_error(fd, ErrorCode::kProtocol, "expected HELLO");
    return invalid_argument(std::string("expected HELLO, got ") +
                            p2p::message_type_name(header.type));
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> body, p2p::read_body(fd, header, io_ms));
  STRATA_ASSIGN_OR_RETURN(p2p::Hello hello, p2p::decode_hello(body));
  p2p::Challenge challenge;
  challenge.server_nonce = p2p::random_nonce();
  challenge.server_mac = p2p::compute_mac(config_.secret, p2p::Role::kServer, hello.client_nonce,
                                          challenge.server_nonce, hello.namespace_id);
  STRATA_RETURN_IF_ERROR(
      p2p::send_message(fd, MessageType::kChallenge, p2p::encode_challenge(challenge), io_ms));
  Status auth = [&]() -> Status {
    STRATA_ASSIGN_OR_RETURN(p2p::FrameHeader h, p2p::read_frame_header(fd, 0, io_ms));
    if (h.type != MessageType::kAuth) {
      return invalid_argument(std::string("expected AUTH, got ") + p2p::message_type_name(h.type));
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> b, p2p::read_body(fd, h, io_ms));
    STRATA_ASSIGN_OR_RETURN(p2p::Mac mac, p2p::decode_mac(b));
    const p2p::Mac expected =
        p2p::compute_mac(config_.secret, p2p::Role::kClient, hello.client_nonce,
                         challenge.server_nonce, hello.namespace_id);
    if (!p2p::mac_equal(mac, expected)) {
      return invalid_argument("wrong MAC (a different secret?)");
    }
    return Status();
  }();
  if (!auth.ok()) {
    send_error(fd, ErrorCode::kAuthFailed, "authentication failed");
    return auth.with_prefix("authentication failed");
  }
  if (hello.namespace_id != config_.namespace_id) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.wrong_namespace;
    }
    const std::string message = "this peer holds chunk namespace " + hex_of(config_.namespace_id) +
                                ", not " + hex_of(hello.namespace_id) +
                                " (another model or chunk size)";
    send_error(fd, ErrorCode::kWrongNamespace, message);
    return invalid_argument(message);
  }
  return p2p::send_message(fd, MessageType::kAuthOk, {}, io_ms);
}

Status P2pServer::answer_lookup(int fd, std::span<const uint8_t> body) {
  StatusOr<std::vector<ChunkKey>> keys = p2p::decode_lookup(body);
  if (!keys.ok()) {
    send_error(fd, ErrorCode::kProtocol, keys.status().message());
    return keys.status();
  }
  std::vector<bool> present(keys->size());
  for (size_t i = 0; i < keys->size(); ++i) present[i] = store_.contains((*keys)[i]);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.keys_looked_up += static_cast<int64_t>(keys->size());
  }
  return p2p::send_message(fd, MessageType::kLookupReply, p2p::encode_lookup_reply(present),
                           config_.io_timeout_ms);
}

Status P2pServer::answer_fetch(int fd, std::span<const uint8_t> body) {
  StatusOr<ChunkKey> key = p2p::decode_key(body);
  if (!key.ok()) {
    send_error(fd, ErrorCode::kProtocol, key.status().message());
    return key.status();
  }
  const P2pChunkStore::Chunk chunk = store_.get(*key);
  const int io_ms = config_.io_timeout_ms;
  if (chunk == nullptr) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.chunks_not_found;
    }
    return p2p::send_message(fd, MessageType::kNotFound, p2p::encode_key(*key), io_ms);
  }
  std::array<uint8_t, p2p::kFrameHeaderBytes> frame;
  p2p::encode_frame_header({MessageType::kChunk, chunk->size()}, frame);
  uint8_t* data = const_cast<uint8_t*>(chunk->data());
  const size_t head = std::min<size_t>(chunk->size(), kHeaderBytes);
  if (config_.debug_serve_delay.count() > 0) {
    iovec first[2] = {{frame.data(), frame.size()}, {data, head}};
    STRATA_RETURN_IF_ERROR(p2p::write_all(fd, first, io_ms));
    if (!interruptible_sleep(config_.debug_serve_delay)) return unavailable("stopping");
    iovec rest[1] = {{data + head, chunk->size() - head}};
    STRATA_RETURN_IF_ERROR(p2p::write_all(fd, rest, io_ms));
  } else {
    iovec iov[2] = {{frame.data(), frame.size()}, {data, chunk->size()}};
    STRATA_RETURN_IF_ERROR(p2p::write_all(fd, iov, io_ms));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.chunks_served;
  stats_.bytes_served += static_cast<int64_t>(chunk->size());
  return Status();
}

void P2pServer::send_error(int fd, ErrorCode code, const std::string& message) {
  // Best effort, short wait: the connection is closed right after.
  (void)p2p::send_message(fd, MessageType::kError, p2p::encode_error({code, message}), 100);
}

bool P2pServer::interruptible_sleep(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !stop_cv_.wait_for(lock, d, [this] { return stopping_; });
}

}  // namespace strata::offload
