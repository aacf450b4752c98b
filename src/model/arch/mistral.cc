// Mistral (MistralForCausalLM): Llama wiring with a sliding attention window
// from the config (v0.1: 4096; v0.2+: null, full attention). Loaded from
// safetensors only: GGUF files of Mistral say "llama".
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& mistral_architecture() {
  static const ArchitectureSpec kSpec{
      .arch = Architecture::kMistral,
      .hf_name = "MistralForCausalLM",
      .model_type = "mistral",
      .gguf_name = nullptr,
      .gguf_rope_style = ops::RopeStyle::kNeox,
      .default_max_position_embeddings = 4096 * 32,
      .default_head_dim = 0,
      .default_bos_token_id = 1,
      .default_eos_token_id = 2,
      .qkv_bias = false,
      .attention_bias_means_o_proj = false,
      .qk_norm = false,
      .sliding_window = SlidingWindowSource::kFromConfig,
      .default_sliding_window = 4096,
      .feed_forward = FeedForwardKind::kGatedMlp,
  };
  return kSpec;
}

}  // namespace strata::model
