#include "model/arch/architecture.h"

#include "base/check.h"

namespace strata::model {

std::span<const ArchitectureSpec* const> all_architectures() {
  static const ArchitectureSpec* const kAll[] = {
      &llama_architecture(),   &qwen2_architecture(),     &qwen3_architecture(),
      &mistral_architecture(), &qwen3_moe_architecture(), &qwen2_moe_architecture(),
      &mixtral_architecture(),
  };
  return kAll;
}

ArchitectureSpec derived(const ArchitectureSpec& base, Architecture arch, const char* hf_name,
                         const char* model_type, const char* gguf_name) {
  ArchitectureSpec spec = base;
  spec.arch = arch;
  spec.hf_name = hf_name;
  spec.model_type = model_type;
  spec.gguf_name = gguf_name;
  spec.gguf_experts_of = nullptr;
  return spec;
}

ArchitectureSpec with_experts(ArchitectureSpec spec, const MoeNames& names) {
  spec.feed_forward = FeedForwardKind::kMixtureOfExperts;
  spec.moe = names;
  return spec;
}

MoeNames qwen_moe_names(bool shared_expert) {
  return {.block = "mlp",
          .router = "gate",
          .experts = "experts",
          .gate = "gate_proj",
          .up = "up_proj",
          .down = "down_proj",
          .shared_expert = shared_expert,
          .always_renormalize = false,
          .num_experts_key = "num_experts",
          .expert_intermediate_key = "moe_intermediate_size"};
}

const ArchitectureSpec& architecture_spec(Architecture arch) {
  for (const ArchitectureSpec* spec : all_architectures()) {
    if (spec->arch == arch) return *spec;
  }
  STRATA_CHECK(false) << "architecture " << static_cast<int>(arch) << " has no spec";
  return llama_architecture();
}

}  // namespace strata::model
