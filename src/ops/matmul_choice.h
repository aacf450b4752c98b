// Which matmul kernel ops::matmul runs, per weight shape class, when the
// static choice (ops.cc, measured once in BENCHMARKS.md) is overridden by a
// load-time measurement (ops/kernel_calibration.h).
//
// A shape class is (weight dtype, n, k, regime); the regime is decode
// (m <= 16 rows of x) or prefill (m > 16). Decode is one regime for every
// m <= 16, so a weight's decode results never depend on how many rows share
// the step (the engine's batch-invariance tests rely on it).
//
// Candidates per class (matmul_candidates(); the first is the static choice):
//   decode,  Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS on AVX512-VNNI: own int8-activation kernel on
//                                          16-row panels only
//   decode,  Q8_0 on AVX2:                 own int8-activation kernel, own exact (f32 x) kernel
//   decode,  F32 / F16 / BF16 on AVX-512:  own kernel, own kernel leaving one-row tiles to the
//                                          hardware prefetcher, own kernel with four-row
//                                          m = 1 tiles
// (The tile variants give the same bits as own; which is faster depends on
// the CPU's prefetchers: BENCHMARKS.md, "Zen 4" and "Zen 5" sections.)
//   decode,  everything else:              own kernel only (oneDNN is excluded from decode:
//                                          its summation order changes with m, which would
//                                          break batch invariance)
//   prefill, Q8_0 on AVX512-VNNI with oneDNN: own int8-activation kernel on the panels (the
//                                          decode kernel: llama.cpp's Q8_0 arithmetic, and
//                                          every row the bits it has in decode), oneDNN on
//                                          bf16 tiles, own bf16 kernel on bf16 tiles
//   prefill, Q4_0, Q5_0, IQ4_NL, IQ4_XS on AVX512-VNNI with oneDNN: own int8-activation kernel
//                                          on the panels, oneDNN on bf16 tiles from them
//   prefill, F32 / BF16 / Q8_0 with oneDNN: oneDNN in place (Q8_0: bf16 tiles), own kernel
//   prefill, otherwise:                    the static path only
//
// Threading: set_matmul_choices() is called at load, before the engine runs;
// ops::matmul reads the installed table from any thread (one atomic load; a
// table, once installed, is never modified or freed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace strata::ops {

enum class MatmulRegime : uint8_t { kDecode, kPrefill };
// kDecode for m <= 16, kPrefill above.
MatmulRegime matmul_regime(int64_t m);
const char* matmul_regime_name(MatmulRegime r);  // "decode" / "prefill"

enum class MatmulKernel : uint8_t {
  kStatic,         // whatever ops.cc picks without a table (the default)
  kOwn,            // our kernels (ops/cpu/avx512.cc or generic.cc); Q8_0 decode: int8 x (VNNI)
  kOwnExact,       // Q8_0 decode only: our f32 kernel, x f32, weights widened exactly
  kOnednn,         // prefill only: oneDNN matmul reading the weight in place
  kOwnHwPrefetch,  // F32 / F16 / BF16 decode only: kOwn without software prefetch on
                   // tiles of one weight row (bit-identical to kOwn)
  kOwnFourRows,    // F32 / F16 / BF16 decode only: kOwn with m = 1 tiles of four weight
                   // rows instead of one (bit-identical to kOwn)
  kOwnInt8,        // prefill of weights in 16-row panels only (Q8_0, Q4_0, Q5_0, IQ4_NL,
                   // IQ4_XS, Q2_K ... Q6_K): the decode's int8-activation kernel at
                   // every m (its rows have the decode's bits)
};
// "static", "own", "own-exact", "onednn", "own-hwprefetch", "own-4rows", "own-int8"
const char* matmul_kernel_name(MatmulKernel k);
// Inverse of matmul_kernel_name; false when `name` is none of them.
bool parse_matmul_kernel(const std::string& name, MatmulKernel* out);
// False when `kernel` is a decode tile variant (kOwnHwPrefetch, kOwnFourRows)
// that at m rows of x runs kOwn's tiles, except at most for the
// last few weight rows of a thread's range: the four-row variant
// change only tiles with one row of x (x is cut into chunks of 4 or 8 rows,
// so only when m % 4 == 1), the prefetch variant only tiles of one weight row
// (every tile below nine rows of x, the tails of n above). Calibration then
// reuses kOwn's time instead of timing the same code again. True otherwise.
bool decode_variant_matters_at(MatmulKernel kernel, int64_t m);

struct MatmulShapeClass {
  tensor::DType dtype = tensor::DType::kF32;
  int64_t n = 0, k = 0;
  MatmulRegime regime = MatmulRegime::kDecode;
  bool operator==(const MatmulShapeClass& o) const {
    return dtype == o.dtype && n == o.n && k == o.k && regime == o.regime;
  }
  bool operator<(const MatmulShapeClass& o) const;
};

struct MatmulChoice {
  MatmulShapeClass cls;
  MatmulKernel kernel = MatmulKernel::kStatic;
};

// The kernels that can run this class on this CPU and build, the static
// choice first (never empty, never contains kStatic).
std::vector<MatmulKernel> matmul_candidates(const MatmulShapeClass& cls);

// Installs the table ops::matmul consults (replacing any earlier one). Every
// kernel must be kStatic or in matmul_candidates() of its class (checked).
// An empty vector restores the static dispatch. Call while no matmul runs.
void set_matmul_choices(const std::vector<MatmulChoice>& choices);
// The installed table (empty when none).
std::vector<MatmulChoice> matmul_choices();
// The kernel ops::matmul uses for this call: the table's entry for
// (dtype, n, k, matmul_regime(m)), kStatic when there is none.
MatmulKernel chosen_matmul_kernel(tensor::DType dtype, int64_t n, int64_t k, int64_t m);

// (dtype, n, k) of every MatmulWeight prepared so far in this process (by
// MatmulWeight::prepare or concat_rows), sorted and unique, as decode-regime
// classes: the shapes a loaded model actually has. Thread-safe.
std::vector<MatmulShapeClass> prepared_matmul_shapes();

}  // namespace strata::ops
