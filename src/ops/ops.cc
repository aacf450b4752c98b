// Public ops: argument checks, threading and the call into the kernel table
// chosen by cpu::active_kernels(). Portable code (no SIMD here).
//
// Matmul strategy (measured in BENCHMARKS.md, "Kernels"):
//   - Work is split over n (weight rows) across the pool in multiples of 16
//     rows, so each thread streams its own weight rows once for all m rows
//     of x (decode GEMV amortises weight reads over the batch).
//   - Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS and Q2_K ... Q6_K on AVX512-VNNI and
//     AVX2 CPUs: weights repacked at load into 16-row panels (cpu/panels.h),
//     x quantized to int8 per 32-block (K-quants: per 256) once per call (as
//     llama.cpp does), exact int32 block sums for 16 outputs at a time
//     (vpdpbusd; AVX2: vpmaddubsw + vpmaddwd), scaled by d_x * d_w, at every
//     m unless calibration chose bf16 tiles for prefill on AVX-512 (then read
//     from the panels too).
//   - F32/F16 weights and Q8_0 with m <= 16 otherwise: f32 FMA, weights
//     widened exactly.
//   - BF16 weights (any m) and Q8_0 with m > 16: x rounded to bf16 once per
//     call, bf16 products with f32 sums; Q8_0 prefill rounds q*d to bf16.
//   - Other low-bit GGUF types (Q4_1, Q5_1, K-quants) with m <= 16 on AVX512-VNNI
//     CPUs: x quantized to int8 per 32 values once per call, vpdpbusd of the
//     weights' unsigned codes with x (avx512_quant.cc); m > 16: tiles
//     dequantized to bf16 for the prefill GEMM. Tables without those kernels
//     use the portable ones (weights dequantized exactly to f32 per row).
//   - Prefill (m > 16, F32/BF16/quantized) uses the table's prefill GEMM
//     (oneDNN on AVX-512 machines, ~3x our inner-product kernel), each pool
//     thread running oneDNN single-threaded on its own slice of n.
#include "ops/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "base/cpu_features.h"
#include "base/mapped_file.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/onednn_gemm.h"
#include "ops/cpu/panels.h"
#include "ops/matmul_choice.h"

