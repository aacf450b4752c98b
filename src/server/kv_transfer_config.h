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
//                            "n_write_threads": 4, "max_bytes": M},
//                           {"type": "obj", "bucket": "...", "endpoint_override": "http://h:9000",
//                            "prefix": "", "io_threads": 4, "region", "access_key",
//                            "secret_key", "session_token", "scheme", "ca_bundle",
//                            "miss_ttl_ms", "connect_timeout_ms", "request_timeout_ms"}]}}
//     fs and obj entries also take "retry_initial_ms" (1000) and "retry_max_ms"
//     (60000): a tier whose start fails for a reason that may pass is started
//     down and retried with delays doubling between the two
//     (offload/tiers/common/retrying_tier.h). Every built-in entry takes vLLM's
//     "locality" ("LOCAL" | "REMOTE"), carried on the tier's KV events.
//     An obj entry may put bucket, endpoint_override, scheme, credentials,
//     region and ca_bundle in a nested "store_config" object instead (vLLM's
//     form); credentials left out come from AWS_* variables at startup.
//     A p2p entry (offload/tiers/p2p/p2p_tier.h): {"type": "p2p", "host": "127.0.0.1",
//       "port": 5710, "advertise_host": "", "peers": ["host:port", ...],
//       "allowed_remote_peers": ["10.0.0.0/8:5710", "[fd00::/8]:*", "prefill-0:5710"]
//       (peers a request's kv_transfer_params may name besides `peers`;
//       offload/tiers/p2p/peer_allowlist.h), "secret": "...",
//       "max_bytes": M, "num_threads": 4, "connect_timeout_ms": 1000, "io_timeout_ms": 5000,
//       "miss_ttl_ms": 1000, "remote_wait_ms": 5000}; no secret here means
//       $STRATA_P2P_SECRET at startup ("backends" is accepted and ignored).
//
// This file reads the envelope; each secondary_tiers entry is parsed by the
// tier its "type" names (offload/tiers/builtin_tiers.h; e.g.
// offload/tiers/fs/fs_tier_config.cc).
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
