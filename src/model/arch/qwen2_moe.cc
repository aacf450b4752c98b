// Qwen2-MoE (Qwen2MoeForCausalLM; Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2
// attention (q/k/v biases), routed experts plus a shared expert every token
// runs, scaled by sigmoid(shared_expert_gate(x)).
#include "model/arch/architecture.h"

namespace strata::model {

const ArchitectureSpec& qwen2_moe_architecture() {
  static const ArchitectureSpec kSpec =
      with_experts(derived(qwen2_architecture(), Architecture::kQwen2Moe, "Qwen2MoeForCausalLM",
                           "qwen2_moe", "qwen2moe"),
                   qwen_moe_names(/*shared_expert=*/true));
  return kSpec;
}

}  // namespace strata::model