namespace strata::ops {

MatmulWeight::MatmulWeight() = default;
MatmulWeight::MatmulWeight(MatmulWeight&&) noexcept = default;
MatmulWeight& MatmulWeight::operator=(MatmulWeight&&) noexcept = default;
MatmulWeight::~MatmulWeight() = default;

MatmulWeight MatmulWeight::prepare(const tensor::TensorView& w) {
  MatmulWeight out = prepare_unlisted(w);
  cpu::note_prepared_shape(out.dtype(), out.n(), out.k());
  return out;
}

MatmulWeight MatmulWeight::prepare_unlisted(const tensor::TensorView& w) {
  using tensor::DType;
  STRATA_CHECK(w.rank() == 2) << "matmul weight must be 2-D [n, k], got " << w.shape_string();
  STRATA_CHECK(w.dtype == DType::kF32 || w.dtype == DType::kF16 || w.dtype == DType::kBF16 ||
               tensor::is_quantized(w.dtype))
      << "unsupported matmul weight dtype " << tensor::dtype_name(w.dtype);
  STRATA_CHECK(w.dim(1) % tensor::dtype_block_size(w.dtype) == 0)
      << tensor::dtype_name(w.dtype) << " weight k=" << w.dim(1)
      << " is not a multiple of its block size " << tensor::dtype_block_size(w.dtype);
  MatmulWeight out;
  out.view_ = w;
  out.n_ = w.dim(0);
  out.k_ = w.dim(1);
  if (w.data != nullptr && cpu::panels_in_use(w.dtype)) out.pack_panels({{w.data, out.n_}});
  return out;
}

void MatmulWeight::pack_panels(const std::vector<cpu::PanelRows>& parts) {
  const int64_t bytes = cpu::panel_count(n_) * cpu::panel_bytes(dtype(), k_);
  // 2 MiB aligned and huge-page backed where large: read at memory bandwidth
  // every decode step (as concat_rows' copies). Not below 8 MiB, where the
  // last huge page's unused part would add up to a large share (a 4.6 MB
  // down projection would take 6 MB).
  const size_t alignment = bytes >= 4 * static_cast<int64_t>(kHugePageBytes) ? kHugePageBytes : 64;
  packed_ = std::make_unique<Packed>();
  packed_->panels = tensor::AlignedBuffer<uint8_t>(bytes, alignment);
  if (alignment == kHugePageBytes) {
    advise_huge_pages(packed_->panels.data(),
                      static_cast<size_t>(bytes + alignment - 1) / alignment * alignment);
  }
  cpu::pack_panels(dtype(), parts, k_, packed_->panels.data());
}

const uint8_t* MatmulWeight::panels() const {
  return packed_ != nullptr ? packed_->panels.data() : nullptr;
}

tensor::AlignedBuffer<uint8_t> MatmulWeight::unpack_rows() const {
  STRATA_CHECK(panels() != nullptr) << "unpack_rows: the weight has no panels";
  tensor::AlignedBuffer<uint8_t> rows(view_.size_bytes());
  cpu::unpack_panel_rows(dtype(), panels(), k_, 0, n_, rows.data());
  return rows;
}

bool MatmulWeight::can_concat_rows(const std::vector<const tensor::TensorView*>& parts) {
  if (parts.empty()) return false;
  for (const tensor::TensorView* p : parts) {
    if (p->rank() != 2 || p->dtype != parts[0]->dtype || p->dim(1) != parts[0]->dim(1)) {
      return false;
    }
  }
  return true;
}

MatmulWeight MatmulWeight::concat_rows(const std::vector<const tensor::TensorView*>& parts) {
  STRATA_CHECK(can_concat_rows(parts)) << "concat_rows needs 2-D parts of one dtype and k";
  int64_t n = 0, bytes = 0;
  for (const tensor::TensorView* p : parts) {
    n += p->dim(0);
    bytes += p->size_bytes();
  }
  if (cpu::panels_in_use(parts[0]->dtype)) {
    // The panels alone: the parts' rows go straight into them, and the fused
    // weight keeps no row-major copy (view().data is nullptr).
    MatmulWeight out = prepare({nullptr, parts[0]->dtype, {n, parts[0]->dim(1)}});
    std::vector<cpu::PanelRows> rows;
    for (const tensor::TensorView* p : parts) rows.push_back({p->data, p->dim(0)});
    out.pack_panels(rows);
    return out;
  }
  // 2 MiB aligned and huge-page backed: a fused weight is read at memory
  // bandwidth every step, as the mapped file it replaces may be.
  const size_t alignment = bytes >= static_cast<int64_t>(kHugePageBytes) ? kHugePageBytes : 64;
  tensor::AlignedBuffer<uint8_t> owned(bytes, alignment);
  advise_huge_pages(owned.data(),
                    static_cast<size_t>(bytes + alignment - 1) / alignment * alignment);
  int64_t offset = 0;
  for (const tensor::TensorView* p : parts) {
    std::memcpy(owned.data() + offset, p->data, static_cast<size_t>(p->size_bytes()));
    offset += p->size_bytes();
  }
  MatmulWeight out = prepare({owned.data(), parts[0]->dtype, {n, parts[0]->dim(1)}});
  out.owned_ = std::move(owned);
  return out;
}

void matmul(const float* x, int64_t m, const MatmulWeight& w, const float* bias, float* y,
            ThreadPool& pool) {
  cpu::run_matmul(cpu::active_kernels(), x, m, w, bias, y, pool,
                  chosen_matmul_kernel(w.dtype(), w.n(), w.k(), m));
}

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) {
  cpu::active_kernels().rms_norm(x, weight, rows, dim, eps, y);
}

void rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
          int64_t head_dim, const float* inv_freq, RopeStyle style) {
  cpu::run_rope(cpu::active_kernels(), x, positions, num_tokens, num_heads, head_dim, inv_freq,
                style);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  cpu::active_kernels().silu_mul(gate, up, n, out);
}

void softmax(float* x, int64_t n) { cpu::active_kernels().softmax(x, n); }

