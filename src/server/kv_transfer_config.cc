#include "server/kv_transfer_config.h"

#include "base/log.h"
#include "config/json_fields.h"
#include "offload/tiers/builtin_tiers.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <utility>

namespace strata::server {
namespace {

using Json = nlohmann::json;

using config::FieldStyle;
using config::JsonFields;

// One entry of secondary_tiers: the tier its "type" names parses it
// (offload/tiers/builtin_tiers.h).
StatusOr<offload::SecondaryTierConfig> parse_tier(const Json& j, const std::string& path) {
  if (!j.is_object()) return invalid_argument(path + " must be an object, got " + j.dump());
  return offload::builtin_tiers().parse(JsonFields(j, path, FieldStyle::kFlag));
}

Status parse_extra_config(const JsonFields& r, int64_t block_size,
                          offload::OffloadConfig& config) {
  STRATA_RETURN_IF_ERROR(r.check_keys({"spec_name", "cpu_bytes_to_use", "blocks_per_chunk",
                                       "block_size", "eviction_policy", "offload_prompt_only",
                                       "max_load_wait_s", "secondary_tiers"}));
  std::string spec = "CPUOffloadingSpec";
  STRATA_RETURN_IF_ERROR(r.optional_string("spec_name", &spec));
  if (spec != "CPUOffloadingSpec" && spec != "TieringOffloadingSpec") {
    return invalid_argument(r.name("spec_name") +
                            " must be \"TieringOffloadingSpec\" or \"CPUOffloadingSpec\", got \"" +
                            spec + "\"");
  }
  if (!r.has("cpu_bytes_to_use")) return r.missing_error("cpu_bytes_to_use", "an integer");
  STRATA_RETURN_IF_ERROR(r.optional_int("cpu_bytes_to_use", &config.cpu_bytes_to_use, 1));
  if (r.has("blocks_per_chunk") && r.has("block_size")) {
    return invalid_argument(r.name("blocks_per_chunk") + " and " + r.name("block_size") +
                            " cannot both be set");
  }
  STRATA_RETURN_IF_ERROR(r.optional_int("blocks_per_chunk", &config.blocks_per_chunk, 1));
  int64_t chunk_tokens = 0;
  STRATA_RETURN_IF_ERROR(r.optional_int("block_size", &chunk_tokens, 1));
  if (chunk_tokens > 0) {
    if (chunk_tokens % block_size != 0) {
      return invalid_argument(r.name("block_size") + " is " + std::to_string(chunk_tokens) +
                              " tokens; it must be a multiple of --block-size " +
                              std::to_string(block_size));
    }
    config.blocks_per_chunk = chunk_tokens / block_size;
  }
  STRATA_RETURN_IF_ERROR(r.optional_string("eviction_policy", &config.eviction_policy));
  if (config.eviction_policy != "lru" && config.eviction_policy != "arc") {
    return invalid_argument(r.name("eviction_policy") + " must be \"lru\" or \"arc\", got \"" +
                            config.eviction_policy + "\"");
  }
  STRATA_RETURN_IF_ERROR(r.optional_bool("offload_prompt_only", &config.offload_prompt_only));
  STRATA_RETURN_IF_ERROR(r.optional_double("max_load_wait_s", &config.max_load_wait_s, 0.0));
  if (!r.has("secondary_tiers")) return Status();
  const Json& tiers = r.at("secondary_tiers");
  const std::string path = r.name("secondary_tiers");
  if (!tiers.is_array()) return invalid_argument(path + " must be an array, got " + tiers.dump());
  if (spec != "TieringOffloadingSpec" && !tiers.empty()) {
    return invalid_argument(path + " needs spec_name \"TieringOffloadingSpec\"");
  }
  for (size_t i = 0; i < tiers.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(offload::SecondaryTierConfig tier,
                            parse_tier(tiers[i], path + "[" + std::to_string(i) + "]"));
    config.secondary_tiers.push_back(std::move(tier));
  }
  return Status();
}

// The spec an extra config names ("" when it names none or is not an object).
std::string spec_name_of(const JsonFields& top) {
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
Status check_envelope(const JsonFields& top) {
  STRATA_RETURN_IF_ERROR(top.check_keys({"kv_connector", "kv_role", "kv_connector_extra_config",
                                         "engine_id", "kv_load_failure_policy"}));
  const std::string spec = spec_name_of(top);
  const bool names_offloading_spec = spec == "TieringOffloadingSpec" || spec == "CPUOffloadingSpec";
  std::string connector;
  STRATA_RETURN_IF_ERROR(top.optional_string("kv_connector", &connector));
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
  STRATA_RETURN_IF_ERROR(top.optional_string("kv_role", &role));
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
  STRATA_RETURN_IF_ERROR(top.optional_string("kv_load_failure_policy", &policy));
  if (policy != "recompute") {
    return invalid_argument("kv_load_failure_policy must be \"recompute\" (a failed load is "
                            "always recomputed), got \"" + policy + "\"");
  }
  std::string engine_id;
  STRATA_RETURN_IF_ERROR(top.optional_string("engine_id", &engine_id));
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
  JsonFields top(j, "", FieldStyle::kFlag);
  Status s = check_envelope(top);
  if (!s.ok()) return s.with_prefix("--kv-transfer-config");
  offload::OffloadConfig config;
  config.enabled = true;
  JsonFields extra = top.nested("kv_connector_extra_config");
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
