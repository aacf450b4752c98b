#include "model/layers/decoder_layer.h"

#include <string>

namespace strata::model {

StatusOr<DecoderLayer> DecoderLayer::load(const WeightSource& w, const ArchitectureSpec& spec,
                                          const ModelConfig& c, int64_t layer_idx) {
  DecoderLayer layer;
  const std::string p = "model.layers." + std::to_string(layer_idx) + ".";
  STRATA_ASSIGN_OR_RETURN(layer.input_norm_, RmsNorm::load(w, p + "input_layernorm.weight",
                                                           c.hidden_size, c.rms_norm_eps));
  STRATA_ASSIGN_OR_RETURN(
      layer.post_attention_norm_,
      RmsNorm::load(w, p + "post_attention_layernorm.weight", c.hidden_size, c.rms_norm_eps));
  STRATA_ASSIGN_OR_RETURN(layer.attention_, AttentionLayer::load(w, p, c));
  if (spec.feed_forward == FeedForwardKind::kMixtureOfExperts && c.moe.is_sparse_layer(layer_idx)) {
    STRATA_ASSIGN_OR_RETURN(MoeLayer moe, MoeLayer::load(w, p, spec, c));
    layer.moe_ = std::make_unique<MoeLayer>(std::move(moe));
  } else {
    STRATA_ASSIGN_OR_RETURN(layer.mlp_, GatedMlp::load(w, p, c.hidden_size, c.intermediate_size));
  }
  return layer;
}

void DecoderLayer::forward(const ForwardContext& ctx, int64_t layer_idx) const {
  Workspace& ws = ctx.workspace;
  const int64_t n = ctx.batch.num_tokens() * input_norm_.dim();
  input_norm_.apply(ctx.backend, ws.residual(), ctx.batch.num_tokens(), ws.normed());
  attention_.forward(ctx, layer_idx, ws.normed(), ws.block_out());
  ctx.backend.add_inplace(ws.residual(), ws.block_out(), n);
  post_attention_norm_.apply(ctx.backend, ws.residual(), ctx.batch.num_tokens(), ws.normed());
  if (moe_ != nullptr) {
    moe_->forward(ctx, layer_idx, ws.normed(), ws.block_out());
  } else {
    mlp_.forward(ctx, ws.normed(), ws.block_out());
  }
  ctx.backend.add_inplace(ws.residual(), ws.block_out(), n);
}

int64_t DecoderLayer::weight_bytes() const {
  return attention_.weight_bytes() +
         (moe_ != nullptr ? moe_->active_weight_bytes() : mlp_.weight_bytes());
}

}  // namespace strata::model
