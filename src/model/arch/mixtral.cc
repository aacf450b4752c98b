// Mixtral (MixtralForCausalLM): Mistral attention (a sliding window only
// when the config gives one) with `block_sparse_moe` experts w1/w3/w2 on
// every layer; the top-k probabilities are always renormalised. GGUF files
// say "llama" with llama.expert_count > 0, q/k rows permuted as Llama's.
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& mixtral_architecture() {
  static const ArchitectureSpec kSpec = [] {
    ArchitectureSpec s = with_experts(
        derived(mistral_architecture(), Architecture::kMixtral, "MixtralForCausalLM", "mixtral"),
        {.block = "block_sparse_moe",
         .router = "gate",
         .experts = "experts",
         .gate = "w1",
         .up = "w3",
         .down = "w2",
         .shared_expert = false,
         .always_renormalize = true,
         .num_experts_key = "num_local_experts",
         .expert_intermediate_key = "intermediate_size"});
    s.gguf_rope_style = ops::RopeStyle::kInterleaved;
    s.default_sliding_window = 0;
    s.gguf_experts_of = "llama";
    s.gguf_norm_topk_prob = true;
    return s;
  }();
  return kSpec;
}

}  // namespace strata::model
