#include "model/layers/workspace.h"

#include <algorithm>

namespace strata::model {

Workspace::Workspace(const ModelConfig& c, backend::Backend& backend)
    : backend_(&backend),
      hidden_(c.hidden_size),
      q_dim_(c.num_attention_heads * c.head_dim),
      kv_dim_(c.num_key_value_heads * c.head_dim),
      intermediate_(std::max({c.intermediate_size, c.moe.moe_intermediate_size,
                              c.moe.shared_expert_intermediate_size})),
      num_experts_(c.moe.num_experts),
      top_k_(c.moe.num_experts_per_tok) {
  if (num_experts_ > 0) {
    std::vector<int32_t> moe_layers;
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
      if (c.moe.is_sparse_layer(i)) moe_layers.push_back(static_cast<int32_t>(i));
    }
    expert_load_ = ExpertLoad(moe_layers, c.num_hidden_layers, num_experts_);
    const int64_t rows = ops::kGroupedMaxRows * (top_k_ + 1);
    grouped_x_ = floats(rows * hidden_);
    grouped_gate_up_ = floats(rows * 2 * intermediate_);
    grouped_act_ = floats(rows * intermediate_);
    grouped_out_ = floats(rows * hidden_);
  }
}

void Workspace::reserve(int64_t num_tokens, int64_t num_logits) {
  if (num_tokens > capacity_tokens_) {
    // Grow geometrically so a run of slightly larger steps reallocates rarely.
    const int64_t t = std::max(num_tokens, capacity_tokens_ * 3 / 2);
    const int64_t widest = std::max({hidden_, q_dim_, kv_dim_, intermediate_});
    residual_ = floats(t * hidden_);
    normed_ = floats(t * hidden_);
    block_out_ = floats(t * hidden_);
    qkv_ = floats(t * (q_dim_ + 2 * kv_dim_));
    q_ = floats(t * q_dim_);
    k_ = floats(t * kv_dim_);
    v_ = floats(t * kv_dim_);
    attn_ = floats(t * q_dim_);
    gate_up_ = floats(t * 2 * intermediate_);
    act_ = floats(t * intermediate_);
    split_scratch_ = floats(t * widest);
    if (num_experts_ > 0) {
      router_logits_ = floats(t * num_experts_);
      routed_experts_ = backend_->allocate(tensor::DType::kI32, t * top_k_);
      routed_weights_ = floats(t * top_k_);
      expert_rows_ = floats(t * hidden_);
      expert_out_ = floats(t * hidden_);
      shared_gate_ = floats(t);
    }
    capacity_tokens_ = t;
  }
  if (num_logits > capacity_logits_) {
    const int64_t l = std::max(num_logits, capacity_logits_ * 3 / 2);
    final_rows_ = floats(l * hidden_);
    capacity_logits_ = l;
  }
}

}  // namespace strata::model
