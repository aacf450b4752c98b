// The single run-time dispatch point of the ops module.
#include "base/cpu_features.h"
#include "ops/cpu/kernels.h"

namespace strata::ops::cpu {

bool avx512_supported() {
  const CpuFeatures& f = cpu_features();
  return avx512_kernels() != nullptr && f.has_avx512() && f.avx512_bf16 && f.fma && f.f16c;
}

const KernelTable& active_kernels() {
  static const KernelTable* table = avx512_supported() ? avx512_kernels() : &generic_kernels();
  return *table;
}

}  // namespace strata::ops::cpu
