// The single run-time dispatch point of the ops module.
#include <emmintrin.h>  // _mm_clflush, _mm_mfence: SSE2, part of baseline x86-64

#include "base/cpu_features.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/panels.h"

namespace strata::ops::cpu {

bool avx512_supported() {
  const CpuFeatures& f = cpu_features();
  return avx512_kernels() != nullptr && f.has_avx512() && f.avx512_bf16 && f.fma && f.f16c;
}

bool avx512_vnni_supported() {
  const CpuFeatures& f = cpu_features();
  return f.has_avx512() && f.avx512_vnni && f.fma && f.f16c;
}

bool is_avx512_table(const KernelTable& t) {
  return &t == avx512_kernels() || &t == avx512_vnni_kernels();
}

bool avx2_supported() {
  const CpuFeatures& f = cpu_features();
  return f.avx2 && f.fma && f.f16c;
}

bool avx2_vnni_supported() { return avx2_supported() && cpu_features().avx_vnni; }

// The widest table the CPU runs: AVX-512 with BF16, else AVX-512 with VNNI,
// else AVX2 with AVX-VNNI, else AVX2, else portable.
const KernelTable& active_kernels() {
  static const KernelTable* table = avx512_supported()        ? avx512_kernels()
                                    : avx512_vnni_supported() ? avx512_vnni_kernels()
                                    : avx2_vnni_supported()   ? &avx2_vnni_kernels()
                                    : avx2_supported()        ? &avx2_kernels()
                                                              : &generic_kernels();
  return *table;
}

bool every_lowbit_type(tensor::DType t) { return tensor::is_low_bit_quant(t); }

bool panels_in_use(tensor::DType w_dtype) {
  // The AVX-512 panel kernels need VNNI (vpdpbusd); the AVX2 one does not.
  static const bool on = active_kernels().matmul_panels_range != nullptr &&
                         (!is_avx512_table(active_kernels()) || cpu_features().avx512_vnni);
  return on && has_panel_layout(w_dtype);
}

void evict_from_caches(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t i = 0; i < bytes; i += 64) _mm_clflush(c + i);
  if (bytes > 0) _mm_clflush(c + bytes - 1);  // the last line when p is not line-aligned
  _mm_mfence();
}

}  // namespace strata::ops::cpu
