#include "backend/cpu_backend.h"

#include <cstring>
#include <utility>
#include <vector>

#include "base/check.h"

namespace strata::backend {

std::string CpuBackend::name() const {
  return std::string("cpu (") + ops::cpu_backend_name() + ")";
}

DeviceBuffer CpuBackend::allocate(tensor::DType dtype, int64_t num_elements) {
  return DeviceBuffer::host(dtype, num_elements);
}

KvMemoryHandle CpuBackend::allocate_kv_memory(int64_t num_layers, int64_t num_blocks,
                                              int64_t block_size,
                                              const tensor::KvRowLayout& layout) {
  const int64_t bytes = num_blocks * block_size * layout.row_bytes();
  std::vector<DeviceBuffer> k, v;
  for (int64_t l = 0; l < num_layers; ++l) {
    k.push_back(DeviceBuffer::host(tensor::DType::kU8, bytes));
    v.push_back(DeviceBuffer::host(tensor::DType::kU8, bytes));
  }
  return std::make_shared<KvMemory>(Device::kCpu, std::move(k), std::move(v), num_blocks,
                                    block_size, layout);
}

int64_t CpuBackend::copy_blocks(KvMemory& kv, const HostBlockRun& run, CopyDirection direction) {
  const int64_t block_bytes = kv.block_bytes();
  STRATA_CHECK(run.section_bytes >=
               (run.first_block + static_cast<int64_t>(run.pool_block_ids.size())) * block_bytes)
      << "host section of " << run.section_bytes << " bytes is too small for the blocks";
  int64_t bytes = 0;
  for (int64_t layer = 0; layer < kv.num_layers(); ++layer) {
    uint8_t* pools[2] = {kv.k(layer), kv.v(layer)};
    for (int64_t which = 0; which < 2; ++which) {
      uint8_t* section = run.host + (layer * 2 + which) * run.section_bytes;
      for (size_t j = 0; j < run.pool_block_ids.size(); ++j) {
        STRATA_DCHECK(run.pool_block_ids[j] >= 0 && run.pool_block_ids[j] < kv.num_blocks());
        uint8_t* host = section + (run.first_block + static_cast<int64_t>(j)) * block_bytes;
        uint8_t* pool = pools[which] + int64_t{run.pool_block_ids[j]} * block_bytes;
        if (direction == CopyDirection::kPoolToHost) {
          std::memcpy(host, pool, static_cast<size_t>(block_bytes));
        } else {
          std::memcpy(pool, host, static_cast<size_t>(block_bytes));
        }
        bytes += block_bytes;
      }
    }
  }
  return bytes;
}

void CpuBackend::matmul(const float* x, int64_t m, const ops::MatmulWeight& w, const float* bias,
                        float* y) {
  ops::matmul(x, m, w, bias, y, pool_);
}

void CpuBackend::rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                          float* y) {
  ops::rms_norm(x, weight, rows, dim, eps, y);
}

void CpuBackend::rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
                      int64_t head_dim, const float* inv_freq, ops::RopeStyle style) {
  ops::rope(x, positions, num_tokens, num_heads, head_dim, inv_freq, style);
}

void CpuBackend::silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  ops::silu_mul(gate, up, n, out);
}

void CpuBackend::add_inplace(float* y, const float* x, int64_t n) { ops::add_inplace(y, x, n); }

void CpuBackend::moe_route(const float* logits, int64_t num_tokens, int64_t num_experts,
                           int64_t top_k, bool renormalize, int32_t* experts, float* weights) {
  ops::moe_route(logits, num_tokens, num_experts, top_k, renormalize, experts, weights);
}

void CpuBackend::grouped_matmul(const ops::GroupedMatmul* mm, int64_t count) {
  ops::grouped_matmul(mm, count, pool_);
}

void CpuBackend::grouped_matmul_scatter_add(const ops::GroupedMatmul* mm, int64_t count,
                                            float* out) {
  ops::grouped_matmul_scatter_add(mm, count, out, pool_);
}

void CpuBackend::weighted_scatter_add(const float* y, int64_t m, int64_t n,
                                      const ops::WeightedRow* rows, float* out) {
  ops::weighted_scatter_add(y, m, n, rows, out);
}

void CpuBackend::reshape_and_cache(const float* k, const float* v,
                                   const attention::AttentionMetadata& md, float k_scale,
                                   float v_scale, KvMemory& kv, int64_t layer) {
  attention::reshape_and_cache(k, v, md, kv.tile_layout(), k_scale, v_scale, kv.k(layer), kv.v(layer));
}

void CpuBackend::paged_attention(const float* q, const KvMemory& kv, int64_t layer,
                                 const attention::AttentionMetadata& md,
                                 const attention::PagedAttentionParams& params, float* out) {
  attention::paged_attention(q, kv.k(layer), kv.v(layer), md, params, out, pool_);
}

}  // namespace strata::backend
