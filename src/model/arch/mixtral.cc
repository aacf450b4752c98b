// Mixtral (MixtralForCausalLM): Mistral attention (optional sliding window,
// none unless the config gives one) with `block_sparse_moe` experts w1/w3/w2
// on every layer; the top-k probabilities are always renormalised. GGUF
// files say "llama" with llama.expert_count > 0.
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& mixtral_architecture() {
  static const ArchitectureSpec kSpec{
      .arch = Architecture::kMixtral,
      .hf_name = "MixtralForCausalLM",
      .model_type = "mixtral",
      .gguf_name = nullptr,
      .gguf_rope_style = ops::RopeStyle::kInterleaved,  // the llama converter permutes q/k
      .default_max_position_embeddings = 4096 * 32,
      .default_head_dim = 0,
      .default_bos_token_id = 1,
      .default_eos_token_id = 2,
      .qkv_bias = false,
      .attention_bias_means_o_proj = false,
      .qk_norm = false,
      .sliding_window = SlidingWindowSource::kFromConfig,
      .default_sliding_window = 0,
      .feed_forward = FeedForwardKind::kMixtureOfExperts,
      .moe = {.block = "block_sparse_moe",
              .router = "gate",
              .experts = "experts",
              .gate = "w1",
              .up = "w3",
              .down = "w2",
              .shared_expert = false,
              .always_renormalize = true,
              .num_experts_key = "num_local_experts",
              .expert_intermediate_key = "intermediate_size"},
      .gguf_experts_of = "llama",
      .gguf_norm_topk_prob = true,
  };
  return kSpec;
}

}  // namespace strata::model
