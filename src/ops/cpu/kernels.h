// Internal kernel interface of the ops module: one table of function pointers
// per instruction-set level, and the single dispatch point that picks one at
// run time from strata::cpu_features() (STRATA_CPU=generic forces "generic").
//
// The table entries are *range kernels*: they compute a slice of an op and
// never touch threads. ops/ops.cc (portable code) splits work across the
// ThreadPool and calls them; this keeps std::function and other inline
// library code out of the AVX-512 translation unit, whose instructions must
// not leak into code that runs on CPUs without AVX-512.
//
// Tests use generic_kernels() / avx2_kernels() / avx512_kernels() directly to
// cover every path.
#pragma once

#include <cstdint>

#include "ops/matmul_choice.h"
#include "ops/ops.h"
#include "tensor/dtype.h"

namespace strata::ops {

// Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS and Q2_K ... Q6_K weights where the active table decodes them in
// panels (cpu::panels_in_use()): the 16-row panels of cpu/panels.h, which
// that table reads for every m (decode, and prefill: the int8 kernel, or on
// AVX-512 the bf16 tiles of the prefill GEMM). Every other dtype, and those
// elsewhere, reads the stored [n, k] rows.
struct MatmulWeight::Packed {
  tensor::AlignedBuffer<uint8_t> panels;
};

}  // namespace strata::ops

