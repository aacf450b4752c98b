// The matmul override table and the registry of prepared weight shapes
// (see matmul_choice.h). Portable code.
#include "ops/matmul_choice.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>

#include "base/check.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/onednn_gemm.h"

namespace strata::ops {
namespace {

using Table = std::vector<MatmulChoice>;  // sorted by class

std::atomic<const Table*> g_table{nullptr};

// Every table ever installed, so a reader that loaded an older pointer never
// sees it freed (tables are tiny and installed once or twice per process).
std::mutex& tables_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::unique_ptr<Table>>& all_tables() {
  static std::vector<std::unique_ptr<Table>> tables;
  return tables;
}

std::mutex& shapes_mutex() {
  static std::mutex m;
  return m;
}
std::set<MatmulShapeClass>& shapes() {
  static std::set<MatmulShapeClass> s;
  return s;
}

}  // namespace

MatmulRegime matmul_regime(int64_t m) {
  return m <= cpu::kDecodeMaxRows ? MatmulRegime::kDecode : MatmulRegime::kPrefill;
}

const char* matmul_regime_name(MatmulRegime r) {
  return r == MatmulRegime::kDecode ? "decode" : "prefill";
}

const char* matmul_kernel_name(MatmulKernel k) {
  switch (k) {
    case MatmulKernel::kStatic:
      return "static";
    case MatmulKernel::kOwn:
      return "own";
    case MatmulKernel::kOwnExact:
      return "own-exact";
    case MatmulKernel::kOnednn:
      return "onednn";
    case MatmulKernel::kOwnHwPrefetch:
      return "own-hwprefetch";
    case MatmulKernel::kOwnFourRows:
      return "own-4rows";
    case MatmulKernel::kOwnInt8:
      return "own-int8";
  }
  return "?";
}

bool parse_matmul_kernel(const std::string& name, MatmulKernel* out) {
  for (MatmulKernel k :
       {MatmulKernel::kStatic, MatmulKernel::kOwn, MatmulKernel::kOwnExact, MatmulKernel::kOnednn,
        MatmulKernel::kOwnHwPrefetch, MatmulKernel::kOwnFourRows, MatmulKernel::kOwnInt8}) {
    if (name == matmul_kernel_name(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

bool MatmulShapeClass::operator<(const MatmulShapeClass& o) const {
  return std::make_tuple(static_cast<int>(dtype), n, k, static_cast<int>(regime)) <
         std::make_tuple(static_cast<int>(o.dtype), o.n, o.k, static_cast<int>(o.regime));
}

bool decode_variant_matters_at(MatmulKernel kernel, int64_t m) {
  switch (kernel) {
    case MatmulKernel::kOwnFourRows:
      return m % 4 == 1;
    case MatmulKernel::kOwnHwPrefetch:
      return m <= 8 || m % 4 == 1;
    default:
      return true;
  }
}

std::vector<MatmulKernel> matmul_candidates(const MatmulShapeClass& cls) {
  using tensor::DType;
  const cpu::KernelTable& t = cpu::active_kernels();
  if (cls.regime == MatmulRegime::kDecode) {
    // Only the AVX-512 kernels have the tile variants (the others ignore
    // MatmulArgs' variant fields).
    const bool avx512 = cpu::is_avx512_table(t);
    // Weights in panels: one kernel (the exact f32 one reads rows, which a
    // fused weight there no longer has, and measured 0.3-0.6x of int8 on
    // Q8_0 anyway).
    if (cpu::reads_panels(t, cls.dtype)) return {MatmulKernel::kOwn};
    if (cpu::uses_q8_activations(t, cls.dtype, 1)) {
      return {MatmulKernel::kOwn, MatmulKernel::kOwnExact};
    }
    const bool streams =
        cls.dtype == DType::kF32 || cls.dtype == DType::kF16 || cls.dtype == DType::kBF16;
    if (streams && avx512) {
      return {MatmulKernel::kOwn, MatmulKernel::kOwnHwPrefetch, MatmulKernel::kOwnFourRows};
    }
    return {MatmulKernel::kOwn};
  }
  // Prefill: oneDNN where run_matmul would use the table's prefill GEMM.
  const bool onednn_dtype =
      cls.dtype == DType::kF32 || cls.dtype == DType::kBF16 ||
      (cls.dtype == DType::kQ8_0 && cpu::quantized_decode_rows() == cpu::kDecodeMaxRows);
  if (onednn_dtype && t.matmul_prefill_range != nullptr && cpu::onednn_enabled()) {
    // Q8_0 in panels: the int8 kernel first, 1.2-1.7x oneDNN's bf16 GEMM on
    // the dequantized tiles per thread on Zen 5 (BENCHMARKS.md, "Q8_0
    // prefill on the panels").
    if (cls.dtype == DType::kQ8_0 && cpu::reads_panels(t, cls.dtype)) {
      return {MatmulKernel::kOwnInt8, MatmulKernel::kOnednn, MatmulKernel::kOwn};
    }
    // BF16 where oneDNN emulates bf16 (run_matmul's static choice is then ours).
    if (cls.dtype == DType::kBF16 && !cpu::onednn_bf16_native()) {
      return {MatmulKernel::kOwn, MatmulKernel::kOnednn};
    }
    return {MatmulKernel::kOnednn, MatmulKernel::kOwn};
  }
  // Low-bit types in panels (Q4_0, IQ4_NL, Q5_0, IQ4_XS, Q2_K ... Q6_K): the int8 kernel on the
  // panels, or oneDNN on bf16 tiles made from them (there is no own bf16 candidate: low-bit kOwn
  // prefill is the portable exact kernel).
  if (cpu::reads_panels(t, cls.dtype) && t.matmul_prefill_range != nullptr &&
      cpu::onednn_enabled()) {
    return {MatmulKernel::kOwnInt8, MatmulKernel::kOnednn};
  }
  // A table without a prefill GEMM (AVX2) that reads panels: its int8 panel
  // kernel at every m (the static choice; the types' row-major kernels read
  // rows, which a fused weight there no longer has).
  if (cpu::reads_panels(t, cls.dtype) && t.matmul_prefill_range == nullptr) {
    return {MatmulKernel::kOwnInt8};
  }
  // Low-bit quantized prefill has no own AVX-512 GEMM (only the portable
  // exact kernel, several times slower), F16 no oneDNN one: one candidate.
  return {tensor::is_low_bit_quant(cls.dtype) && t.matmul_prefill_range != nullptr &&
                  cpu::onednn_enabled()
              ? MatmulKernel::kOnednn
              : MatmulKernel::kOwn};
}

void set_matmul_choices(const std::vector<MatmulChoice>& choices) {
  auto table = std::make_unique<Table>();
  for (const MatmulChoice& c : choices) {
    if (c.kernel == MatmulKernel::kStatic) continue;
    const std::vector<MatmulKernel> cands = matmul_candidates(c.cls);
    STRATA_CHECK(std::find(cands.begin(), cands.end(), c.kernel) != cands.end())
        << "kernel " << matmul_kernel_name(c.kernel) << " cannot run "
        << tensor::dtype_name(c.cls.dtype) << " " << c.cls.n << "x" << c.cls.k << " "
        << matmul_regime_name(c.cls.regime);
    table->push_back(c);
  }
  std::sort(table->begin(), table->end(),
            [](const MatmulChoice& a, const MatmulChoice& b) { return a.cls < b.cls; });
  std::lock_guard<std::mutex> lock(tables_mutex());
  const Table* published = table->empty() ? nullptr : table.get();
  all_tables().push_back(std::move(table));
  g_table.store(published, std::memory_order_release);
}

std::vector<MatmulChoice> matmul_choices() {
  const Table* t = g_table.load(std::memory_order_acquire);
  return t != nullptr ? *t : std::vector<MatmulChoice>();
}

MatmulKernel chosen_matmul_kernel(tensor::DType dtype, int64_t n, int64_t k, int64_t m) {
  const Table* t = g_table.load(std::memory_order_acquire);
  if (t == nullptr) return MatmulKernel::kStatic;
  const MatmulShapeClass key{dtype, n, k, matmul_regime(m)};
  auto it =
      std::lower_bound(t->begin(), t->end(), key,
                       [](const MatmulChoice& c, const MatmulShapeClass& s) { return c.cls < s; });
  return it != t->end() && it->cls == key ? it->kernel : MatmulKernel::kStatic;
}

std::vector<MatmulShapeClass> prepared_matmul_shapes() {
  std::lock_guard<std::mutex> lock(shapes_mutex());
  return {shapes().begin(), shapes().end()};
}

namespace cpu {

void note_prepared_shape(tensor::DType dtype, int64_t n, int64_t k) {
  std::lock_guard<std::mutex> lock(shapes_mutex());
  shapes().insert({dtype, n, k, MatmulRegime::kDecode});
}

}  // namespace cpu
}  // namespace strata::ops
