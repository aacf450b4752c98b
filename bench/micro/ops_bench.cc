// Kernel benchmarks: decode GEMV (m = 1, 16) and prefill GEMM (m = 512) on
// the Qwen2.5-0.5B linear shapes in F32, BF16 and Q8_0, our kernels vs
// oneDNN, plus the two limits efficiency is measured against: memory
// bandwidth (STREAM-like read and triad over ~1 GiB) and the best sustained
// bf16 GEMM rate (oneDNN and ours at 2048^3).
//
// Decode weights rotate over copies totalling >= 256 MiB so every iteration
// streams from DRAM, as in a real forward pass (the whole model does not fit
// in L3). Counters: weight_bytes/s (DRAM traffic), FLOP/s (2*m*n*k).
//
//   build-ops/bench/micro/ops_bench --benchmark_filter=... [--benchmark_repetitions=3]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/thread_pool.h"
#include "ops/cpu/kernels.h"
#include "ops/kernel_calibration.h"
#include "ops/matmul_choice.h"
#include "ops/ops.h"
#include "tensor/kv_cache_dtype.h"
#include "tensor/tensor_view.h"

#ifdef STRATA_BENCH_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace strata::ops {
namespace {

using tensor::DType;
constexpr int64_t kRotateBytes = 256ll << 20;

// One weight [n, k] in `dtype`, replicated so a pass over all copies misses L3.
struct WeightSet {
  int64_t n, k;
  DType dtype;
  std::vector<std::unique_ptr<uint8_t[]>> copies;
  std::vector<MatmulWeight> prepared;
  int64_t bytes = 0;
};

tensor::TensorView view_of(const WeightSet& s, size_t i) {
  tensor::TensorView v;
  v.data = s.copies[i].get();
  v.dtype = s.dtype;
  v.shape = {s.n, s.k};
  return v;
}

std::unique_ptr<WeightSet> make_weights(DType dtype, int64_t n, int64_t k, bool rotate) {
  auto s = std::make_unique<WeightSet>();
  s->n = n;
  s->k = k;
  s->dtype = dtype;
  s->bytes = tensor::dtype_size_bytes(dtype, n * k);
  std::vector<float> f(static_cast<size_t>(n * k));
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  for (float& v : f) v = dist(rng);
  auto first = std::make_unique<uint8_t[]>(static_cast<size_t>(s->bytes));
  auto* u16 = reinterpret_cast<uint16_t*>(first.get());
  for (int64_t i = 0; i < n * k; ++i) {
    if (dtype == DType::kF32) std::memcpy(first.get() + 4 * i, &f[i], 4);
    if (dtype == DType::kF16) u16[i] = tensor::f32_to_f16(f[i]);
    if (dtype == DType::kBF16) u16[i] = tensor::f32_to_bf16(f[i]);
  }
  if (dtype == DType::kQ8_0) {
    tensor::quantize_q8_0(f.data(), n * k, reinterpret_cast<tensor::BlockQ8_0*>(first.get()));
  }
  // Low-bit quants (no quantizer in the tree): byte 0x11 everywhere, a valid
  // block of every such type with finite, normal scales (as the kernel
  // calibration's probes use). Rates only; the values do not matter.
  if (tensor::is_low_bit_quant(dtype)) std::memset(first.get(), 0x11, static_cast<size_t>(s->bytes));
  if (std::getenv("STRATA_BENCH_NO_ROTATE") != nullptr) rotate = false;  // cache-resident runs
  int64_t num = rotate ? std::max<int64_t>(1, kRotateBytes / s->bytes) : 1;
  for (int64_t c = 1; c < num; ++c) {
    auto copy = std::make_unique<uint8_t[]>(static_cast<size_t>(s->bytes));
    std::memcpy(copy.get(), first.get(), static_cast<size_t>(s->bytes));
    s->copies.push_back(std::move(copy));
  }
  s->copies.push_back(std::move(first));
  for (size_t c = 0; c < s->copies.size(); ++c)
    s->prepared.push_back(MatmulWeight::prepare(view_of(*s, c)));
  return s;
}

std::vector<float> make_x(int64_t m, int64_t k) {
  std::vector<float> x(static_cast<size_t>(m * k));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : x) v = dist(rng);
  return x;
}

