// A mixture-of-experts feed-forward block (Qwen3-MoE, Qwen2-MoE, Mixtral):
// a router picks each token's top-k gated-MLP experts (ops::moe_route), the
// token's output is their outputs weighted by the routing probabilities, plus,
// for Qwen2-MoE, a shared expert every token runs, scaled by
// sigmoid(shared_expert_gate · x).
//
// Tokens are grouped by expert: each expert runs one matmul over the rows of
// the tokens routed to it (decode: one row per selected expert; prefill: a
// GEMM per expert), then its rows are scatter-added with their weights. The
// shared expert is run as one more expert that every token selects (the
// "fused shared expert" layout), so both go through the same loop. Experts
// that receive no token cost nothing; decode reads only the selected experts'
// weights.
//
// Routing depends on the token's own row only: router logits are computed in
// blocks of at most ops' decode rows, whose results do not depend on the
// batch, so a token gets the same experts whatever the batch around it.
// Immutable after load; forward() runs on the engine thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/arch/architecture.h"
#include "model/layers/forward_context.h"
#include "model/layers/fused_linear.h"
#include "model/model_config.h"

namespace strata::model {

class MoeLayer {
 public:
  MoeLayer() = default;
  // Loads layer `prefix` ("model.layers.<i>.") with the tensor names of
  // spec.moe; every expert's gate/up pair is fused.
  static StatusOr<MoeLayer> load(const WeightSource& weights, const std::string& prefix,
                                 const ArchitectureSpec& spec, const ModelConfig& config);

  // in: [num_tokens, hidden] (normed); out: [num_tokens, hidden].
  void forward(const ForwardContext& ctx, const float* in, float* out) const;

  // Bytes of weights one token reads: router, top_k routed experts, the
  // shared expert.
  int64_t active_weight_bytes() const;
  int64_t num_experts() const { return static_cast<int64_t>(experts_.size()); }

 private:
  struct Expert {
    FusedLinear gate_up;     // [2 intermediate, hidden]
    ops::MatmulWeight down;  // [hidden, intermediate]
    int64_t intermediate = 0;
  };
  // Runs `expert` over rows [0, n) of ctx.workspace.expert_rows() into expert_out().
  void run_expert(const ForwardContext& ctx, const Expert& expert, int64_t n) const;
  void route(const ForwardContext& ctx, const float* in) const;
  // Fills the workspace's routed rows grouped by expert (the shared expert's
  // rows last) from this step's routing.
  void group_by_expert(const ForwardContext& ctx) const;
  // Runs `expert` over rows [0, n) of `rows` and adds their weighted outputs to out.
  void run_and_add(const ForwardContext& ctx, const Expert& expert, const RoutedRow* rows,
                   int64_t n, const float* in, float* out) const;

  int64_t hidden_ = 0, top_k_ = 0;
  bool renormalize_ = false;
  ops::MatmulWeight router_;     // [num_experts, hidden]
  std::vector<Expert> experts_;  // routed experts
  bool has_shared_ = false;
  Expert shared_;                  // run by every token
  ops::MatmulWeight shared_gate_;  // [1, hidden]
};

}  // namespace strata::model
