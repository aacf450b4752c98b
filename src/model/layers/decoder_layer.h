// One pre-norm decoder layer, as every supported family wires it:
//   x += attention(input_norm(x));  x += feed_forward(post_attention_norm(x))
// The feed-forward block is chosen by the architecture spec
// (FeedForwardKind): a gated MLP, or on a mixture-of-experts model's sparse
// layers (MoeConfig::is_sparse_layer) a MoeLayer.
// Immutable after load; forward() runs on the engine thread.
#pragma once

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "model/arch/architecture.h"
#include "model/layers/attention.h"
#include "model/layers/gated_mlp.h"
#include "model/layers/moe.h"
#include "model/layers/rms_norm.h"

namespace strata::model {

class DecoderLayer {
 public:
  DecoderLayer() = default;
  // Loads layer `layer_idx` ("model.layers.<i>.") of `spec`'s wiring.
  static StatusOr<DecoderLayer> load(const WeightSource& weights, const ArchitectureSpec& spec,
                                     const ModelConfig& config, int64_t layer_idx);

  // Updates the residual stream ctx.workspace.residual() [num_tokens, hidden].
  void forward(const ForwardContext& ctx, int64_t layer_idx) const;

  const AttentionLayer& attention() const { return attention_; }
  // Bytes of weights one decoded token reads (a MoE layer's active experts).
  int64_t weight_bytes() const;

 private:
  RmsNorm input_norm_, post_attention_norm_;
  AttentionLayer attention_;
  GatedMlp mlp_;                   // dense layers
  std::unique_ptr<MoeLayer> moe_;  // sparse layers (mlp_ unused)
};

}  // namespace strata::model
