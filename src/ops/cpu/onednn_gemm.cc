#include "ops/cpu/onednn_gemm.h"

#include <cstdlib>
#include <cstring>

#ifdef STRATA_HAVE_ONEDNN
#include <omp.h>

#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#endif

namespace strata::ops::cpu {

#ifdef STRATA_HAVE_ONEDNN
namespace {

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
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
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

bool onednn_gemm(GemmType type, const void* x, int64_t ldx, int64_t m, const void* w, int64_t ldw,
                 int64_t n, int64_t k, float* y, int64_t ldy) {
  if (disabled() || m <= 0 || n <= 0) return false;
  int64_t elem = type == GemmType::kBF16 ? 2 : 4;
  try {
    ThreadState& s = thread_state();
    // Primitives are created before any block runs, so a failure here writes nothing.
    int64_t rem = m % kBlockM;
    const Primitive* full =
        m >= kBlockM ? &primitive(s, type, kBlockM, n, k, ldx, ldw, ldy) : nullptr;
    const Primitive* tail = rem > 0 ? &primitive(s, type, rem, n, k, ldx, ldw, ldy) : nullptr;
    const char* xb = static_cast<const char*>(x);
    for (int64_t i = 0; i < m; i += kBlockM) {
      const Primitive* p = i + kBlockM <= m ? full : tail;
      run_block(s, *p, xb + i * ldx * elem, w, y + i * ldy);
    }
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

#else  // !STRATA_HAVE_ONEDNN

bool onednn_enabled() { return false; }

bool onednn_gemm(GemmType, const void*, int64_t, int64_t, const void*, int64_t, int64_t, int64_t,
                 float*, int64_t) {
  return false;
}

#endif

}  // namespace strata::ops::cpu
