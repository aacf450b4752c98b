#include "spec_decode/draft_controller.h"

#include <algorithm>

#include "spec_decode/ngram_proposer.h"

namespace strata::spec_decode {
namespace {

// Positions the n-gram search looks back over: bounded so a long context
// never makes proposing cost more than a small fraction of a decode step.
constexpr int64_t kSearchWindow = 8192;

}  // namespace

DraftController::DraftController(const SpeculativeConfig& config)
    : config_(config), draft_len_(config.num_speculative_tokens) {}

std::vector<int32_t> DraftController::propose(std::span<const int32_t> tokens,
                                              int64_t max_drafts) {
  const int64_t k = next_draft_len(max_drafts);
  if (k <= 0 || config_.method != SpeculativeMethod::kNgram) return {};
  return propose_ngram(tokens, {.min_n = config_.prompt_lookup_min,
                                .max_n = config_.prompt_lookup_max,
                                .k = k,
                                .max_window = kSearchWindow});
}

int64_t DraftController::next_draft_len(int64_t max_drafts) {
  if (cooldown_ > 0) {
    --cooldown_;
    return 0;
  }
  return std::max<int64_t>(0, std::min(draft_len_, max_drafts));
}

void DraftController::on_verified(int64_t num_drafts, int64_t num_accepted) {
  if (num_drafts <= 0) return;
  acceptance_rate_ = (1.0 - kAcceptanceWeight) * acceptance_rate_ +
                     kAcceptanceWeight * static_cast<double>(num_accepted) /
                         static_cast<double>(num_drafts);
  // A fruitless verify has its own back-off; the rate it leaves stays at the
  // bar, so one good verify after either pause ends it.
  if (num_accepted == 0) acceptance_rate_ = std::max(acceptance_rate_, kMinAcceptanceRate);
  if (num_accepted == 0 || acceptance_rate_ < kMinAcceptanceRate) {
    misses_ = std::min<int64_t>(misses_ + 1, 6);
    cooldown_ = std::min<int64_t>((int64_t{1} << misses_) - 1, kMaxCooldownSteps);
    draft_len_ = num_accepted == 0 ? 1 : std::min(num_accepted + 1, config_.num_speculative_tokens);
    return;
  }
  misses_ = 0;
  draft_len_ = num_accepted == num_drafts
                   ? std::min(draft_len_ + 1, config_.num_speculative_tokens)
                   : std::min(num_accepted + 1, config_.num_speculative_tokens);
}

}  // namespace strata::spec_decode
