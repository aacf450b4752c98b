// Llama 2 / 3.x (LlamaForCausalLM): plain pre-norm decoder layers; GGUF files
// store q/k rows interleaved for rope.
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& llama_architecture() {
  static const ArchitectureSpec kSpec{
      .arch = Architecture::kLlama,
      .hf_name = "LlamaForCausalLM",
      .model_type = "llama",
      .gguf_name = "llama",
      .gguf_rope_style = ops::RopeStyle::kInterleaved,
      .default_max_position_embeddings = 2048,
      .default_head_dim = 0,
      .default_bos_token_id = 1,
      .default_eos_token_id = 2,
      .qkv_bias = false,
      .attention_bias_means_o_proj = true,
      .qk_norm = false,
      .sliding_window = SlidingWindowSource::kNone,
      .default_sliding_window = 0,
      .feed_forward = FeedForwardKind::kGatedMlp,
  };
  return kSpec;
}

}  // namespace strata::model