void set_counters(benchmark::State& state, int64_t m, int64_t n, int64_t k, int64_t w_bytes) {
  double iters = static_cast<double>(state.iterations());
  state.counters["weight_bytes/s"] =
      benchmark::Counter(iters * static_cast<double>(w_bytes), benchmark::Counter::kIsRate);
  state.counters["FLOP/s"] = benchmark::Counter(iters * 2.0 * double(m) * double(n) * double(k),
                                                benchmark::Counter::kIsRate);
}

// STRATA_BENCH_KERNEL=<name> (ops/matmul_choice.h: own, own-4rows,
// own-hwprefetch, ...) runs that kernel where it is a candidate for the
// shape's class, the static choice elsewhere: a decode tile variant timed
// against the static kernel in the same sitting. STRATA_BENCH_KERNEL=calibrated
// runs what load-time calibration chooses for the class on this host (measured
// here, without the cache), as a served model would (bench/kernels_vs_peers.sh).
MatmulKernel bench_kernel(const MatmulShapeClass& cls) {
  const char* name = std::getenv("STRATA_BENCH_KERNEL");
  MatmulKernel k = MatmulKernel::kStatic;
  if (name != nullptr && std::strcmp(name, "calibrated") == 0) {
    CalibrationOptions o;
    o.mode = CalibrationMode::kForce;
    o.threads = ThreadPool::global().num_threads();
    for (const ClassCalibration& c :
         calibrate_matmul_kernels({cls}, o, make_matmul_timer(ThreadPool::global())).classes) {
      if (c.cls == cls) k = c.chosen;
    }
    return k;
  }
  if (name == nullptr || !parse_matmul_kernel(name, &k)) return MatmulKernel::kStatic;
  const std::vector<MatmulKernel> cands = matmul_candidates(cls);
  return std::find(cands.begin(), cands.end(), k) != cands.end() ? k : MatmulKernel::kStatic;
}

// args: dtype, m, n, k[, impl]. impl 0: the product path (ops::matmul);
// impl 1: our own kernels only (the dispatched table without its oneDNN
// prefill GEMM), to compare the two in one process.
void BM_Matmul(benchmark::State& state) {
  auto dtype = static_cast<DType>(state.range(0));
  int64_t m = state.range(1), n = state.range(2), k = state.range(3);
  bool own = state.range(4) != 0;
  auto w = make_weights(dtype, n, k, m <= 16);
  std::vector<float> x = make_x(m, k), y(static_cast<size_t>(m * n));
  ThreadPool& pool = ThreadPool::global();
  cpu::KernelTable table = cpu::active_kernels();
  if (own) table.matmul_prefill_range = nullptr;
  const MatmulKernel kernel = bench_kernel(MatmulShapeClass{dtype, n, k, matmul_regime(m)});
  size_t c = 0;
  for (auto _ : state) {
    cpu::run_matmul(table, x.data(), m, w->prepared[c], nullptr, y.data(), pool, kernel);
    benchmark::ClobberMemory();
    c = (c + 1) % w->prepared.size();
  }
  set_counters(state, m, n, k, w->bytes);
  state.SetLabel(std::string(own ? "ours" : cpu_backend_name()) +
                 (kernel != MatmulKernel::kStatic ? std::string(" ") + matmul_kernel_name(kernel)
                                                  : std::string()));
}

#ifdef STRATA_BENCH_ONEDNN
// oneDNN matmul y = x · wᵀ. BF16: x converted to bf16 inside the timed loop
// (our kernels do that too). packed: weights reordered once to oneDNN's
// preferred blocked layout ("any"), else read in place as [k, n] "ba".
struct OnednnMatmul {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::matmul prim;
  dnnl::memory::desc src_md, wei_md, dst_md;
  std::vector<dnnl::memory> weights;  // one per WeightSet copy

  OnednnMatmul(const WeightSet& w, int64_t m, bool packed) {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    dt wdt = w.dtype == DType::kBF16 ? dt::bf16 : dt::f32;
    src_md = dnnl::memory::desc({m, w.k}, wdt, tag::ab);
    dnnl::memory::desc user_wei({w.k, w.n}, wdt, tag::ba);
    dnnl::memory::desc want_wei = packed ? dnnl::memory::desc({w.k, w.n}, wdt, tag::any) : user_wei;
    dst_md = dnnl::memory::desc({m, w.n}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, want_wei, dst_md), eng);
    prim = dnnl::matmul(pd);
    wei_md = pd.weights_desc();
    for (const auto& copy : w.copies) {
      dnnl::memory user(user_wei, eng, copy.get());
      if (!packed) {
        weights.push_back(user);
        continue;
      }
      dnnl::memory re(wei_md, eng);
      dnnl::reorder(user, re).execute(strm, user, re);
      strm.wait();
      weights.push_back(re);
    }
  }
};

