// Bookkeeping shared by the secondary tiers that run I/O threads (fs, obj,
// p2p), so that each tier keeps only its own I/O and index:
//
//   TierJobState    one submitted job while its per-key tasks run: per-key ok
//                   flags, bytes moved, tasks left, start time.
//   make_job_state  checks a job against the host region (slots in range, one
//                   slot per key) and wraps it.
//   TierJobs        the tier's I/O threads and its jobs: runs a job's per-key
//                   tasks, and when the last one returns queues the job's
//                   result for poll_finished() and adds its wall time (first
//                   task's start to the end) to load/store_seconds.
//   claim_stores    which keys of a store job need writing; the others are
//                   skipped, reported ok and counted in stores_skipped.
//   ProbedLookups   the lookup verdict of a tier that answers from memory and
//                   probes unknown keys on an I/O thread (fs, obj): keys being
//                   stored or probed, recent negative answers.
//   NegativeAnswers recent "not there" answers with a time to live, each
//                   delivered at least once (even with ttl 0) before it
//                   expires, swept some seconds after expiry.
//   warn_chunk_failure / should_log_failure   warn for the first failures,
//                   then at powers of two.
//   check_format_and_region   the startup check every tier makes.
//
// Threads: TierJobState is shared by the tasks of one job (atomics; `ok`
// entries are written by one task each). TierJobs is thread-safe. claim_stores,
// ProbedLookups and NegativeAnswers are not: the tier calls them under its own
// lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/status.h"
#include "offload/tiers/common/io_thread_pool.h"
#include "offload/tiers/common/secondary_tier.h"

namespace strata::offload {

using ChunkKeySet = std::unordered_set<ChunkKey, kv::BlockHashHasher>;

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

// A tier's I/O threads and the jobs they run. Declare it after the state its
// tasks touch: destruction runs every queued task, then joins the threads.
class TierJobs {
 public:
  // One key's work, on an I/O thread: sets state.ok[key_idx], adds to
  // state.bytes.
  using KeyTask = std::function<void(TierJobState& state, size_t key_idx)>;

  TierJobs(int num_read_threads, int num_write_threads)
      : pool_(num_read_threads, num_write_threads) {}

  // Runs `task` on the write queue for each of `key_idxs` (the keys to write;
  // the tier has settled the others). With none, the job finishes at once.
  void run_store(std::shared_ptr<TierJobState> state, const std::vector<size_t>& key_idxs,
                 const KeyTask& task);
  // Runs `task` on the read queue for every key of the job.
  void run_load(std::shared_ptr<TierJobState> state, const KeyTask& task);
  // Work that belongs to no job (probes).
  void submit(IoThreadPool::Queue queue, std::function<void()> work) {
    pool_.submit(queue, std::move(work));
  }

  // Results of the jobs finished since the last call (SecondaryTier::poll_finished).
  std::vector<TierJobResult> poll_finished();
  // Blocks until no work is queued or running (SecondaryTier::drain).
  void wait_idle() { pool_.wait_idle(); }
  // Sets load_seconds and store_seconds of a stats snapshot.
  void fill_seconds(TierStats& stats) const;

 private:
  void run(std::shared_ptr<TierJobState> state, const std::vector<size_t>& key_idxs,
           IoThreadPool::Queue queue, bool is_load, const KeyTask& task);
  void finish(TierJobState& state, bool is_load);

  mutable std::mutex mu_;
  std::vector<TierJobResult> finished_;
  double load_seconds_ = 0;
  double store_seconds_ = 0;
  IoThreadPool pool_;  // last: threads joined before the results above go
};

// The keys of a store job that need writing (returned as indices): those the
// tier neither holds (`is_held`) nor is writing already (`storing`, which
// they join). The others are marked ok and counted in stats.stores_skipped.
std::vector<size_t> claim_stores(TierJobState& state, ChunkKeySet& storing, TierStats& stats,
                                 const std::function<bool(const ChunkKey&)>& is_held);

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

// What a tier that probes unknown keys knows about the keys it does not hold.
// A lookup of such a key starts a probe (kRetry until it ends); a probe that
// finds nothing, or a failed load, leaves a negative answer (kMiss until it
// expires); a key being stored answers kRetry.
class ProbedLookups {
 public:
  explicit ProbedLookups(int64_t miss_ttl_ms) : misses_(miss_ttl_ms) {}

  // The answer to a lookup of `key`: kHit when the tier holds it (`is_held`),
  // kRetry while its store or probe is in flight, kMiss while a negative
  // answer stands; otherwise kRetry, the key is now being probed and
  // `*start_probe` is set: the caller submits the probe. Counts answered
  // lookups and hits in `stats`.
  LookupResult answer(const ChunkKey& key, bool is_held, TierStats& stats, bool* start_probe);

  // claim_stores over the keys being stored here.
  std::vector<size_t> claim_stores(TierJobState& state, TierStats& stats,
                                   const std::function<bool(const ChunkKey&)>& is_held) {
    return offload::claim_stores(state, storing_, stats, is_held);
  }
  void end_store(const ChunkKey& key) { storing_.erase(key); }
  // The probe of `key` ended; absent (`is_present` false), it leaves a
  // negative answer.
  void end_probe(const ChunkKey& key, bool is_present);
  // The tier now holds `key`.
  void forget_miss(const ChunkKey& key) { misses_.erase(key); }
  // A load of `key` failed: the next lookup says kMiss.
  void remember_miss(const ChunkKey& key) { misses_.remember(key, NegativeAnswers::Clock::now()); }

 private:
  ChunkKeySet probing_;
  ChunkKeySet storing_;
  NegativeAnswers misses_;
};

bool should_log_failure(int64_t num_failures);

// Warns, when should_log_failure() says so, that a chunk could not move:
//   "<tier> tier: <op> of chunk <hex> failed: <why> (<n> <op> failures so far<note>)"
// Does nothing for num_failures 0 (the chunk moved).
void warn_chunk_failure(std::string_view tier, std::string_view op, const ChunkKey& key,
                        std::string_view why, int64_t num_failures, std::string_view note = "");

// Every secondary tier's startup check: the format has a payload and the
// region's slots hold exactly one. Messages start "<tier> tier: ".
Status check_format_and_region(std::string_view tier, const ChunkFormat& format,
                               const HostRegion& region);

}  // namespace strata::offload
