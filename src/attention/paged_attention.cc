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

// ifunc resolvers run before ThreadSanitizer's runtime starts and crash it, so
// TSan builds use the portable code only.
#if defined(__SANITIZE_THREAD__)
#define STRATA_TARGET_CLONES
#else
#define STRATA_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

STRATA_TARGET_CLONES float dot(const float* a,
                                                                      const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

STRATA_TARGET_CLONES void scale_add(
    float* acc, float acc_scale, const float* v, float v_weight, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] * acc_scale + v[i] * v_weight;
}

// exp(x) for x <= 0 (softmax weights), vectorizable: 2^(x log2 e) split into
// an integer power of two and a degree-6 polynomial on [-0.5, 0.5]; relative
// error below 2e-7, and exactly 0 below -87.
STRATA_TARGET_CLONES void exp_nonpositive(float* x,
                                                                               int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float t = std::max(x[i], -87.0f) * 1.44269504088896341f;
    const float k = std::nearbyint(t);
    const float f = (t - k) * 0.693147180559945309f;  // e^f, |f| <= ln2/2
    float p = 1.0f / 720.0f;
    p = p * f + 1.0f / 120.0f;
    p = p * f + 1.0f / 24.0f;
    p = p * f + 1.0f / 6.0f;
    p = p * f + 0.5f;
    p = p * f + 1.0f;
    p = p * f + 1.0f;
    int32_t bits;
    std::memcpy(&bits, &p, 4);
    bits += static_cast<int32_t>(k) << 23;
    float r;
    std::memcpy(&r, &bits, 4);
    x[i] = x[i] < -87.0f ? 0.0f : r;
  }
}

// Running softmax state of one query head.
struct HeadState {
  float max_score;
  float denom;
  float* acc;  // [head_dim]
};

// One (token, kv head): the `group` query heads that share the kv head, so
// each K/V row is loaded once for all of them. Keys are visited a block-sized
// tile at a time: scores, one max update and rescale per tile, then the
// weighted V rows (online softmax, flash-attention style).
void attend_group(const float* q, const float* k_cache, const float* v_cache,
                  const AttentionMetadata& md, const PagedAttentionParams& p,
                  const QueryTask& task, int64_t kv_head, float* out, float* scratch) {
  const int64_t group = p.num_heads / p.num_kv_heads;
  const int64_t tile = p.block_size;
  float* scores = scratch;  // [group, tile]
  std::vector<HeadState> heads(group);
  for (int64_t g = 0; g < group; ++g) {
    heads[g] = {-std::numeric_limits<float>::infinity(), 0.0f, out + g * p.head_dim};
    std::fill(heads[g].acc, heads[g].acc + p.head_dim, 0.0f);
  }
  for (int64_t j0 = task.first_key; j0 <= task.position; j0 = (j0 / tile + 1) * tile) {
    const int64_t j1 = std::min(task.position + 1, (j0 / tile + 1) * tile);
    const int64_t n = j1 - j0;
    for (int64_t j = j0; j < j1; ++j) {
      const float* k = kv_row(k_cache, md, p, task.seq, j, kv_head);
      for (int64_t g = 0; g < group; ++g) {
        scores[g * tile + (j - j0)] = dot(q + g * p.head_dim, k, p.head_dim) * p.scale;
      }
    }
    for (int64_t g = 0; g < group; ++g) {
      float* s = scores + g * tile;
      HeadState& h = heads[g];
      const float tile_max = *std::max_element(s, s + n);
      const float new_max = std::max(h.max_score, tile_max);
      float correction = h.max_score - new_max;
      exp_nonpositive(&correction, 1);
      for (int64_t j = 0; j < n; ++j) s[j] -= new_max;
      exp_nonpositive(s, n);
      float tile_sum = 0.0f;
      for (int64_t j = 0; j < n; ++j) tile_sum += s[j];
      h.denom = h.denom * correction + tile_sum;
      h.max_score = new_max;
      if (correction != 1.0f) {
        for (int64_t i = 0; i < p.head_dim; ++i) h.acc[i] *= correction;
      }
    }
    for (int64_t j = j0; j < j1; ++j) {
      const float* v = kv_row(v_cache, md, p, task.seq, j, kv_head);
      for (int64_t g = 0; g < group; ++g) {
        scale_add(heads[g].acc, 1.0f, v, scores[g * tile + (j - j0)], p.head_dim);
      }
    }
  }
  for (const HeadState& h : heads) {
    const float inv = 1.0f / h.denom;
    for (int64_t i = 0; i < p.head_dim; ++i) h.acc[i] *= inv;
  }
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
  const int64_t group = p.num_heads / p.num_kv_heads;
  const int64_t num_items = md.num_tokens() * p.num_kv_heads;
  pool.parallel_for(num_items, [&](int64_t begin, int64_t end, int) {
    std::vector<float> scratch(group * p.block_size);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t token = item / p.num_kv_heads;
      const int64_t kv_head = item % p.num_kv_heads;
      const QueryTask task = task_for_token(md, p, token, seq[token]);
      const int64_t offset = (token * p.num_heads + kv_head * group) * p.head_dim;
      attend_group(q + offset, k_cache, v_cache, md, p, task, kv_head, out + offset,
                   scratch.data());
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
