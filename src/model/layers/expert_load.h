// Expert-load counters of a mixture-of-experts model: how many routed token
// rows each expert of each MoE layer has received (the shared expert, which
// every token runs, is not counted), and the per-layer balance summary that
// `strata generate --bench` prints and the server's /metrics exports
// (strata:moe_expert_tokens_total).
//
// MoeLayer::forward adds to the Workspace's counters on the engine thread
// (one add per layer and step: top_k increments per token); others read a
// copy (the engine's stats snapshot).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::model {

class ExpertLoad {
 public:
  ExpertLoad() = default;
  // moe_layers: the indices of the layers that route (ascending);
  // num_layers: all decoder layers.
  ExpertLoad(const std::vector<int32_t>& moe_layers, int64_t num_layers, int64_t num_experts);

  // Counts experts[0, n) (expert ids routed in layer `layer`).
  void add(int64_t layer, const int32_t* experts, int64_t n);
  void clear();

  bool empty() const { return layers_.empty(); }
  int64_t num_experts() const { return num_experts_; }
  const std::vector<int32_t>& layers() const { return layers_; }  // MoE layer indices
  // Tokens routed to `expert` of the i-th MoE layer (layers()[i]).
  int64_t tokens(int64_t i, int64_t expert) const { return tokens_[i * num_experts_ + expert]; }

 private:
  int64_t num_experts_ = 0;
  std::vector<int32_t> layers_;
  std::vector<int32_t> row_of_layer_;  // [num_layers], -1 for dense layers
  std::vector<int64_t> tokens_;        // [layers_.size(), num_experts_]
};

// One MoE layer's balance: max_over_mean = the busiest expert's tokens over
// the mean per expert (1 = perfectly even); cv = standard deviation over mean
// of the per-expert counts (population); zero_experts = experts that got no token.
struct LayerBalance {
  int64_t layer = 0;
  int64_t total = 0;
  double max_over_mean = 0.0;
  double cv = 0.0;
  int64_t zero_experts = 0;
};
// One entry per MoE layer, in layers() order (zeros when no token was routed).
std::vector<LayerBalance> balance(const ExpertLoad& load);
// Lines for `generate --bench`: one per MoE layer and an overall line.
std::string format_balance(const ExpertLoad& load);

}  // namespace strata::model
