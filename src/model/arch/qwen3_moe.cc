// Qwen3-MoE (Qwen3MoeForCausalLM; Qwen3-30B-A3B, Qwen3.6-35B-A3B): Qwen3
// attention (per-head q/k norm) with routed experts on the sparse layers
// (decoder_sparse_step, mlp_only_layers); norm_topk_prob renormalises.
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& qwen3_moe_architecture() {
  static const ArchitectureSpec kSpec{
      .arch = Architecture::kQwen3Moe,
      .hf_name = "Qwen3MoeForCausalLM",
      .model_type = "qwen3_moe",
      .gguf_name = "qwen3moe",
      .gguf_rope_style = ops::RopeStyle::kNeox,
      .default_max_position_embeddings = 32768,
      .default_head_dim = 128,
      .default_bos_token_id = -1,
      .default_eos_token_id = -1,
      .qkv_bias = false,
      .attention_bias_means_o_proj = true,
      .qk_norm = true,
      .sliding_window = SlidingWindowSource::kNone,
      .default_sliding_window = 0,
      .feed_forward = FeedForwardKind::kMixtureOfExperts,
      .moe = {.block = "mlp",
              .router = "gate",
              .experts = "experts",
              .gate = "gate_proj",
              .up = "up_proj",
              .down = "down_proj",
              .shared_expert = false,
              .always_renormalize = false,
              .num_experts_key = "num_experts",
              .expert_intermediate_key = "moe_intermediate_size"},
      .gguf_norm_topk_prob = true,
  };
  return kSpec;
}

}  // namespace strata::model
