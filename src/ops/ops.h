// CPU math kernels used by the model forward pass. Ops know nothing about
// models: they see pointers, sizes and weight views.
//
// Every op has a plain scalar reference (ops/reference.h) and an optimized
// implementation chosen at run time (AVX-512 / AVX512-BF16 / VNNI where the
// CPU has them, portable C++ otherwise); tests compare the two over many sizes
// and pointer misalignments.
//
// Threading: ops that take a ThreadPool split work across it; all ops are
// called from one thread at a time (the engine thread).
// Activations are f32 row-major; shapes are given in comments.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "tensor/kv_row_layout.h"
#include "tensor/tensor_view.h"

namespace strata::ops {

namespace cpu {
struct PanelRows;
}

// A linear layer's weight [n, k] (out_features x in_features), prepared once
// at load time for the matmul kernels. Keeps the stored dtype (F32, F16, BF16,
// Q8_0); it may hold a repacked copy when that makes the kernels faster, and
// otherwise points at the caller's bytes (which must outlive it). Q8_0,
// Q4_0, Q5_0, IQ4_NL and IQ4_XS weights on CPUs with AVX512-VNNI are repacked into 16-row
// panels (ops/cpu/panels.h) that every matmul path of that CPU's kernel
// table reads, so the caller's rows are not read again in serving (only by
// other tables and the exact f32 kernel, in tests); a fused weight of those
// types keeps only the panels.
class MatmulWeight {
 public:
  // `w` is 2-D [n, k]; k must be a multiple of 32 for Q8_0.
  // Notes (dtype, n, k) for prepared_matmul_shapes() (ops/matmul_choice.h).
  static MatmulWeight prepare(const tensor::TensorView& w);
  // As prepare(), without noting the shape (kernel calibration's scratch weights).
  static MatmulWeight prepare_unlisted(const tensor::TensorView& w);
  // One weight [n_0 + n_1 + ..., k] holding the rows of `parts` one after the
  // other (fused QKV, gate/up), in an owned copy. Every part must be 2-D with
  // the same k and dtype (can_concat_rows). Row r of the result computes the
  // same output as that row in its part (the kernels treat rows independently).
  static MatmulWeight concat_rows(const std::vector<const tensor::TensorView*>& parts);
  static bool can_concat_rows(const std::vector<const tensor::TensorView*>& parts);

  MatmulWeight();
  MatmulWeight(MatmulWeight&&) noexcept;
  MatmulWeight& operator=(MatmulWeight&&) noexcept;
  ~MatmulWeight();

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  tensor::DType dtype() const { return view_.dtype; }
  // The rows as stored; data is nullptr for a fused weight kept only in
  // panels (panels()).
  const tensor::TensorView& view() const { return view_; }
  // Bytes a full pass over the weight reads (for bandwidth accounting).
  int64_t size_bytes() const { return view_.size_bytes(); }

  struct Packed;  // kernel-private layout, defined in ops/cpu
  const Packed* packed() const { return packed_.get(); }
  // The 16-row panels (ops/cpu/panels.h), nullptr when the weight has none.
  const uint8_t* panels() const;
  // A weight with panels, back as [n, k] GGUF rows of its dtype in a new
  // buffer (for kernels that read rows: tests, and other kernel tables than
  // the active one).
  tensor::AlignedBuffer<uint8_t> unpack_rows() const;

 private:
  void pack_panels(const std::vector<cpu::PanelRows>& parts);

