// A tier below host memory (filesystem, object store, peer, plugin): the
// contract the tiering manager drives (vLLM's SecondaryTierManager).
//
// Secondary tiers never touch the KV pool. They move bytes between their
// storage and slots of the host tier's region (HostRegion): stores read a
// slot, loads ("promotions") fill a slot the manager reserved. A slot holds
// exactly one chunk's canonical payload (chunk_format.h); framing with a
// ChunkHeader is the tier's business.
//
// Threads: every method is called on the engine thread and must not block on
// I/O (no open/stat/read/write/network on the caller's thread). Each tier owns
// its I/O threads, its capacity and eviction, and its counters.
//
// Job lifecycle: submit_store/submit_load return at once; the job's result
// comes back exactly once from a later poll_finished(). Until then the slots
// named in the job stay reserved by the manager (pinned), so the tier may read
// or write them from its threads. After the result is returned the tier must
// not touch those slots again.
//
// Failure is a miss: a load that fails (absent, corrupt, truncated, foreign,
// I/O error, timeout) reports that key as not ok and the manager recomputes
// the tokens; the tier should also forget the key (and delete a bad file) so
// the next lookup says kMiss instead of trying again forever.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "offload/tiers/common/chunk_format.h"
#include "offload/tiers/common/tier_stats.h"

namespace strata::offload {

enum class LookupResult {
  kHit,    // the tier holds the chunk (as far as it knows now)
  kMiss,   // it does not
  kRetry,  // not known yet (an asynchronous probe is under way): ask again next step
};

// The host tier's memory as secondary tiers see it: slot i occupies
// [base + i * slot_bytes, base + (i + 1) * slot_bytes).
struct HostRegion {
  uint8_t* base = nullptr;
  int64_t num_slots = 0;
  int64_t slot_bytes = 0;  // == ChunkFormat::payload_bytes()

  uint8_t* slot(int64_t slot_idx) const { return base + slot_idx * slot_bytes; }
};

struct TierJob {
  int64_t job_id = 0;
  std::vector<ChunkKey> keys;
  std::vector<int64_t> slots;  // slots[i] holds / receives keys[i]
};

struct TierJobResult {
  int64_t job_id = 0;
  std::vector<bool> ok;        // per key, in job order
  int64_t bytes = 0;           // payload bytes moved
  double seconds = 0;          // wall time of the I/O
};

// Who asks a lookup, for tiers that care (the peer tier fetches from the
// instance a request names in its kv_transfer_params).
struct TierLookupContext {
  std::string_view request_id;
  std::string_view remote_host;  // "" = none named
  int64_t remote_port = 0;
};

class SecondaryTier {
 public:
  virtual ~SecondaryTier() = default;

  // Label in metrics and logs, e.g. "fs".
  virtual const std::string& name() const = 0;

  // Does the tier hold `key`? Never blocks (see kRetry).
  virtual LookupResult lookup(const ChunkKey& key) = 0;
  // The same, knowing the request; tiers that ignore the request need not
  // override it.
  virtual LookupResult lookup_for(const ChunkKey& key, const TierLookupContext& context) {
    (void)context;
    return lookup(key);
  }

  // Copy each slot's payload into the tier under its key. Keys the tier
  // already holds are skipped and reported ok. A key that cannot be stored
  // (full, I/O error) is reported not ok; nothing else changes.
  virtual void submit_store(TierJob job) = 0;

  // Fill each slot with the payload stored under its key, verified (header
  // and checksum) before it is reported ok.
  virtual void submit_load(TierJob job) = 0;

  // Results of jobs that completed since the last call.
  virtual std::vector<TierJobResult> poll_finished() = 0;

  // Blocks until every submitted job has completed (shutdown, tests). The
  // results still come from poll_finished().
  virtual void drain() = 0;

  // Keys the tier held (stored, loaded or found) and no longer holds since the
  // last call: evicted, or deleted as damaged. For KV events (BlockRemoved);
  // tiers that do not track removals need not override it.
  virtual std::vector<ChunkKey> take_removed() { return {}; }

  // Whether what the tier stores and drops is announced as KV events (medium
  // "STORAGE"). The peer tier holds other instances' KV, for which vLLM has no
  // event, and says no.
  virtual bool publishes_kv_events() const { return true; }

  // Counters snapshot; callable from any thread.
  virtual TierStats stats() const = 0;
};

}  // namespace strata::offload
