// avx2_panels.cc compiled with AVX-VNNI (vpdpbusd on ymm), for the avx2_vnni
// table (CPUs with AVX2 and AVX-VNNI but no AVX-512: Alder Lake and later
// Intel client cores; see avx2_panels.cc and ops/CMakeLists.txt).
#define STRATA_AVX2_VNNI 1
#include "ops/cpu/avx2_panels.cc"  // NOLINT(bugprone-suspicious-include)
