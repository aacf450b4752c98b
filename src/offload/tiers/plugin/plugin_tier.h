// A secondary tier loaded from a shared library through the C ABI in
// plugin/strata_tier_plugin.h. The adapter checks the ABI version and turns
// the plugin's C structs into SecondaryTier calls; the library stays loaded
// for the tier's lifetime. Same thread rules as SecondaryTier.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "offload/tiers/common/secondary_tier.h"

namespace strata::offload {

// `name` labels metrics (the config's "type"); `config_json` is the tier's
// whole secondary_tiers entry. Errors name the library and what failed
// (dlopen message, missing entry symbol, ABI version, the plugin's create()).
StatusOr<std::unique_ptr<SecondaryTier>> make_plugin_tier(const std::string& name,
                                                          const std::string& module_path,
                                                          const std::string& config_json,
                                                          const ChunkFormat& format,
                                                          const HostRegion& region);

}  // namespace strata::offload
