#include "engine/step_budget.h"

#include <algorithm>
#include <cmath>

namespace strata::engine {

int64_t auto_max_num_batched_tokens(int64_t prefill_flops_per_token, int64_t step_weight_bytes) {
  if (prefill_flops_per_token <= 0) return kMaxAutoStepTokens;
  const double fixed_cost =
      kFlopsPerByte * static_cast<double>(std::max<int64_t>(step_weight_bytes, 0)) +
      kStepOverheadFlops;
  const double tokens = fixed_cost / kFixedCostShare / static_cast<double>(prefill_flops_per_token);
  if (tokens >= static_cast<double>(kMaxAutoStepTokens)) return kMaxAutoStepTokens;
  const int64_t grains = static_cast<int64_t>(std::ceil(tokens / kStepTokenGrain));
  return std::clamp(grains * kStepTokenGrain, kStepTokenGrain, kMaxAutoStepTokens);
}

}  // namespace strata::engine
