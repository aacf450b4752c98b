#include "server/kv_events_config.h"

#include "config/json_fields.h"

namespace strata::server {
namespace {

using Json = nlohmann::json;

using config::FieldStyle;
using config::JsonFields;

Status parse_object(const JsonFields& f, events::KvEventsConfig& c) {
  STRATA_RETURN_IF_ERROR(f.check_keys({"enable_kv_cache_events", "publisher", "endpoint",
                                       "replay_endpoint", "buffer_steps", "hwm",
                                       "max_queue_size", "topic", "event_encoding"}));
  STRATA_RETURN_IF_ERROR(f.optional_bool("enable_kv_cache_events", &c.enable_kv_cache_events));
  c.publisher = c.enable_kv_cache_events ? "zmq" : "null";
  STRATA_RETURN_IF_ERROR(f.optional_string("publisher", &c.publisher));
  if (c.publisher != "zmq" && c.publisher != "null") {
    return f.type_error("publisher", "\"zmq\" or \"null\"");
  }
  STRATA_RETURN_IF_ERROR(f.optional_string("endpoint", &c.endpoint));
  if (c.endpoint.empty()) return f.type_error("endpoint", "a ZeroMQ endpoint");
  STRATA_RETURN_IF_ERROR(f.optional_string_or_null("replay_endpoint", &c.replay_endpoint));
  STRATA_RETURN_IF_ERROR(f.optional_string("topic", &c.topic));
  STRATA_RETURN_IF_ERROR(f.optional_int("buffer_steps", &c.buffer_steps, 0));
  STRATA_RETURN_IF_ERROR(f.optional_int("hwm", &c.hwm, 0));
  STRATA_RETURN_IF_ERROR(f.optional_int("max_queue_size", &c.max_queue_size, 1));
  std::string encoding = "array";
  STRATA_RETURN_IF_ERROR(f.optional_string("event_encoding", &encoding));
  if (encoding != "array" && encoding != "map") {
    return f.type_error("event_encoding", "\"array\" or \"map\"");
  }
  c.event_encoding =
      encoding == "map" ? events::EventEncoding::kMap : events::EventEncoding::kArray;
  return Status();
}

}  // namespace

StatusOr<events::KvEventsConfig> parse_kv_events_config(const std::string& json) {
  const config::Json j = config::Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return invalid_argument("--kv-events-config expects a JSON object, got '" + json + "'");
  }
  events::KvEventsConfig config;
  Status s = parse_object(JsonFields(j, "", FieldStyle::kFlag), config);
  if (!s.ok()) return s.with_prefix("--kv-events-config");
  return config;
}

}  // namespace strata::server
