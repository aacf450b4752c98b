#include "offload/tiers/p2p/peer_allowlist.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>

namespace strata::offload {
namespace {

struct Address {
  bool is_v4 = false;
  std::array<uint8_t, 16> bytes{};
};

// An address literal (IPv4 dotted quad, IPv6 with or without brackets);
// IPv4-mapped IPv6 becomes IPv4. nullopt for anything else.
std::optional<Address> parse_address(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  if (text.empty() || text.size() > 64) return std::nullopt;
  const std::string s(text);
  Address a;
  if (::inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) {
    a.is_v4 = true;
    return a;
  }
  if (::inet_pton(AF_INET6, s.c_str(), a.bytes.data()) != 1) return std::nullopt;
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(a.bytes.data(), kMapped, sizeof(kMapped)) == 0) {
    std::memmove(a.bytes.data(), a.bytes.data() + 12, 4);
    std::fill(a.bytes.begin() + 4, a.bytes.end(), 0);
    a.is_v4 = true;
  }
  return a;
}

std::string normal_name(std::string_view name) {
  std::string out(name);
  if (!out.empty() && out.back() == '.') out.pop_back();
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_host_name(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_';
  });
}

std::optional<int> parse_port(std::string_view s) {
  if (s.empty() || s.size() > 5 || !std::all_of(s.begin(), s.end(), ::isdigit)) {
    return std::nullopt;
  }
  const int port = std::stoi(std::string(s));
  if (port < 1 || port > 65535) return std::nullopt;
  return port;
}

Status parse_ports(std::string_view entry, std::string_view ports, PeerRule& rule) {
  const auto fail = [&] {
    return invalid_argument("'" + std::string(entry) + "': the port must be 1..65535, a range " +
                            "LOW-HIGH, or *; got '" + std::string(ports) + "'");
  };
  if (ports == "*") return Status();
  const size_t dash = ports.find('-');
  const std::optional<int> low = parse_port(ports.substr(0, dash));
  const std::optional<int> high =
      dash == std::string_view::npos ? low : parse_port(ports.substr(dash + 1));
  if (!low || !high || *high < *low) return fail();
  rule.min_port = *low;
  rule.max_port = *high;
  return Status();
}

bool prefix_matches(const std::array<uint8_t, 16>& net, const std::array<uint8_t, 16>& addr,
                    int bits) {
  const int whole = bits / 8;
  if (std::memcmp(net.data(), addr.data(), static_cast<size_t>(whole)) != 0) return false;
  const int rest = bits % 8;
  if (rest == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (net[whole] & mask) == (addr[whole] & mask);
}

}  // namespace

StatusOr<PeerRule> parse_peer_rule(std::string_view entry) {
  const std::string text(entry);
  const auto fail = [&](const std::string& why) {
    return invalid_argument("'" + text + "': " + why +
                            " (expected HOST:PORTS, ADDRESS[/BITS]:PORTS or "
                            "[IPV6[/BITS]]:PORTS; PORTS = 5710, 5700-5799 or *)");
  };
  std::string_view host;
  std::string_view ports;
  if (!entry.empty() && entry.front() == '[') {
    const size_t close = entry.find(']');
    if (close == std::string_view::npos || close + 1 >= entry.size() || entry[close + 1] != ':') {
      return fail("an IPv6 entry is [address]:PORTS");
    }
    host = entry.substr(1, close - 1);
    ports = entry.substr(close + 2);
  } else {
    const size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos) return fail("no port");
    host = entry.substr(0, colon);
    ports = entry.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return fail("IPv6 addresses go in brackets");
  }
  if (host.empty()) return fail("no host");
  PeerRule rule;
  STRATA_RETURN_IF_ERROR(parse_ports(entry, ports, rule));
  const size_t slash = host.find('/');
  const std::optional<Address> addr = parse_address(host.substr(0, slash));
  if (!addr) {
    if (slash != std::string_view::npos) return fail("a network needs an address before '/'");
    rule.name = normal_name(host);
    if (!is_host_name(rule.name)) return fail("not a host name or address");
    return rule;
  }
  rule.kind = addr->is_v4 ? PeerRule::Kind::kIpv4 : PeerRule::Kind::kIpv6;
  rule.addr = addr->bytes;
  const int max_bits = addr->is_v4 ? 32 : 128;
  rule.prefix_bits = max_bits;
  if (slash != std::string_view::npos) {
    const std::string_view bits = host.substr(slash + 1);
    if (bits.empty() || bits.size() > 3 || !std::all_of(bits.begin(), bits.end(), ::isdigit) ||
        std::stoi(std::string(bits)) > max_bits) {
      return fail("the prefix length must be 0.." + std::to_string(max_bits));
    }
    rule.prefix_bits = std::stoi(std::string(bits));
  }
  return rule;
}

StatusOr<PeerAllowlist> PeerAllowlist::create(const std::vector<std::string>& allowed_remote_peers,
                                              const std::vector<std::string>& peers) {
  PeerAllowlist out;
  for (size_t i = 0; i < allowed_remote_peers.size(); ++i) {
    StatusOr<PeerRule> rule = parse_peer_rule(allowed_remote_peers[i]);
    if (!rule.ok()) {
      return rule.status().with_prefix("allowed_remote_peers[" + std::to_string(i) + "]");
    }
    out.rules_.push_back(*rule);
  }
  for (size_t i = 0; i < peers.size(); ++i) {
    StatusOr<PeerRule> rule = parse_peer_rule(peers[i]);
    if (!rule.ok()) return rule.status().with_prefix("peers[" + std::to_string(i) + "]");
    // A configured peer is one address and one port: no networks, ranges or '*'.
    const int max_bits = rule->kind == PeerRule::Kind::kIpv6 ? 128 : 32;
    const bool is_one_host = rule->kind == PeerRule::Kind::kName || rule->prefix_bits == max_bits;
    if (rule->min_port != rule->max_port || !is_one_host) {
      return invalid_argument("peers[" + std::to_string(i) + "] '" + peers[i] +
                              "' must be one host:port");
    }
    out.rules_.push_back(*rule);
  }
  return out;
}

bool PeerAllowlist::allows(std::string_view host, int64_t port) const {
  if (port < 1 || port > 65535 || host.empty()) return false;
  const std::optional<Address> addr = parse_address(host);
  const std::string name = addr ? std::string() : normal_name(host);
  for (const PeerRule& rule : rules_) {
    if (port < rule.min_port || port > rule.max_port) continue;
    switch (rule.kind) {
      case PeerRule::Kind::kName:
        if (!addr && name == rule.name) return true;
        break;
      case PeerRule::Kind::kIpv4:
        if (addr && addr->is_v4 && prefix_matches(rule.addr, addr->bytes, rule.prefix_bits)) {
          return true;
        }
        break;
      case PeerRule::Kind::kIpv6:
        if (addr && !addr->is_v4 && prefix_matches(rule.addr, addr->bytes, rule.prefix_bits)) {
          return true;
        }
        break;
    }
  }
  return false;
}

}  // namespace strata::offload
