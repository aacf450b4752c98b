#include "offload/tiers/obj/obj_tier_config.h"

#include <optional>
#include <utility>

#include "offload/tiers/obj/obj_tier.h"

namespace strata::offload {
namespace {

// vLLM's obj tier. The store settings may sit in the entry itself or, as vLLM
// writes them, in "store_config"; one key may not be in both.
StatusOr<SecondaryTierConfig> parse_obj_tier(const config::JsonFields& r) {
  STRATA_RETURN_IF_ERROR(r.check_keys({"type", "store_config", "bucket", "endpoint_override",
                                       "scheme", "access_key", "secret_key", "session_token",
                                       "region", "ca_bundle", "prefix", "io_threads",
                                       "miss_ttl_ms", "connect_timeout_ms", "request_timeout_ms",
                                       "locality", "enable_kv_events", "retry_initial_ms",
                                       "retry_max_ms"}));
  std::optional<config::JsonFields> store;
  if (r.has("store_config")) {
    if (!r.at("store_config").is_object()) return r.type_error("store_config", "an object");
    store.emplace(r.nested("store_config"));
    STRATA_RETURN_IF_ERROR(store->check_keys({"bucket", "endpoint_override", "scheme",
                                              "access_key", "secret_key", "session_token",
                                              "region", "ca_bundle"}));
  }
  SecondaryTierConfig tier;
  ObjTierConfig& obj = tier.emplace<ObjTierConfig>();
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
    STRATA_RETURN_IF_ERROR((is_nested ? *store : r).optional_string(key, out));
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
  STRATA_RETURN_IF_ERROR(r.optional_string("prefix", &obj.prefix));
  STRATA_RETURN_IF_ERROR(parse_num_threads(r, "io_threads", &obj.io_threads));
  STRATA_RETURN_IF_ERROR(r.optional_int("miss_ttl_ms", &obj.miss_ttl_ms, 0));
  STRATA_RETURN_IF_ERROR(r.optional_int("connect_timeout_ms", &obj.connect_timeout_ms, 1));
  STRATA_RETURN_IF_ERROR(r.optional_int("request_timeout_ms", &obj.request_timeout_ms, 1));
  STRATA_RETURN_IF_ERROR(parse_retrying_tier_keys(r, tier));
  return tier;
}

}  // namespace

// An object store that fails at startup (5xx, unreachable) is retried.
TierType obj_tier_type() {
  return {.type = "obj", .settings_type = typeid(ObjTierConfig), .parse = parse_obj_tier,
          .make = make_or_retry<ObjTierConfig>("obj", make_obj_tier)};
}

}  // namespace strata::offload