// args: dtype, m, n, k, packed
void BM_Onednn(benchmark::State& state) {
  auto dtype = static_cast<DType>(state.range(0));
  int64_t m = state.range(1), n = state.range(2), k = state.range(3);
  bool packed = state.range(4) != 0;
  auto w = make_weights(dtype, n, k, m <= 16);
  OnednnMatmul mm(*w, m, packed);
  std::vector<float> x = make_x(m, k), y(static_cast<size_t>(m * n));
  std::vector<uint16_t> xb(static_cast<size_t>(m * k));
  bool bf16 = dtype == DType::kBF16;
  dnnl::memory src(mm.src_md, mm.eng, bf16 ? static_cast<void*>(xb.data()) : x.data());
  dnnl::memory dst(mm.dst_md, mm.eng, y.data());
  const cpu::KernelTable& t = cpu::active_kernels();
  size_t c = 0;
  for (auto _ : state) {
    if (bf16) t.x_to_bf16(x.data(), m, k, k, xb.data());
    mm.prim.execute(mm.strm,
                    {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, mm.weights[c]}, {DNNL_ARG_DST, dst}});
    mm.strm.wait();
    c = (c + 1) % mm.weights.size();
  }
  set_counters(state, m, n, k, w->bytes);
  state.SetLabel(packed ? "onednn_packed" : "onednn");
}
#endif

// Qwen2.5-0.5B linear shapes {n, k}.
const std::vector<std::pair<int64_t, int64_t>> kShapes = {
    {896, 896}, {128, 896}, {4864, 896}, {896, 4864}, {151936, 896}};
// The weight llama.cpp's `test-backend-ops perf -o MUL_MAT` times (m=4096,
// k=14336 in its naming), at m = 1 and 512 only: bench/kernels_vs_peers.sh
// compares the three engines on it.
constexpr std::pair<int64_t, int64_t> kPeerShape = {4096, 14336};

// STRATA_BENCH_CPU_TIME=1: rates per CPU-second, for single-thread runs on a
// machine whose other tenants preempt us (real time then overstates cost).
void time_mode(benchmark::internal::Benchmark* b) {
  if (std::getenv("STRATA_BENCH_CPU_TIME") == nullptr) b->UseRealTime();
}

void matmul_args(benchmark::internal::Benchmark* b, std::vector<DType> dtypes, bool onednn) {
  for (int64_t m : {1, 4, 8, 16, 512}) {
    // oneDNN never runs decode (matmul_choice.h): no m = 4 or 8 for it.
    if (onednn && (m == 4 || m == 8)) continue;
    for (DType dtype : dtypes) {
      std::vector<std::pair<int64_t, int64_t>> shapes = kShapes;
      if (m == 1 || m == 512) shapes.push_back(kPeerShape);
      for (auto [n, k] : shapes) {
        if (m == 512 && n == 151936) continue;  // prefill computes logits for the last token only
        if (!onednn) {
          b->Args({static_cast<int64_t>(dtype), m, n, k, 0});
          if (m > cpu::kDecodeMaxRows) b->Args({static_cast<int64_t>(dtype), m, n, k, 1});
          continue;
        }
        for (int64_t packed : {0, 1}) b->Args({static_cast<int64_t>(dtype), m, n, k, packed});
      }
    }
  }
  b->ArgNames(onednn ? std::vector<std::string>{"dtype", "m", "n", "k", "packed"}
                     : std::vector<std::string>{"dtype", "m", "n", "k", "own"});
  time_mode(b);
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Matmul)->Apply([](benchmark::internal::Benchmark* b) {
  matmul_args(b, {DType::kBF16, DType::kQ8_0, DType::kF32}, false);
});
// K-quants and the legacy 32-value quants (decode: GB/s of weight, the issue-22
// bound is the read loop; prefill m = 512: GFLOP/s) on the shapes whose k is a
// multiple of 256: the Qwen2.5-0.5B down projection and llama.cpp's
// test-backend-ops shape. Q5_0 is what llama-quantize's Q4_K_M writes for rows
// whose k is not a multiple of 256; Q2_K, Q3_K and IQ4_XS are the main types of
// llama-quantize's Q2_K, Q3_K_M and IQ4_XS files; IQ4_NL (like Q4_0, kept in
// panels on AVX512-VNNI) is what IQ4_XS files hold where k is not.
BENCHMARK(BM_Matmul)->Apply([](benchmark::internal::Benchmark* b) {
  for (int64_t m : {1, 16, 512}) {
    for (DType dtype : {DType::kQ4_0, DType::kQ5_0, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K,
                        DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS, DType::kIQ4_NL}) {
      for (auto [n, k] : {std::pair<int64_t, int64_t>{896, 4864}, kPeerShape}) {
        b->Args({static_cast<int64_t>(dtype), m, n, k, 0});
      }
    }
  }
  b->ArgNames({"dtype", "m", "n", "k", "own"});
  time_mode(b);
  b->Unit(benchmark::kMicrosecond);
});
#ifdef STRATA_BENCH_ONEDNN
BENCHMARK(BM_Onednn)->Apply([](benchmark::internal::Benchmark* b) {
  matmul_args(b, {DType::kBF16, DType::kF32}, true);
});
#endif

