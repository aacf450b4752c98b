// Grouped matmuls (ops::grouped_matmul, grouped_matmul_scatter_add): the
// matmuls of a mixture-of-experts step's experts in one parallel region each.
// Portable code (no SIMD here): it prepares every matmul's activations exactly
// as run_matmul (ops.cc) does and calls the same range kernels on ranges that
// start at multiples of the same grain (16 weight rows in the decode regime,
// whole 128-row panels of the prefill GEMM above it), so each output is
// computed with the same instructions in the same order as by matmul().
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "base/check.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/panels.h"
#include "ops/matmul_choice.h"
#include "ops/ops.h"

namespace strata::ops {
namespace cpu {
namespace {

constexpr int64_t kGrain = 16;  // weight rows per unit, as run_matmul's kMatmulGrain
static_assert(kGroupedMaxRows <= kDecodeMaxRows);

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

enum class Kind { kLowbit, kPanels, kQ8, kBf16, kF32, kPrefill };

// One matmul with its activations prepared (on the calling thread) as
// run_matmul prepares them, and the kernel table and range kernel it uses.
struct Prepared {
  MatmulArgs a;
  const KernelTable* table = nullptr;
  Kind kind = Kind::kF32;
  int64_t grain = kGrain;  // weight rows (or output columns) per unit
};

// run_matmul's choice of kernel, including the calibrated choice for the
// weight's shape class (ops/matmul_choice.h), so a grouped matmul runs what
// matmul() would.
void choose(const KernelTable& t, tensor::DType dtype, int64_t m, MatmulKernel kernel,
            Prepared& p) {
  const bool prefill = runs_prefill_gemm(t, dtype, m, kernel);
  p.grain = kGrain;
  set_decode_variant(kernel, &p.a);
  if (uses_panels(t, p.a.w_panels, m, kernel)) {
    p.table = &t;
    p.kind = Kind::kPanels;
  } else if (uses_lowbit_kernel(t, dtype, m)) {
    p.table = &t;
    p.kind = Kind::kLowbit;
  } else if (tensor::is_low_bit_quant(dtype) && !prefill && &t != &generic_kernels()) {
    choose(generic_kernels(), dtype, m, MatmulKernel::kStatic, p);
  } else if (uses_q8_activations(t, dtype, m) && kernel != MatmulKernel::kOwnExact) {
    p.table = &t;
    p.kind = Kind::kQ8;
  } else if (prefill) {
    p.table = &t;
    p.kind = Kind::kPrefill;
    p.grain = prefill_slice_rows(dtype, p.a.k);  // whole oneDNN calls, as run_matmul's
  } else {
    p.table = &t;
    p.kind = matmul_mode(dtype, m) == MatmulMode::kBF16 ? Kind::kBf16 : Kind::kF32;
  }
}

// True when p's kernel reads x as x_to_q8_groups prepares it, whose layout
// depends on the weights' dtype (lowbit_x_block, lowbit_x_chunk_slot).
bool reads_x_groups(const Prepared& p) {
  return p.kind == Kind::kLowbit || (p.kind == Kind::kPanels && panels_read_x_groups(p.a.w_dtype));
}

// Bytes of x quantized by x_to_q8_groups (m rows of k values), each piece
// 64-byte aligned.
int64_t x_groups_bytes(int64_t m, int64_t k) {
  const int64_t kp = round_up(k, 256);
  return round_up(m * kp, 64) + 3 * round_up(m * kp / 4 * 4, 64) +
         2 * round_up(m * kp / 16 * 4, 64);
}

// Bytes of prepared activations for p (0 for kF32), each piece 64-byte aligned.
int64_t prepared_bytes(const Prepared& p) {
  const int64_t m = p.a.m;
  switch (p.kind) {
    case Kind::kLowbit:
      return x_groups_bytes(m, p.a.k);
    case Kind::kPanels:
      if (reads_x_groups(p)) return x_groups_bytes(m, p.a.k);
      return round_up(m * p.a.k, 64) + 2 * round_up(m * p.a.k / 32 * 4, 64);
    case Kind::kQ8: {
      const int64_t kp = round_up(p.a.k, 64);
      return round_up(m * kp, 64) + round_up(m * kp / 4 * 4, 64);
    }
    case Kind::kBf16:
      return round_up(m * round_up(p.a.k, 32) * 2, 64);
    case Kind::kPrefill:
      return matmul_mode(p.a.w_dtype, m) == MatmulMode::kBF16
                 ? round_up(m * round_up(p.a.k, 32) * 2, 64)
                 : 0;
    case Kind::kF32:
      return 0;
  }
  return 0;
}

// Quantizes / rounds p's x into `arena` (prepared_bytes(p) bytes).
void prepare_x(Prepared& p, uint8_t* arena) {
  MatmulArgs& a = p.a;
  const KernelTable& t = *p.table;
  auto take = [&arena](int64_t bytes) {
    uint8_t* at = arena;
    arena += round_up(bytes, 64);
    return at;
  };
  const Kind kind = reads_x_groups(p) ? Kind::kLowbit : p.kind;  // K-quant panels: x alike
  switch (kind) {
    case Kind::kLowbit: {
      a.k_pad256 = round_up(a.k, 256);
      Q8GroupsOut q;
      q.q = reinterpret_cast<int8_t*>(take(a.m * a.k_pad256));
      q.scale = reinterpret_cast<float*>(take(a.m * a.k_pad256 / 4 * 4));
      q.sum16 = reinterpret_cast<float*>(take(a.m * a.k_pad256 / 16 * 4));
      q.nsum4 = reinterpret_cast<int32_t*>(take(a.m * a.k_pad256 / 4 * 4));
      q.fsum4 = reinterpret_cast<float*>(take(a.m * a.k_pad256 / 4 * 4));
      q.nsum16 = reinterpret_cast<int32_t*>(take(a.m * a.k_pad256 / 16 * 4));
      t.x_to_q8_groups(a.x, a.m, a.k, a.k_pad256, a.w_dtype, q);
      a.x_q8s = q.q;
      a.x_q8_scale = q.scale;
      a.x_q8_sum16 = q.sum16;
      a.x_q8_nsum4 = q.nsum4;
      a.x_q8_fsum4 = q.fsum4;
      a.x_q8_nsum16 = q.nsum16;
      break;
    }
    case Kind::kPanels: {
      auto* xq = reinterpret_cast<int8_t*>(take(a.m * a.k));
      auto* xd = reinterpret_cast<float*>(take(a.m * a.k / 32 * 4));
      auto* xc = reinterpret_cast<int32_t*>(take(a.m * a.k / 32 * 4));
      t.x_to_q8_blocks(a.x, a.m, a.k, xq, xd, xc);
      a.x_q8s = xq;
      a.x_q8_d = xd;
      a.x_q8_corr = xc;
      break;
    }
    case Kind::kQ8: {
      a.k_pad64 = round_up(a.k, 64);
      auto* xq = take(a.m * a.k_pad64);
      auto* xs = reinterpret_cast<float*>(take(a.m * a.k_pad64 / 4 * 4));
      t.x_to_q8(a.x, a.m, a.k, a.k_pad64, xq, xs);
      a.x_q8 = xq;
      a.x_q8_scale = xs;
      break;
    }
    case Kind::kPrefill:
      if (matmul_mode(a.w_dtype, a.m) != MatmulMode::kBF16) break;
      [[fallthrough]];
    case Kind::kBf16: {
      auto* xb = reinterpret_cast<uint16_t*>(take(a.m * a.k_pad * 2));
      t.x_to_bf16(a.x, a.m, a.k, a.k_pad, xb);
      a.x_bf16 = xb;
      break;
    }
    case Kind::kF32:
      break;
  }
}

// True when q can use p's prepared activations (same x rows, same kernel,
// the same x layout).
bool same_activations(const Prepared& p, const Prepared& q) {
  if (p.a.x != q.a.x || p.a.m != q.a.m || p.a.k != q.a.k || p.kind != q.kind ||
      p.table != q.table || reads_x_groups(p) != reads_x_groups(q)) {
    return false;
  }
  const tensor::DType a = p.a.w_dtype, b = q.a.w_dtype;
  return !reads_x_groups(p) || (lowbit_x_block(a) == lowbit_x_block(b) &&
                                lowbit_x_chunk_slot(a, 1) == lowbit_x_chunk_slot(b, 1));
}

// Prepares every matmul of mm; the result lives until the next call on this
// thread (the engine thread: one grouped call at a time).
// The prepared activations (bf16 copy or q8 quantization) and their padded
// widths of `from`, for a matmul whose x is the same and prepared the same.
void share_prepared_x(const MatmulArgs& from, MatmulArgs& to) {
  to.x_bf16 = from.x_bf16;
  to.x_q8 = from.x_q8;
  to.x_q8_scale = from.x_q8_scale;
  to.k_pad64 = from.k_pad64;
  to.x_q8s = from.x_q8s;
  to.x_q8_sum16 = from.x_q8_sum16;
  to.x_q8_nsum4 = from.x_q8_nsum4;
  to.x_q8_fsum4 = from.x_q8_fsum4;
  to.x_q8_nsum16 = from.x_q8_nsum16;
  to.k_pad256 = from.k_pad256;
  to.x_q8_d = from.x_q8_d;
  to.x_q8_corr = from.x_q8_corr;
}

const std::vector<Prepared>& prepare_all(const KernelTable& t, const GroupedMatmul* mm,
                                         int64_t count) {
  thread_local std::vector<Prepared> prepared;
  thread_local std::vector<uint8_t> arena;
  prepared.assign(static_cast<size_t>(count), Prepared{});
  int64_t bytes = 0;
  for (int64_t i = 0; i < count; ++i) {
    const GroupedMatmul& g = mm[i];
    STRATA_CHECK(g.w != nullptr && g.w->n() > 0 && g.m >= 1)
        << "grouped matmul " << i << ": m=" << g.m << " must be at least 1";
    Prepared& p = prepared[i];
    p.a.x = g.x;
    p.a.m = g.m;
    p.a.n = g.w->n();
    p.a.k = g.w->k();
    p.a.k_pad = round_up(g.w->k(), 32);
    p.a.w = g.w->view().data;
    p.a.w_dtype = g.w->dtype();
    if (reads_panels(t, p.a.w_dtype)) p.a.w_panels = g.w->panels();
    p.a.y = g.y;
    choose(t, p.a.w_dtype, p.a.m, chosen_matmul_kernel(p.a.w_dtype, p.a.n, p.a.k, p.a.m), p);
    // Every path of a table that reads panels takes them. run_matmul's row
    // fallback (other tables, the exact kernel on a fused weight) is
    // not offered here: grouped calls run the active table with calibrated
    // kernels, which never need rows of such a weight.
    STRATA_CHECK(
        p.a.w != nullptr ||
        (p.a.w_panels != nullptr && (p.kind == Kind::kPanels || p.kind == Kind::kPrefill ||
                                     (p.kind == Kind::kBf16 && t.matmul_prefill_range != nullptr))))
        << "grouped matmul " << i << ": a weight kept only in panels, on a path that reads rows";
    if (i == 0 || !same_activations(prepared[i - 1], p)) bytes += prepared_bytes(p);
  }
  if (static_cast<int64_t>(arena.size()) < bytes + 64)
    arena.resize(static_cast<size_t>(bytes + 64));
  uint8_t* at = reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<intptr_t>(arena.data()), 64));
  for (int64_t i = 0; i < count; ++i) {
    Prepared& p = prepared[i];
    if (i > 0 && same_activations(prepared[i - 1], p)) {
      share_prepared_x(prepared[i - 1].a, p.a);
      continue;
    }
    prepare_x(p, at);
    at += prepared_bytes(p);
  }
  return prepared;
}

// Per-thread bf16 tile scratch of the quantized bf16 / prefill kernels.
uint16_t* tile_scratch(const Prepared& p) {
  if (!tensor::is_quantized(p.a.w_dtype)) return nullptr;
  thread_local std::vector<uint16_t> buffer;
  const auto elems =
      static_cast<size_t>(std::max(kBf16TileRows * kBf16TileK, kPrefillTileRows * p.a.k_pad));
  if (buffer.size() < elems) buffer.resize(elems);
  return buffer.data();
}

// Columns [b, e) of p's y, with the range kernel run_matmul would use.
void run_range(const Prepared& p, int64_t b, int64_t e) {
  const KernelTable& t = *p.table;
  switch (p.kind) {
    case Kind::kPrefill:
      t.matmul_prefill_range(p.a, b, e, tile_scratch(p));
      return;
    case Kind::kLowbit:
      t.matmul_lowbit_range(p.a, b, e);
      return;
    case Kind::kPanels:
      t.matmul_panels_range(p.a, b, e);
      return;
    case Kind::kQ8:
      t.matmul_q8q8_range(p.a, b, e);
      return;
    case Kind::kBf16:
      t.matmul_bf16_range(p.a, b, e, tile_scratch(p));
      return;
    case Kind::kF32:
      t.matmul_f32_range(p.a, b, e);
      return;
  }
}

// Columns [c0, c1) of out[rows[r].token, :] += rows[r].weight * y[r, :], r in order.
void scatter_add_columns(const float* y, int64_t m, int64_t n, const WeightedRow* rows, float* out,
                         int64_t c0, int64_t c1) {
  for (int64_t r = 0; r < m; ++r) {
    float* dst = out + int64_t{rows[r].token} * n;
    const float* src = y + r * n;
    const float weight = rows[r].weight;
    for (int64_t j = c0; j < c1; ++j) dst[j] += weight * src[j];
  }
}

// Units claimed at a time: 8 x 16 weight rows (gate/up pass: 256 KiB of a
// bf16 expert's weights), 8 x 16 output columns of every matmul (down pass:
// 128 KiB of each expert's). 64 to 1024 rows measured alike, 32 rows slower
// (short weight streams); see BENCHMARKS.md, "Mixture of experts".
constexpr int64_t kRowUnitsPerClaim = 8;
constexpr int64_t kColumnUnitsPerClaim = 8;

// One pool dispatch whose threads claim `per_claim` units of [0, num_units)
// at a time from a shared counter until none are left, calling fn(begin,
// end). Small claims keep the threads balanced when one is descheduled (the
// pool's own chunks are an eighth of the job each); a thread that never
// starts claims nothing.
template <typename Fn>
void claim_units(ThreadPool& pool, int64_t num_units, int64_t per_claim, const Fn& fn) {
  std::atomic<int64_t> next{0};
  pool.parallel_for(pool.num_threads(), [&](int64_t, int64_t, int) {
    while (true) {
      const int64_t b = next.fetch_add(per_claim, std::memory_order_relaxed);
      if (b >= num_units) return;
      fn(b, std::min(num_units, b + per_claim));
    }
  });
}

}  // namespace

