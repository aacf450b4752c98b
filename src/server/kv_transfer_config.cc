#include "server/kv_transfer_config.h"

#include "base/log.h"
#include "server/json_int.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <utility>
#include <set>

namespace strata::server {
namespace {

using Json = nlohmann::json;

// Reads fields of one JSON object, naming each key by its path in errors.
class ObjectReader {
 public:
  ObjectReader(const Json& object, std::string path) : object_(object), path_(std::move(path)) {}

  Status check_keys(std::initializer_list<const char*> known) const {
    std::set<std::string> names(known.begin(), known.end());
    for (const auto& item : object_.items()) {
      if (names.count(item.key()) == 0) {
        std::string list;
        for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
        return invalid_argument("unknown key " + name(item.key()) + " (known: " + list + ")");
      }
    }
    return Status();
  }
  bool has(const char* key) const { return object_.contains(key); }
  const Json& at(const char* key) const { return object_.at(key); }
  std::string name(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  Status get_string(const char* key, std::string& out) const {
    if (!has(key)) return Status();
    if (!at(key).is_string()) return type_error(key, "a string");
    out = at(key).get<std::string>();
    return Status();
  }
  Status get_int(const char* key, int64_t min, int64_t& out) const {
    if (!has(key)) return Status();
    const std::optional<int64_t> v = json_exact_int64(at(key));
    if (!v || *v < min) return type_error(key, "an integer >= " + std::to_string(min));
    out = *v;
    return Status();
  }
  Status get_number(const char* key, double min, double& out) const {
    if (!has(key)) return Status();
    if (!at(key).is_number() || at(key).get<double>() < min) {
      return type_error(key, "a number >= " + std::to_string(min));
    }
    out = at(key).get<double>();
    return Status();
  }
  Status get_bool(const char* key, bool& out) const {
    if (!has(key)) return Status();
    if (!at(key).is_boolean()) return type_error(key, "true or false");
    out = at(key).get<bool>();
    return Status();
  }

 private:
  Status type_error(const char* key, const std::string& what) const {
    return invalid_argument(name(key) + " must be " + what + ", got " + at(key).dump());
  }
  const Json& object_;
  std::string path_;
};

// Keys every built-in tier accepts: "locality" (vLLM's, carried on the
// tier's KV events), "enable_kv_events" is accepted (events are configured by
// --kv-events-config).
Status parse_tier_common_keys(const ObjectReader& r, offload::SecondaryTierConfig& tier) {
  STRATA_RETURN_IF_ERROR(r.get_string("locality", tier.locality));
  if (!tier.locality.empty() && tier.locality != "LOCAL" && tier.locality != "REMOTE") {
    return invalid_argument(r.name("locality") + " must be \"LOCAL\" or \"REMOTE\", got \"" +
                            tier.locality + "\"");
  }
  bool events = false;
  return r.get_bool("enable_kv_events", events);
}

// fs and obj: how a tier that could not start is retried (Strata's keys).
Status parse_retry_keys(const ObjectReader& r, offload::SecondaryTierConfig& tier) {
  STRATA_RETURN_IF_ERROR(r.get_int("retry_initial_ms", 1, tier.retry.initial_ms));
  STRATA_RETURN_IF_ERROR(r.get_int("retry_max_ms", 1, tier.retry.max_ms));
  if (tier.retry.max_ms < tier.retry.initial_ms) {
    return invalid_argument(r.name("retry_max_ms") + " " + std::to_string(tier.retry.max_ms) +
                            " is below retry_initial_ms " + std::to_string(tier.retry.initial_ms));
  }
  return Status();
}

Status parse_fs_tier(const ObjectReader& r, offload::SecondaryTierConfig& tier) {
  STRATA_RETURN_IF_ERROR(r.check_keys({"type", "root_dir", "n_read_threads", "n_write_threads",
                                       "max_bytes", "miss_ttl_ms", "locality",
                                       "enable_kv_events", "retry_initial_ms",
                                       "retry_max_ms"}));
  if (!r.has("root_dir")) return invalid_argument(r.name("root_dir") + " is required");
  STRATA_RETURN_IF_ERROR(r.get_string("root_dir", tier.fs.root_dir));
  if (tier.fs.root_dir.empty()) return invalid_argument(r.name("root_dir") + " is empty");
  int64_t n = tier.fs.n_read_threads;
  STRATA_RETURN_IF_ERROR(r.get_int("n_read_threads", 1, n));
  tier.fs.n_read_threads = static_cast<int>(std::min<int64_t>(n, 256));
  n = tier.fs.n_write_threads;
  STRATA_RETURN_IF_ERROR(r.get_int("n_write_threads", 1, n));
  tier.fs.n_write_threads = static_cast<int>(std::min<int64_t>(n, 256));
  STRATA_RETURN_IF_ERROR(r.get_int("max_bytes", 0, tier.fs.max_bytes));
  STRATA_RETURN_IF_ERROR(r.get_int("miss_ttl_ms", 0, tier.fs.miss_ttl_ms));
  STRATA_RETURN_IF_ERROR(parse_retry_keys(r, tier));
  return parse_tier_common_keys(r, tier);
}

// vLLM's obj tier. The store settings may sit in the entry itself or, as vLLM
// writes them, in "store_config"; one key may not be in both.
Status parse_obj_tier(const ObjectReader& r, offload::SecondaryTierConfig& tier) {
  STRATA_RETURN_IF_ERROR(r.check_keys({"type", "store_config", "bucket", "endpoint_override",
                                       "scheme", "access_key", "secret_key", "session_token",
                                       "region", "ca_bundle", "prefix", "io_threads",
                                       "miss_ttl_ms", "connect_timeout_ms", "request_timeout_ms",
                                       "locality", "enable_kv_events", "retry_initial_ms",
                                       "retry_max_ms"}));
  std::optional<ObjectReader> store;
  if (r.has("store_config")) {
    if (!r.at("store_config").is_object()) {
      return invalid_argument(r.name("store_config") + " must be an object, got " +
                              r.at("store_config").dump());
    }
    store.emplace(r.at("store_config"), r.name("store_config"));
    STRATA_RETURN_IF_ERROR(store->check_keys({"bucket", "endpoint_override", "scheme",
                                              "access_key", "secret_key", "session_token",
                                              "region", "ca_bundle"}));
  }
  offload::ObjTierConfig& obj = tier.obj;
  const std::pair<const char*, std::string*> store_fields[] = {
      {"bucket", &obj.bucket},         {"endpoint_override", &obj.endpoint},
      {"scheme", &obj.scheme},         {"access_key", &obj.access_key},
      {"secret_key", &obj.secret_key}, {"session_token", &obj.session_token},
      {"region", &obj.region},         {"ca_bundle", &obj.ca_bundle}};
  for (const auto& [key, out] : store_fields) {
    const bool is_nested = store.has_value() && store->has(key);
    if (is_nested && r.has(key)) {
      return invalid_argument(r.name(key) + " and " + store->name(key) + " are both set; keep one");
    }
    STRATA_RETURN_IF_ERROR((is_nested ? *store : r).get_string(key, *out));
  }
  for (const char* key : {"bucket", "endpoint_override"}) {
    if (!r.has(key) && !(store.has_value() && store->has(key))) {
      return invalid_argument(r.name(key) + " (or " + r.name("store_config") + "." + key +
                              ") is required");
    }
  }
  if (obj.bucket.empty()) return invalid_argument(r.name("bucket") + " is empty");
  if (obj.endpoint.empty()) return invalid_argument(r.name("endpoint_override") + " is empty");
  if (obj.scheme != "http" && obj.scheme != "https") {
    return invalid_argument(r.name("scheme") + " must be \"http\" or \"https\", got \"" +
                            obj.scheme + "\"");
  }
  STRATA_RETURN_IF_ERROR(r.get_string("prefix", obj.prefix));
  int64_t n = obj.io_threads;
  STRATA_RETURN_IF_ERROR(r.get_int("io_threads", 1, n));
  obj.io_threads = static_cast<int>(std::min<int64_t>(n, 256));
  STRATA_RETURN_IF_ERROR(r.get_int("miss_ttl_ms", 0, obj.miss_ttl_ms));
  STRATA_RETURN_IF_ERROR(r.get_int("connect_timeout_ms", 1, obj.connect_timeout_ms));
  STRATA_RETURN_IF_ERROR(r.get_int("request_timeout_ms", 1, obj.request_timeout_ms));
  STRATA_RETURN_IF_ERROR(parse_retry_keys(r, tier));
  return parse_tier_common_keys(r, tier);
}

// The peer tier (offload/tiers/p2p/p2p_tier.h). vLLM's "backends" (its transfer
// library) is accepted and ignored: Strata moves chunks over plain TCP.
Status parse_p2p_tier(const ObjectReader& r, offload::SecondaryTierConfig& tier) {
  STRATA_RETURN_IF_ERROR(
      r.check_keys({"type", "host", "port", "advertise_host", "peers", "allowed_remote_peers",
                    "secret", "max_bytes",
                    "num_threads", "connect_timeout_ms", "io_timeout_ms", "miss_ttl_ms",
                    "remote_wait_ms", "backends", "locality", "enable_kv_events"}));
  offload::P2pTierConfig& p2p = tier.p2p;
  STRATA_RETURN_IF_ERROR(r.get_string("host", p2p.host));
  if (p2p.host.empty()) return invalid_argument(r.name("host") + " is empty");
  STRATA_RETURN_IF_ERROR(r.get_int("port", 0, p2p.port));
  if (p2p.port > 65535) {
    return invalid_argument(r.name("port") + " must be in [0, 65535], got " +
                            std::to_string(p2p.port));
  }
  STRATA_RETURN_IF_ERROR(r.get_string("advertise_host", p2p.advertise_host));
  if (r.has("peers")) {
    const Json& peers = r.at("peers");
    if (!peers.is_array()) {
      return invalid_argument(r.name("peers") + " must be an array of \"host:port\", got " +
                              peers.dump());
    }
    for (size_t i = 0; i < peers.size(); ++i) {
      const std::string name = r.name("peers") + "[" + std::to_string(i) + "]";
      if (!peers[i].is_string()) {
        return invalid_argument(name + " must be a string \"host:port\", got " + peers[i].dump());
      }
      const std::string text = peers[i].get<std::string>();
      StatusOr<offload::PeerAddress> peer = offload::parse_peer_address(text);
      if (!peer.ok()) return peer.status().with_prefix(name);
      p2p.peers.push_back(text);
    }
  }
  if (r.has("allowed_remote_peers")) {
    // Peers a request's kv_transfer_params may name besides `peers`.
    const Json& allowed = r.at("allowed_remote_peers");
    if (!allowed.is_array()) {
      return invalid_argument(r.name("allowed_remote_peers") +
                              " must be an array of \"host:port\", \"10.0.0.0/8:5710\", "
                              "\"[fd00::/8]:*\", ...; got " + allowed.dump());
    }
    for (size_t i = 0; i < allowed.size(); ++i) {
      const std::string name = r.name("allowed_remote_peers") + "[" + std::to_string(i) + "]";
      if (!allowed[i].is_string()) {
        return invalid_argument(name + " must be a string, got " + allowed[i].dump());
      }
      const std::string text = allowed[i].get<std::string>();
      StatusOr<offload::PeerRule> rule = offload::parse_peer_rule(text);
      if (!rule.ok()) return rule.status().with_prefix(name);
      p2p.allowed_remote_peers.push_back(text);
    }
  }
  STRATA_RETURN_IF_ERROR(r.get_string("secret", p2p.secret));
  STRATA_RETURN_IF_ERROR(r.get_int("max_bytes", 1, p2p.max_bytes));
  STRATA_RETURN_IF_ERROR(r.get_int("num_threads", 1, p2p.num_threads));
  p2p.num_threads = std::min<int64_t>(p2p.num_threads, 256);
  STRATA_RETURN_IF_ERROR(r.get_int("connect_timeout_ms", 1, p2p.connect_timeout_ms));
  STRATA_RETURN_IF_ERROR(r.get_int("io_timeout_ms", 1, p2p.io_timeout_ms));
  STRATA_RETURN_IF_ERROR(r.get_int("miss_ttl_ms", 0, p2p.miss_ttl_ms));
  STRATA_RETURN_IF_ERROR(r.get_int("remote_wait_ms", 0, p2p.remote_wait_ms));
  if (r.has("backends")) {
    const Json& backends = r.at("backends");
    const auto is_string = [](const Json& b) { return b.is_string(); };
    if (!backends.is_array() || !std::all_of(backends.begin(), backends.end(), is_string)) {
      return invalid_argument(r.name("backends") + " must be an array of strings, got " +
                              backends.dump());
    }
  }
  return parse_tier_common_keys(r, tier);
}

Status parse_tier(const Json& j, const std::string& path, offload::SecondaryTierConfig& tier) {
  if (!j.is_object()) return invalid_argument(path + " must be an object, got " + j.dump());
  ObjectReader r(j, path);
  if (!r.has("type")) return invalid_argument(path + ".type is required");
  STRATA_RETURN_IF_ERROR(r.get_string("type", tier.type));
  if (tier.type == "fs") return parse_fs_tier(r, tier);
  if (tier.type == "obj") return parse_obj_tier(r, tier);
  if (tier.type == "p2p") return parse_p2p_tier(r, tier);
  if (r.has("module_path")) {
    // An out-of-tree tier: its keys are its own; it gets the entry as JSON.
    STRATA_RETURN_IF_ERROR(r.get_string("module_path", tier.module_path));
    if (tier.module_path.empty()) return invalid_argument(r.name("module_path") + " is empty");
    tier.config_json = j.dump();
    return Status();
  }
  return invalid_argument(path + ".type \"" + tier.type +
                          "\" is not a tier this build provides (available: fs, obj, p2p)");
}

Status parse_extra_config(const ObjectReader& r, int64_t block_size,
                          offload::OffloadConfig& config) {
  STRATA_RETURN_IF_ERROR(r.check_keys({"spec_name", "cpu_bytes_to_use", "blocks_per_chunk",
                                       "block_size", "eviction_policy", "offload_prompt_only",
                                       "max_load_wait_s", "secondary_tiers"}));
  std::string spec = "CPUOffloadingSpec";
  STRATA_RETURN_IF_ERROR(r.get_string("spec_name", spec));
  if (spec != "CPUOffloadingSpec" && spec != "TieringOffloadingSpec") {
    return invalid_argument(r.name("spec_name") +
                            " must be \"TieringOffloadingSpec\" or \"CPUOffloadingSpec\", got \"" +
                            spec + "\"");
  }
  if (!r.has("cpu_bytes_to_use")) return invalid_argument(r.name("cpu_bytes_to_use") + " is required");
  STRATA_RETURN_IF_ERROR(r.get_int("cpu_bytes_to_use", 1, config.cpu_bytes_to_use));
  if (r.has("blocks_per_chunk") && r.has("block_size")) {
    return invalid_argument(r.name("blocks_per_chunk") + " and " + r.name("block_size") +
                            " cannot both be set");
  }
  STRATA_RETURN_IF_ERROR(r.get_int("blocks_per_chunk", 1, config.blocks_per_chunk));
  int64_t chunk_tokens = 0;
  STRATA_RETURN_IF_ERROR(r.get_int("block_size", 1, chunk_tokens));
  if (chunk_tokens > 0) {
    if (chunk_tokens % block_size != 0) {
      return invalid_argument(r.name("block_size") + " is " + std::to_string(chunk_tokens) +
                              " tokens; it must be a multiple of --block-size " +
                              std::to_string(block_size));
    }
    config.blocks_per_chunk = chunk_tokens / block_size;
  }
  STRATA_RETURN_IF_ERROR(r.get_string("eviction_policy", config.eviction_policy));
  if (config.eviction_policy != "lru" && config.eviction_policy != "arc") {
    return invalid_argument(r.name("eviction_policy") + " must be \"lru\" or \"arc\", got \"" +
                            config.eviction_policy + "\"");
  }
  STRATA_RETURN_IF_ERROR(r.get_bool("offload_prompt_only", config.offload_prompt_only));
  STRATA_RETURN_IF_ERROR(r.get_number("max_load_wait_s", 0.0, config.max_load_wait_s));
  if (!r.has("secondary_tiers")) return Status();
  const Json& tiers = r.at("secondary_tiers");
  const std::string path = r.name("secondary_tiers");
  if (!tiers.is_array()) return invalid_argument(path + " must be an array, got " + tiers.dump());
  if (spec != "TieringOffloadingSpec" && !tiers.empty()) {
    return invalid_argument(path + " needs spec_name \"TieringOffloadingSpec\"");
  }
  for (size_t i = 0; i < tiers.size(); ++i) {
    offload::SecondaryTierConfig tier;
    STRATA_RETURN_IF_ERROR(parse_tier(tiers[i], path + "[" + std::to_string(i) + "]", tier));
    config.secondary_tiers.push_back(std::move(tier));
  }
  return Status();
}

// The spec an extra config names ("" when it names none or is not an object).
std::string spec_name_of(const ObjectReader& top) {
  if (!top.has("kv_connector_extra_config")) return "";
  const Json& extra = top.at("kv_connector_extra_config");
  if (!extra.is_object() || !extra.contains("spec_name") || !extra["spec_name"].is_string()) {
    return "";
  }
  return extra["spec_name"].get<std::string>();
}

// kv_connector, kv_role and the other top-level keys. vLLM's tiering blog gives
// the config without kv_connector / kv_role: naming one of the offloading specs
// is enough, and means OffloadingConnector in role kv_both.
Status check_envelope(const ObjectReader& top) {
  STRATA_RETURN_IF_ERROR(top.check_keys({"kv_connector", "kv_role", "kv_connector_extra_config",
                                         "engine_id", "kv_load_failure_policy"}));
  const std::string spec = spec_name_of(top);
  const bool names_offloading_spec = spec == "TieringOffloadingSpec" || spec == "CPUOffloadingSpec";
  std::string connector;
  STRATA_RETURN_IF_ERROR(top.get_string("kv_connector", connector));
  if (!top.has("kv_connector")) {
    if (!names_offloading_spec) {
      return invalid_argument(
          "kv_connector is required: \"OffloadingConnector\" (or leave it out and set "
          "kv_connector_extra_config.spec_name to \"TieringOffloadingSpec\" or "
          "\"CPUOffloadingSpec\")");
    }
    connector = "OffloadingConnector";
  }
  if (connector != "OffloadingConnector") {
    return invalid_argument("kv_connector must be \"OffloadingConnector\" (the only connector "
                            "Strata provides), got \"" + connector + "\"");
  }
  std::string role = "kv_both";
  STRATA_RETURN_IF_ERROR(top.get_string("kv_role", role));
  if (role != "kv_both" && role != "kv_producer" && role != "kv_consumer") {
    return invalid_argument("kv_role must be kv_both, kv_producer or kv_consumer, got \"" + role +
                            "\"");
  }
  if (!top.has("kv_connector") || !top.has("kv_role")) {
    STRATA_LOG(kInfo) << "--kv-transfer-config: spec_name " << spec << " without "
                      << (top.has("kv_connector") ? "kv_role" : top.has("kv_role")
                                                                    ? "kv_connector"
                                                                    : "kv_connector/kv_role")
                      << ": using kv_connector OffloadingConnector, kv_role " << role;
  }
  std::string policy = "recompute";
  STRATA_RETURN_IF_ERROR(top.get_string("kv_load_failure_policy", policy));
  if (policy != "recompute") {
    return invalid_argument("kv_load_failure_policy must be \"recompute\" (a failed load is "
                            "always recomputed), got \"" + policy + "\"");
  }
  std::string engine_id;
  STRATA_RETURN_IF_ERROR(top.get_string("engine_id", engine_id));
  if (!top.has("kv_connector_extra_config")) {
    return invalid_argument("kv_connector_extra_config is required (at least cpu_bytes_to_use)");
  }
  const Json& extra = top.at("kv_connector_extra_config");
  if (!extra.is_object()) {
    return invalid_argument("kv_connector_extra_config must be an object, got " + extra.dump());
  }
  return Status();
}

}  // namespace

StatusOr<offload::OffloadConfig> parse_kv_transfer_config(const std::string& json,
                                                          int64_t block_size) {
  Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return invalid_argument("--kv-transfer-config expects a JSON object, got '" + json + "'");
  }
  ObjectReader top(j, "");
  Status s = check_envelope(top);
  if (!s.ok()) return s.with_prefix("--kv-transfer-config");
  offload::OffloadConfig config;
  config.enabled = true;
  ObjectReader extra(top.at("kv_connector_extra_config"), "kv_connector_extra_config");
  s = parse_extra_config(extra, block_size, config);
  if (!s.ok()) return s.with_prefix("--kv-transfer-config");
  return config;
}

StatusOr<offload::OffloadConfig> kv_offloading_size_config(double gib) {
  if (!(gib > 0) || !std::isfinite(gib)) {
    return invalid_argument("--kv-offloading-size must be a positive number of GiB, got " +
                            std::to_string(gib));
  }
  offload::OffloadConfig config;
  config.enabled = true;
  config.cpu_bytes_to_use = static_cast<int64_t>(gib * 1024.0 * 1024.0 * 1024.0);
  return config;
}

}  // namespace strata::server
