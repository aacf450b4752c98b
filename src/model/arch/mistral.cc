// Mistral (MistralForCausalLM): Llama wiring with a sliding attention window
// from the config (v0.1: 4096; v0.2+: null, full attention). Loaded from
// safetensors only: GGUF files of Mistral say "llama".
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& mistral_architecture() {
  static const ArchitectureSpec kSpec = [] {
    ArchitectureSpec s =
        derived(llama_architecture(), Architecture::kMistral, "MistralForCausalLM", "mistral");
    s.gguf_rope_style = ops::RopeStyle::kNeox;
    s.default_max_position_embeddings = 4096 * 32;
    s.attention_bias_means_o_proj = false;
    s.sliding_window = SlidingWindowSource::kFromConfig;
    s.default_sliding_window = 4096;
    return s;
  }();
  return kSpec;
}

}  // namespace strata::model
