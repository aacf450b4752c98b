#include "offload/tiers/plugin/plugin_tier_config.h"

#include "offload/tiers/plugin/plugin_tier.h"

namespace strata::offload {
namespace {

StatusOr<SecondaryTierConfig> parse_plugin_tier(const config::JsonFields& r) {
  SecondaryTierConfig tier;
  PluginTierConfig& plugin = tier.emplace<PluginTierConfig>();
  STRATA_RETURN_IF_ERROR(r.optional_string("module_path", &plugin.module_path));
  if (plugin.module_path.empty()) return invalid_argument(r.name("module_path") + " is empty");
  plugin.config_json = r.object().dump();
  return tier;
}

StatusOr<std::unique_ptr<SecondaryTier>> make_tier(const SecondaryTierConfig& config,
                                                   const ChunkFormat& format,
                                                   const HostRegion& region) {
  const PluginTierConfig& plugin = config.as<PluginTierConfig>();
  return make_plugin_tier(config.type, plugin.module_path, plugin.config_json, format, region);
}

}  // namespace

TierType plugin_tier_type() {
  return {.type = "a plugin with module_path",
          .accepts = [](const config::JsonFields& entry) { return entry.has("module_path"); },
          .settings_type = typeid(PluginTierConfig),
          .parse = parse_plugin_tier,
          .make = make_tier};
}

}  // namespace strata::offload
