#include "offload/tiers/p2p/p2p_client.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "base/check.h"

namespace strata::offload {
namespace {

using p2p::MessageType;

Status peer_error(const PeerAddress& peer, const std::string& what) {
  return unavailable("p2p peer " + peer.to_string() + ": " + what);
}

// Reads the ERROR body after its header and turns it into a Status.
Status error_from_peer(int fd, const p2p::FrameHeader& header, int io_ms,
                       p2p::ErrorCode* code = nullptr) {
  STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> body, p2p::read_body(fd, header, io_ms));
  STRATA_ASSIGN_OR_RETURN(p2p::ErrorMessage error, p2p::decode_error(body));
  if (code != nullptr) *code = error.code;
  return unavailable("refused: " + error.message);
}

}  // namespace

std::string PeerAddress::to_string() const {
  const bool is_v6 = host.find(':') != std::string::npos;
  return (is_v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

StatusOr<PeerAddress> parse_peer_address(std::string_view text) {
  const auto bad = [&] {
    return invalid_argument("peer address '" + std::string(text) +
                            "' must be \"host:port\" (or \"[ipv6]:port\") with port 1..65535");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return bad();
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad();
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad();  // a bare IPv6 address: ambiguous without brackets
  }
  int port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 1 || port > 65535) {
    return bad();
  }
  return PeerAddress{std::string(host), port};
}

P2pClient::P2pClient(const P2pClientConfig& config, const ChunkFormat& format)
    : config_(config),
      format_(format),
      namespace_id_(p2p::namespace_id_of(format)),
      chunk_body_bytes_(static_cast<uint64_t>(kHeaderBytes + format.payload_bytes())) {}

P2pClient::~P2pClient() { shutdown(); }

void P2pClient::shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  is_shutdown_ = true;
  idle_.clear();
  for (int fd : active_fds_) ::shutdown(fd, SHUT_RDWR);
}

P2pClientStats P2pClient::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void P2pClient::count_error() {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.errors;
}

StatusOr<std::vector<bool>> P2pClient::lookup(const PeerAddress& peer,
                                              std::span<const ChunkKey> keys) {
  std::vector<bool> present;
  present.reserve(keys.size());
  for (size_t first = 0; first < keys.size(); first += p2p::kMaxLookupKeys) {
    const size_t n = std::min<size_t>(p2p::kMaxLookupKeys, keys.size() - first);
    STRATA_RETURN_IF_ERROR(with_connection(
        peer, [&](int fd) { return lookup_batch(fd, keys.subspan(first, n), present); }));
  }
  return present;
}

Status P2pClient::fetch(const PeerAddress& peer, const ChunkKey& key, std::span<uint8_t> payload) {
  STRATA_CHECK(static_cast<int64_t>(payload.size()) == format_.payload_bytes())
      << "fetch into " << payload.size() << " bytes; the payload is " << format_.payload_bytes();
  return with_connection(peer, [&](int fd) { return fetch_on(fd, key, payload); });
}

template <typename Call>
Status P2pClient::with_connection(const PeerAddress& peer, Call call) {
  STRATA_ASSIGN_OR_RETURN(p2p::Socket socket, checkout(peer));
  Status status = call(socket.fd());
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_fds_.erase(socket.fd());
  }
  if (status.ok() || status.code() == StatusCode::kNotFound) {
    checkin(peer, std::move(socket));
    return status;
  }
  count_error();
  return status.with_prefix("p2p peer " + peer.to_string());
}