// ---- paged attention ----
// Args: table (0 generic, 1 AVX-512, 2 AVX2), new tokens per sequence, context after
// the step, sequences, query heads, kv heads, head_dim, KV dtype
// (tensor::KvCacheDtype code: 0 f32, 1 bf16, 3 fp8_e4m3). K/V in shuffled
// 16-token blocks. FLOP/s counts the causal work: 4 * head_dim per visible
// (query head, key) pair (Q·K and P·V); KV_bytes/s the cache bytes read once
// per step (what bounds decode).
void BM_PagedAttention(benchmark::State& state) {
  const ops::cpu::KernelTable* t = &ops::cpu::generic_kernels();
  if (state.range(0) == 1) {
    if (!ops::cpu::avx512_supported()) return state.SkipWithError("no AVX-512 kernels");
    t = ops::cpu::avx512_kernels();
  } else if (state.range(0) == 2) {
    if (!ops::cpu::avx2_supported()) return state.SkipWithError("no AVX2 kernels");
    t = &ops::cpu::avx2_kernels();
  }
  const int64_t num_new = state.range(1), ctx = state.range(2), num_seqs = state.range(3);
  const int64_t heads = state.range(4), kv_heads = state.range(5), dim = state.range(6);
  const auto dtype = static_cast<tensor::KvCacheDtype>(state.range(7));
  const tensor::KvRowLayout layout{dtype, kv_heads, dim};
  const int64_t block = 16, blocks_per_seq = (ctx + block - 1) / block;
  const tensor::KvTileLayout tiles{layout, tensor::kv_tile_tokens(block)};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t rows = num_seqs * blocks_per_seq * block;
  std::vector<uint8_t> k(static_cast<size_t>(rows * layout.row_bytes())), v(k.size());
  std::vector<float> x(static_cast<size_t>(kv_heads * dim));
  std::vector<uint8_t> row(static_cast<size_t>(layout.row_bytes()));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& e : x) e = u(rng);
    tensor::encode_kv_row(x.data(), layout, 0.0f, row.data());
    tensor::store_kv_row(row.data(), tiles, tensor::KvSide::kKey, r, k.data());
    tensor::store_kv_row(row.data(), tiles, tensor::KvSide::kValue, r, v.data());
  }
  std::vector<int32_t> table(static_cast<size_t>(num_seqs * blocks_per_seq));
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  std::shuffle(table.begin(), table.end(), rng);
  std::vector<int32_t> qsl, lens;
  for (int64_t s = 0; s <= num_seqs; ++s) qsl.push_back(static_cast<int32_t>(s * num_new));
  lens.assign(static_cast<size_t>(num_seqs), static_cast<int32_t>(ctx));
  std::vector<float> q(static_cast<size_t>(num_seqs * num_new * heads * dim));
  for (float& x : q) x = u(rng);
  std::vector<float> out(q.size());
  PagedAttentionBatch b;
  b.q = q.data();
  b.k_cache = k.data();
  b.v_cache = v.data();
  b.kv_dtype = dtype;
  b.query_start_loc = qsl.data();
  b.seq_lens = lens.data();
  b.block_tables = table.data();
  b.num_seqs = static_cast<int32_t>(num_seqs);
  b.max_blocks_per_seq = static_cast<int32_t>(blocks_per_seq);
  b.num_heads = heads;
  b.num_kv_heads = kv_heads;
  b.head_dim = dim;
  b.block_size = block;
  b.scale = 0.125f;
  b.out = out.data();
  ThreadPool& pool = ThreadPool::global();
  for (auto _ : state) {
    ops::cpu::run_paged_attention(*t, b, pool);
    benchmark::DoNotOptimize(out.data());
  }
  double pairs = 0;  // visible (query token, key) pairs per sequence
  for (int64_t i = 0; i < num_new; ++i) pairs += double(ctx - num_new + i + 1);
  state.counters["FLOP/s"] = benchmark::Counter(
      double(state.iterations()) * 4.0 * dim * heads * num_seqs * pairs,
      benchmark::Counter::kIsRate);
  state.counters["KV_bytes/s"] = benchmark::Counter(
      double(state.iterations()) * 2.0 * double(num_seqs) * double(ctx) * layout.row_bytes(),
      benchmark::Counter::kIsRate);
}
// bench-small (8 heads on 4 kv heads, head_dim 64): a 256-token round over a
// 2,048-token context, and 4 decodes at 2,048; Qwen2.5-0.5B (14 on 2).
BENCHMARK(BM_PagedAttention)
    ->ArgNames({"avx512", "new", "ctx", "seqs", "heads", "kv", "dim", "dtype"})
    ->Args({0, 256, 2048, 1, 8, 4, 64, 0})
    ->Args({1, 256, 2048, 1, 8, 4, 64, 0})
    ->Args({1, 256, 2048, 1, 8, 4, 64, 1})
    ->Args({1, 256, 2048, 1, 8, 4, 64, 3})
    ->Args({1, 1, 2048, 4, 8, 4, 64, 0})
    ->Args({1, 1, 2048, 4, 8, 4, 64, 1})
    ->Args({1, 1, 2048, 4, 8, 4, 64, 3})
    ->Args({1, 256, 2048, 1, 14, 2, 64, 0})
    ->Args({1, 1, 2048, 4, 14, 2, 64, 0})
    ->Args({1, 1, 8192, 16, 14, 2, 64, 0})
    ->Args({1, 1, 8192, 16, 14, 2, 64, 1})
    ->Args({1, 1, 8192, 16, 14, 2, 64, 3})
    ->Args({2, 256, 2048, 1, 8, 4, 64, 0})
    ->Args({2, 256, 2048, 1, 8, 4, 64, 1})
    ->Args({2, 1, 2048, 4, 8, 4, 64, 1})
    ->Args({0, 1, 2048, 4, 8, 4, 64, 1})
    ->Args({2, 1, 8192, 16, 14, 2, 64, 1})
    ->Apply(time_mode)
    ->Unit(benchmark::kMillisecond);