  tensor::TensorView view_;
  int64_t n_ = 0;
  int64_t k_ = 0;
  std::unique_ptr<Packed> packed_;
  tensor::AlignedBuffer<uint8_t> owned_;  // the bytes view_ points at, when copied
};

// y[m, n] = x[m, k] · w[n, k]ᵀ (+ bias[n] when bias != nullptr).
// x: [m, k] f32, y: [m, n] f32 (must not alias x). Splits n across `pool`.
//
// Numerics (sums are always f32; bounds measured in ops_test, see BENCHMARKS.md):
//   F32, F16: weights widened exactly; matches f64 math to ~1e-6 of Σ|x·w|.
//   BF16:     x rounded to bf16 (RNE) first, as llama.cpp does; error vs exact
//             f32 math <= 2^-8 of Σ|x·w| in theory; measured worst 2.5e-4
//             (uniform random x, w; k = 896).
//   Q8_0:     m <= 16 (decode), AVX512-VNNI CPUs: x quantized to Q8_0 per
//             32-block (d = max|x|/127 in f32, RNE), int8 dot products with
//             int32 block sums scaled by d_x*d_w (llama.cpp's scheme);
//             measured worst 6e-4 (uniform x) / 5.8e-3 (x with 30x outliers).
//             m <= 16 without VNNI: weights q*d widened exactly, x stays f32.
//             m > 16 (prefill): x and q*d rounded to bf16 (<= 2^-7 in theory;
//             measured worst 3.3e-4).
// Which kernel runs can be overridden per shape class at load time
// (ops/matmul_choice.h, ops/kernel_calibration.h); each kernel's numerics are
// fixed and the decode regime (m <= 16) always uses one kernel for all m.
// So Q8_0 (and, through the prefill GEMM's summation order, BF16/F32) rows can
// differ in the last bits between a decode step and a prefill of the same token.
void matmul(const float* x, int64_t m, const MatmulWeight& w, const float* bias, float* y,
            ThreadPool& pool);

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) * weight[:], computed in f32.
// x, y: [rows, dim] (y may alias x); weight: [dim].
void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y);

// How rotary embeddings pair the dimensions of a head.
enum class RopeStyle {
  kNeox,         // Hugging Face rotate-half: dim i pairs with i + rotary_dim/2
  kInterleaved,  // GPT-J / GGUF llama: dim 2i pairs with 2i+1
};

// Rotates x in place. x: [num_tokens, num_heads, head_dim]; positions: [num_tokens];
// inv_freq: [head_dim / 2] (already including any llama3 scaling). The angle
// for pair i at position p is p * inv_freq[i].
void rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
          int64_t head_dim, const float* inv_freq, RopeStyle style);

// out[i] = silu(gate[i]) * up[i] for i < n; out may alias gate or up.
void silu_mul(const float* gate, const float* up, int64_t n, float* out);

// In-place softmax over one row of n values (max-subtracted, f32).
void softmax(float* x, int64_t n);

// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);

// Mixture-of-experts routing as Hugging Face's Qwen-MoE / Mixtral compute it:
// per token, softmax of its router logits in f32, the top_k experts by that
// probability (ties: the lower expert id first), and their probabilities,
// renormalised to sum 1 when `renormalize`.
// logits: [num_tokens, num_experts]; experts, weights: [num_tokens, top_k],
// best first. top_k <= num_experts.
void moe_route(const float* logits, int64_t num_tokens, int64_t num_experts, int64_t top_k,
               bool renormalize, int32_t* experts, float* weights);

// A row of an expert's output and where it goes: grouped_matmul_scatter_add
// adds weight * that row to row `token` of its output.
struct WeightedRow {
  int32_t token;
  float weight;
};

// One matmul of a grouped call: y[m, n] = x[m, k] · w[n, k]ᵀ, no bias.
// rows: [m], used by grouped_matmul_scatter_add only.
struct GroupedMatmul {
  const float* x = nullptr;
  int64_t m = 0;
  const MatmulWeight* w = nullptr;
  float* y = nullptr;
  const WeightedRow* rows = nullptr;
};

// The decode regime's rows per matmul (a row's result does not depend on the
// rows around it); MoeLayer decodes steps of at most this many tokens in one
// grouped pass.
constexpr int64_t kGroupedMaxRows = 16;

// Runs every matmul of mm[0, count) in one parallel region: the union of
// their weight rows is split across `pool` (instead of one dispatch per
// matmul, which for the few small expert matmuls of a decode step costs a
// wake-up and a barrier each). Each y is bit for bit what
// matmul(x, m, *w, nullptr, y) writes: the same kernel per matmul (decode
// GEMV for m <= 16, the prefill GEMM per 128-row panel above). Every m >= 1.
void grouped_matmul(const GroupedMatmul* mm, int64_t count, ThreadPool& pool);

