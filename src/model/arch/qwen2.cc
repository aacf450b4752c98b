// Qwen2 / Qwen2.5 (Qwen2ForCausalLM): Llama wiring with biases on the q, k
// and v projections.
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& qwen2_architecture() {
  static const ArchitectureSpec kSpec{
      .arch = Architecture::kQwen2,
      .hf_name = "Qwen2ForCausalLM",
      .model_type = "qwen2",
      .gguf_name = "qwen2",
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
      .feed_forward = FeedForwardKind::kGatedMlp,
  };
  return kSpec;
}

}  // namespace strata::model
