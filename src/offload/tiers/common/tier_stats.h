// Counters one KV tier keeps for /metrics. Snapshots are plain values;
// tiers update theirs under their own lock (or atomics) from I/O threads.
#pragma once

#include <cstdint>
#include <string>

#include "offload/tiers/common/latency_histogram.h"

namespace strata::offload {

struct TierStats {
  std::string tier;              // metric label: "cpu", "fs", ...
  int64_t chunk_lookups = 0;     // lookups answered hit or miss (retries not counted)
  int64_t chunk_hits = 0;
  int64_t hit_tokens = 0;        // tokens served to requests from this tier
  int64_t load_bytes = 0;        // bytes read out of the tier (payload)
  double load_seconds = 0;
  int64_t store_bytes = 0;       // bytes written into the tier (payload)
  double store_seconds = 0;
  int64_t load_failures = 0;     // chunks whose load failed (corrupt, missing, I/O error)
  int64_t store_failures = 0;    // chunks whose store failed (ENOSPC, EACCES, ...)
  int64_t probe_failures = 0;    // lookups whose probe failed (network, timeout, 5xx): misses
  int64_t stores_skipped = 0;    // chunks not stored: already present or queue full
  int64_t evictions = 0;         // chunks evicted to make room
  int64_t used_bytes = 0;        // occupancy now
  int64_t capacity_bytes = 0;    // 0 = unbounded
  int64_t num_chunks = 0;        // resident chunks now
  bool is_up = true;             // false while a tier that could not start retries (retrying_tier.h)
  int64_t start_failures = 0;    // failed starts of the tier (the first included)
  int64_t remote_peers_refused = 0;  // requests that named a peer not allowed (p2p; never contacted)
  // Filled by the connector (OffloadingConnector::stats), not by the tiers:
  LatencyHistogram lookup_sync_seconds;   // lookup calls that answered hit or miss
  LatencyHistogram lookup_async_seconds;  // first "retry" to the hit-or-miss answer
  LatencyHistogram read_seconds;          // per job: out of the tier (cpu: host -> pool)
  LatencyHistogram write_seconds;         // per job: into the tier (cpu: pool -> host)
};

}  // namespace strata::offload