// ---- mixture-of-experts decode ----

// One decode token through top_k experts of qwen3-moe-bench's shape (hidden
// 1024, expert width 512): gate/up, silu * up, down, weighted add into the
// output. args: dtype, grouped. grouped 0: one ops::matmul per expert and
// projection (2 * top_k dispatches); 1: ops::grouped_matmul then
// grouped_matmul_scatter_add (2 dispatches), as MoeLayer decodes.
void BM_MoeDecode(benchmark::State& state) {
  auto dtype = static_cast<DType>(state.range(0));
  const bool grouped = state.range(1) != 0;
  constexpr int64_t kHidden = 1024, kInter = 512, kTopK = 4;
  auto gate_up = make_weights(dtype, 2 * kInter, kHidden, true);
  auto down = make_weights(dtype, kHidden, kInter, true);
  std::vector<float> x = make_x(1, kHidden), out(kHidden);
  std::vector<float> gu(kTopK * 2 * kInter), act(kTopK * kInter), y(kTopK * kHidden);
  std::vector<WeightedRow> rows(kTopK);
  for (int64_t e = 0; e < kTopK; ++e) rows[e] = {0, 0.25f};
  ThreadPool& pool = ThreadPool::global();
  size_t cg = 0, cd = 0;
  std::vector<GroupedMatmul> mm(kTopK);
  for (auto _ : state) {
    std::fill(out.begin(), out.end(), 0.0f);
    if (grouped) {
      for (int64_t e = 0; e < kTopK; ++e) {
        mm[e] = {x.data(), 1, &gate_up->prepared[(cg + e) % gate_up->prepared.size()],
                 gu.data() + e * 2 * kInter, &rows[e]};
      }
      grouped_matmul(mm.data(), kTopK, pool);
      for (int64_t e = 0; e < kTopK; ++e) {
        silu_mul(mm[e].y, mm[e].y + kInter, kInter, act.data() + e * kInter);
        mm[e].x = act.data() + e * kInter;
        mm[e].w = &down->prepared[(cd + e) % down->prepared.size()];
        mm[e].y = y.data() + e * kHidden;
      }
      grouped_matmul_scatter_add(mm.data(), kTopK, out.data(), pool);
    } else {
      for (int64_t e = 0; e < kTopK; ++e) {
        matmul(x.data(), 1, gate_up->prepared[(cg + e) % gate_up->prepared.size()], nullptr,
               gu.data(), pool);
        silu_mul(gu.data(), gu.data() + kInter, kInter, act.data());
        matmul(act.data(), 1, down->prepared[(cd + e) % down->prepared.size()], nullptr, y.data(),
               pool);
        weighted_scatter_add(y.data(), 1, kHidden, &rows[e], out.data());
      }
    }
    benchmark::DoNotOptimize(out.data());
    cg = (cg + kTopK) % gate_up->prepared.size();
    cd = (cd + kTopK) % down->prepared.size();
  }
  const int64_t bytes = kTopK * (gate_up->bytes + down->bytes);  // bytes are per copy
  state.counters["weight_bytes/s"] = benchmark::Counter(
      double(state.iterations()) * double(bytes), benchmark::Counter::kIsRate);
  state.SetLabel(grouped ? "grouped" : "per-expert");
}
BENCHMARK(BM_MoeDecode)
    ->Apply(time_mode)
    ->ArgsProduct({{static_cast<int64_t>(DType::kBF16), static_cast<int64_t>(DType::kQ8_0)},
                   {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// A 512-token prefill through one MoE layer of qwen3-moe-bench's shape (32
// experts, top-4, hidden 1024, expert width 512), tokens routed uniformly at
// random (fixed seed): per expert, gate/up over its rows, silu * up, down,
// weighted add. args: dtype, grouped. grouped 0: one ops::matmul per expert
// and projection (64 dispatches); 1: grouped_matmul then
// grouped_matmul_scatter_add over all experts (2 dispatches, threads split
// over experts x 128-row panels / output columns).
void BM_MoePrefill(benchmark::State& state) {
  auto dtype = static_cast<DType>(state.range(0));
  const bool grouped = state.range(1) != 0;
  constexpr int64_t kHidden = 1024, kInter = 512, kExperts = 32, kTopK = 4, kTokens = 512;
  std::vector<std::unique_ptr<WeightSet>> gate_up, down;
  for (int64_t e = 0; e < kExperts; ++e) {
    gate_up.push_back(make_weights(dtype, 2 * kInter, kHidden, false));
    down.push_back(make_weights(dtype, kHidden, kInter, false));
  }
  // Routing: each token picks kTopK distinct experts.
  std::mt19937 rng(11);
  std::vector<std::vector<WeightedRow>> rows(kExperts);
  for (int32_t t = 0; t < kTokens; ++t) {
    std::vector<int64_t> ids(kExperts);
    for (int64_t e = 0; e < kExperts; ++e) ids[e] = e;
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int64_t j = 0; j < kTopK; ++j) rows[ids[j]].push_back({t, 0.25f});
  }
  const int64_t routed = kTokens * kTopK;
  std::vector<float> x = make_x(routed, kHidden), out(kTokens * kHidden);
  std::vector<float> gu(routed * 2 * kInter), act(routed * kInter), y(routed * kHidden);
  ThreadPool& pool = ThreadPool::global();
  std::vector<GroupedMatmul> mm;
  for (auto _ : state) {
    std::fill(out.begin(), out.end(), 0.0f);
    int64_t base = 0;
    mm.clear();
    for (int64_t e = 0; e < kExperts; ++e) {
      const int64_t n = static_cast<int64_t>(rows[e].size());
      if (n == 0) continue;
      float* g = gu.data() + base * 2 * kInter;
      if (grouped) {
        mm.push_back({x.data() + base * kHidden, n, &gate_up[e]->prepared[0], g, rows[e].data()});
      } else {
        matmul(x.data() + base * kHidden, n, gate_up[e]->prepared[0], nullptr, g, pool);
        for (int64_t r = 0; r < n; ++r) {
          silu_mul(g + r * 2 * kInter, g + r * 2 * kInter + kInter, kInter,
                   act.data() + (base + r) * kInter);
        }
        matmul(act.data() + base * kInter, n, down[e]->prepared[0], nullptr,
               y.data() + base * kHidden, pool);
        weighted_scatter_add(y.data() + base * kHidden, n, kHidden, rows[e].data(), out.data());
      }
      base += n;
    }
    if (grouped) {
      grouped_matmul(mm.data(), static_cast<int64_t>(mm.size()), pool);
      base = 0;
      size_t i = 0;
      for (int64_t e = 0; e < kExperts; ++e) {
        const int64_t n = static_cast<int64_t>(rows[e].size());
        if (n == 0) continue;
        for (int64_t r = 0; r < n; ++r) {
          const float* g = mm[i].y + r * 2 * kInter;
          silu_mul(g, g + kInter, kInter, act.data() + (base + r) * kInter);
        }
        mm[i].x = act.data() + base * kInter;
        mm[i].w = &down[e]->prepared[0];
        mm[i].y = y.data() + base * kHidden;
        base += n;
        ++i;
      }
      grouped_matmul_scatter_add(mm.data(), static_cast<int64_t>(mm.size()), out.data(), pool);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["tokens/s"] = benchmark::Counter(double(state.iterations()) * double(kTokens),
                                                  benchmark::Counter::kIsRate);
  state.SetLabel(grouped ? "grouped" : "per-expert");
}
BENCHMARK(BM_MoePrefill)
    ->Apply(time_mode)
    ->ArgsProduct({{static_cast<int64_t>(DType::kBF16), static_cast<int64_t>(DType::kQ8_0)},
                   {0, 1}})
    ->Unit(benchmark::kMillisecond);

// ---- limits ----

constexpr int64_t kStreamBytes = 1ll << 30;

// Sum of uint64 words over 1 GiB, split across the pool (2 threads).
void BM_MemRead(benchmark::State& state) {
  int64_t words = kStreamBytes / 8;
  std::vector<uint64_t> a(static_cast<size_t>(words), 1);
  ThreadPool& pool = ThreadPool::global();
  std::vector<uint64_t> partial(static_cast<size_t>(pool.num_threads()));
  for (auto _ : state) {
    pool.parallel_for(
        words,
        [&](int64_t b, int64_t e, int t) {
          uint64_t s = 0;
          for (int64_t i = b; i < e; ++i) s += a[i];
          partial[t] = s;
        },
        4096);
    benchmark::DoNotOptimize(partial.data());
  }
  state.counters["bytes/s"] = benchmark::Counter(double(state.iterations()) * double(kStreamBytes),
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MemRead)->Apply(time_mode)->Unit(benchmark::kMillisecond);

// a = b + s*c over three f32 arrays of 1/3 GiB; counts 3 arrays of traffic
// (STREAM convention: no write-allocate).
void BM_Triad(benchmark::State& state) {
  int64_t n = kStreamBytes / 3 / 4;
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n), 1.0f),
      c(static_cast<size_t>(n), 2.0f);
  ThreadPool& pool = ThreadPool::global();
  for (auto _ : state) {
    pool.parallel_for(
        n,
        [&](int64_t lo, int64_t hi, int) {
          for (int64_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0f * c[i];
        },
        4096);
    benchmark::ClobberMemory();
  }
  state.counters["bytes/s"] = benchmark::Counter(double(state.iterations()) * 3.0 * 4.0 * double(n),
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Triad)->Apply(time_mode)->Unit(benchmark::kMillisecond);

// Peak: bf16 GEMM 2048^3 (FLOP/s counter), our own kernel and oneDNN (packed
// weights, oneDNN's own OpenMP threading).
BENCHMARK(BM_Matmul)
    ->Name("BM_GemmPeak_ours")
    ->Args({static_cast<int64_t>(DType::kBF16), 2048, 2048, 2048, 1})
    ->Apply(time_mode)
    ->Unit(benchmark::kMillisecond);
#ifdef STRATA_BENCH_ONEDNN
BENCHMARK(BM_Onednn)
    ->Name("BM_GemmPeak_onednn")
    ->Args({static_cast<int64_t>(DType::kBF16), 2048, 2048, 2048, 1})
    ->Apply(time_mode)
    ->Unit(benchmark::kMillisecond);
#endif

}  // namespace
}  // namespace strata::ops

BENCHMARK_MAIN();