namespace strata::ops::cpu {

// Precision of x inside the inner product.
//   kF32:  x stays f32; weights are widened exactly to f32 (F32, F16, and
//          quantized decode without AVX512-VNNI; with it see
//          uses_panels() / uses_lowbit_kernel()).
//   kBF16: x is rounded to bf16 and multiplied with bf16 weights by vdpbf16ps
//          (BF16 weights always; quantized prefill, whose dequantized values
//          are rounded to bf16 tile by tile). Sums are f32.
enum class MatmulMode { kF32, kBF16 };

// Decode regime: matmuls with at most this many rows of x run our GEMV
// kernels; larger m (prefill) goes to matmul_prefill_range where a table has
// one. Q8_0 uses int8 x up to this m (AVX512-VNNI panels, AVX2 rows; kF32,
// exact weights, elsewhere) and kBF16 above it.
constexpr int64_t kDecodeMaxRows = 16;
// Weight rows per Q8_0 -> bf16 dequantized tile handed to the prefill GEMM,
// and per oneDNN call on F32 / BF16 weights of ordinary row length.
constexpr int64_t kPrefillTileRows = 128;
// Rows at and above this k are long: oneDNN re-packs all of x (m x k) in every
// call, and past L2 (512 x 14336 f32 is 28 MiB) that re-read cost F32 20-25%
// of its speed with 128-row calls (BENCHMARKS.md, "512-row oneDNN calls on long rows").
constexpr int64_t kPrefillLongRowK = 8192;
// Weight rows per oneDNN prefill call (and per parallel_for unit) for a weight
// of w_dtype with rows of k values: 512 for F32 / BF16 weights read in place
// with long rows, kPrefillTileRows otherwise. A function of the weight alone,
// so a prefill's bits never depend on the thread count.
inline int64_t prefill_slice_rows(tensor::DType w_dtype, int64_t k) {
  const bool in_place = w_dtype == tensor::DType::kF32 || w_dtype == tensor::DType::kBF16;
  return in_place && k >= kPrefillLongRowK ? 4 * kPrefillTileRows : kPrefillTileRows;
}
// kBF16 cache blocking: weight rows x k-values per tile (the Q8_0 path
// dequantizes one such tile into per-thread scratch of kBf16TileRows*kBf16TileK).
constexpr int64_t kBf16TileRows = 64;
constexpr int64_t kBf16TileK = 1024;  // multiple of 32

struct MatmulArgs {
  const float* x = nullptr;          // [m, k] f32 (kF32 mode)
  const uint16_t* x_bf16 = nullptr;  // [m, k_pad] bf16, zero padded (kBF16 mode)
  int64_t m = 0, n = 0, k = 0;
  int64_t k_pad = 0;        // k rounded up to a multiple of 32
  const void* w = nullptr;  // [n, k] stored as w_dtype
  tensor::DType w_dtype = tensor::DType::kF32;
  const float* bias = nullptr;  // [n] or nullptr
  float* y = nullptr;           // [m, n]
  // Decode tile variants of the AVX-512 kernels, set from the MatmulKernel by
  // set_decode_variant(). Every variant gives the same bits: each output is
  // the same operations in the same order, only the walk over the weight
  // rows changes. Which is fastest depends on the CPU's prefetchers (load-time
  // calibration measures them, ops/kernel_calibration.h).
  // The F32- and BF16-mode kernels prefetch the weights into L2 ahead of the
  // loads. With false, tiles of a single weight row (one sequential stream:
  // m = 1, and batched decode below nine rows) leave it to the hardware
  // prefetcher; tiles of several rows (interleaved streams) still prefetch
  // (MatmulKernel::kOwnHwPrefetch).
  bool prefetch_one_row_tiles = true;
  // Weight rows per tile where a tile has one row of x (m = 1, or the last
  // row of a chunk of x rows) in the F32- and BF16-mode kernels: 0 = the
  // kernel's default (one, a single stream, at m = 1 with x held in
  // registers for BF16 weights, and for F32 and F16 weights where k > 2048),
  // else 4 (MatmulKernel::kOwnFourRows).
  int gemv_tile_rows = 0;
  // Weights in 16-row panels (cpu/panels.h) where the weight has them
  // (MatmulWeight::Packed); then w may be nullptr (a fused weight keeps no rows).
  const uint8_t* w_panels = nullptr;
  // x for matmul_panels_range, from x_to_q8_blocks (k / 32 blocks per row;
  // the K-quants: from x_to_q8_groups instead, the fields below):
  // x_q8s [m, k] int8, x_q8_d [m, k / 32] f32 d, x_q8_corr [m, k / 32] int32
  // -128 Σq per block.
  const float* x_q8_d = nullptr;
  const int32_t* x_q8_corr = nullptr;
  // Q8_0 decode with int8 activations (matmul_q8q8_range): x quantized per
  // 32-block by x_to_q8. x_q8: [m, k_pad64] u8 = q + 128 (zero past k);
  // x_q8_scale: [m, k_pad64 / 64, 16] f32, lanes 0-7 = scale of the pair's
  // first block, 8-15 = of its second (0 past k).
  const uint8_t* x_q8 = nullptr;
  const float* x_q8_scale = nullptr;
  int64_t k_pad64 = 0;  // k rounded up to a multiple of 64
  // Low-bit quantized weights with int8 activations (matmul_lowbit_range),
  // from x_to_q8_groups (see Q8GroupsOut) with x_block = lowbit_x_block(w_dtype):
  // x_q8s [m, k_pad256] int8, scales in x_q8_scale with the layout above
  // ([m, k_pad256 / 64, 16]; per 256 values they are all one d).
  const int8_t* x_q8s = nullptr;
  const float* x_q8_sum16 = nullptr;
  const int32_t* x_q8_nsum4 = nullptr;
  const float* x_q8_fsum4 = nullptr;
  // [m, k_pad256 / 16] int32 (Q8GroupsOut::nsum16; the K-quants' panel
  // kernels read x from x_to_q8_groups too, see panels_read_x_groups()).
  const int32_t* x_q8_nsum16 = nullptr;
  int64_t k_pad256 = 0;
};

// Where x_to_q8_groups writes x [rows, k] quantized per x_block (32 or 256)
// values (zero past k, up to k_pad256):
//   q      [rows, k_pad256]      int8, round-to-nearest-even(x / d), each
//                                256-value group's 32-value chunks in the
//                                order of lowbit_x_chunk_slot()
//   scale  [rows, k_pad256 / 4]  f32: per 64 values, lanes 0-7 = d of the
//                                first 32 values, lanes 8-15 = of the second
//   sum16  [rows, k_pad256 / 16] f32: d * Σ q over each 16 values
//   nsum4  [rows, k_pad256 / 4]  int32: -Σ q over each 4 values
//   fsum4  [rows, k_pad256 / 4]  f32: d * Σ q over each 4 values
//   nsum16 [rows, k_pad256 / 16] int32: -Σ q over each 16 values
//   (nsum4 and fsum4 only on the AVX-512 tables, whose 32-value kernels
//   read them; the AVX2 table's kernels do not, and it leaves them
//   unwritten)
// (lane l of a 64-value step covers values 4 l .. 4 l + 3, as vpdpbusd sums;
// scale, nsum4, fsum4 and nsum16 follow q's order, sum16 the values' own order).
struct Q8GroupsOut {
  int8_t* q;
  float* scale;
  float* sum16;
  int32_t* nsum4;
  float* fsum4;
  int32_t* nsum16;
};

// Values of x per int8 scale for the low-bit decode kernels on weights of
// type t: 256 for the K-quants (Q2_K ... Q6_K), whose kernels then sum each
// 256-value group in int32 with the weight's integer sub-block scales and
// scale once (as llama.cpp's Q8_K activations); 32 for the other types
// (IQ4_XS included: its signed levels against x would overflow vpmaddubsw's
// int16 pairs as unsigned codes), whose kernels scale every 32 values.
constexpr int64_t lowbit_x_block(tensor::DType t) {
  using tensor::DType;
  return t == DType::kQ2_K || t == DType::kQ3_K || t == DType::kQ4_K || t == DType::kQ5_K ||
                 t == DType::kQ6_K
             ? 256
             : 32;
}

// Where chunk c (values [32 c, 32 c + 32), c = 0..7) of a 256-value group of
// x sits in Q8GroupsOut::q, for weights of type t. Q2_K and Q3_K keep their
// 2-bit codes in planes: value 128 h + 32 j + l is bits 2 j, 2 j + 1 of
// qs[32 h + l] (h = 0, 1; j, the plane, = 0..3), so one load of a block's 64
// qs bytes, shifted by 2 j and masked, is plane j: chunks 4 h + j for h = 0, 1.
// x stores chunk 4 h + j at slot 2 j + h, so a plane meets 64 consecutive
// bytes of q. Every other type: slot c.
constexpr int64_t lowbit_x_chunk_slot(tensor::DType t, int64_t c) {
  using tensor::DType;
  return t == DType::kQ2_K || t == DType::kQ3_K ? 2 * (c % 4) + c / 4 : c;
}

// One unit of paged attention work: query rows [row_begin, row_end) of one
// sequence and kv head, where row = i * group + g for the sequence's i-th new
// token and the g-th query head sharing the kv head; at most
// kPagedAttentionLanes rows (they are processed as the lanes of one vector).
struct PagedAttentionItem {
  int32_t seq = 0;
  int32_t kv_head = 0;
  int32_t row_begin = 0, row_end = 0;
};
constexpr int64_t kPagedAttentionLanes = 16;
// Floats of scratch one paged attention item needs.
inline int64_t paged_attention_scratch_floats(int64_t head_dim) {
  return (5 * head_dim + 2 * kPagedAttentionLanes + 4) * kPagedAttentionLanes;
}

struct KernelTable {
  const char* name;
  // Columns [n_begin, n_end) of y, kF32 mode.
  void (*matmul_f32_range)(const MatmulArgs& a, int64_t n_begin, int64_t n_end);
  // Columns [n_begin, n_end) of y, kBF16 mode; scratch holds
  // kBf16TileRows * kBf16TileK bf16 values (used for Q8_0 only).
  void (*matmul_bf16_range)(const MatmulArgs& a, int64_t n_begin, int64_t n_end, uint16_t* scratch);
  // Columns [n_begin, n_end) of y for m > kDecodeMaxRows (F32, BF16, Q8_0;
  // x as for matmul_mode()); nullptr when the table has no prefill GEMM.
  // scratch holds max(kBf16TileRows * kBf16TileK, kPrefillTileRows * k_pad) bf16.
  void (*matmul_prefill_range)(const MatmulArgs& a, int64_t n_begin, int64_t n_end,
                               uint16_t* scratch);
  // out[rows, k_pad] = bf16(x[rows, k]) (RNE), zero padded.
  void (*x_to_bf16)(const float* x, int64_t rows, int64_t k, int64_t k_pad, uint16_t* out);
  void (*rms_norm)(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                   float* y);
  // Rotates x [num_tokens, num_heads, head_dim] with per-token tables
  // cos, sin: [num_tokens, head_dim / 2].
  void (*rope_apply)(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                     const float* cos, const float* sin, RopeStyle style);
  void (*silu_mul)(const float* gate, const float* up, int64_t n, float* out);
  void (*softmax)(float* x, int64_t n);
  void (*add_inplace)(float* y, const float* x, int64_t n);
  // Attention output rows [row_begin, row_end) where row = token * num_heads + head;
  // scratch holds start_pos + num_tokens floats.
  void (*attention_rows)(const float* q, const float* k, const float* v,
                         const AttentionShape& shape, int64_t row_begin, int64_t row_end,
                         float* scratch, float* out);
  // Q8_0 weights as rows, m <= kDecodeMaxRows, columns [n_begin, n_end) of y
  // from the int8 activations in a.x_q8 (per-lane int32 sums of four
  // products scaled by d_x * d_w in f32: AVX2 vpmaddubsw). nullptr when the
  // table has none (the AVX-512 table reads panels instead).
  void (*matmul_q8q8_range)(const MatmulArgs& a, int64_t n_begin, int64_t n_end);
  // Quantizes x[rows, k] (k % 32 == 0) per 32-block to the a.x_q8 /
  // a.x_q8_scale layout above: d = max|x| / 127 (f32, not rounded to f16),
  // q = round-to-nearest-even(x * (1 / d)).
  void (*x_to_q8)(const float* x, int64_t rows, int64_t k, int64_t k_pad64, uint8_t* xq,
                  float* scales);
  // Weights of a tensor::is_low_bit_quant() type (those lowbit_kernel_for
  // names), columns [n_begin, n_end) of y from the int8 activations in
  // a.x_q8s (AVX-512: vpdpbusd of the weights' unsigned codes with x, per
  // 16-value sub-block factors, see tensor/quant_blocks.h; AVX2:
  // avx2_quant.cc). nullptr when the table has none; use only where
  // uses_lowbit_kernel() says so (m <= kDecodeMaxRows on a table with a
  // prefill GEMM, every m on one without).
  void (*matmul_lowbit_range)(const MatmulArgs& a, int64_t n_begin, int64_t n_end);
  // Quantizes x[rows, k] for weights of type w_dtype per
  // lowbit_x_block(w_dtype) values (a last block may end at k) into `out`
  // (see Q8GroupsOut; chunks in lowbit_x_chunk_slot(w_dtype) order):
  // d = max|x| / 127 over the block, q = round-to-nearest-even(x * (1 / d)).
  void (*x_to_q8_groups)(const float* x, int64_t rows, int64_t k, int64_t k_pad256,
                         tensor::DType w_dtype, const Q8GroupsOut& out);
  // One paged attention item: writes its rows of b.out. scratch holds
  // paged_attention_scratch_floats(b.head_dim) floats.
  void (*paged_attention_item)(const PagedAttentionBatch& b, const PagedAttentionItem& item,
                               float* scratch);
  // Weights in panels (a.w_panels; has_panel_layout() types), any m, columns
  // [n_begin, n_end) of y with n_begin % 16 == 0, from the int8 activations
  // of x_to_q8_blocks (the K-quants: x_to_q8_groups) (exact int32 block or
  // super-block sums scaled by d_w * d_x; avx512_panels.cc, avx2_panels.cc). nullptr when the
  // table has none; the AVX-512 tables' need cpu_features().avx512_vnni (see panels_in_use()).
  void (*matmul_panels_range)(const MatmulArgs& a, int64_t n_begin, int64_t n_end);
  // Quantizes x[rows, k] (k % 32 == 0) per 32 values: d [rows, k / 32] =
  // max|x| / 127 (f32), q [rows, k] int8 = round-to-nearest-even(x * (1 / d)),
  // corr [rows, k / 32] = -128 Σq.
  void (*x_to_q8_blocks)(const float* x, int64_t rows, int64_t k, int8_t* q, float* d,
                         int32_t* corr);
  // The low-bit types matmul_lowbit_range has kernels for (nullptr: none; a
  // portable predicate), and whether those need AVX512-VNNI besides the
  // table's own instruction set.
  bool (*lowbit_kernel_for)(tensor::DType w_dtype);
  bool lowbit_needs_vnni;
};

// A predicate for KernelTable::lowbit_kernel_for (dispatch.cc, portable):
// every tensor::is_low_bit_quant() type (the AVX-512 and AVX2 tables).
bool every_lowbit_type(tensor::DType t);

const KernelTable& generic_kernels();
// The AVX2 + FMA + F16C table (avx2.cc). Only call when avx2_supported().
const KernelTable& avx2_kernels();
bool avx2_supported();
// The AVX2 table with its int8 panel kernel built with AVX-VNNI (vpdpbusd on
// ymm: Alder Lake and later Intel cores without AVX-512; STRATA_CPU=avx2_vnni
// forces it on an AVX-512 CPU that has AVX-VNNI): the same results. Only call
// when avx2_vnni_supported().
const KernelTable& avx2_vnni_kernels();
bool avx2_vnni_supported();
// nullptr when this build has no AVX-512 kernels. Only call its entries when
// cpu_features() reports AVX-512 F/BW/VL + BF16 + FMA + F16C (see
// avx512_supported()).
const KernelTable* avx512_kernels();
bool avx512_supported();
// The same kernels built without AVX512-BF16 (avx512_vnni*.cc), for CPUs with
// AVX-512 F/BW/VL + VNNI + FMA + F16C but no BF16 (Cascade Lake, Ice Lake;
// STRATA_CPU=avx512_vnni forces it on a BF16 CPU): vdpbf16ps as two FMAs, the
// bf16 conversions in integer code, same results but for subnormals. Only
// call its entries when avx512_vnni_supported().
const KernelTable* avx512_vnni_kernels();
bool avx512_vnni_supported();
// True for the two AVX-512 tables.
bool is_avx512_table(const KernelTable& t);

// The dispatch point: the table every public op uses (chosen once).
const KernelTable& active_kernels();
// True where the active table decodes weights of dtype w_dtype from 16-row
// panels (a dtype with cpu::has_panel_layout(), on AVX-512 with VNNI or on
// AVX2):
// MatmulWeight then builds them for such weights at load.
bool panels_in_use(tensor::DType w_dtype);

// Writes back and evicts [p, p + bytes) from every cache level (clflush, then
// a fence), so the next read streams it from DRAM (kernel calibration's
// decode probes). Baseline x86-64.
void evict_from_caches(const void* p, int64_t bytes);

}  // namespace strata::ops::cpu

