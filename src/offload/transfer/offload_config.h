// Settings of the tiered KV cache, as parsed from vLLM's --kv-transfer-config
// (server/kv_transfer_config.h) or --kv-offloading-size. Plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "offload/tiers/common/tier_registry.h"

namespace strata::offload {

struct OffloadConfig {
  bool enabled = false;
  int64_t cpu_bytes_to_use = 0;   // host tier capacity (vLLM: total over workers)
  int64_t blocks_per_chunk = 1;   // KV-pool blocks per chunk
  std::string eviction_policy = "lru";  // "lru" | "arc"
  // vLLM offloads prompt blocks only by default; Strata also keeps generated
  // blocks, since the next turn of a chat re-sends them as its prompt.
  bool offload_prompt_only = false;
  // How long a request waits for lower tiers to promote its prefix into host
  // memory before it recomputes instead (a slow disk must not stall it).
  double max_load_wait_s = 5.0;
  // Consulted in order; each built by offload/tiers/builtin_tiers.h.
  std::vector<SecondaryTierConfig> secondary_tiers;
};

}  // namespace strata::offload
