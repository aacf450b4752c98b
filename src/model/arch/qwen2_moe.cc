// Qwen2-MoE (Qwen2MoeForCausalLM; Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2
// attention (q/k/v biases), routed experts plus a shared expert every token
// runs, scaled by sigmoid(shared_expert_gate(x)).
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& qwen2_moe_architecture() {
  static const ArchitectureSpec kSpec{
      .arch = Architecture::kQwen2Moe,
      .hf_name = "Qwen2MoeForCausalLM",
      .model_type = "qwen2_moe",
      .gguf_name = "qwen2moe",
      .gguf_rope_style = ops::RopeStyle::kNeox,
      .default_max_position_embeddings = 32768,
      .default_head_dim = 0,
      .default_bos_token_id = -1,
      .default_eos_token_id = -1,
      .qkv_bias = true,
      .attention_bias_means_o_proj = false,
      .qk_norm = false,
      .sliding_window = SlidingWindowSource::kNone,
      .default_sliding_window = 0,
      .feed_forward = FeedForwardKind::kMixtureOfExperts,
      .moe = {.block = "mlp",
              .router = "gate",
              .experts = "experts",
              .gate = "gate_proj",
              .up = "up_proj",
              .down = "down_proj",
              .shared_expert = true,
              .always_renormalize = false,
              .num_experts_key = "num_experts",
              .expert_intermediate_key = "moe_intermediate_size"},
  };
  return kSpec;
}

}  // namespace strata::model
