// Blocking TCP I/O for the peer tier (plain POSIX sockets): connect and
// listen, and reading / writing whole frames (p2p_protocol.h) with timeouts.
//
// Every wait is bounded: `timeout_ms` is the longest a call waits without
// progress (no byte sent or received), so a stalled or vanished peer turns
// into an error instead of a hang, while a large transfer that keeps moving
// is never cut off. Sends use MSG_NOSIGNAL: a peer that closes never raises
// SIGPIPE. Another thread may call Socket::shutdown_both() to wake a call
// blocked on the socket (it then fails at once).
//
// Thread-safety: a Socket is used by one thread at a time, except
// shutdown_both(), which any thread may call while the fd is open.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "offload/tiers/p2p/p2p_protocol.h"

namespace strata::offload::p2p {

// Owns one socket fd; move-only.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { close(); }
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  int release();
  void close();
  void shutdown_both() const;

 private:
  int fd_ = -1;
};

// Connects to host:port (numeric or resolvable name) within timeout_ms, with
// TCP_NODELAY. Errors name the peer and the reason ("connection refused").
StatusOr<Socket> connect_tcp(const std::string& host, int port, int timeout_ms);

// A listening socket bound to host:port (port 0 = any free port), with
// SO_REUSEADDR.
StatusOr<Socket> listen_tcp(const std::string& host, int port, int backlog);
// The port a socket is bound to.
int local_port(const Socket& socket);
// "ip:port" of a connected socket's peer (logs).
std::string peer_address_text(int fd);

enum class WaitResult { kReady, kTimeout, kError };
// Waits until `fd` is readable (data, EOF or error pending).
WaitResult wait_readable(int fd, int timeout_ms);
// After wait_readable said kReady: true when the peer has closed (or reset)
// the connection and nothing is left to read.
bool is_closed_by_peer(int fd);

Status read_exact(int fd, uint8_t* out, size_t num_bytes, int timeout_ms);
Status write_all(int fd, std::span<iovec> iov, int timeout_ms);

// One frame: header + body in one write.
Status send_message(int fd, MessageType type, std::span<const uint8_t> body, int timeout_ms);
// Reads and checks a frame header (decode_frame_header with chunk_body_bytes).
StatusOr<FrameHeader> read_frame_header(int fd, uint64_t chunk_body_bytes, int timeout_ms);
// Reads a control message's body (bounded by the header's check).
StatusOr<std::vector<uint8_t>> read_body(int fd, const FrameHeader& header, int timeout_ms);

}  // namespace strata::offload::p2p
