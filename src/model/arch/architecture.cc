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

const ArchitectureSpec& architecture_spec(Architecture arch) {
  for (const ArchitectureSpec* spec : all_architectures()) {
    if (spec->arch == arch) return *spec;
  }
  STRATA_CHECK(false) << "architecture " << static_cast<int>(arch) << " has no spec";
  return llama_architecture();
}

}  // namespace strata::model
