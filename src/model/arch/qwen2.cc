// Qwen2 / Qwen2.5 (Qwen2ForCausalLM): Llama wiring with biases on the q, k
// and v projections; GGUF keeps q/k rows in Hugging Face order.
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& qwen2_architecture() {
  static const ArchitectureSpec kSpec = [] {
    ArchitectureSpec s =
        derived(llama_architecture(), Architecture::kQwen2, "Qwen2ForCausalLM", "qwen2", "qwen2");
    s.gguf_rope_style = ops::RopeStyle::kNeox;
    s.default_max_position_embeddings = 32768;
    s.default_bos_token_id = s.default_eos_token_id = -1;
    s.qkv_bias = true;
    s.attention_bias_means_o_proj = false;
    return s;
  }();
  return kSpec;
}

}  // namespace strata::model