// The second half of a mixture-of-experts decode in one parallel region: every
// matmul of mm[0, count) (all with the same n), then for i = 0.. count-1 in
// order and r < m_i in order:
//   out[mm[i].rows[r].token, :] += mm[i].rows[r].weight * mm[i].y[r, :]
// Threads split the n columns, each computing its columns of every matmul
// and then their weighted sums, so every out element gets the same terms in
// the same order as matmul() followed by weighted_scatter_add() per entry:
// the results are bit for bit those. out: [*, n]. Every m >= 1.
void grouped_matmul_scatter_add(const GroupedMatmul* mm, int64_t count, float* out,
                                ThreadPool& pool);

// out[rows[r].token, :] += rows[r].weight * y[r, :] for r = 0.. m-1 in order.
// y: [m, n]; out: [*, n].
void weighted_scatter_add(const float* y, int64_t m, int64_t n, const WeightedRow* rows,
                          float* out);

// Causal grouped-query attention for one sequence over a contiguous KV cache.
// q:   [num_tokens, num_heads, head_dim]     (queries at positions start_pos + i)
// k,v: [start_pos + num_tokens, num_kv_heads, head_dim]  (all cached positions)
// out: [num_tokens, num_heads, head_dim]
// Query head h reads kv head h / (num_heads / num_kv_heads). Token at position p
// attends to positions j with j <= p and, when sliding_window > 0,
// p - j < sliding_window. Scores are scaled by `scale` (1/sqrt(head_dim)).
struct AttentionShape {
  int64_t num_tokens;
  int64_t start_pos;
  int64_t num_heads;
  int64_t num_kv_heads;
  int64_t head_dim;
  float scale;
  int64_t sliding_window = 0;  // 0 = full causal attention
};
void attention(const float* q, const float* k, const float* v, const AttentionShape& shape,
               float* out, ThreadPool& pool);

// Attention over a paged KV cache (vLLM's layout) for a flat batch of
// sequences: decode steps, prefill chunks and mixes of both in one call.
// Sequence s owns query tokens [query_start_loc[s], query_start_loc[s+1]),
// its last n_s positions: its context after this step is seq_lens[s] tokens.
// Query head h reads kv head h / (num_heads / num_kv_heads); a token at
// position p sees positions j <= p (and p - j < sliding_window when set).
// Every K/V row a token sees must have been written (reshape_and_cache first).
struct PagedAttentionBatch {
  const float* q = nullptr;        // [num_tokens, num_heads, head_dim]
  // num_blocks * block_size token slots in tiles of tensor::KvTileLayout
  // {{kv_dtype, num_kv_heads, head_dim}, kv_tile_tokens(block_size)}: 16
  // slots grouped by kv head, K transposed (block sizes that are not a
  // multiple of 16 are read key by key, more slowly).
  const uint8_t* k_cache = nullptr;
  const uint8_t* v_cache = nullptr;  // V side of the same layout
  tensor::KvCacheDtype kv_dtype = tensor::KvCacheDtype::kF32;
  const int32_t* query_start_loc = nullptr;  // [num_seqs + 1]
  const int32_t* seq_lens = nullptr;         // [num_seqs]
  const int32_t* block_tables = nullptr;     // [num_seqs, max_blocks_per_seq]
  int32_t num_seqs = 0;
  int32_t max_blocks_per_seq = 0;
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0, block_size = 0;
  float scale = 1.0f;
  int64_t sliding_window = 0;  // 0 = full causal attention
  float* out = nullptr;        // [num_tokens, num_heads, head_dim]
};
// Numerics: every K/V element is read as decode(element) * scale
// (tensor::decode_kv_head), then f32 throughout, online softmax over key tiles of 16 absolute
// positions; a query row's result depends only on its own q and context (not
// on the other rows of the batch or the thread count).
void paged_attention(const PagedAttentionBatch& batch, ThreadPool& pool);

// Name of the implementation the dispatcher chose: "avx512_bf16+onednn",
// "avx512_bf16" (built without oneDNN), "avx512_vnni[+onednn]" (AVX-512 and
// VNNI without BF16: Cascade Lake, Ice Lake; or STRATA_CPU=avx512_vnni),
// "avx2" (AVX2+FMA+F16C without those, or STRATA_CPU=avx2) or "generic"
// (neither, or STRATA_CPU=generic). STRATA_NO_ONEDNN=1 keeps prefill on our
// own kernels.
const char* cpu_backend_name();

}  // namespace strata::ops
