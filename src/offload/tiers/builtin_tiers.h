// The secondary tiers this build provides (tier_registry.h), in the order
// an entry's "type" is matched against them.
#pragma once

#include "offload/tiers/common/tier_registry.h"

namespace strata::offload {

// Filled on first use; thread-safe.
const TierRegistry& builtin_tiers();

}  // namespace strata::offload