namespace strata::ops::cpu {

// The public ops, run with an explicit kernel table (tests run both tables
// through the same threading code the product uses).
// `kernel` overrides the static choice for this call (ops/matmul_choice.h):
// kOwn skips the prefill GEMM (our kernels at any m) and, for Q8_0 decode,
// means the int8-activation kernel where the table has it; kOwnExact (Q8_0
// decode) runs the f32 kernel on exactly widened weights; kOwnHwPrefetch
// and kOwnFourRows are kOwn with a decode tile variant
// (set_decode_variant; bit-identical results); kOnednn and kStatic are the
// static path.
void run_matmul(const KernelTable& t, const float* x, int64_t m, const MatmulWeight& w,
                const float* bias, float* y, ThreadPool& pool,
                MatmulKernel kernel = MatmulKernel::kStatic);
void run_rope(const KernelTable& t, float* x, const int32_t* positions, int64_t num_tokens,
              int64_t num_heads, int64_t head_dim, const float* inv_freq, RopeStyle style);
void run_attention(const KernelTable& t, const float* q, const float* k, const float* v,
                   const AttentionShape& shape, float* out, ThreadPool& pool);
void run_paged_attention(const KernelTable& t, const PagedAttentionBatch& b, ThreadPool& pool);
// True for the kernels that are our own at every m (no prefill GEMM): kOwn
// and its decode tile variants.
bool is_own_kernel(MatmulKernel kernel);
// True when run_matmul (and the grouped matmul) with table t and `kernel`
// runs t's prefill GEMM (matmul_prefill_range: oneDNN, falling back to our
// tiles) for m rows of x against a weight of w_dtype: m > kDecodeMaxRows
// (quantized: > quantized_decode_rows()), not F16, not an own kernel, and for
// BF16 under kStatic only where oneDNN runs bf16 natively (onednn_bf16_native).
bool runs_prefill_gemm(const KernelTable& t, tensor::DType w_dtype, int64_t m, MatmulKernel kernel);
// Sets a's decode tile variant fields (prefetch_one_row_tiles,
// gemv_tile_rows) for `kernel`; kernels without a variant keep the defaults.
void set_decode_variant(MatmulKernel kernel, MatmulArgs* a);
// True when t decodes w_dtype from panels here (its matmul_panels_range, on
// a CPU with VNNI, for a dtype with the layout): it then reads a weight's
// panels at every m.
bool reads_panels(const KernelTable& t, tensor::DType w_dtype);
// True when a weight with these panels (nullptr: none) runs t's panel
// kernel at m rows of x with `kernel` chosen: every decode m (but for
// kOwnExact), and prefill with kStatic or kOwnInt8 (kOnednn and kOwn read
// bf16 tiles made from the panels there).
bool uses_panels(const KernelTable& t, const uint8_t* panels, int64_t m,
                 MatmulKernel kernel = MatmulKernel::kStatic);
// True when Q8_0 weights prepared in this process run with x quantized to
// int8 on table t at m rows of x with `kernel` chosen (its panel kernel or
// its row-major one).
bool q8_uses_int8_x(const KernelTable& t, int64_t m, MatmulKernel kernel = MatmulKernel::kStatic);
// The same for weights of any dtype (Q8_0 as q8_uses_int8_x; a low-bit type
// with its panel kernel or its row-major int8 one, matmul_lowbit_range).
bool uses_int8_x(const KernelTable& t, tensor::DType w_dtype, int64_t m,
                 MatmulKernel kernel = MatmulKernel::kStatic);
// True when a Q8_0 weight's rows run t's row-major int8 kernel
// (matmul_q8q8_range: the AVX2 table) at m rows of x: x quantized to Q8_0
// instead of using matmul_mode(), for m <= kDecodeMaxRows (any m with
// STRATA_NO_ONEDNN=1, see ops.cc).
bool uses_q8_activations(const KernelTable& t, tensor::DType w_dtype, int64_t m);
// Rows of x up to which quantized weights keep their decode numerics:
// kDecodeMaxRows with oneDNN's prefill GEMM in use, unbounded without it.
int64_t quantized_decode_rows();
// Records a prepared weight's shape for prepared_matmul_shapes().
void note_prepared_shape(tensor::DType dtype, int64_t n, int64_t k);
void run_grouped_matmul(const KernelTable& t, const GroupedMatmul* mm, int64_t count,
                        ThreadPool& pool);
void run_grouped_matmul_scatter_add(const KernelTable& t, const GroupedMatmul* mm, int64_t count,
                                    float* out, ThreadPool& pool);
// The activation precision run_matmul uses for this weight and row count
// where no int8 kernel runs (uses_lowbit_kernel, q8_uses_int8_x come first).
MatmulMode matmul_mode(tensor::DType w_dtype, int64_t m);
// True when run_matmul with table t runs matmul_lowbit_range: a low-bit
// quantized weight of a type t has a kernel for, which the CPU can run (the
// AVX-512 one needs VNNI), and m <= kDecodeMaxRows (any m with
// STRATA_NO_ONEDNN=1, or on a table without a prefill GEMM: AVX2).
bool uses_lowbit_kernel(const KernelTable& t, tensor::DType w_dtype, int64_t m);

}  // namespace strata::ops::cpu