void add_inplace(float* y, const float* x, int64_t n) {
  cpu::active_kernels().add_inplace(y, x, n);
}

void moe_route(const float* logits, int64_t num_tokens, int64_t num_experts, int64_t top_k,
               bool renormalize, int32_t* experts, float* weights) {
  STRATA_CHECK(top_k > 0 && top_k <= num_experts) << "top_k " << top_k << " of " << num_experts;
  std::vector<float> probs(static_cast<size_t>(num_experts));
  for (int64_t t = 0; t < num_tokens; ++t) {
    std::copy(logits + t * num_experts, logits + (t + 1) * num_experts, probs.begin());
    softmax(probs.data(), num_experts);
    int32_t* ids = experts + t * top_k;
    float* w = weights + t * top_k;
    // Insertion into a best-first list of top_k: strictly greater moves up,
    // so equal probabilities keep the lower id first.
    int64_t filled = 0;
    for (int64_t e = 0; e < num_experts; ++e) {
      const float p = probs[e];
      if (filled == top_k && !(p > w[top_k - 1])) continue;
      int64_t pos = filled < top_k ? filled++ : top_k - 1;
      while (pos > 0 && p > w[pos - 1]) {
        w[pos] = w[pos - 1];
        ids[pos] = ids[pos - 1];
        --pos;
      }
      w[pos] = p;
      ids[pos] = static_cast<int32_t>(e);
    }
    if (renormalize) {
      float sum = 0.0f;
      for (int64_t i = 0; i < top_k; ++i) sum += w[i];
      for (int64_t i = 0; i < top_k; ++i) w[i] /= sum;
    }
  }
}

void attention(const float* q, const float* k, const float* v, const AttentionShape& shape,
               float* out, ThreadPool& pool) {
  cpu::run_attention(cpu::active_kernels(), q, k, v, shape, out, pool);
}

void paged_attention(const PagedAttentionBatch& batch, ThreadPool& pool) {
  cpu::run_paged_attention(cpu::active_kernels(), batch, pool);
}

const char* cpu_backend_name() { return cpu::active_kernels().name; }

