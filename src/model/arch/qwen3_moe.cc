// Qwen3-MoE (Qwen3MoeForCausalLM; Qwen3-30B-A3B, Qwen3.6-35B-A3B): Qwen3
// attention (per-head q/k norm) with routed experts on the sparse layers
// (decoder_sparse_step, mlp_only_layers); norm_topk_prob renormalises
// (llama.cpp's qwen3moe graph always does).
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& qwen3_moe_architecture() {
  static const ArchitectureSpec kSpec = [] {
    ArchitectureSpec s = with_experts(derived(qwen3_architecture(), Architecture::kQwen3Moe,
                                              "Qwen3MoeForCausalLM", "qwen3_moe", "qwen3moe"),
                                      qwen_moe_names(/*shared_expert=*/false));
    s.gguf_norm_topk_prob = true;
    return s;
  }();
  return kSpec;
}

}  // namespace strata::model
