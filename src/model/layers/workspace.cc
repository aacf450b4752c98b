#include "model/layers/workspace.h"

#include <algorithm>

namespace strata::model {

Workspace::Workspace(const ModelConfig& c, backend::Backend& backend)
    : backend_(&backend),
      hidden_(c.hidden_size),
      q_dim_(c.num_attention_heads * c.head_dim),
      kv_dim_(c.num_key_value_heads * c.head_dim),
      intermediate_(c.intermediate_size) {}

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
    capacity_tokens_ = t;
  }
  if (num_logits > capacity_logits_) {
    const int64_t l = std::max(num_logits, capacity_logits_ * 3 / 2);
    final_rows_ = floats(l * hidden_);
    capacity_logits_ = l;
  }
}

}  // namespace strata::model
