// The gated MLP of a decoder layer: down(silu(gate(x)) * up(x)), with gate and
// up fused into one projection at load time.
// Immutable after load; forward() runs on the engine thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "model/layers/forward_context.h"
#include "model/layers/fused_linear.h"

namespace strata::model {

class GatedMlp {
 public:
  GatedMlp() = default;
  // Loads "<prefix>mlp.{gate,up,down}_proj.weight".
  static StatusOr<GatedMlp> load(const WeightSource& weights, const std::string& prefix,
                                 int64_t hidden, int64_t intermediate);

  // in: [num_tokens, hidden] (normed); out: [num_tokens, hidden].
  void forward(const ForwardContext& ctx, const float* in, float* out) const;
  int64_t weight_bytes() const { return gate_up_.size_bytes() + down_.size_bytes(); }

 private:
  int64_t intermediate_ = 0;
  FusedLinear gate_up_;     // [2 intermediate, hidden]: gate rows, then up rows
  ops::MatmulWeight down_;  // [hidden, intermediate]
};

}  // namespace strata::model
