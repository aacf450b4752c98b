// Out-of-tree tiers in secondary_tiers (tier_registry.h): an entry of any
// type no built-in tier names, with a "module_path" (the shared library,
// plugin_tier.h). Its other keys are the plugin's own; it gets the whole
// entry as JSON.
#pragma once

#include <string>

#include "offload/tiers/common/tier_registry.h"

namespace strata::offload {

struct PluginTierConfig {
  std::string module_path;
  std::string config_json;  // the tier's whole secondary_tiers entry
};

TierType plugin_tier_type();

}  // namespace strata::offload
