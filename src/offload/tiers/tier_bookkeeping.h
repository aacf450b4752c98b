// Bookkeeping shared by the secondary tiers that run I/O threads (fs, obj):
//
//   TierJobState    one submitted job while its per-key tasks run: per-key ok
//                   flags, bytes moved, tasks left, start time.
//   make_job_state  checks a job against the host region (slots in range, one
//                   slot per key) and wraps it.
//   mark_job_started / job_result   the job's wall time runs from its first
//                   task's start to job_result().
//   NegativeAnswers recent "not there" answers with a time to live, each
//                   delivered at least once (even with ttl 0) before it
//                   expires, swept some seconds after expiry.
//   should_log_failure   warn for the first failures, then at powers of two.
//
// TierJobState is shared by the tasks of one job (atomics; `ok` entries are
// written by one task each). NegativeAnswers is not thread-safe: the tier
// calls it under its own lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "offload/tiers/secondary_tier.h"

namespace strata::offload {

struct TierJobState {
  TierJob job;
  std::vector<uint8_t> ok;  // per key; not vector<bool>: tasks write neighbours concurrently
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> remaining{0};
  std::atomic<int64_t> first_start_ns{0};  // steady clock; 0 = no task started yet
};

// STRATA_CHECKs that every slot is in `region` and keys and slots pair up.
std::shared_ptr<TierJobState> make_job_state(TierJob job, const HostRegion& region);

void mark_job_started(TierJobState& state);

// The job's result: ok flags, bytes, and seconds since its first task started
// (0 if none ran).
TierJobResult job_result(const TierJobState& state);

bool should_log_failure(int64_t num_failures);

class NegativeAnswers {
 public:
  using Clock = std::chrono::steady_clock;

  explicit NegativeAnswers(int64_t ttl_ms) : ttl_(ttl_ms) {}

  void remember(const ChunkKey& key, Clock::time_point now);
  void erase(const ChunkKey& key) { answers_.erase(key); }
  // True if `key` has an answer to give now (live, or never delivered yet),
  // which is then marked delivered. An expired, delivered answer is dropped.
  bool take(const ChunkKey& key, Clock::time_point now);
  // Drops answers that expired more than the grace period ago.
  void sweep(Clock::time_point now);

 private:
  struct Answer {
    Clock::time_point expires;
    bool is_delivered = false;
  };
  const std::chrono::milliseconds ttl_;
  std::unordered_map<ChunkKey, Answer, kv::BlockHashHasher> answers_;
  std::deque<std::pair<Clock::time_point, ChunkKey>> sweep_order_;  // (sweep time, key), FIFO
};

}  // namespace strata::offload
