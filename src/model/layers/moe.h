// A mixture-of-experts feed-forward block (Qwen3-MoE, Qwen2-MoE, Mixtral):
// a router picks each token's top-k gated-MLP experts (ops::moe_route), the
// token's output is their outputs weighted by the routing probabilities, plus,
// for Qwen2-MoE, a shared expert every token runs, scaled by
// sigmoid(shared_expert_gate · x).
//
// Tokens are grouped by expert (a stable counting sort). Decode steps (at
// most ops::kGroupedMaxRows tokens) run all selected experts in one pass:
// gate/up of every selected expert in one parallel region
// (backend.grouped_matmul), then down of all of them with the weighted
// scatter-add fused (grouped_matmul_scatter_add): two thread-pool dispatches
// per layer instead of two per expert. Larger steps (prefill) run one GEMM per
// expert over the rows routed to it, then scatter-add them with their
// weights. Both give every token bit for bit the same output (same kernels,
// same summation order; see ops::grouped_matmul), so batch composition does
// not change a token's result. Experts that receive no token cost nothing;
// decode reads only the selected experts' weights.
//
// The shared expert (Qwen2-MoE) runs, by default, as one more expert that
// every token selects ("fused shared expert": in decode it joins the routed
// experts' grouped pass). STRATA_MOE_SHARED_EXPERT=separate runs it after the
// routed experts as its own gated MLP, each matmul its own dispatch; both
// paths add the same terms in the same order (bit for bit the same output),
// they differ only in dispatch count (BENCHMARKS.md, "Mixture of experts").
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

  // in: [num_tokens, hidden] (normed); out: [num_tokens, hidden]. Adds the
  // step's routed experts to ctx.workspace.expert_load() under layer_idx.
  void forward(const ForwardContext& ctx, int64_t layer_idx, const float* in, float* out) const;

  // Bytes of weights one token reads: router, top_k routed experts, the
  // shared expert.
  int64_t active_weight_bytes() const;
  int64_t num_experts() const { return static_cast<int64_t>(experts_.size()); }
  bool shared_expert_fused() const { return shared_fused_; }

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
  // True when this step can run as one grouped pass (few tokens, fused gate/up).
  bool can_group(int64_t num_tokens) const;
  // The decode pass: every selected expert (and the fused shared expert) in
  // two grouped dispatches; out must be zero.
  void forward_grouped(const ForwardContext& ctx, const float* in, float* out) const;

  int64_t hidden_ = 0, top_k_ = 0;
  bool renormalize_ = false;
  ops::MatmulWeight router_;     // [num_experts, hidden]
  std::vector<Expert> experts_;  // routed experts
  bool has_shared_ = false;
  bool shared_fused_ = true;  // STRATA_MOE_SHARED_EXPERT (fused | separate)
  bool all_fused_ = true;     // every expert's gate/up is one weight
  bool decode_grouped_ = true;  // STRATA_MOE_DECODE (grouped | per-expert)
  Expert shared_;                  // run by every token
  ops::MatmulWeight shared_gate_;  // [1, hidden]
};

}  // namespace strata::model
