// Secondary tiers by type: each tier's folder provides one TierType (how its
// entry of kv_connector_extra_config.secondary_tiers is parsed and how the
// tier is built), and offload/tiers/builtin_tiers.cc lists the types this
// build provides. The --kv-transfer-config envelope (server/) hands each
// entry to TierRegistry::parse; OffloadingConnector builds each tier with
// TierRegistry::make.
//
// Adding a tier: a folder offload/tiers/<name>/ with the tier, its
// <name>_tier_config.cc defining a TierType, its CMake target, and one line
// in builtin_tiers.cc.
//
// Threading: a registry is filled once, then read from any thread.
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include "base/check.h"
#include "base/status.h"
#include "config/json_fields.h"
#include "offload/tiers/common/retrying_tier.h"
#include "offload/tiers/common/secondary_tier.h"

namespace strata::offload {

// One entry of secondary_tiers, parsed.
struct SecondaryTierConfig {
  std::string type;      // the entry's "type": "fs", "obj", "p2p", or a plugin's name
  // vLLM's per-tier "locality" ("LOCAL" | "REMOTE" | "" = unset): carried on
  // the tier's KV events.
  std::string locality;
  // fs and obj: how a tier that could not start is retried (retrying_tier.h).
  TierRetryConfig retry;
  // The tier's own settings (FsTierConfig, ObjTierConfig, ...); which TierType
  // builds the tier follows from their type.
  std::any settings;

  template <typename T>
  T& emplace() { return settings.emplace<T>(); }
  // The settings as a T (checked), or nullptr when they are something else.
  template <typename T>
  const T* settings_if() const { return std::any_cast<T>(&settings); }
  template <typename T>
  T& as() {
    T* t = std::any_cast<T>(&settings);
    STRATA_CHECK(t != nullptr) << "secondary tier '" << type << "' has other settings";
    return *t;
  }
  template <typename T>
  const T& as() const { return const_cast<SecondaryTierConfig*>(this)->as<T>(); }
};

// Starts a tier from its own settings.
template <typename Settings>
using TierStart = StatusOr<std::unique_ptr<SecondaryTier>> (*)(const Settings& settings,
                                                              const ChunkFormat& format,
                                                              const HostRegion& region);

struct TierType {
  // Entries whose "type" is `type` are this tier's.
  std::string type;
  // Instead, when set: takes entries of any type no other TierType names, if
  // it accepts them (plugins: those with a "module_path"). `type` then only
  // describes it in messages ("a plugin with module_path").
  std::function<bool(const config::JsonFields& entry)> accepts;
  // The type of SecondaryTierConfig::settings that parse produces.
  std::type_index settings_type = typeid(void);
  // The entry (a kFlag reader named by its key path, "type" included) into a
  // config; type and settings are set, and locality / retry where the tier
  // takes them. Errors name the key path and are shown to the user verbatim.
  std::function<StatusOr<SecondaryTierConfig>(const config::JsonFields& entry)> parse;
  // Starts the tier (its threads, connections, files). Called once per entry
  // at engine startup.
  std::function<StatusOr<std::unique_ptr<SecondaryTier>>(
      const SecondaryTierConfig& config, const ChunkFormat& format, const HostRegion& region)>
      make;
};

class TierRegistry {
 public:
  void add(TierType type);

  // One entry of secondary_tiers, by its "type". `entry` must be an object.
  StatusOr<SecondaryTierConfig> parse(const config::JsonFields& entry) const;
  // Builds the tier whose TierType produces `config.settings`.
  StatusOr<std::unique_ptr<SecondaryTier>> make(const SecondaryTierConfig& config,
                                                const ChunkFormat& format,
                                                const HostRegion& region) const;

 private:
  std::string named_types() const;  // "fs, obj, p2p"

  std::vector<TierType> types_;
};

// TierType::make for a tier whose start may fail for a reason that passes
// (an I/O error, a 5xx, an unreachable store): that must not stop the
// server, so the tier starts down and is retried (retrying_tier.h) with the
// entry's retry settings. Wrong settings still fail.
template <typename Settings>
auto make_or_retry(std::string name, TierStart<Settings> start) {
  return [name = std::move(name), start](const SecondaryTierConfig& config,
                                         const ChunkFormat& format, const HostRegion& region) {
    return start_tier_or_retry(
        name, [settings = config.as<Settings>(), format, region, start] {
          return start(settings, format, region);
        },
        config.retry);
  };
}

// Keys every built-in tier accepts: "locality" (vLLM's, carried on the tier's
// KV events); "enable_kv_events" is accepted (events are configured by
// --kv-events-config).
Status parse_tier_common_keys(const config::JsonFields& entry, SecondaryTierConfig& tier);
// A thread count: an integer >= 1, of which at most 256 are used.
Status parse_num_threads(const config::JsonFields& entry, const char* key, int* out);

// For tiers built with make_or_retry: "retry_initial_ms" and "retry_max_ms"
// (how a tier that could not start is retried), then the common keys.
Status parse_retrying_tier_keys(const config::JsonFields& entry, SecondaryTierConfig& tier);

}  // namespace strata::offload
