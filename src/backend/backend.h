// What the forward pass and the tiered KV cache need from the hardware,
// behind one interface:
//   memory   allocate (device buffers with a dtype), allocate_kv_memory (the
//            paged K/V storage), copy_blocks (KV blocks <-> host slots in the
//            tiered cache's canonical chunk layout);
//   kernels  every op the model layers call, paged attention and the KV
//            write included; activations are f32 row-major in this backend's
//            memory, weights are ops::MatmulWeight prepared at load.
// CpuBackend (cpu_backend.h) is the implementation today; docs/architecture.md
// ("A second backend") says how CUDA plugs in behind the same calls.
//
// Threading: kernels and allocation are called from the engine thread (one
// forward pass at a time); copy_blocks from the transfer worker's thread, on
// blocks the engine thread has handed it (offload/transfer's ordering rules).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "attention/attention_metadata.h"
#include "attention/paged_attention.h"
#include "backend/device_buffer.h"
#include "backend/kv_memory.h"
#include "ops/ops.h"

namespace strata::backend {

enum class CopyDirection { kPoolToHost, kHostToPool };

// A run of KV-pool blocks and their place in a host slot laid out as the
// tiered cache's chunks are: for layer l, the K section then the V section,
// each `section_bytes` long, at host + (2 l + kv) * section_bytes; pool block
// pool_block_ids[j] sits at offset (first_block + j) * block_bytes of each.
struct HostBlockRun {
  uint8_t* host = nullptr;
  int64_t section_bytes = 0;
  int64_t first_block = 0;
  std::span<const int32_t> pool_block_ids;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;  // e.g. "cpu (avx512_bf16+onednn)"

  // ---- memory
  virtual DeviceBuffer allocate(tensor::DType dtype, int64_t num_elements) = 0;
  virtual KvMemoryHandle allocate_kv_memory(int64_t num_layers, int64_t num_blocks,
                                            int64_t block_size,
                                            const tensor::KvRowLayout& layout) = 0;
  // Copies every layer's K and V of run.pool_block_ids between `kv` and the
  // host slot, byte for byte (no dtype conversion). Returns the bytes copied.
  virtual int64_t copy_blocks(KvMemory& kv, const HostBlockRun& run, CopyDirection direction) = 0;

  // ---- kernels (shapes as in ops/ops.h and attention/paged_attention.h)
  // y[m, n] = x[m, k] · w[n, k]ᵀ (+ bias[n]).
  virtual void matmul(const float* x, int64_t m, const ops::MatmulWeight& w, const float* bias,
                      float* y) = 0;
  // x, y: [rows, dim] (y may alias x); weight: [dim].
  virtual void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                        float* y) = 0;
  // x: [num_tokens, num_heads, head_dim] rotated in place; inv_freq: [head_dim / 2].
  virtual void rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
                    int64_t head_dim, const float* inv_freq, ops::RopeStyle style) = 0;
  // out[i] = silu(gate[i]) * up[i]; out may alias gate or up.
  virtual void silu_mul(const float* gate, const float* up, int64_t n, float* out) = 0;
  // y[i] += x[i].
  virtual void add_inplace(float* y, const float* x, int64_t n) = 0;
  // Mixture-of-experts routing (ops::moe_route): logits [num_tokens,
  // num_experts] -> experts, weights [num_tokens, top_k], best first.
  virtual void moe_route(const float* logits, int64_t num_tokens, int64_t num_experts,
                         int64_t top_k, bool renormalize, int32_t* experts, float* weights) = 0;
  // Every matmul of mm[0, count) in one parallel region (ops::grouped_matmul:
  // each y bit for bit matmul()'s; every m in [1, ops::kGroupedMaxRows]).
  virtual void grouped_matmul(const ops::GroupedMatmul* mm, int64_t count) = 0;
  // Every matmul of mm (one n), then out[row.token, :] += row.weight * y[r, :]
  // for each matmul's rows in order (ops::grouped_matmul_scatter_add).
  virtual void grouped_matmul_scatter_add(const ops::GroupedMatmul* mm, int64_t count,
                                          float* out) = 0;
  // out[rows[r].token, :] += rows[r].weight * y[r, :]; y: [m, n], out: [*, n].
  virtual void weighted_scatter_add(const float* y, int64_t m, int64_t n,
                                    const ops::WeightedRow* rows, float* out) = 0;
  // k, v: [num_tokens, num_kv_heads, head_dim] -> layer `layer` of `kv` at
  // md.slot_mapping, encoded in kv's dtype (fixed fp8 scales when > 0).
  virtual void reshape_and_cache(const float* k, const float* v,
                                 const attention::AttentionMetadata& md, float k_scale,
                                 float v_scale, KvMemory& kv, int64_t layer) = 0;
  // q, out: [num_tokens, num_heads, head_dim]; reads layer `layer` of `kv`
  // through md's block tables.
  virtual void paged_attention(const float* q, const KvMemory& kv, int64_t layer,
                               const attention::AttentionMetadata& md,
                               const attention::PagedAttentionParams& params, float* out) = 0;
};

}  // namespace strata::backend
