#include "server/kv_events_config.h"

#include "server/json_int.h"

#include <array>
#include <nlohmann/json.hpp>
#include <string_view>

namespace strata::server {
namespace {

using Json = nlohmann::json;

constexpr std::array<std::string_view, 9> kKeys = {
    "enable_kv_cache_events", "publisher",    "endpoint",
    "replay_endpoint",        "buffer_steps", "hwm",
    "max_queue_size",         "topic",        "event_encoding"};

Status type_error(const std::string& key, const std::string& what, const Json& value) {
  return invalid_argument("--kv-events-config: " + key + " must be " + what + ", got " +
                          value.dump());
}

Status check_keys(const Json& j) {
  for (const auto& item : j.items()) {
    bool known = false;
    for (std::string_view k : kKeys) known = known || item.key() == k;
    if (known) continue;
    std::string list;
    for (std::string_view k : kKeys) list += std::string(list.empty() ? "" : ", ") + std::string(k);
    return invalid_argument("--kv-events-config: unknown key " + item.key() + " (known: " + list +
                            ")");
  }
  return Status();
}

Status get_bool(const Json& j, const std::string& key, bool& out) {
  if (!j.contains(key)) return Status();
  if (!j[key].is_boolean()) return type_error(key, "true or false", j[key]);
  out = j[key].get<bool>();
  return Status();
}

// A string; JSON null leaves `out` as it is when `null_ok` (vLLM's None).
Status get_string(const Json& j, const std::string& key, std::string& out, bool null_ok = false) {
  if (!j.contains(key) || (null_ok && j[key].is_null())) return Status();
  if (!j[key].is_string())
    return type_error(key, null_ok ? "a string or null" : "a string", j[key]);
  out = j[key].get<std::string>();
  return Status();
}

Status get_int(const Json& j, const std::string& key, int64_t min, int64_t& out) {
  if (!j.contains(key)) return Status();
  const std::optional<int64_t> v = json_exact_int64(j[key]);
  if (!v || *v < min) return type_error(key, "an integer >= " + std::to_string(min), j[key]);
  out = *v;
  return Status();
}

Status parse_object(const Json& j, events::KvEventsConfig& c) {
  STRATA_RETURN_IF_ERROR(check_keys(j));
  STRATA_RETURN_IF_ERROR(get_bool(j, "enable_kv_cache_events", c.enable_kv_cache_events));
  c.publisher = c.enable_kv_cache_events ? "zmq" : "null";
  STRATA_RETURN_IF_ERROR(get_string(j, "publisher", c.publisher));
  if (c.publisher != "zmq" && c.publisher != "null") {
    return type_error("publisher", "\"zmq\" or \"null\"", j["publisher"]);
  }
  STRATA_RETURN_IF_ERROR(get_string(j, "endpoint", c.endpoint));
  if (c.endpoint.empty()) return type_error("endpoint", "a ZeroMQ endpoint", j["endpoint"]);
  STRATA_RETURN_IF_ERROR(get_string(j, "replay_endpoint", c.replay_endpoint, /*null_ok=*/true));
  STRATA_RETURN_IF_ERROR(get_string(j, "topic", c.topic));
  STRATA_RETURN_IF_ERROR(get_int(j, "buffer_steps", 0, c.buffer_steps));
  STRATA_RETURN_IF_ERROR(get_int(j, "hwm", 0, c.hwm));
  STRATA_RETURN_IF_ERROR(get_int(j, "max_queue_size", 1, c.max_queue_size));
  std::string encoding = "array";
  STRATA_RETURN_IF_ERROR(get_string(j, "event_encoding", encoding));
  if (encoding != "array" && encoding != "map") {
    return type_error("event_encoding", "\"array\" or \"map\"", j["event_encoding"]);
  }
  c.event_encoding =
      encoding == "map" ? events::EventEncoding::kMap : events::EventEncoding::kArray;
  return Status();
}

}  // namespace

StatusOr<events::KvEventsConfig> parse_kv_events_config(const std::string& json) {
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return invalid_argument("--kv-events-config expects a JSON object, got '" + json + "'");
  }
  events::KvEventsConfig config;
  STRATA_RETURN_IF_ERROR(parse_object(j, config));
  return config;
}

}  // namespace strata::server
