#include "offload/tiers/common/tier_bookkeeping.h"

#include <string>

#include "base/check.h"
#include "base/log.h"

namespace strata::offload {
namespace {

// Negative answers stay in memory this long past their expiry so that one
// produced by a probe is delivered at least once even with a ttl of 0.
constexpr auto kSweepGrace = std::chrono::seconds(10);

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::shared_ptr<TierJobState> make_job_state(TierJob job, const HostRegion& region) {
  STRATA_CHECK(job.keys.size() == job.slots.size())
      << "job " << job.job_id << ": " << job.keys.size() << " keys, " << job.slots.size()
      << " slots";
  for (int64_t slot : job.slots) {
    STRATA_CHECK(slot >= 0 && slot < region.num_slots)
        << "job " << job.job_id << ": slot " << slot << " of " << region.num_slots;
  }
  auto state = std::make_shared<TierJobState>();
  state->ok.assign(job.keys.size(), 0);
  state->job = std::move(job);
  return state;
}

void mark_job_started(TierJobState& state) {
  int64_t expected = 0;
  state.first_start_ns.compare_exchange_strong(expected, steady_now_ns());
}

TierJobResult job_result(const TierJobState& state) {
  TierJobResult result;
  result.job_id = state.job.job_id;
  result.ok.assign(state.ok.begin(), state.ok.end());
  result.bytes = state.bytes.load();
  const int64_t start_ns = state.first_start_ns.load();
  result.seconds = start_ns == 0 ? 0.0 : static_cast<double>(steady_now_ns() - start_ns) * 1e-9;
  return result;
}

void TierJobs::run_store(std::shared_ptr<TierJobState> state, const std::vector<size_t>& key_idxs,
                         const KeyTask& task) {
  run(std::move(state), key_idxs, IoThreadPool::Queue::kWrite, /*is_load=*/false, task);
}

void TierJobs::run_load(std::shared_ptr<TierJobState> state, const KeyTask& task) {
  std::vector<size_t> key_idxs(state->job.keys.size());
  for (size_t i = 0; i < key_idxs.size(); ++i) key_idxs[i] = i;
  run(std::move(state), key_idxs, IoThreadPool::Queue::kRead, /*is_load=*/true, task);
}

void TierJobs::run(std::shared_ptr<TierJobState> state, const std::vector<size_t>& key_idxs,
                   IoThreadPool::Queue queue, bool is_load, const KeyTask& task) {
  if (key_idxs.empty()) return finish(*state, is_load);
  state->remaining = static_cast<int64_t>(key_idxs.size());
  for (size_t i : key_idxs) {
    pool_.submit(queue, [this, state, i, is_load, task] {
      mark_job_started(*state);
      task(*state, i);
      if (state->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) finish(*state, is_load);
    });
  }
}

void TierJobs::finish(TierJobState& state, bool is_load) {
  TierJobResult result = job_result(state);
  std::lock_guard<std::mutex> lock(mu_);
  (is_load ? load_seconds_ : store_seconds_) += result.seconds;
  finished_.push_back(std::move(result));
}

std::vector<TierJobResult> TierJobs::poll_finished() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TierJobResult> out;
  out.swap(finished_);
  return out;
}

void TierJobs::fill_seconds(TierStats& stats) const {
  std::lock_guard<std::mutex> lock(mu_);
  stats.load_seconds = load_seconds_;
  stats.store_seconds = store_seconds_;
}

std::vector<size_t> claim_stores(TierJobState& state, ChunkKeySet& storing, TierStats& stats,
                                 const std::function<bool(const ChunkKey&)>& is_held) {
  std::vector<size_t> to_write;
  for (size_t i = 0; i < state.job.keys.size(); ++i) {
    const ChunkKey& key = state.job.keys[i];
    // Held, or being written by an earlier job (or earlier in this one).
    if (is_held(key) || !storing.insert(key).second) {
      state.ok[i] = 1;
      ++stats.stores_skipped;
      continue;
    }
    to_write.push_back(i);
  }
  return to_write;
}

LookupResult ProbedLookups::answer(const ChunkKey& key, bool is_held, TierStats& stats,
                                   bool* start_probe) {
  const NegativeAnswers::Clock::time_point now = NegativeAnswers::Clock::now();
  misses_.sweep(now);
  if (is_held) {
    ++stats.chunk_lookups;
    ++stats.chunk_hits;
    return LookupResult::kHit;
  }
  if (storing_.count(key) != 0 || probing_.count(key) != 0) return LookupResult::kRetry;
  if (misses_.take(key, now)) {
    ++stats.chunk_lookups;
    return LookupResult::kMiss;
  }
  probing_.insert(key);
  *start_probe = true;
  return LookupResult::kRetry;
}

void ProbedLookups::end_probe(const ChunkKey& key, bool is_present) {
  probing_.erase(key);
  if (!is_present) misses_.remember(key, NegativeAnswers::Clock::now());
}

bool should_log_failure(int64_t num_failures) {
  return num_failures <= 8 || (num_failures & (num_failures - 1)) == 0;
}

void warn_chunk_failure(std::string_view tier, std::string_view op, const ChunkKey& key,
                        std::string_view why, int64_t num_failures, std::string_view note) {
  if (num_failures <= 0 || !should_log_failure(num_failures)) return;
  STRATA_LOG(kWarning) << tier << " tier: " << op << " of chunk " << key.to_hex()
                       << " failed: " << why << " (" << num_failures << " " << op
                       << " failures so far" << note << ")";
}

Status check_format_and_region(std::string_view tier, const ChunkFormat& format,
                               const HostRegion& region) {
  const std::string prefix = std::string(tier) + " tier: ";
  const int64_t payload_bytes = format.payload_bytes();
  if (payload_bytes <= 0) {
    return invalid_argument(prefix + "chunk format '" + format.namespace_string() +
                            "' has an empty payload");
  }
  if (region.slot_bytes != payload_bytes || region.num_slots < 0 ||
      (region.num_slots > 0 && region.base == nullptr)) {
    return invalid_argument(prefix + "host region slots are " + std::to_string(region.slot_bytes) +
                            " bytes; the chunk payload is " + std::to_string(payload_bytes));
  }
  return Status::ok_status();
}

void NegativeAnswers::remember(const ChunkKey& key, Clock::time_point now) {
  const Clock::time_point expires = now + ttl_;
  answers_[key] = Answer{expires, false};
  sweep_order_.emplace_back(expires + kSweepGrace, key);
}

bool NegativeAnswers::take(const ChunkKey& key, Clock::time_point now) {
  auto it = answers_.find(key);
  if (it == answers_.end()) return false;
  if (!it->second.is_delivered || now < it->second.expires) {
    it->second.is_delivered = true;
    return true;
  }
  answers_.erase(it);
  return false;
}

void NegativeAnswers::sweep(Clock::time_point now) {
  while (!sweep_order_.empty() && sweep_order_.front().first <= now) {
    auto it = answers_.find(sweep_order_.front().second);
    if (it != answers_.end() && it->second.expires + kSweepGrace <= now) answers_.erase(it);
    sweep_order_.pop_front();
  }
}

}  // namespace strata::offload
