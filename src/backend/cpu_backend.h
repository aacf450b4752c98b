// The CPU backend: host memory, the ops kernels (AVX-512 / AVX512-BF16 /
// VNNI or portable, chosen at run time by ops/cpu/dispatch.cc), paged
// attention from attention/, memcpy for block copies. Kernels split their
// work across the ThreadPool it is given.
// Threading: as Backend; the pool must outlive the backend.
#pragma once

#include "backend/backend.h"
#include "base/thread_pool.h"

namespace strata::backend {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(ThreadPool& pool) : pool_(pool) {}

  Device device() const override { return Device::kCpu; }
  std::string name() const override;
  ThreadPool& pool() { return pool_; }

  DeviceBuffer allocate(tensor::DType dtype, int64_t num_elements) override;
  KvMemoryHandle allocate_kv_memory(int64_t num_layers, int64_t num_blocks, int64_t block_size,
                                    const tensor::KvRowLayout& layout) override;
  int64_t copy_blocks(KvMemory& kv, const HostBlockRun& run, CopyDirection direction) override;

  void matmul(const float* x, int64_t m, const ops::MatmulWeight& w, const float* bias,
              float* y) override;
  void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                float* y) override;
  void rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
            int64_t head_dim, const float* inv_freq, ops::RopeStyle style) override;
  void silu_mul(const float* gate, const float* up, int64_t n, float* out) override;
  void add_inplace(float* y, const float* x, int64_t n) override;
  void moe_route(const float* logits, int64_t num_tokens, int64_t num_experts, int64_t top_k,
                 bool renormalize, int32_t* experts, float* weights) override;
  void grouped_matmul(const ops::GroupedMatmul* mm, int64_t count) override;
  void grouped_matmul_scatter_add(const ops::GroupedMatmul* mm, int64_t count,
                                  float* out) override;
  void weighted_scatter_add(const float* y, int64_t m, int64_t n, const ops::WeightedRow* rows,
                            float* out) override;
  void reshape_and_cache(const float* k, const float* v, const attention::AttentionMetadata& md,
                         float k_scale, float v_scale, KvMemory& kv, int64_t layer) override;
  void paged_attention(const float* q, const KvMemory& kv, int64_t layer,
                       const attention::AttentionMetadata& md,
                       const attention::PagedAttentionParams& params, float* out) override;

 private:
  ThreadPool& pool_;
};

}  // namespace strata::backend