void run_grouped_matmul(const KernelTable& t, const GroupedMatmul* mm, int64_t count,
                        ThreadPool& pool) {
  if (count == 0) return;
  const std::vector<Prepared>& prepared = prepare_all(t, mm, count);
  // Matmul i owns units [first[i], first[i + 1]) of kGrain weight rows. (A
  // reference, so the workers read the calling thread's vector.)
  thread_local std::vector<int64_t> first_units;
  std::vector<int64_t>& first = first_units;
  first.assign(static_cast<size_t>(count + 1), 0);
  bool any_prefill = false;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t grain = prepared[i].grain;
    first[i + 1] = first[i] + (prepared[i].a.n + grain - 1) / grain;
    any_prefill = any_prefill || prepared[i].kind == Kind::kPrefill;
  }
  const int64_t per_claim = any_prefill ? 1 : kRowUnitsPerClaim;
  claim_units(pool, first[count], per_claim, [&](int64_t b, int64_t e) {
    int64_t i = std::upper_bound(first.begin(), first.end(), b) - first.begin() - 1;
    for (; b < e; ++i) {
      const int64_t end = std::min(e, first[i + 1]);
      const Prepared& p = prepared[i];
      run_range(p, (b - first[i]) * p.grain, std::min(p.a.n, (end - first[i]) * p.grain));
      b = end;
    }
  });
}

