#include "offload/tiers/tier_bookkeeping.h"

#include "base/check.h"

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

bool should_log_failure(int64_t num_failures) {
  return num_failures <= 8 || (num_failures & (num_failures - 1)) == 0;
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