namespace cpu {
namespace {

constexpr int64_t kMatmulGrain = 16;  // weight rows per parallel_for chunk (decode)

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// Prefill on a weight of few slices (n below kPrefillMinUnits slices: an
// attention projection of a small model) also cuts x into parts of whole
// kPrefillRowBlock-row blocks, so that a small pool's threads all get units
// (7 slices on 2 threads leave one idle an eighth of the time). Returns the
// rows per part (m itself when x is not cut).
constexpr int64_t kPrefillMinUnits = 8;
constexpr int64_t kPrefillRowBlock = 128;
int64_t prefill_part_rows(int64_t m, int64_t n_slices) {
  if (n_slices >= kPrefillMinUnits) return m;
  const int64_t parts =
      std::min((kPrefillMinUnits + n_slices - 1) / n_slices, m / kPrefillRowBlock);
  if (parts <= 1) return m;
  return round_up((m + parts - 1) / parts, kPrefillRowBlock);
}

// Per-thread scratch, reused across calls (one engine thread + pool workers);
// one buffer per Tag so nested uses do not collide.
template <typename T, int Tag>
T* scratch(int64_t count) {
  thread_local std::vector<T> buffer;
  if (static_cast<int64_t>(buffer.size()) < count) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

// x for the int8 kernels, quantized once before the matmul (workers only
// read it). Prefill-sized x (the panels' own-int8 prefill, the AVX2 table's
// low-bit kernels at every m) is quantized across the pool, row ranges
// apart; rows are quantized independently, so the bits are the same.
// Per 32 values (x_to_q8_blocks) into a's x_q8s, x_q8_d, x_q8_corr.
void quantize_x_blocks(const KernelTable& t, const float* x, int64_t m, ThreadPool& pool,
                       MatmulArgs* a) {
  const int64_t k = a->k, blocks = k / 32;
  int8_t* xq = scratch<int8_t, 6>(m * k);
  float* xd = scratch<float, 4>(m * blocks);
  int32_t* xc = scratch<int32_t, 8>(m * blocks);
  if (m > kDecodeMaxRows) {
    pool.parallel_for(
        m,
        [&](int64_t b, int64_t e, int) {
          t.x_to_q8_blocks(x + b * k, e - b, k, xq + b * k, xd + b * blocks, xc + b * blocks);
        },
        kDecodeMaxRows);
  } else {
    t.x_to_q8_blocks(x, m, k, xq, xd, xc);
  }
  a->x_q8s = xq;
  a->x_q8_d = xd;
  a->x_q8_corr = xc;
}

// Per lowbit_x_block(a->w_dtype) values (x_to_q8_groups) into a's x_q8s,
// x_q8_scale, x_q8_sum16, x_q8_nsum4, x_q8_fsum4, x_q8_nsum16 and k_pad256.
void quantize_x_groups(const KernelTable& t, const float* x, int64_t m, ThreadPool& pool,
                       MatmulArgs* a) {
  const int64_t k = a->k, kp = round_up(k, 256);
  a->k_pad256 = kp;
  Q8GroupsOut q;
  q.q = scratch<int8_t, 6>(m * kp);
  q.scale = scratch<float, 4>(m * kp / 4);
  q.sum16 = scratch<float, 7>(m * kp / 16);
  q.nsum4 = scratch<int32_t, 8>(m * kp / 4);
  q.fsum4 = scratch<float, 9>(m * kp / 4);
  q.nsum16 = scratch<int32_t, 10>(m * kp / 16);
  if (m > kDecodeMaxRows) {
    pool.parallel_for(
        m,
        [&](int64_t b, int64_t e, int) {
          const Q8GroupsOut rows{q.q + b * kp,          q.scale + b * kp / 4,
                                 q.sum16 + b * kp / 16, q.nsum4 + b * kp / 4,
                                 q.fsum4 + b * kp / 4,  q.nsum16 + b * kp / 16};
          t.x_to_q8_groups(x + b * k, e - b, k, kp, a->w_dtype, rows);
        },
        kDecodeMaxRows);
  } else {
    t.x_to_q8_groups(x, m, k, kp, a->w_dtype, q);
  }
  a->x_q8s = q.q;
  a->x_q8_scale = q.scale;
  a->x_q8_sum16 = q.sum16;
  a->x_q8_nsum4 = q.nsum4;
  a->x_q8_fsum4 = q.fsum4;
  a->x_q8_nsum16 = q.nsum16;
}

}  // namespace

// Quantized weights switch numerics above this m (int8 or exact f32 x below,
// bf16 tiles for the prefill GEMM above) only when oneDNN's GEMM is in use:
// without it (STRATA_NO_ONEDNN=1, the exact mode) every m keeps the decode
// numerics, so a row's result never depends on how many rows share its step.
int64_t quantized_decode_rows() {
  static const int64_t rows = onednn_enabled() ? kDecodeMaxRows : INT64_MAX;
  return rows;
}

MatmulMode matmul_mode(tensor::DType w_dtype, int64_t m) {
  if (w_dtype == tensor::DType::kBF16) return MatmulMode::kBF16;
  if (tensor::is_quantized(w_dtype) && m > quantized_decode_rows()) return MatmulMode::kBF16;
  return MatmulMode::kF32;
}

bool uses_lowbit_kernel(const KernelTable& t, tensor::DType w_dtype, int64_t m) {
  static const bool vnni = cpu_features().avx512_vnni;
  if (t.matmul_lowbit_range == nullptr || t.x_to_q8_groups == nullptr ||
      t.lowbit_kernel_for == nullptr || !t.lowbit_kernel_for(w_dtype) ||
      (t.lowbit_needs_vnni && !vnni)) {
    return false;
  }
  // A table with a prefill GEMM runs it on bf16 tiles above the decode rows;
  // one without (AVX2) runs the int8 kernel at every m.
  return m <= quantized_decode_rows() || t.matmul_prefill_range == nullptr;
}

bool uses_q8_activations(const KernelTable& t, tensor::DType w_dtype, int64_t m) {
  return w_dtype == tensor::DType::kQ8_0 && m <= quantized_decode_rows() &&
         t.matmul_q8q8_range != nullptr && t.x_to_q8 != nullptr;
}

namespace {

// A weight in panels runs t's panel kernel at m rows with this kernel
// choice: every decode m, and prefill unless a bf16-tile candidate
// (kOnednn, kOwn) was chosen.
bool panels_at(const KernelTable& t, tensor::DType w_dtype, int64_t m, MatmulKernel kernel) {
  if (!reads_panels(t, w_dtype) || kernel == MatmulKernel::kOwnExact) return false;
  return m <= quantized_decode_rows() || kernel == MatmulKernel::kStatic ||
         kernel == MatmulKernel::kOwnInt8;
}

}  // namespace

bool uses_panels(const KernelTable& t, const uint8_t* panels, int64_t m, MatmulKernel kernel) {
  // A weight has panels only where its dtype has the layout; any such dtype
  // answers panels_at alike.
  return panels != nullptr && panels_at(t, tensor::DType::kQ8_0, m, kernel);
}

bool q8_uses_int8_x(const KernelTable& t, int64_t m, MatmulKernel kernel) {
  return panels_at(t, tensor::DType::kQ8_0, m, kernel) ||
         (kernel != MatmulKernel::kOwnExact && uses_q8_activations(t, tensor::DType::kQ8_0, m));
}

bool uses_int8_x(const KernelTable& t, tensor::DType w_dtype, int64_t m, MatmulKernel kernel) {
  if (w_dtype == tensor::DType::kQ8_0) return q8_uses_int8_x(t, m, kernel);
  // run_matmul's order: the panel kernel, else the row-major int8 one.
  return panels_at(t, w_dtype, m, kernel) || uses_lowbit_kernel(t, w_dtype, m);
}

bool reads_panels(const KernelTable& t, tensor::DType w_dtype) {
  return t.matmul_panels_range != nullptr && panels_in_use(w_dtype);
}

bool runs_prefill_gemm(const KernelTable& t, tensor::DType w_dtype, int64_t m,
                       MatmulKernel kernel) {
  // BF16 weights where oneDNN would emulate bf16: our tiles are the static
  // choice (kOnednn stays a calibration candidate).
  const bool own_bf16 =
      w_dtype == tensor::DType::kBF16 && kernel == MatmulKernel::kStatic && !onednn_bf16_native();
  return m > kDecodeMaxRows && t.matmul_prefill_range != nullptr &&
         w_dtype != tensor::DType::kF16 &&
         (!tensor::is_quantized(w_dtype) || m > quantized_decode_rows()) &&
         !is_own_kernel(kernel) && !own_bf16;
}

bool is_own_kernel(MatmulKernel kernel) {
  return kernel == MatmulKernel::kOwn || kernel == MatmulKernel::kOwnHwPrefetch ||
         kernel == MatmulKernel::kOwnFourRows;
}

void set_decode_variant(MatmulKernel kernel, MatmulArgs* a) {
  a->prefetch_one_row_tiles = kernel != MatmulKernel::kOwnHwPrefetch;
  a->gemv_tile_rows = kernel == MatmulKernel::kOwnFourRows ? 4 : 0;
}

void run_matmul(const KernelTable& t, const float* x, int64_t m, const MatmulWeight& w,
                const float* bias, float* y, ThreadPool& pool, MatmulKernel kernel) {
  STRATA_CHECK(m >= 0 && w.n() > 0) << "m=" << m << " n=" << w.n();
  if (m == 0) return;
  MatmulArgs a;
  a.x = x;
  a.m = m;
  a.n = w.n();
  a.k = w.k();
  a.k_pad = round_up(w.k(), 32);
  a.w = w.view().data;
  a.w_dtype = w.dtype();
  a.bias = bias;
  a.y = y;
  set_decode_variant(kernel, &a);
  const bool prefill = runs_prefill_gemm(t, w.dtype(), m, kernel);
  if (reads_panels(t, w.dtype())) a.w_panels = w.panels();
  if (uses_panels(t, a.w_panels, m, kernel)) {
    if (panels_read_x_groups(w.dtype())) {
      quantize_x_groups(t, x, m, pool, &a);
    } else {
      quantize_x_blocks(t, x, m, pool, &a);
    }
    pool.parallel_for(
        a.n, [&](int64_t b, int64_t e, int) { t.matmul_panels_range(a, b, e); }, kMatmulGrain);
    return;
  }
  // A weight kept only in panels, on a path that reads rows (another table,
  // or the exact f32 kernel): rows unpacked for this call. The dispatched
  // table never gets here: it reads the panels at every m (the int8 kernel
  // above; on a table with a prefill GEMM, the bf16 tiles of the prefill
  // candidates kOnednn and kOwn below).
  tensor::AlignedBuffer<uint8_t> unpacked;
  const bool bf16_tiles_from_panels = a.w_panels != nullptr && t.matmul_prefill_range != nullptr &&
                                      matmul_mode(w.dtype(), m) == MatmulMode::kBF16;
  if (a.w == nullptr && !bf16_tiles_from_panels) {
    unpacked = w.unpack_rows();
    a.w = unpacked.data();
  }
  if (uses_lowbit_kernel(t, w.dtype(), m)) {
    quantize_x_groups(t, x, m, pool, &a);
    pool.parallel_for(
        a.n, [&](int64_t b, int64_t e, int) { t.matmul_lowbit_range(a, b, e); }, kMatmulGrain);
    return;
  }
  // Low-bit weights without this table's int8 decode kernel (or prefill
  // without its GEMM): the portable kernels, which dequantize exactly.
  if (tensor::is_low_bit_quant(w.dtype()) && !prefill && &t != &generic_kernels()) {
    return run_matmul(generic_kernels(), x, m, w, bias, y, pool);
  }
  if (uses_q8_activations(t, w.dtype(), m) && kernel != MatmulKernel::kOwnExact) {
    // Quantize x once on the calling thread; workers only read it.
    a.k_pad64 = round_up(w.k(), 64);
    uint8_t* xq = scratch<uint8_t, 3>(m * a.k_pad64);
    float* xs = scratch<float, 4>(m * a.k_pad64 / 4);  // 16 floats per 64 values
    t.x_to_q8(x, m, a.k, a.k_pad64, xq, xs);
    a.x_q8 = xq;
    a.x_q8_scale = xs;
    pool.parallel_for(
        a.n, [&](int64_t b, int64_t e, int) { t.matmul_q8q8_range(a, b, e); }, kMatmulGrain);
    return;
  }
  if (matmul_mode(w.dtype(), m) == MatmulMode::kBF16) {
    uint16_t* xb = scratch<uint16_t, 0>(m * a.k_pad);
    t.x_to_bf16(x, m, a.k, a.k_pad, xb);
    a.x_bf16 = xb;
  }
  int64_t tile_elems = std::max(kBf16TileRows * kBf16TileK, kPrefillTileRows * a.k_pad);
  auto tile = [&] {
    return tensor::is_quantized(a.w_dtype) ? scratch<uint16_t, 1>(tile_elems) : nullptr;
  };
  if (prefill) {
    // Units of one weight slice (one oneDNN call) by one part of x's rows,
    // both cut by the shapes alone, so that each call's shape, and so its
    // rounding, does not depend on the thread count.
    const int64_t slice = prefill_slice_rows(a.w_dtype, a.k);
    const int64_t n_slices = (a.n + slice - 1) / slice;
    const int64_t part_rows = prefill_part_rows(m, n_slices);
    const int64_t parts = (m + part_rows - 1) / part_rows;
    pool.parallel_for(
        n_slices * parts,
        [&](int64_t b, int64_t e, int) {
          for (int64_t u = b; u < e; ++u) {
            const int64_t r0 = u / n_slices * part_rows, j0 = u % n_slices * slice;
            MatmulArgs part = a;
            part.m = std::min(part_rows, m - r0);
            part.x = a.x + r0 * a.k;
            if (a.x_bf16 != nullptr) part.x_bf16 = a.x_bf16 + r0 * a.k_pad;
            part.y = a.y + r0 * a.n;
            t.matmul_prefill_range(part, j0, std::min(j0 + slice, a.n), tile());
          }
        },
        1);
  } else if (a.x_bf16 != nullptr) {
    pool.parallel_for(
        a.n, [&](int64_t b, int64_t e, int) { t.matmul_bf16_range(a, b, e, tile()); },
        kMatmulGrain);
  } else {
    pool.parallel_for(
        a.n, [&](int64_t b, int64_t e, int) { t.matmul_f32_range(a, b, e); }, kMatmulGrain);
  }
}

void run_rope(const KernelTable& t, float* x, const int32_t* positions, int64_t num_tokens,
              int64_t num_heads, int64_t head_dim, const float* inv_freq, RopeStyle style) {
  STRATA_CHECK(head_dim % 2 == 0) << "rope head_dim=" << head_dim << " must be even";
  int64_t half = head_dim / 2;
  std::vector<float> cos(static_cast<size_t>(num_tokens * half));
  std::vector<float> sin(cos.size());
  for (int64_t tok = 0; tok < num_tokens; ++tok) {
    for (int64_t i = 0; i < half; ++i) {
      float angle = static_cast<float>(positions[tok]) * inv_freq[i];
      cos[tok * half + i] = std::cos(angle);
      sin[tok * half + i] = std::sin(angle);
    }
  }
  t.rope_apply(x, num_tokens, num_heads, head_dim, cos.data(), sin.data(), style);
}

void run_attention(const KernelTable& t, const float* q, const float* k, const float* v,
                   const AttentionShape& shape, float* out, ThreadPool& pool) {
  STRATA_CHECK(shape.num_kv_heads > 0 && shape.num_heads % shape.num_kv_heads == 0)
      << "num_heads=" << shape.num_heads << " num_kv_heads=" << shape.num_kv_heads;
  int64_t rows = shape.num_tokens * shape.num_heads;
  int64_t ctx = shape.start_pos + shape.num_tokens;
  // Causal rows get longer with the token index; visit tokens in the order
  // 0, T-1, 1, T-2, ... so contiguous thread ranges get equal work.
  int64_t num_tokens = shape.num_tokens;
  pool.parallel_for(rows, [&](int64_t b, int64_t e, int) {
    float* buf = scratch<float, 2>(ctx);
    for (int64_t i = b; i < e; ++i) {
      int64_t slot = i / shape.num_heads;
      int64_t tok = slot % 2 == 0 ? slot / 2 : num_tokens - 1 - slot / 2;
      int64_t row = tok * shape.num_heads + i % shape.num_heads;
      t.attention_rows(q, k, v, shape, row, row + 1, buf, out);
    }
  });
}

void run_paged_attention(const KernelTable& t, const PagedAttentionBatch& b, ThreadPool& pool) {
  STRATA_CHECK(b.num_kv_heads > 0 && b.num_heads % b.num_kv_heads == 0 && b.block_size > 0)
      << "num_heads=" << b.num_heads << " num_kv_heads=" << b.num_kv_heads
      << " block_size=" << b.block_size;
  const int64_t group = b.num_heads / b.num_kv_heads;
  // Items of the longest contexts first: workers claim chunks in order, so
  // the short items fill in at the end.
  std::vector<PagedAttentionItem> items;
  for (int32_t s = 0; s < b.num_seqs; ++s) {
    const int64_t rows = int64_t{b.query_start_loc[s + 1] - b.query_start_loc[s]} * group;
    for (int64_t end = rows; end > 0; end -= kPagedAttentionLanes) {
      const int64_t begin = std::max<int64_t>(0, end - kPagedAttentionLanes);
      for (int64_t h = 0; h < b.num_kv_heads; ++h) {
        items.push_back(
            {s, static_cast<int32_t>(h), static_cast<int32_t>(begin), static_cast<int32_t>(end)});
      }
    }
  }
  const int64_t scratch_floats = paged_attention_scratch_floats(b.head_dim);
  pool.parallel_for(static_cast<int64_t>(items.size()), [&](int64_t begin, int64_t end, int) {
    float* buf = scratch<float, 5>(scratch_floats);
    for (int64_t i = begin; i < end; ++i) t.paged_attention_item(b, items[i], buf);
  });
}

}  // namespace cpu
}  // namespace strata::ops
