#include "offload/tiers/common/retrying_tier.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/log.h"
#include "offload/tiers/common/tier_bookkeeping.h"

namespace strata::offload {
namespace {

// SecondaryTier that is down until its factory succeeds (behaviour in
// retrying_tier.h). inner_ is written once, by the engine thread under mu_;
// the engine thread reads it without the lock, stats() under it.
class RetryingTier final : public SecondaryTier {
 public:
  RetryingTier(std::string name, TierFactory factory, const TierRetryConfig& retry,
               const Status& first_error)
      : name_(std::move(name)), factory_(std::move(factory)), retry_(retry) {
    down_stats_.tier = name_;
    down_stats_.start_failures = 1;
    STRATA_LOG(kError) << name_ << " tier: cannot start: " << first_error.message()
                       << ". Serving without it (its tokens are recomputed); retrying in "
                       << retry_.initial_ms << " ms";
    thread_ = std::thread([this] { retry_loop(); });
  }

  ~RetryingTier() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      is_stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    adopt();
    if (inner_ != nullptr) inner_->drain();
  }

  const std::string& name() const override { return name_; }

  LookupResult lookup(const ChunkKey& key) override {
    if (adopt()) return inner_->lookup(key);
    return down_lookup();
  }

  LookupResult lookup_for(const ChunkKey& key, const TierLookupContext& context) override {
    if (adopt()) return inner_->lookup_for(key, context);
    return down_lookup();
  }

  void submit_store(TierJob job) override {
    if (adopt()) return inner_->submit_store(std::move(job));
    {
      std::lock_guard<std::mutex> lock(mu_);
      down_stats_.stores_skipped += static_cast<int64_t>(job.keys.size());
    }
    fail_job(job);
  }

  void submit_load(TierJob job) override {
    if (adopt()) return inner_->submit_load(std::move(job));
    {
      std::lock_guard<std::mutex> lock(mu_);
      down_stats_.load_failures += static_cast<int64_t>(job.keys.size());
    }
    fail_job(job);
  }

  std::vector<TierJobResult> poll_finished() override {
    std::vector<TierJobResult> out;
    out.swap(down_results_);
    if (adopt()) {
      std::vector<TierJobResult> more = inner_->poll_finished();
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }

  void drain() override {
    if (adopt()) inner_->drain();
  }

  std::vector<ChunkKey> take_removed() override {
    return adopt() ? inner_->take_removed() : std::vector<ChunkKey>{};
  }

  TierStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    // Up as soon as the retry thread has the tier, adopted or not yet.
    const SecondaryTier* up = inner_ != nullptr ? inner_.get() : started_.get();
    if (up == nullptr) {
      TierStats out = down_stats_;
      out.is_up = false;
      return out;
    }
    TierStats out = up->stats();
    out.chunk_lookups += down_stats_.chunk_lookups;
    out.stores_skipped += down_stats_.stores_skipped;
    out.load_failures += down_stats_.load_failures;
    out.start_failures = down_stats_.start_failures;
    return out;
  }

 private:
  // Engine thread: takes the started tier if the retry thread has one. True
  // when inner_ is set.
  bool adopt() {
    if (inner_ != nullptr) return true;
    if (!has_started_.load(std::memory_order_acquire)) return false;
    std::lock_guard<std::mutex> lock(mu_);
    inner_ = std::move(started_);
    return true;
  }

  LookupResult down_lookup() {
    std::lock_guard<std::mutex> lock(mu_);
    ++down_stats_.chunk_lookups;
    return LookupResult::kMiss;
  }

  void fail_job(const TierJob& job) {
    TierJobResult result;
    result.job_id = job.job_id;
    result.ok.assign(job.keys.size(), false);
    down_results_.push_back(std::move(result));
  }

  // Retry thread.
  void retry_loop() {
    int64_t delay_ms = std::max<int64_t>(retry_.initial_ms, 1);
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(delay_ms), [this] { return is_stopping_; });
        if (is_stopping_) return;
      }
      StatusOr<std::unique_ptr<SecondaryTier>> tier = factory_();
      std::lock_guard<std::mutex> lock(mu_);
      if (tier.ok()) {
        started_ = std::move(tier).value();
        has_started_.store(true, std::memory_order_release);
        STRATA_LOG(kWarning) << name_ << " tier: up after " << down_stats_.start_failures
                             << " failed starts; serving from it again";
        return;
      }
      const int64_t num_failures = ++down_stats_.start_failures;
      delay_ms = std::min(delay_ms * 2, std::max<int64_t>(retry_.max_ms, 1));
      if (should_log_failure(num_failures)) {
        STRATA_LOG(kError) << name_ << " tier: still down (" << num_failures
                           << " failed starts): " << tier.status().message() << "; retrying in "
                           << delay_ms << " ms";
      }
    }
  }

  const std::string name_;
  const TierFactory factory_;
  const TierRetryConfig retry_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool is_stopping_ = false;
  std::unique_ptr<SecondaryTier> started_;  // handed from the retry thread to adopt()
  std::atomic<bool> has_started_{false};
  TierStats down_stats_;                    // counters while down; start_failures

  std::unique_ptr<SecondaryTier> inner_;        // engine thread (written under mu_)
  std::vector<TierJobResult> down_results_;     // engine thread
  std::thread thread_;
};

}  // namespace

bool is_transient_start_error(const Status& status) {
  return status.code() == StatusCode::kUnavailable;
}

StatusOr<std::unique_ptr<SecondaryTier>> start_tier_or_retry(const std::string& name,
                                                             TierFactory factory,
                                                             const TierRetryConfig& retry) {
  StatusOr<std::unique_ptr<SecondaryTier>> tier = factory();
  if (tier.ok() || !is_transient_start_error(tier.status())) return tier;
  return std::unique_ptr<SecondaryTier>(
      new RetryingTier(name, std::move(factory), retry, tier.status()));
}

}  // namespace strata::offload
