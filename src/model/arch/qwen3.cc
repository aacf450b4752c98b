// Qwen3 dense (Qwen3ForCausalLM): Qwen2 without the q/k/v biases, with a
// per-head RMSNorm on q and k before rope; head_dim 128 unless the config
// says otherwise.
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& qwen3_architecture() {
  static const ArchitectureSpec kSpec = [] {
    ArchitectureSpec s =
        derived(qwen2_architecture(), Architecture::kQwen3, "Qwen3ForCausalLM", "qwen3", "qwen3");
    s.default_head_dim = 128;
    s.qkv_bias = false;
    s.attention_bias_means_o_proj = true;
    s.qk_norm = true;
    return s;
  }();
  return kSpec;
}

}  // namespace strata::model
