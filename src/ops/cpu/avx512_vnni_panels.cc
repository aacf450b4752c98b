// avx512_panels.cc compiled without AVX512-BF16, for the avx512_vnni table (CPUs
// with AVX-512 and VNNI but no BF16; see avx512_util.h and ops/CMakeLists.txt).
#define STRATA_AVX512_NO_BF16 1
#include "ops/cpu/avx512_panels.cc"  // NOLINT(bugprone-suspicious-include)
