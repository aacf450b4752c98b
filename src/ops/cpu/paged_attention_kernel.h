// The paged attention kernel, written once over a 16-lane vector type V and
// instantiated by each kernel table's translation unit (generic.cc with plain
// arrays, avx512.cc with __m512). Include it inside that file's anonymous
// namespace, after V is defined; it includes nothing itself, so no library
// template code is compiled with AVX-512 flags.
//
// V provides: zero(), set1(f), load(p), store(p, v), add, sub, mul, max,
// fmadd(a, b, c) = a * b + c, exp_nonpositive(v) (e^x for x <= 0, exactly 0
// below -87, exactly 1 at 0), and visible(s, first, last, key): s in the
// lanes with first <= key <= last, -inf elsewhere.
//
// One item = up to 16 query rows of one sequence and kv head, one row per
// lane. Both products are vectorized across those rows, so nothing is
// reduced horizontally and each K/V element loaded serves all 16 rows:
//   scores[key][lane] = Σ_d (scale · q[lane][d]) · k[key][d]  (qt = q transposed)
//   o[d][lane]       += p[key][lane] · v[key][d]
// Keys are visited in tiles of 16 absolute positions with an online softmax
// (running max m, denominator l, rescale of o by e^(m_old - m_new)). A lane
// whose keys in a tile are all masked sees max -inf, correction exactly 1 and
// weights exactly 0, so its result does not depend on the other lanes: a row
// computes the same bits in any batch.

#ifndef STRATA_INLINE
#define STRATA_INLINE inline __attribute__((always_inline))
#endif

constexpr int kLanes = static_cast<int>(kPagedAttentionLanes);
constexpr float kNoScoreYet = -3.4028234663852886e38f;  // finite: e^(m - m) stays 1

// The K or V row of `position` of sequence `seq` for kv head `kv_head`.
STRATA_INLINE const float* paged_row(const float* cache, const PagedAttentionBatch& b,
                                     int32_t seq, int64_t position, int64_t kv_head) {
  const int32_t block = b.block_tables[int64_t{seq} * b.max_blocks_per_seq + position / b.block_size];
  const int64_t slot = int64_t{block} * b.block_size + position % b.block_size;
  return cache + (slot * b.num_kv_heads + kv_head) * b.head_dim;
}

// The K (or V) rows of the 16 keys of the tile starting at `tile`; keys
// outside [j0, j1) point at row j0 (their scores are masked, their weights 0),
// so every tile runs the same fully unrolled 16-key code.
STRATA_INLINE void tile_rows(const float* cache, const PagedAttentionBatch& b, int32_t seq,
                             int64_t kv_head, int64_t tile, int64_t j0, int64_t j1,
                             const float** rows) {
  const float* fallback = paged_row(cache, b, seq, j0, kv_head);
  for (int64_t j = 0; j < kLanes; ++j) {
    const int64_t key = tile + j;
    rows[j] = key >= j0 && key < j1 ? paged_row(cache, b, seq, key, kv_head) : fallback;
  }
}

// scores[j][lane] = Σ_d qt[d][lane] · k[j][d] for the tile's 16 keys.
template <class V>
STRATA_INLINE void tile_scores(const float* const* k, const float* qt, int64_t dim, V* scores) {
#pragma GCC unroll 16
  for (int j = 0; j < kLanes; ++j) scores[j] = V::zero();
  for (int64_t d = 0; d < dim; ++d) {
    const V q = V::load(qt + d * kLanes);
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j) scores[j] = V::fmadd(q, V::set1(k[j][d]), scores[j]);
  }
}

// ot[d][lane] += Σ_j p[j][lane] · v[j][d], 8 values of d at a time held in
// registers across the tile's 16 keys.
template <class V>
STRATA_INLINE void tile_values(const float* const* v, const float* p, int64_t dim, float* ot) {
  int64_t d = 0;
  for (; d + 8 <= dim; d += 8) {
    V o[8];
#pragma GCC unroll 8
    for (int e = 0; e < 8; ++e) o[e] = V::load(ot + (d + e) * kLanes);
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j) {
      const V pj = V::load(p + j * kLanes);
#pragma GCC unroll 8
      for (int e = 0; e < 8; ++e) o[e] = V::fmadd(pj, V::set1(v[j][d + e]), o[e]);
    }
#pragma GCC unroll 8
    for (int e = 0; e < 8; ++e) V::store(ot + (d + e) * kLanes, o[e]);
  }
  for (; d < dim; ++d) {
    V o = V::load(ot + d * kLanes);
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j) o = V::fmadd(V::load(p + j * kLanes), V::set1(v[j][d]), o);
    V::store(ot + d * kLanes, o);
  }
}

