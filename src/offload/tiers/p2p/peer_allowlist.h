// Which peers a request may make this instance connect to. A request's
// kv_transfer_params (remote_host / remote_port, also nested as
// remote_prefiller or remote_kv_source) names the instance to load KV from;
// without a check any client that reaches /v1/* could make the server open
// TCP connections to any address it likes (probing internal networks). The
// peer tier connects to a named peer only if the allowlist allows it: the
// configured `peers` (exact host:port) plus the operator's
// `allowed_remote_peers` entries. Everything else is refused before any
// connection is attempted.
//
// Entry syntax (parse_peer_rule), PORTS = a port "5710", a range "5700-5799"
// or "*" (any):
//   host.example:PORTS     a host name: matches a request naming exactly that
//                          name (ASCII case-insensitive, a trailing dot
//                          ignored); never resolved here
//   10.1.2.3:PORTS         an IPv4 address
//   10.0.0.0/8:PORTS       an IPv4 network (CIDR)
//   [fd00::1]:PORTS        an IPv6 address (brackets required)
//   [fd00::/8]:PORTS       an IPv6 network
// A request's host matches an address rule only when it is an address
// literal (inet_pton: dotted quad or IPv6, brackets allowed); an IPv4-mapped
// IPv6 address (::ffff:10.1.2.3) counts as its IPv4 address. A name never
// matches an address rule and an address never matches a name rule, so
// nothing depends on DNS at check time. Forms inet_pton rejects ("127.1",
// "0x7f.0.0.1", decimal integers) are treated as names, so they match only a
// name rule spelled the same way: the check fails closed.
//
// Plain data; const methods are thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::offload {

struct PeerRule {
  enum class Kind { kName, kIpv4, kIpv6 };
  Kind kind = Kind::kName;
  std::string name;                 // kName: lowercase, no trailing dot
  std::array<uint8_t, 16> addr{};   // kIpv4: first 4 bytes; network order
  int prefix_bits = 0;              // kIpv4: 0..32, kIpv6: 0..128
  int min_port = 1;
  int max_port = 65535;
};

// One entry (syntax above). Errors name the entry and what is wrong.
StatusOr<PeerRule> parse_peer_rule(std::string_view entry);

class PeerAllowlist {
 public:
  // The rules of `entries` (allowed_remote_peers) and `peers` (each allowed
  // at exactly its port). Errors name the entry.
  static StatusOr<PeerAllowlist> create(const std::vector<std::string>& allowed_remote_peers,
                                        const std::vector<std::string>& peers);

  // Does a request naming `host`:`port` get a connection?
  bool allows(std::string_view host, int64_t port) const;
  bool empty() const { return rules_.empty(); }

 private:
  std::vector<PeerRule> rules_;
};

}  // namespace strata::offload
