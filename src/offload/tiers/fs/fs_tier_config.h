// The filesystem tier's entry of secondary_tiers and how the tier is built
// (tier_registry.h):
//   {"type": "fs", "root_dir": "...", "n_read_threads": 4, "n_write_threads": 4,
//    "max_bytes": M, "miss_ttl_ms": ..., "retry_initial_ms": 1000, "retry_max_ms": 60000,
//    "locality": "LOCAL" | "REMOTE"}
#pragma once

#include "offload/tiers/common/tier_registry.h"

namespace strata::offload {

TierType fs_tier_type();

}  // namespace strata::offload
