// What the CPU we run on can do, detected once at start-up. Kernels in
// ops/cpu pick their implementation from this (the single dispatch point), so
// one binary runs on any x86-64 and uses AVX-512 where it exists.
//
// STRATA_CPU=generic forces the portable path (tests use it to cover both);
// STRATA_CPU=avx2 hides AVX-512 and AVX-VNNI, STRATA_CPU=avx2_vnni hides
// AVX-512, STRATA_CPU=avx512_vnni hides AVX512-BF16 (the kernel tables of CPUs
// without them, run on this one).
#pragma once

#include <string>

namespace strata {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool avx_vnni = false;  // VEX-encoded vpdpbusd on xmm / ymm (Alder Lake, Zen 5)

  // AVX-512 F/BW/VL: the level our wide kernels need.
  bool has_avx512() const { return avx512f && avx512bw && avx512vl; }
  std::string to_string() const;
};

// Detected features, masked by STRATA_CPU. Thread-safe; computed once.
const CpuFeatures& cpu_features();

// Number of hardware threads available to this process (affinity-aware).
int num_hardware_threads();

// One line naming this CPU for caches of per-CPU measurements: cpuid vendor,
// family/model/stepping, the raw feature words of leaves 1 and 7, the
// detected features (after STRATA_CPU) and num_hardware_threads(), e.g.
// "AuthenticAMD f26 m2 s0 1:7ed8320b,178bfbff 7:f1bf97a9,405fce avx2,... threads=2".
std::string cpu_signature();

}  // namespace strata
