// Per-request speculation policy on top of a proposer: how many drafts to
// propose this step, learned from how many were accepted before, so that
// text the proposer cannot predict costs (almost) nothing.
//
//   propose(tokens)   n-gram drafts for the request's next step (maybe none)
//   next_draft_len(m) how many drafts to ask a draft model for this step
//                     (0: none), the same policy without the lookup
//   on_verified(k, a) a verify step checked k drafts and accepted a
//
// Policy: the draft length follows acceptance (after a partial accept of a
// drafts the next proposal has a + 1; a full accept grows it by one, up to
// num_speculative_tokens). A verify step is a miss when it accepts nothing,
// or when the request's running acceptance rate (accepted / drafted tokens,
// averaged over verifies with weight kAcceptanceWeight) has fallen below
// kMinAcceptanceRate: each drafted row costs a share of a decode step (all
// of one where the forward pass is compute-bound: a small model, a full
// batch), so drafts that are mostly wrong lose time even when some are
// accepted. A fruitless verify leaves the rate at no less than the bar, so
// one good verify after a pause ends it. A miss starts a cool-down: no
// proposals for 2^misses - 1 steps (misses = consecutive misses, capped so
// the pause is at most kMaxCooldownSteps); a verify that is not a miss
// clears it. A step without a proposal costs no compute.
// Not thread-safe: the engine thread owns one per request.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "spec_decode/speculative_config.h"

namespace strata::spec_decode {

class DraftController {
 public:
  static constexpr int64_t kMaxCooldownSteps = 63;
  static constexpr double kMinAcceptanceRate = 0.4;
  static constexpr double kAcceptanceWeight = 0.25;

  explicit DraftController(const SpeculativeConfig& config);

  // Drafts to verify after `tokens` (prompt + output so far); at most
  // `max_drafts` (what max_tokens / max_model_len leave room for).
  std::vector<int32_t> propose(std::span<const int32_t> tokens, int64_t max_drafts);
  // Drafts wanted this step, at most `max_drafts` (0 during a cool-down,
  // which this call counts down). propose() calls it once.
  int64_t next_draft_len(int64_t max_drafts);
  void on_verified(int64_t num_drafts, int64_t num_accepted);

  int64_t draft_len() const { return draft_len_; }
  int64_t cooldown_steps() const { return cooldown_; }
  double acceptance_rate() const { return acceptance_rate_; }

 private:
  SpeculativeConfig config_;
  int64_t draft_len_;
  int64_t misses_ = 0;
  int64_t cooldown_ = 0;
  double acceptance_rate_ = 1.0;  // running accepted / drafted
};

}  // namespace strata::spec_decode
