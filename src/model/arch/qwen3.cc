// Qwen3 dense (Qwen3ForCausalLM): Llama wiring with a per-head RMSNorm on q
// and k before rope; head_dim 128 unless the config says otherwise.
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& qwen3_architecture() {
  static const ArchitectureSpec kSpec{
      .arch = Architecture::kQwen3,
      .hf_name = "Qwen3ForCausalLM",
      .model_type = "qwen3",
      .gguf_name = "qwen3",
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
      .feed_forward = FeedForwardKind::kGatedMlp,
  };
  return kSpec;
}

}  // namespace strata::model
