#include "offload/tiers/p2p/p2p_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace strata::offload::p2p {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

std::string address_text(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

// Waits for `events` on fd; EINTR restarts with the time left.
WaitResult wait_for(int fd, short events, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    pollfd p{fd, events, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (r > 0) return WaitResult::kReady;  // includes POLLERR / POLLHUP: the I/O call reports it
    if (r == 0) return WaitResult::kTimeout;
    if (errno != EINTR) return WaitResult::kError;
  }
}

void set_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

struct AddrInfoList {
  addrinfo* list = nullptr;
  ~AddrInfoList() {
    if (list != nullptr) ::freeaddrinfo(list);
  }
};

Status resolve(const std::string& host, int port, bool passive, AddrInfoList& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  const std::string service = std::to_string(port);
  const int rc =
      ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &out.list);
  if (rc != 0) {
    return unavailable("cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
  return Status();
}

// Non-blocking connect bounded by timeout_ms; the socket is left blocking.
Status connect_one(int fd, const addrinfo& ai, int timeout_ms) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = ::connect(fd, ai.ai_addr, ai.ai_addrlen);
  if (rc != 0 && errno != EINPROGRESS) return unavailable(errno_text(errno));
  if (rc != 0) {
    const WaitResult w = wait_for(fd, POLLOUT, timeout_ms);
    if (w == WaitResult::kTimeout) {
      return unavailable("no answer within " + std::to_string(timeout_ms) + " ms");
    }
    if (w == WaitResult::kError) return unavailable(errno_text(errno));
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) return unavailable(errno_text(err));
  }
  ::fcntl(fd, F_SETFL, flags);
  return Status();
}

// Binds (with SO_REUSEADDR) and listens.
Status listen_one(int fd, const addrinfo& ai, int backlog) {
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, ai.ai_addr, ai.ai_addrlen) != 0) return unavailable(errno_text(errno));
  if (::listen(fd, backlog) != 0) return unavailable("listen(): " + errno_text(errno));
  return Status();
}

// A TCP socket for the first address `host:port` resolves to on which
// `setup` succeeds (each try gets a fresh socket). Errors: a failed
// resolution prefixed with `where`, else the last try's prefixed with
// `where_failed`.
StatusOr<Socket> open_tcp(const std::string& host, int port, bool passive, const std::string& where,
                          const std::string& where_failed,
                          const std::function<Status(int fd, const addrinfo& ai)>& setup) {
  AddrInfoList addrs;
  Status resolved = resolve(host, port, passive, addrs);
  if (!resolved.ok()) return resolved.with_prefix(where);
  Status last = unavailable("no address");
  for (addrinfo* ai = addrs.list; ai != nullptr; ai = ai->ai_next) {
    Socket s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!s.is_open()) {
      last = unavailable("socket(): " + errno_text(errno));
      continue;
    }
    last = setup(s.fd(), *ai);
    if (last.ok()) return s;
  }
  return last.with_prefix(where_failed);
}

}  // namespace

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.release();
  }
  return *this;
}

int Socket::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::shutdown_both() const {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

StatusOr<Socket> connect_tcp(const std::string& host, int port, int timeout_ms) {
  const std::string where = "p2p peer " + address_text(host, port);
  return open_tcp(host, port, /*passive=*/false, where, where + ": cannot connect",
                  [timeout_ms](int fd, const addrinfo& ai) {
                    Status connected = connect_one(fd, ai, timeout_ms);
                    if (connected.ok()) set_nodelay(fd);
                    return connected;
                  });
}

StatusOr<Socket> listen_tcp(const std::string& host, int port, int backlog) {
  const std::string where = "p2p tier: cannot listen on " + address_text(host, port);
  return open_tcp(host, port, /*passive=*/true, where, where,
                  [backlog](int fd, const addrinfo& ai) { return listen_one(fd, ai, backlog); });
}

int local_port(const Socket& socket) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return 0;
}

std::string peer_address_text(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char host[NI_MAXHOST];
  char port[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  return address_text(host, std::atoi(port));
}

WaitResult wait_readable(int fd, int timeout_ms) { return wait_for(fd, POLLIN, timeout_ms); }

bool is_closed_by_peer(int fd) {
  uint8_t byte = 0;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

Status read_exact(int fd, uint8_t* out, size_t num_bytes, int timeout_ms) {
  size_t done = 0;
  while (done < num_bytes) {
    const ssize_t n = ::recv(fd, out + done, num_bytes - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      return unavailable("connection closed by the peer after " + std::to_string(done) + " of " +
                         std::to_string(num_bytes) + " bytes");
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return unavailable("recv: " + errno_text(errno));
    const WaitResult w = wait_for(fd, POLLIN, timeout_ms);
    if (w == WaitResult::kTimeout) {
      return unavailable("no data for " + std::to_string(timeout_ms) + " ms (" +
                         std::to_string(done) + " of " + std::to_string(num_bytes) + " bytes)");
    }
    if (w == WaitResult::kError) return unavailable("poll: " + errno_text(errno));
  }
  return Status();
}

Status write_all(int fd, std::span<iovec> iov, int timeout_ms) {
  size_t first = 0;
  while (first < iov.size()) {
    if (iov[first].iov_len == 0) {
      ++first;
      continue;
    }
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = iov.size() - first;
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return unavailable("send: " + errno_text(errno));
      const WaitResult w = wait_for(fd, POLLOUT, timeout_ms);
      if (w == WaitResult::kTimeout) {
        return unavailable("peer took nothing for " + std::to_string(timeout_ms) + " ms");
      }
      if (w == WaitResult::kError) return unavailable("poll: " + errno_text(errno));
      continue;
    }
    size_t sent = static_cast<size_t>(n);
    while (sent > 0 && first < iov.size()) {
      const size_t step = std::min(sent, iov[first].iov_len);
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + step;
      iov[first].iov_len -= step;
      sent -= step;
      if (iov[first].iov_len == 0) ++first;
    }
  }
  return Status();
}

Status send_message(int fd, MessageType type, std::span<const uint8_t> body, int timeout_ms) {
  std::array<uint8_t, kFrameHeaderBytes> header;
  encode_frame_header({type, body.size()}, header);
  iovec iov[2] = {{header.data(), header.size()}, {const_cast<uint8_t*>(body.data()), body.size()}};
  return write_all(fd, iov, timeout_ms);
}

StatusOr<FrameHeader> read_frame_header(int fd, uint64_t chunk_body_bytes, int timeout_ms) {
  std::array<uint8_t, kFrameHeaderBytes> bytes;
  STRATA_RETURN_IF_ERROR(read_exact(fd, bytes.data(), bytes.size(), timeout_ms));
  return decode_frame_header(bytes, chunk_body_bytes);
}

StatusOr<std::vector<uint8_t>> read_body(int fd, const FrameHeader& header, int timeout_ms) {
  std::vector<uint8_t> body(header.body_bytes);
  STRATA_RETURN_IF_ERROR(read_exact(fd, body.data(), body.size(), timeout_ms));
  return body;
}

}  // namespace strata::offload::p2p
