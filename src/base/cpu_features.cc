#include "base/cpu_features.h"

#include <cpuid.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace strata {
namespace {

bool os_saves_zmm() {
  // XGETBV(0): bits 5..7 = opmask, ZMM hi256, hi16 ZMM state enabled by the OS.
  unsigned eax = 0, edx = 0;
  __asm__("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (eax & 0xE6) == 0xE6;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.fma = c & bit_FMA;
  f.f16c = c & bit_F16C;
  bool osxsave = c & bit_OSXSAVE;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  f.avx2 = b & bit_AVX2;
  bool zmm = osxsave && os_saves_zmm();
  f.avx512f = zmm && (b & bit_AVX512F);
  f.avx512bw = zmm && (b & bit_AVX512BW);
  f.avx512vl = zmm && (b & bit_AVX512VL);
  f.avx512_vnni = zmm && (c & bit_AVX512VNNI);
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avx512_bf16 = zmm && (a & bit_AVX512BF16);
    f.avx_vnni = a & (1u << 4);  // CPUID.(7,1):EAX[4]
  }
  return f;
}

}  // namespace

std::string CpuFeatures::to_string() const {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ",";
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512_vnni, "avx512_vnni");
  add(avx512_bf16, "avx512_bf16");
  add(avx_vnni, "avx_vnni");
  return s.empty() ? "generic" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    const char* env = std::getenv("STRATA_CPU");
    if (env != nullptr && std::strcmp(env, "generic") == 0) return CpuFeatures{};
    CpuFeatures f = detect();
    if (env != nullptr && std::strcmp(env, "avx2") == 0) {  // the AVX2 table on any AVX2 CPU
      f.avx512f = f.avx512bw = f.avx512vl = f.avx512_vnni = f.avx512_bf16 = false;
      f.avx_vnni = false;
    }
    if (env != nullptr && std::strcmp(env, "avx2_vnni") == 0) {  // as on Alder Lake
      f.avx512f = f.avx512bw = f.avx512vl = f.avx512_vnni = f.avx512_bf16 = false;
    }
    if (env != nullptr && std::strcmp(env, "avx512_vnni") == 0) {  // as on Cascade / Ice Lake
      f.avx512_bf16 = false;
    }
    return f;
  }();
  return features;
}

std::string cpu_signature() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  char vendor[13] = {};
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    std::memcpy(vendor, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
  }
  unsigned family = 0, model = 0, stepping = 0, ecx1 = 0, edx1 = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    family = (a >> 8) & 0xf;
    model = (a >> 4) & 0xf;
    stepping = a & 0xf;
    if (family == 0xf) family += (a >> 20) & 0xff;
    if (family == 0x6 || family >= 0xf) model |= ((a >> 16) & 0xf) << 4;
    ecx1 = c;
    edx1 = d;
  }
  unsigned ebx7 = 0, ecx7 = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    ebx7 = b;
    ecx7 = c;
  }
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s f%u m%u s%u 1:%x,%x 7:%x,%x ", vendor[0] ? vendor : "unknown",
                family, model, stepping, ecx1, edx1, ebx7, ecx7);
  return std::string(buf) + cpu_features().to_string() +
         " threads=" + std::to_string(num_hardware_threads());
}

int num_hardware_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace strata
