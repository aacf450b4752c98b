// oneDNN matmul used for prefill (m > kDecodeMaxRows), where it measured ~3x
// faster than our inner-product kernels (BENCHMARKS.md, "Kernels").
//
// Threading: called from ThreadPool workers, each on its own slice of n. Each
// calling thread gets its own engine, stream and primitive cache and is pinned
// to one OpenMP thread, so oneDNN never starts threads of its own.
// Primitives are cached per (dtype, m-block, n, k, strides); m is cut into
// its largest multiple of 128 rows and the remainder, so the cache stays
// small. On CPUs where oneDNN uses AMX, bf16 results go through a dense
// per-thread buffer (its AMX kernels need a dense destination).
#pragma once

#include <cstdint>

namespace strata::ops::cpu {

enum class GemmType { kF32, kBF16 };

// y[m, n] = x[m, k] · w[n, k]ᵀ, row strides ldx, ldw, ldy (in elements); x and
// w are both f32 or both bf16, y is f32 and is overwritten. Returns false
// (having written nothing) when oneDNN is not built in, is disabled by
// STRATA_NO_ONEDNN=1, or cannot run the shape; the caller then uses its own kernel.
// True when onednn_gemm can run at all: built in and not disabled by
// STRATA_NO_ONEDNN=1.
bool onednn_enabled();
// True when oneDNN runs bf16 GEMMs on bf16 instructions (its effective ISA is
// avx512_core_bf16 or AMX); false where it emulates them (AVX-512 CPUs without
// BF16, e.g. Cascade Lake and Ice Lake: 64-68 GFLOP/s per core in the
// emulation against 140-187 for our bf16 tiles on the avx512_vnni table,
// BENCHMARKS.md "AVX-512 without BF16"), or cannot run them at all.
bool onednn_bf16_native();

bool onednn_gemm(GemmType type, const void* x, int64_t ldx, int64_t m, const void* w, int64_t ldw,
                 int64_t n, int64_t k, float* y, int64_t ldy);

}  // namespace strata::ops::cpu
