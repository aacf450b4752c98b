#include "attention/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/check.h"

namespace strata::attention {
namespace {

// Where one query token's context lives.
struct QueryTask {
  int32_t seq;
  int64_t position;   // of the query token
  int64_t first_key;  // first visible position (sliding window)
};

QueryTask task_for_token(const AttentionMetadata& md, const PagedAttentionParams& p, int64_t token,
                         int32_t seq) {
  const int64_t num_new = md.query_start_loc[seq + 1] - md.query_start_loc[seq];
  const int64_t position = md.seq_lens[seq] - num_new + (token - md.query_start_loc[seq]);
  int64_t first = 0;
  if (p.sliding_window > 0) first = std::max<int64_t>(0, position - p.sliding_window + 1);
  return {seq, position, first};
}

std::vector<int32_t> seq_of_tokens(const AttentionMetadata& md) {
  std::vector<int32_t> seq(md.num_tokens());
  for (int32_t s = 0; s < md.num_seqs(); ++s) {
    for (int32_t t = md.query_start_loc[s]; t < md.query_start_loc[s + 1]; ++t) seq[t] = s;
  }
  return seq;
}

// Head kv_head of the K (or V) row at `position`, as f32.
std::vector<float> kv_row(const uint8_t* cache, tensor::KvSide side, const AttentionMetadata& md,
                          const PagedAttentionParams& p, int32_t seq, int64_t position,
                          int64_t kv_head) {
  const int32_t block = md.block_tables[seq * md.max_blocks_per_seq + position / p.block_size];
  const int64_t slot = int64_t{block} * p.block_size + position % p.block_size;
  const tensor::KvTileLayout layout = p.kv_tile_layout();
  std::vector<uint8_t> row(layout.row.row_bytes());
  tensor::load_kv_row(cache, layout, side, slot, row.data());
  std::vector<float> out(p.head_dim);
  tensor::decode_kv_head(row.data(), layout.row, kv_head, out.data());
  return out;
}

void check_params(const AttentionMetadata& md, const PagedAttentionParams& p) {
  STRATA_CHECK(p.num_kv_heads > 0 && p.num_heads % p.num_kv_heads == 0);
  STRATA_CHECK(static_cast<int32_t>(md.query_start_loc.size()) == md.num_seqs() + 1);
  STRATA_CHECK(md.query_start_loc.back() == md.num_tokens());
}

}  // namespace

void reshape_and_cache(const float* k, const float* v, const AttentionMetadata& md,
                       const tensor::KvTileLayout& layout, float k_scale, float v_scale,
                       uint8_t* k_cache, uint8_t* v_cache) {
  const int64_t row_floats = layout.row.num_kv_heads * layout.row.head_dim;
  std::vector<uint8_t> row(layout.row.row_bytes());
  for (int64_t t = 0; t < md.num_tokens(); ++t) {
    const int64_t slot = md.slot_mapping[t];
    tensor::encode_kv_row(k + t * row_floats, layout.row, k_scale, row.data());
    tensor::store_kv_row(row.data(), layout, tensor::KvSide::kKey, slot, k_cache);
    tensor::encode_kv_row(v + t * row_floats, layout.row, v_scale, row.data());
    tensor::store_kv_row(row.data(), layout, tensor::KvSide::kValue, slot, v_cache);
  }
}

ops::PagedAttentionBatch paged_attention_batch(const float* q, const uint8_t* k_cache,
                                               const uint8_t* v_cache, const AttentionMetadata& md,
                                               const PagedAttentionParams& p, float* out) {
  ops::PagedAttentionBatch batch;
  batch.q = q;
  batch.k_cache = k_cache;
  batch.v_cache = v_cache;
  batch.kv_dtype = p.kv_dtype;
  batch.query_start_loc = md.query_start_loc.data();
  batch.seq_lens = md.seq_lens.data();
  batch.block_tables = md.block_tables.data();
  batch.num_seqs = md.num_seqs();
  batch.max_blocks_per_seq = md.max_blocks_per_seq;
  batch.num_heads = p.num_heads;
  batch.num_kv_heads = p.num_kv_heads;
  batch.head_dim = p.head_dim;
  batch.block_size = p.block_size;
  batch.scale = p.scale;
  batch.sliding_window = p.sliding_window;
  batch.out = out;
  return batch;
}

void paged_attention(const float* q, const uint8_t* k_cache, const uint8_t* v_cache,
                     const AttentionMetadata& md, const PagedAttentionParams& p, float* out,
                     ThreadPool& pool) {
  check_params(md, p);
  ops::paged_attention(paged_attention_batch(q, k_cache, v_cache, md, p, out), pool);
}

void paged_attention_reference(const float* q, const uint8_t* k_cache, const uint8_t* v_cache,
                               const AttentionMetadata& md, const PagedAttentionParams& p,
                               float* out) {
  check_params(md, p);
  const std::vector<int32_t> seq = seq_of_tokens(md);
  const int64_t group = p.num_heads / p.num_kv_heads;
  for (int64_t t = 0; t < md.num_tokens(); ++t) {
    const QueryTask task = task_for_token(md, p, t, seq[t]);
    for (int64_t h = 0; h < p.num_heads; ++h) {
      const float* qh = q + (t * p.num_heads + h) * p.head_dim;
      std::vector<double> scores;
      for (int64_t j = task.first_key; j <= task.position; ++j) {
        const std::vector<float> k =
            kv_row(k_cache, tensor::KvSide::kKey, md, p, task.seq, j, h / group);
        double s = 0.0;
        for (int64_t i = 0; i < p.head_dim; ++i) s += double{qh[i]} * k[i];
        scores.push_back(s * p.scale);
      }
      const double max = *std::max_element(scores.begin(), scores.end());
      double sum = 0.0;
      for (double& s : scores) sum += s = std::exp(s - max);
      float* o = out + (t * p.num_heads + h) * p.head_dim;
      std::vector<double> acc(p.head_dim, 0.0);
      for (int64_t j = task.first_key; j <= task.position; ++j) {
        const std::vector<float> v =
            kv_row(v_cache, tensor::KvSide::kValue, md, p, task.seq, j, h / group);
        for (int64_t i = 0; i < p.head_dim; ++i) acc[i] += scores[j - task.first_key] * v[i];
      }
      for (int64_t i = 0; i < p.head_dim; ++i) o[i] = static_cast<float>(acc[i] / sum);
    }
  }
}

}  // namespace strata::attention
