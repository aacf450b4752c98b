#include "offload/tiers/builtin_tiers.h"

#include "offload/tiers/fs/fs_tier_config.h"
#include "offload/tiers/obj/obj_tier_config.h"
#include "offload/tiers/p2p/p2p_tier_config.h"
#include "offload/tiers/plugin/plugin_tier_config.h"

namespace strata::offload {

const TierRegistry& builtin_tiers() {
  static const TierRegistry registry = [] {
    TierRegistry r;
    r.add(fs_tier_type());
    r.add(obj_tier_type());
    r.add(p2p_tier_type());
    r.add(plugin_tier_type());  // last: takes any other type with a module_path
    return r;
  }();
  return registry;
}

}  // namespace strata::offload
