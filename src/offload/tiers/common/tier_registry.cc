#include "offload/tiers/common/tier_registry.h"

#include <algorithm>
#include <utility>

namespace strata::offload {

void TierRegistry::add(TierType type) {
  STRATA_CHECK(type.parse && type.make && type.settings_type != typeid(void)) << type.type;
  types_.push_back(std::move(type));
}

std::string TierRegistry::named_types() const {
  std::string list;
  for (const TierType& t : types_) {
    if (!t.accepts) list += (list.empty() ? "" : ", ") + t.type;
  }
  return list;
}

StatusOr<SecondaryTierConfig> TierRegistry::parse(const config::JsonFields& entry) const {
  if (!entry.has("type")) return invalid_argument(entry.name("type") + " is required");
  std::string type;
  STRATA_RETURN_IF_ERROR(entry.optional_string("type", &type));
  const TierType* found = nullptr;
  for (const TierType& t : types_) {
    if (!t.accepts && t.type == type) found = &t;
  }
  for (const TierType& t : types_) {
    if (found == nullptr && t.accepts && t.accepts(entry)) found = &t;
  }
  if (found == nullptr) {
    return invalid_argument(entry.name("type") + " \"" + type +
                            "\" is not a tier this build provides (available: " + named_types() +
                            ")");
  }
  STRATA_ASSIGN_OR_RETURN(SecondaryTierConfig config, found->parse(entry));
  config.type = type;
  return config;
}

StatusOr<std::unique_ptr<SecondaryTier>> TierRegistry::make(const SecondaryTierConfig& config,
                                                            const ChunkFormat& format,
                                                            const HostRegion& region) const {
  for (const TierType& t : types_) {
    if (t.settings_type == std::type_index(config.settings.type())) {
      return t.make(config, format, region);
    }
  }
  std::string known = named_types();
  for (const TierType& t : types_) {
    if (t.accepts) known += ", or " + t.type;
  }
  return invalid_argument("secondary tier type '" + config.type + "' is not known (known: " +
                          known + ")");
}

Status parse_tier_common_keys(const config::JsonFields& entry, SecondaryTierConfig& tier) {
  STRATA_RETURN_IF_ERROR(entry.optional_string("locality", &tier.locality));
  if (!tier.locality.empty() && tier.locality != "LOCAL" && tier.locality != "REMOTE") {
    return invalid_argument(entry.name("locality") + " must be \"LOCAL\" or \"REMOTE\", got \"" +
                            tier.locality + "\"");
  }
  bool events = false;
  return entry.optional_bool("enable_kv_events", &events);
}

Status parse_num_threads(const config::JsonFields& entry, const char* key, int* out) {
  int64_t n = *out;
  STRATA_RETURN_IF_ERROR(entry.optional_int(key, &n, 1));
  *out = static_cast<int>(std::min<int64_t>(n, 256));
  return Status();
}

Status parse_retrying_tier_keys(const config::JsonFields& entry, SecondaryTierConfig& tier) {
  STRATA_RETURN_IF_ERROR(entry.optional_int("retry_initial_ms", &tier.retry.initial_ms, 1));
  STRATA_RETURN_IF_ERROR(entry.optional_int("retry_max_ms", &tier.retry.max_ms, 1));
  if (tier.retry.max_ms < tier.retry.initial_ms) {
    return invalid_argument(entry.name("retry_max_ms") + " " + std::to_string(tier.retry.max_ms) +
                            " is below retry_initial_ms " + std::to_string(tier.retry.initial_ms));
  }
  return parse_tier_common_keys(entry, tier);
}

}  // namespace strata::offload
