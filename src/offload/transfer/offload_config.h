// Settings of the tiered KV cache, as parsed from vLLM's --kv-transfer-config
// (server/kv_transfer_config.h) or --kv-offloading-size. Plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "offload/tiers/fs/fs_tier.h"
#include "offload/tiers/obj/obj_tier.h"
#include "offload/tiers/p2p/p2p_tier.h"
#include "offload/tiers/common/retrying_tier.h"

namespace strata::offload {

struct SecondaryTierConfig {
  std::string type;  // "fs", "obj", or a plugin's name
  FsTierConfig fs;
  ObjTierConfig obj;
  P2pTierConfig p2p;
  // Out-of-tree tier: the shared library (offload/tiers/plugin/plugin_tier.h) and
  // the tier's whole config entry, handed to the plugin as JSON.
  std::string module_path;
  std::string config_json;
  // vLLM's per-tier "locality" ("LOCAL" | "REMOTE" | "" = unset): carried on
  // the tier's KV events.
  std::string locality;
  // fs and obj: how a tier that could not start is retried (retrying_tier.h).
  TierRetryConfig retry;
};

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
  std::vector<SecondaryTierConfig> secondary_tiers;  // consulted in order
};

}  // namespace strata::offload
