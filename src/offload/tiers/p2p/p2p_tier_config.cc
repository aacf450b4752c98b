#include "offload/tiers/p2p/p2p_tier_config.h"

#include <algorithm>

#include "offload/tiers/p2p/p2p_tier.h"

namespace strata::offload {
namespace {

// A list of strings, each checked by `check` (an error from it is prefixed
// with the element's path).
template <typename Check>
Status parse_string_list(const config::JsonFields& r, const char* key, const std::string& expected,
                         const std::string& element_expected, Check check,
                         std::vector<std::string>& out) {
  if (!r.has(key)) return Status();
  const config::Json& list = r.at(key);
  if (!list.is_array()) {
    return invalid_argument(r.name(key) + " must be " + expected + list.dump());
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string name = r.name(key) + "[" + std::to_string(i) + "]";
    if (!list[i].is_string()) {
      return invalid_argument(name + " must be " + element_expected + ", got " + list[i].dump());
    }
    const std::string text = list[i].get<std::string>();
    if (Status s = check(text); !s.ok()) return s.with_prefix(name);
    out.push_back(text);
  }
  return Status();
}

// The peer tier (p2p_tier.h). vLLM's "backends" (its transfer library) is
// accepted and ignored: Strata moves chunks over plain TCP.
StatusOr<SecondaryTierConfig> parse_p2p_tier(const config::JsonFields& r) {
  STRATA_RETURN_IF_ERROR(
      r.check_keys({"type", "host", "port", "advertise_host", "peers", "allowed_remote_peers",
                    "secret", "max_bytes",
                    "num_threads", "connect_timeout_ms", "io_timeout_ms", "miss_ttl_ms",
                    "remote_wait_ms", "backends", "locality", "enable_kv_events"}));
  SecondaryTierConfig tier;
  P2pTierConfig& p2p = tier.emplace<P2pTierConfig>();
  STRATA_RETURN_IF_ERROR(r.optional_string("host", &p2p.host));
  if (p2p.host.empty()) return invalid_argument(r.name("host") + " is empty");
  STRATA_RETURN_IF_ERROR(r.optional_int("port", &p2p.port, 0));
  if (p2p.port > 65535) {
    return invalid_argument(r.name("port") + " must be in [0, 65535], got " +
                            std::to_string(p2p.port));
  }
  STRATA_RETURN_IF_ERROR(r.optional_string("advertise_host", &p2p.advertise_host));
  STRATA_RETURN_IF_ERROR(parse_string_list(
      r, "peers", "an array of \"host:port\", got ", "a string \"host:port\"",
      [](const std::string& text) { return parse_peer_address(text).status(); }, p2p.peers));
  // Peers a request's kv_transfer_params may name besides `peers`.
  STRATA_RETURN_IF_ERROR(parse_string_list(
      r, "allowed_remote_peers",
      "an array of \"host:port\", \"10.0.0.0/8:5710\", \"[fd00::/8]:*\", ...; got ", "a string",
      [](const std::string& text) { return parse_peer_rule(text).status(); },
      p2p.allowed_remote_peers));
  STRATA_RETURN_IF_ERROR(r.optional_string("secret", &p2p.secret));
  STRATA_RETURN_IF_ERROR(r.optional_int("max_bytes", &p2p.max_bytes, 1));
  STRATA_RETURN_IF_ERROR(r.optional_int("num_threads", &p2p.num_threads, 1));
  p2p.num_threads = std::min<int64_t>(p2p.num_threads, 256);
  STRATA_RETURN_IF_ERROR(r.optional_int("connect_timeout_ms", &p2p.connect_timeout_ms, 1));
  STRATA_RETURN_IF_ERROR(r.optional_int("io_timeout_ms", &p2p.io_timeout_ms, 1));
  STRATA_RETURN_IF_ERROR(r.optional_int("miss_ttl_ms", &p2p.miss_ttl_ms, 0));
  STRATA_RETURN_IF_ERROR(r.optional_int("remote_wait_ms", &p2p.remote_wait_ms, 0));
  if (r.has("backends")) {
    const config::Json& backends = r.at("backends");
    const auto is_string = [](const config::Json& b) { return b.is_string(); };
    if (!backends.is_array() || !std::all_of(backends.begin(), backends.end(), is_string)) {
      return r.type_error("backends", "an array of strings");
    }
  }
  STRATA_RETURN_IF_ERROR(parse_tier_common_keys(r, tier));
  return tier;
}

StatusOr<std::unique_ptr<SecondaryTier>> make_tier(const SecondaryTierConfig& config,
                                                   const ChunkFormat& format,
                                                   const HostRegion& region) {
  return make_p2p_tier(config.as<P2pTierConfig>(), format, region);
}

}  // namespace

TierType p2p_tier_type() {
  return {.type = "p2p", .settings_type = typeid(P2pTierConfig), .parse = parse_p2p_tier,
          .make = make_tier};
}

}  // namespace strata::offload
