// The object-store tier's entry of secondary_tiers and how the tier is built
// (tier_registry.h; keys in server/kv_transfer_config.h).
#pragma once

#include "offload/tiers/common/tier_registry.h"

namespace strata::offload {

TierType obj_tier_type();

}  // namespace strata::offload