void run_grouped_matmul_scatter_add(const KernelTable& t, const GroupedMatmul* mm, int64_t count,
                                    float* out, ThreadPool& pool) {
  if (count == 0) return;
  const int64_t n = mm[0].w->n();
  for (int64_t i = 0; i < count; ++i) {
    STRATA_CHECK(mm[i].w->n() == n && mm[i].rows != nullptr)
        << "grouped scatter-add matmul " << i << ": n=" << mm[i].w->n() << ", want " << n
        << " and rows";
  }
  const std::vector<Prepared>& prepared = prepare_all(t, mm, count);
  // Column units: the coarsest grain of the group (128 is a multiple of 16).
  int64_t grain = kGrain;
  for (const Prepared& p : prepared) grain = std::max(grain, p.grain);
  const int64_t per_claim = grain > kGrain ? 1 : kColumnUnitsPerClaim;
  claim_units(pool, (n + grain - 1) / grain, per_claim, [&](int64_t b, int64_t e) {
    const int64_t c0 = b * grain, c1 = std::min(n, e * grain);
    for (int64_t i = 0; i < count; ++i) run_range(prepared[i], c0, c1);
    for (int64_t i = 0; i < count; ++i) {
      scatter_add_columns(mm[i].y, mm[i].m, n, mm[i].rows, out, c0, c1);
    }
  });
}

}  // namespace cpu

void grouped_matmul(const GroupedMatmul* mm, int64_t count, ThreadPool& pool) {
  cpu::run_grouped_matmul(cpu::active_kernels(), mm, count, pool);
}

void grouped_matmul_scatter_add(const GroupedMatmul* mm, int64_t count, float* out,
                                ThreadPool& pool) {
  cpu::run_grouped_matmul_scatter_add(cpu::active_kernels(), mm, count, out, pool);
}

void weighted_scatter_add(const float* y, int64_t m, int64_t n, const WeightedRow* rows,
                          float* out) {
  cpu::scatter_add_columns(y, m, n, rows, out, 0, n);
}

}  // namespace strata::ops
