// KV cache events in vLLM's wire format, for KV-aware routers (llm-d's
// kv-cache indexer, NVIDIA Dynamo) that already consume vLLM's stream.
//
// An event says that full blocks were stored in, or removed from, one medium
// ("GPU" = the engine's KV pool, whatever device it lives on, as vLLM names it;
// "CPU" = the host tier; "STORAGE" = filesystem and object-store tiers, whose
// stores and removals (evictions, deleted chunks) are both announced, with the
// tier config's vLLM "locality").
// Events travel in batches: one KVEventBatch per publish() call.
//
// Payload = the MessagePack encoding that vLLM's msgspec structs produce
// (vllm/distributed/kv_events.py). The batch is a positional array (EventBatch
// is array_like=True in every release checked, up to v0.28):
//
//   [ts: float64, events: [...], data_parallel_rank: int]
//
// vLLM's publish() stamps data_parallel_rank before encoding, and msgspec's
// omit_defaults does not shorten array_like structs (msgspec issue #720), so
// the third element is always present; Strata has one rank, 0.
//
// Events come in one of two layouts (EventEncoding):
//
//   kArray: tagged positional arrays, tag = class name first, as vLLM wrote
//   them while KVCacheEvent was array_like=True (up to v0.23). Every llm-d
//   kv-cache version and Dynamo decode this layout:
//     ["BlockStored", block_hashes, parent_block_hash|nil, token_ids,
//      block_size, lora_id|nil, medium|nil, lora_name|nil]
//     ["BlockRemoved", block_hashes, medium|nil]
//     ["AllBlocksCleared"]
//   lora_name is written (nil): llm-d's vLLM adapter rejects a BlockStored
//   array that ends at medium and is tested against exactly this form. The
//   later vLLM fields (extra_keys, group_idx, kv_cache_spec_kind,
//   kv_cache_spec_sliding_window) default to None and are left out: msgspec
//   decoders fill trailing defaults, and llm-d's length-guarded decoder reads
//   what is there.
//
//   kMap: tagged maps, as vLLM writes them since PR #42892 (merged June 2026;
//   v0.23.0 still wrote arrays, v0.26.0 writes maps). msgspec tag=True
//   without array_like puts "type": class name first, then every field
//   without a default in declaration order (even when nil), then defaulted
//   fields only when set (omit_defaults):
//     {"type":"BlockStored","block_hashes":..,"parent_block_hash":..,
//      "token_ids":..,"block_size":..,"lora_id":..,"medium":..,"lora_name":..
//      [,"locality":..]}
//     {"type":"BlockRemoved","block_hashes":..,"medium":.. [,"locality":..]}
//     {"type":"AllBlocksCleared"}
//   llm-d-kv-cache since PR #661 and Dynamo decode both layouts;
//   consumers older than that decode only kArray.
//
// Block hashes are u64 integers (vLLM's default,
// VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1): see to_event_hash().
//
// Pure functions and plain data; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kv/block_hash.h"

namespace strata::events {

// vLLM's medium names (MEDIUM_GPU and the offloading connector's names).
inline constexpr const char* kMediumGpu = "GPU";          // the KV pool, on any device
inline constexpr const char* kMediumCpu = "CPU";          // the host tier
inline constexpr const char* kMediumStorage = "STORAGE";  // fs and object-store tiers

// Fields in vLLM's order. An empty `medium` is written as nil (unspecified;
// llm-d then assumes the GPU tier).
struct BlockStored {
  std::vector<uint64_t> block_hashes;  // to_event_hash() of each stored block, in order
  std::optional<uint64_t>
      parent_block_hash;           // the block before block_hashes[0]; nullopt at the root
  std::vector<int32_t> token_ids;  // block_size tokens per block; empty for hash-only tier events
  int64_t block_size = 0;
  std::optional<int64_t> lora_id;  // deprecated in vLLM; always nullopt in Strata
  std::string medium;
  std::string locality;  // "LOCAL" | "REMOTE" | "" (unset); written in the map layout only
};

struct BlockRemoved {
  std::vector<uint64_t> block_hashes;
  std::string medium;
  std::string locality;  // as in BlockStored
};

struct AllBlocksCleared {};

using KvEvent = std::variant<BlockStored, BlockRemoved, AllBlocksCleared>;

enum class EventEncoding { kArray, kMap };

// The u64 that stands for a block on the wire: `hash.low`.
//
// vLLM's integer form is the low 64 bits of the hash digest read big-endian
// (int.from_bytes(digest, "big") & (2**64 - 1)), i.e. its last 8 bytes.
// kv::BlockHash is an XXH3-128 value {low, high}; in XXH3's canonical
// (big-endian) byte form, which BlockHash::to_hex() prints, the digest is
// high || low, so its last 8 bytes read big-endian are `low`: the event hash
// is the last 16 hex digits of to_hex(). Every Strata medium uses this
// mapping, so a consumer sees the same u64 for a block in every tier.
inline uint64_t to_event_hash(const kv::BlockHash& hash) { return hash.low; }

// The whole KVEventBatch payload. `ts` is seconds since the Unix epoch.
std::string encode_event_batch(double ts, const std::vector<KvEvent>& events,
                               EventEncoding encoding, int64_t data_parallel_rank = 0);

}  // namespace strata::events
