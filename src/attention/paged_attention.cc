#include "attention/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

QueryTask task_for_token(const AttentionMetadata& md, const PagedAttentionParams& p,
                         int64_t token, int32_t seq) {
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

const float* kv_row(const float* cache, const AttentionMetadata& md, const PagedAttentionParams& p,
                    int32_t seq, int64_t position, int64_t kv_head) {
  const int32_t block = md.block_tables[seq * md.max_blocks_per_seq + position / p.block_size];
  const int64_t slot = int64_t{block} * p.block_size + position % p.block_size;
  return cache + (slot * p.num_kv_heads + kv_head) * p.head_dim;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) float dot(const float* a,
                                                                      const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void scale_add(
    float* acc, float acc_scale, const float* v, float v_weight, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] * acc_scale + v[i] * v_weight;
}

// One (token, head): online softmax over the visible keys, in key order.
void attend_one(const float* q, const float* k_cache, const float* v_cache,
                const AttentionMetadata& md, const PagedAttentionParams& p, const QueryTask& task,
                int64_t head, float* out) {
  const int64_t kv_head = head / (p.num_heads / p.num_kv_heads);
  float max_score = -std::numeric_limits<float>::infinity();
  float denom = 0.0f;
  std::fill(out, out + p.head_dim, 0.0f);
  for (int64_t j = task.first_key; j <= task.position; ++j) {
    const float score = dot(q, kv_row(k_cache, md, p, task.seq, j, kv_head), p.head_dim) * p.scale;
    const float new_max = std::max(max_score, score);
    const float old_scale = std::exp(max_score - new_max);
    const float weight = std::exp(score - new_max);
    denom = denom * old_scale + weight;
    scale_add(out, old_scale, kv_row(v_cache, md, p, task.seq, j, kv_head), weight, p.head_dim);
    max_score = new_max;
  }
  const float inv = 1.0f / denom;
  for (int64_t i = 0; i < p.head_dim; ++i) out[i] *= inv;
}

void check_params(const AttentionMetadata& md, const PagedAttentionParams& p) {
  STRATA_CHECK(p.num_kv_heads > 0 && p.num_heads % p.num_kv_heads == 0);
  STRATA_CHECK(static_cast<int32_t>(md.query_start_loc.size()) == md.num_seqs() + 1);
  STRATA_CHECK(md.query_start_loc.back() == md.num_tokens());
}

}  // namespace

void reshape_and_cache(const float* k, const float* v, const AttentionMetadata& md,
                       int64_t kv_row_floats, float* k_cache, float* v_cache) {
  for (int64_t t = 0; t < md.num_tokens(); ++t) {
    const int64_t slot = md.slot_mapping[t];
    std::memcpy(k_cache + slot * kv_row_floats, k + t * kv_row_floats,
                kv_row_floats * sizeof(float));
    std::memcpy(v_cache + slot * kv_row_floats, v + t * kv_row_floats,
                kv_row_floats * sizeof(float));
  }
}

void paged_attention(const float* q, const float* k_cache, const float* v_cache,
                     const AttentionMetadata& md, const PagedAttentionParams& p, float* out,
                     ThreadPool& pool) {
  check_params(md, p);
  const std::vector<int32_t> seq = seq_of_tokens(md);
  const int64_t num_items = md.num_tokens() * p.num_heads;
  pool.parallel_for(num_items, [&](int64_t begin, int64_t end, int) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t token = item / p.num_heads;
      const int64_t head = item % p.num_heads;
      const QueryTask task = task_for_token(md, p, token, seq[token]);
      const int64_t offset = (token * p.num_heads + head) * p.head_dim;
      attend_one(q + offset, k_cache, v_cache, md, p, task, head, out + offset);
    }
  });
}

void paged_attention_reference(const float* q, const float* k_cache, const float* v_cache,
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
        const float* k = kv_row(k_cache, md, p, task.seq, j, h / group);
        double s = 0.0;
        for (int64_t i = 0; i < p.head_dim; ++i) s += double{qh[i]} * k[i];
        scores.push_back(s * p.scale);
      }
      const double max = *std::max_element(scores.begin(), scores.end());
      double sum = 0.0;
      for (double& s : scores) sum += s = std::exp(s - max);
      float* o = out + (t * p.num_heads + h) * p.head_dim;
      for (int64_t i = 0; i < p.head_dim; ++i) {
        double acc = 0.0;
        for (int64_t j = task.first_key; j <= task.position; ++j) {
          acc += scores[j - task.first_key] * kv_row(v_cache, md, p, task.seq, j, h / group)[i];
        }
        o[i] = static_cast<float>(acc / sum);
      }
    }
  }
}

}  // namespace strata::attention