StatusOr<p2p::Socket> P2pClient::checkout(const PeerAddress& peer) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_shutdown_) return peer_error(peer, "the tier is shutting down");
    auto down = backoff_.find(peer);
    if (down != backoff_.end()) {
      if (Clock::now() < down->second.first) {
        ++stats_.fast_failures;
        return peer_error(peer, "unavailable (" + down->second.second + "); retrying later");
      }
      backoff_.erase(down);
    }
    auto idle = idle_.find(peer);
    const auto now = Clock::now();
    while (idle != idle_.end() && !idle->second.empty()) {
      Idle candidate = std::move(idle->second.back());
      idle->second.pop_back();
      // Readable while idle = the peer closed it (or sent garbage): discard.
      const bool is_stale =
          now - candidate.since > std::chrono::milliseconds(config_.idle_reuse_ms) ||
          p2p::wait_readable(candidate.socket.fd(), 0) != p2p::WaitResult::kTimeout;
      if (is_stale) continue;
      active_fds_.insert(candidate.socket.fd());
      return std::move(candidate.socket);
    }
  }
  StatusOr<p2p::Socket> opened = open(peer);
  std::lock_guard<std::mutex> lock(mu_);
  if (!opened.ok()) {
    backoff_[peer] = {Clock::now() + std::chrono::milliseconds(config_.backoff_ms),
                      opened.status().message()};
    return opened.status();
  }
  if (is_shutdown_) return peer_error(peer, "the tier is shutting down");
  active_fds_.insert(opened->fd());
  return opened;
}

void P2pClient::checkin(const PeerAddress& peer, p2p::Socket socket) {
  std::lock_guard<std::mutex> lock(mu_);
  if (is_shutdown_) return;
  std::deque<Idle>& idle = idle_[peer];
  if (static_cast<int>(idle.size()) >= config_.max_idle_per_peer) return;
  idle.push_back({std::move(socket), Clock::now()});
}

StatusOr<p2p::Socket> P2pClient::open(const PeerAddress& peer) {
  StatusOr<p2p::Socket> socket = p2p::connect_tcp(peer.host, peer.port, config_.connect_timeout_ms);
  if (!socket.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.connect_failures;
    return socket.status();
  }
  {
    // Registered while handshaking so that shutdown() can interrupt it.
    std::lock_guard<std::mutex> lock(mu_);
    if (is_shutdown_) return peer_error(peer, "the tier is shutting down");
    active_fds_.insert(socket->fd());
  }
  Status status = handshake(socket->fd(), peer);
  std::lock_guard<std::mutex> lock(mu_);
  active_fds_.erase(socket->fd());
  if (!status.ok()) return status;
  ++stats_.connections_opened;
  return socket;
}

Status P2pClient::handshake(int fd, const PeerAddress& peer) {
  const int io_ms = config_.io_timeout_ms;
  const p2p::Hello hello{p2p::random_nonce(), namespace_id_};
  auto fail = [&](const Status& s) { return s.with_prefix("p2p peer " + peer.to_string()); };
  Status sent = p2p::send_message(fd, MessageType::kHello, p2p::encode_hello(hello), io_ms);
  if (!sent.ok()) return fail(sent);
  StatusOr<p2p::FrameHeader> header = p2p::read_frame_header(fd, 0, io_ms);
  if (!header.ok()) return fail(header.status());
  if (header->type == MessageType::kError) return fail(error_from_peer(fd, *header, io_ms));
  if (header->type != MessageType::kChallenge) {
    return fail(invalid_argument(std::string("expected CHALLENGE, got ") +
                                 p2p::message_type_name(header->type)));
  }
  StatusOr<std::vector<uint8_t>> body = p2p::read_body(fd, *header, io_ms);
  if (!body.ok()) return fail(body.status());
  StatusOr<p2p::Challenge> challenge = p2p::decode_challenge(*body);
  if (!challenge.ok()) return fail(challenge.status());
  const p2p::Mac expected = p2p::compute_mac(config_.secret, p2p::Role::kServer, hello.client_nonce,
                                             challenge->server_nonce, namespace_id_);
  if (!p2p::mac_equal(expected, challenge->server_mac)) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.auth_failures;
    return fail(unavailable("authentication failed: the peer does not know our secret"));
  }
  const p2p::Mac mac = p2p::compute_mac(config_.secret, p2p::Role::kClient, hello.client_nonce,
                                        challenge->server_nonce, namespace_id_);
  sent = p2p::send_message(fd, MessageType::kAuth, p2p::encode_mac(mac), io_ms);
  if (!sent.ok()) return fail(sent);
  header = p2p::read_frame_header(fd, 0, io_ms);
  if (!header.ok()) return fail(header.status());
  if (header->type == MessageType::kAuthOk) return Status();
  if (header->type != MessageType::kError) {
    return fail(invalid_argument(std::string("expected AUTH_OK, got ") +
                                 p2p::message_type_name(header->type)));
  }
  p2p::ErrorCode code = p2p::ErrorCode::kProtocol;
  Status refused = error_from_peer(fd, *header, io_ms, &code);
  std::lock_guard<std::mutex> lock(mu_);
  if (code == p2p::ErrorCode::kAuthFailed) ++stats_.auth_failures;
  if (code == p2p::ErrorCode::kWrongNamespace) ++stats_.wrong_namespace;
  return fail(refused);
}

