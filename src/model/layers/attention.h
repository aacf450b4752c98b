// The attention block of a decoder layer: fused QKV projection (+ biases),
// optional per-head q/k RMSNorm, rope, writing this step's K/V into the paged
// KV memory, paged attention over each sequence's context, and o_proj.
// Immutable after load; forward() runs on the engine thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/arch/architecture.h"
#include "model/layers/forward_context.h"
#include "model/layers/fused_linear.h"
#include "model/layers/rms_norm.h"
#include "model/model_config.h"

namespace strata::model {

class AttentionLayer {
 public:
  AttentionLayer() = default;
  // Loads "<prefix>self_attn.{q,k,v,o}_proj.weight" (+ q/k/v biases when
  // config.attention_bias, q_norm/k_norm when config.qk_norm, fp8 KV scales
  // when present) and fuses q/k/v.
  static StatusOr<AttentionLayer> load(const WeightSource& weights, const std::string& prefix,
                                       const ModelConfig& config);

  // in: [num_tokens, hidden] (normed); out: [num_tokens, hidden] = o_proj(attention).
  // Writes the step's K/V rows into ctx.kv's layer `layer_idx` first.
  void forward(const ForwardContext& ctx, int64_t layer_idx, const float* in, float* out) const;

  // fp8 KV scales from the checkpoint (vLLM's self_attn.k_scale / v_scale and
  // older names): stored = x / scale; 0 when absent (scales per token).
  float k_scale() const { return k_scale_; }
  float v_scale() const { return v_scale_; }
  int64_t weight_bytes() const { return qkv_.size_bytes() + o_proj_.size_bytes(); }

 private:
  // q, k, v: [num_tokens, heads, head_dim] views of this step's projections.
  void split_qkv(const ForwardContext& ctx, float** q, float** k, float** v) const;

  int64_t num_heads_ = 0, num_kv_heads_ = 0, head_dim_ = 0, sliding_window_ = 0;
  ops::RopeStyle rope_style_ = ops::RopeStyle::kNeox;
  FusedLinear qkv_;              // [q_dim + 2 kv_dim, hidden]
  std::vector<float> qkv_bias_;  // [q_dim + 2 kv_dim] or empty
  RmsNorm q_norm_, k_norm_;      // [head_dim]; unused unless has_qk_norm_
  bool has_qk_norm_ = false;
  ops::MatmulWeight o_proj_;  // [hidden, q_dim]
  float k_scale_ = 0.0f, v_scale_ = 0.0f;
};

}  // namespace strata::model
