#include "ops/cpu/onednn_gemm.h"

#include <cstdlib>
#include <cstring>

#ifdef STRATA_HAVE_ONEDNN
#include <omp.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>
#endif

namespace strata::ops::cpu {

#ifdef STRATA_HAVE_ONEDNN
namespace {

// m is cut into a multiple of kBlockM rows and a remainder, so a thread holds
// at most (largest m) / kBlockM + kBlockM primitives per weight shape.
constexpr int64_t kBlockM = 128;

using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

struct Primitive {
  dnnl::matmul matmul;
  dnnl::memory::desc src, wei, dst;
};

// Per calling thread: engine, stream, primitives (never shared across threads).
struct ThreadState {
  ThreadState() { omp_set_num_threads(1); }
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, Primitive> primitives;
  std::vector<float> dense_out;  // [rows][n] when y is written through (dense_destination)
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

// oneDNN 2.6 runs its AMX (avx512_core_amx) brgemm matmul only for a dense
// destination: for y with row stride ldy != n it falls back to the AVX-512
// gemm, 10-25% slower at prefill shapes (BENCHMARKS.md, "An Intel host with
// AMX"). On such CPUs bf16 blocks are computed into a dense
// per-thread buffer and copied out.
bool dense_destination(GemmType type) {
  static const bool amx = dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx512_core_amx;
  return type == GemmType::kBF16 && amx;
}

bool disabled() {
  static const bool off = [] {
    const char* env = std::getenv("STRATA_NO_ONEDNN");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  return off;
}

const Primitive& primitive(ThreadState& s, GemmType type, int64_t m, int64_t n, int64_t k,
                           int64_t ldx, int64_t ldw, int64_t ldy) {
  Key key{static_cast<int>(type), m, n, k, ldx, ldw, ldy};
  auto it = s.primitives.find(key);
  if (it != s.primitives.end()) return it->second;
  using dt = dnnl::memory::data_type;
  dt in = type == GemmType::kBF16 ? dt::bf16 : dt::f32;
  // oneDNN's primitive cache and JIT code buffers are process-wide: creating
  // primitives on several pool threads at once raced inside libdnnl (a
  // ThreadSanitizer report, tiered_kv_test). Creation is rare (once per shape
  // per thread), so it is serialized; running primitives is not.
  static std::mutex creation;
  std::lock_guard<std::mutex> lock(creation);
  Primitive p;
  p.src = dnnl::memory::desc({m, k}, in, {ldx, 1});
  p.wei = dnnl::memory::desc({k, n}, in, {1, ldw});
  p.dst = dnnl::memory::desc({m, n}, dt::f32, {ldy, 1});
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.src, p.wei, p.dst), s.engine);
  p.matmul = dnnl::matmul(pd);
  return s.primitives.emplace(key, std::move(p)).first->second;
}

void run_block(ThreadState& s, const Primitive& p, const void* x, const void* w, float* y) {
  dnnl::memory src(p.src, s.engine, const_cast<void*>(x));
  dnnl::memory wei(p.wei, s.engine, const_cast<void*>(w));
  dnnl::memory dst(p.dst, s.engine, y);
  p.matmul.execute(s.stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
  s.stream.wait();
}

}  // namespace

bool onednn_enabled() { return !disabled(); }

bool onednn_bf16_native() {
  static const bool native = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  }();
  return native;
}

bool onednn_gemm(GemmType type, const void* x, int64_t ldx, int64_t m, const void* w, int64_t ldw,
                 int64_t n, int64_t k, float* y, int64_t ldy) {
  if (disabled() || m <= 0 || n <= 0) return false;
  int64_t elem = type == GemmType::kBF16 ? 2 : 4;
  try {
    ThreadState& s = thread_state();
    const bool dense = dense_destination(type) && ldy != n;
    const int64_t ld_out = dense ? n : ldy;
    // Primitives are created before any block runs, so a failure here writes nothing.
    // Rows [0, body) in one call, the rest (< kBlockM) in a second.
    const int64_t rem = m % kBlockM, body = m - rem;
    const Primitive* full = body > 0 ? &primitive(s, type, body, n, k, ldx, ldw, ld_out) : nullptr;
    const Primitive* tail = rem > 0 ? &primitive(s, type, rem, n, k, ldx, ldw, ld_out) : nullptr;
    float* out = y;
    if (dense) {
      s.dense_out.resize(static_cast<size_t>(std::max(body, rem) * n));
      out = s.dense_out.data();
    }
    const char* xb = static_cast<const char*>(x);
    for (int64_t i = 0; i < m;) {
      const Primitive* p = i < body ? full : tail;
      const int64_t rows = i < body ? body : rem;
      run_block(s, *p, xb + i * ldx * elem, w, dense ? out : y + i * ldy);
      if (dense) {
        for (int64_t r = 0; r < rows; ++r) {
          std::memcpy(y + (i + r) * ldy, out + r * n, static_cast<size_t>(n) * sizeof(float));
        }
      }
      i += rows;
    }
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

#else  // !STRATA_HAVE_ONEDNN

bool onednn_enabled() { return false; }

bool onednn_bf16_native() { return false; }

bool onednn_gemm(GemmType, const void*, int64_t, int64_t, const void*, int64_t, int64_t, int64_t,
                 float*, int64_t) {
  return false;
}

#endif

}  // namespace strata::ops::cpu