Status P2pClient::lookup_batch(int fd, std::span<const ChunkKey> keys, std::vector<bool>& out) {
  const int io_ms = config_.io_timeout_ms;
  STRATA_RETURN_IF_ERROR(
      p2p::send_message(fd, MessageType::kLookup, p2p::encode_lookup(keys), io_ms));
  STRATA_ASSIGN_OR_RETURN(p2p::FrameHeader header, p2p::read_frame_header(fd, 0, io_ms));
  if (header.type == MessageType::kError) return error_from_peer(fd, header, io_ms);
  if (header.type != MessageType::kLookupReply) {
    return invalid_argument(std::string("expected LOOKUP_REPLY, got ") +
                            p2p::message_type_name(header.type));
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> body, p2p::read_body(fd, header, io_ms));
  STRATA_ASSIGN_OR_RETURN(std::vector<bool> present, p2p::decode_lookup_reply(body, keys.size()));
  out.insert(out.end(), present.begin(), present.end());
  return Status();
}

Status P2pClient::fetch_on(int fd, const ChunkKey& key, std::span<uint8_t> payload) {
  const int io_ms = config_.io_timeout_ms;
  STRATA_RETURN_IF_ERROR(p2p::send_message(fd, MessageType::kFetch, p2p::encode_key(key), io_ms));
  STRATA_ASSIGN_OR_RETURN(p2p::FrameHeader header,
                          p2p::read_frame_header(fd, chunk_body_bytes_, io_ms));
  if (header.type == MessageType::kNotFound) {
    STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> body, p2p::read_body(fd, header, io_ms));
    STRATA_ASSIGN_OR_RETURN(ChunkKey answered, p2p::decode_key(body));
    if (!(answered == key)) {
      return invalid_argument("NOT_FOUND names chunk " + answered.to_hex() + "; asked " +
                              key.to_hex());
    }
    return not_found("chunk " + key.to_hex() + " is not held by the peer");
  }
  if (header.type == MessageType::kError) return error_from_peer(fd, header, io_ms);
  if (header.type != MessageType::kChunk) {
    return invalid_argument(std::string("expected CHUNK, got ") +
                            p2p::message_type_name(header.type));
  }
  if (header.body_bytes != chunk_body_bytes_) {
    return data_loss("CHUNK of " + std::to_string(header.body_bytes) + " bytes; expected " +
                     std::to_string(chunk_body_bytes_));
  }
  std::array<uint8_t, kHeaderBytes> chunk_header;
  STRATA_RETURN_IF_ERROR(p2p::read_exact(fd, chunk_header.data(), chunk_header.size(), io_ms));
  STRATA_ASSIGN_OR_RETURN(ChunkHeader decoded, decode_chunk_header(format_, key, chunk_header));
  STRATA_RETURN_IF_ERROR(p2p::read_exact(fd, payload.data(), payload.size(), io_ms));
  return verify_chunk_payload(decoded, payload);
}

}  // namespace strata::offload
