// vLLM's --kv-transfer-config JSON and --kv-offloading-size, turned into the
// engine's offload::OffloadConfig. Accepted (vLLM's OffloadingConnector):
//
//   {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
//    "kv_connector_extra_config": {
//       "spec_name": "TieringOffloadingSpec" | "CPUOffloadingSpec",
//       "cpu_bytes_to_use": N,                  required, bytes of host memory
//       "blocks_per_chunk": 1 | "block_size": tokens (a multiple of --block-size),
//       "eviction_policy": "lru" | "arc",
//       "offload_prompt_only": false,
//       "max_load_wait_s": 5.0,                 Strata: wait for slow tiers at most this
//       "secondary_tiers": [{"type": "fs", "root_dir": "...", "n_read_threads": 4,
//                            "n_write_threads": 4, "max_bytes": M}]}}
//
// Unknown keys and wrong types are errors naming the key path
// ("kv_connector_extra_config.secondary_tiers[0].n_read_threads must be ...").
// Called once at startup (any thread).
#pragma once

#include <string>

#include "base/status.h"
#include "offload/transfer/offload_config.h"

namespace strata::server {

// `block_size` is the KV pool's block size (--block-size), to which a
// "block_size" key in tokens is converted.
StatusOr<offload::OffloadConfig> parse_kv_transfer_config(const std::string& json,
                                                          int64_t block_size);

// --kv-offloading-size GB (vLLM's native backend): a host tier of that many
// GiB, LRU, no secondary tiers.
StatusOr<offload::OffloadConfig> kv_offloading_size_config(double gib);

}  // namespace strata::server