template <class V>
void paged_attention_item_impl(const PagedAttentionBatch& b, const PagedAttentionItem& item,
                               float* scratch) {
  const int64_t group = b.num_heads / b.num_kv_heads;
  const int64_t dim = b.head_dim;
  const int32_t s = item.seq;
  const int64_t num_rows = item.row_end - item.row_begin;
  const int64_t first_token = b.query_start_loc[s];
  const int64_t num_new = b.query_start_loc[s + 1] - first_token;
  const int64_t first_pos = b.seq_lens[s] - num_new;  // position of the seq's first new token

  float* qt = scratch;                     // [dim][16]: scale · q, transposed
  float* ot = qt + dim * kLanes;           // [dim][16]: unnormalized output
  float* p = ot + dim * kLanes;            // [16 keys][16]: softmax weights of a tile
  float* lane_last = p + kLanes * kLanes;  // [16]: last visible position (-1 = no row)
  float* lane_first = lane_last + kLanes;  // [16]: first visible position
  float* out_l = lane_first + kLanes;      // [16]

  int64_t min_first = -1, max_last = -1;
  for (int64_t lane = 0; lane < kLanes; ++lane) {
    if (lane >= num_rows) {
      lane_last[lane] = -1.0f;
      lane_first[lane] = 0.0f;
      for (int64_t d = 0; d < dim; ++d) qt[d * kLanes + lane] = 0.0f;
      continue;
    }
    const int64_t row = item.row_begin + lane;
    const int64_t i = row / group;
    const int64_t head = item.kv_head * group + row % group;
    const int64_t pos = first_pos + i;
    const int64_t first = b.sliding_window > 0 && pos - b.sliding_window + 1 > 0
                              ? pos - b.sliding_window + 1
                              : 0;
    lane_last[lane] = static_cast<float>(pos);
    lane_first[lane] = static_cast<float>(first);
    min_first = min_first < 0 || first < min_first ? first : min_first;
    max_last = pos > max_last ? pos : max_last;
    const float* q = b.q + ((first_token + i) * b.num_heads + head) * dim;
    for (int64_t d = 0; d < dim; ++d) qt[d * kLanes + lane] = q[d] * b.scale;
  }
  for (int64_t d = 0; d < dim; ++d) V::store(ot + d * kLanes, V::zero());

  const V last_v = V::load(lane_last), first_v = V::load(lane_first);
  V m = V::set1(kNoScoreYet), l = V::zero();
  V scores[kLanes];
  const float* rows[kLanes];
  for (int64_t tile = min_first / kLanes * kLanes; tile <= max_last; tile += kLanes) {
    const int64_t j0 = tile > min_first ? tile : min_first;
    const int64_t j1 = tile + kLanes < max_last + 1 ? tile + kLanes : max_last + 1;
    tile_rows(b.k_cache, b, s, item.kv_head, tile, j0, j1, rows);
    tile_scores<V>(rows, qt, dim, scores);
    V tile_max = V::set1(-__builtin_inff());
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j) {
      scores[j] = V::visible(scores[j], first_v, last_v, static_cast<float>(tile + j));
      tile_max = V::max(tile_max, scores[j]);
    }
    const V m_new = V::max(m, tile_max);
    const V correction = V::exp_nonpositive(V::sub(m, m_new));
    V tile_sum = V::zero();
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j) {
      const V pj = V::exp_nonpositive(V::sub(scores[j], m_new));
      V::store(p + j * kLanes, pj);
      tile_sum = V::add(tile_sum, pj);
    }
    l = V::fmadd(l, correction, tile_sum);
    m = m_new;
    for (int64_t d = 0; d < dim; ++d) {
      V::store(ot + d * kLanes, V::mul(V::load(ot + d * kLanes), correction));
    }
    tile_rows(b.v_cache, b, s, item.kv_head, tile, j0, j1, rows);
    tile_values<V>(rows, p, dim, ot);
  }

  V::store(out_l, l);
  for (int64_t lane = 0; lane < num_rows; ++lane) {
    const int64_t row = item.row_begin + lane;
    const int64_t head = item.kv_head * group + row % group;
    float* o = b.out + ((first_token + row / group) * b.num_heads + head) * dim;
    const float inv = 1.0f / out_l[lane];
    for (int64_t d = 0; d < dim; ++d) o[d] = ot[d * kLanes + lane] * inv;
  }
}
