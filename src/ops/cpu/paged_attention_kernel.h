// The paged attention kernel, written once over a 16-lane vector type V and
// instantiated by each kernel table's translation unit (generic.cc with plain
// arrays, avx512.cc with __m512). Include it inside that file's anonymous
// namespace, after V is defined; it includes nothing itself, so no library
// template code is compiled with AVX-512 flags.
//
// V provides: zero(), set1(f), load(p), store(p, v), the widening loads
// load_bf16 / load_f16 / load_fp8_e4m3 / load_fp8_e5m2 (16 elements at a
// byte pointer, exactly tensor::fp8_to_f32's values), add, sub, mul, max,
// fmadd(a, b, c) = a * b + c, exp_nonpositive(v) (e^x for x <= 0, exactly 0
// below -87, exactly 1 at 0), visible(s, first, last, key): s in the lanes
// with first <= key <= last, -inf elsewhere; for the decode kernel also
// visible_keys(s, tile, first, last) (lane j is key tile + j), reduce_max and
// transpose16(a[16]) (a 16 x 16 transpose in place).
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

using tensor::KvCacheDtype;

// One K (or V) element as f32: decode(element) * scale, the same operations
// (and bits) as tensor::decode_kv_head and as load_kv16 below.
template <KvCacheDtype T>
STRATA_INLINE float load_kv1(const uint8_t* values, int64_t d, float scale) {
  if constexpr (T == KvCacheDtype::kF32) {
    float f;
    __builtin_memcpy(&f, values + 4 * d, 4);
    return f;
  } else if constexpr (T == KvCacheDtype::kBF16 || T == KvCacheDtype::kF16) {
    uint16_t h;
    __builtin_memcpy(&h, values + 2 * d, 2);
    if constexpr (T == KvCacheDtype::kBF16) {
      // tensor::bf16_to_f32 spelled out: an inline library function compiled
      // here with AVX-512 flags could be the copy the linker keeps for all.
      const uint32_t bits = static_cast<uint32_t>(h) << 16;
      float f;
      __builtin_memcpy(&f, &bits, 4);
      return f;
    } else {
      return tensor::f16_to_f32(h);
    }
  } else if constexpr (T == KvCacheDtype::kFp8E4M3) {
    // As tensor::fp8_to_f32: the bits placed in a half (2^-8 of the value), times 256.
    const uint32_t b = values[d];
    const uint16_t half = static_cast<uint16_t>((b & 0x80u) << 8 | (b & 0x7fu) << 7);
    return tensor::f16_to_f32(half) * 256.0f * scale;
  } else {
    return tensor::f16_to_f32(static_cast<uint16_t>(values[d] << 8)) * scale;
  }
}

// Elements [d, d + 16) of a row as f32 (V provides load_bf16, load_f16,
// load_fp8_e4m3 and load_fp8_e5m2 with load_kv1's values).
template <class V, KvCacheDtype T>
STRATA_INLINE V load_kv16(const uint8_t* values, int64_t d, float scale) {
  if constexpr (T == KvCacheDtype::kF32) {
    return V::load(reinterpret_cast<const float*>(values) + d);
  } else if constexpr (T == KvCacheDtype::kBF16) {
    return V::load_bf16(values + 2 * d);
  } else if constexpr (T == KvCacheDtype::kF16) {
    return V::load_f16(values + 2 * d);
  } else if constexpr (T == KvCacheDtype::kFp8E4M3) {
    return V::mul(V::load_fp8_e4m3(values + d), V::set1(scale));
  } else {
    return V::mul(V::load_fp8_e5m2(values + d), V::set1(scale));
  }
}

// The K (or V) rows of the 16 keys of a tile: values[j] points at key tile +
// j's values for kv_head (`outside`, a zero row, for keys outside [j0, j1)),
// scale[j] its fp8 scale (0 outside; unused for the plain types).
struct KvTileRows {
  const uint8_t* values[kLanes];
  float scale[kLanes];
};

// One division per tile: the keys walk the block table in order. Row layout:
// tensor::KvRowLayout (values of head h at h * head_dim * e, then the fp8 scales).
template <KvCacheDtype T>
STRATA_INLINE void tile_rows(const uint8_t* cache, const PagedAttentionBatch& b, int32_t seq,
                             int64_t kv_head, int64_t tile, int64_t j0, int64_t j1,
                             const uint8_t* outside, KvTileRows* out) {
  constexpr int64_t kElem = tensor::kv_element_bytes(T);
  constexpr bool kScales = tensor::kv_cache_dtype_has_scales(T);
  const int64_t values_bytes = b.num_kv_heads * b.head_dim * kElem;
  const int64_t row_bytes = values_bytes + (kScales ? b.num_kv_heads * 4 : 0);
  const int64_t head_offset = kv_head * b.head_dim * kElem;
  const int64_t scale_offset = values_bytes + kv_head * 4;
  const int32_t* table = b.block_tables + int64_t{seq} * b.max_blocks_per_seq;
  auto block_base = [&](int64_t block_idx) {
    return cache + int64_t{table[block_idx]} * b.block_size * row_bytes;
  };
  const int64_t start = tile > j0 ? tile : j0;
  int64_t block_idx = start / b.block_size, offset = start % b.block_size;
  const uint8_t* block = block_base(block_idx);
  for (int j = 0; j < kLanes; ++j) {
    const int64_t key = tile + j;
    if (key < start || key >= j1) {
      out->values[j] = outside;
      out->scale[j] = 0.0f;
      continue;
    }
    const uint8_t* row = block + offset * row_bytes;
    out->values[j] = row + head_offset;
    if constexpr (kScales) {
      __builtin_memcpy(&out->scale[j], row + scale_offset, 4);
    } else {
      out->scale[j] = 1.0f;
    }
    if (++offset == b.block_size && key + 1 < j1) {
      offset = 0;
      block = block_base(++block_idx);
    }
  }
}

// Writes rows [16][dim] of f32 into buf: the tile's rows converted, zeros
// for rows at `outside` (== nullptr here), so the products below address
// every key from one pointer and every tile runs the same 16-key code.
template <class V, KvCacheDtype T>
STRATA_INLINE void convert_tile(const KvTileRows& r, const uint8_t* outside, int64_t dim,
                                float* buf) {
  for (int64_t j = 0; j < kLanes; ++j) {
    float* dst = buf + j * dim;
    if (r.values[j] == outside) {
      __builtin_memset(dst, 0, static_cast<size_t>(dim) * sizeof(float));
      continue;
    }
    if constexpr (T == KvCacheDtype::kF32) {
      __builtin_memcpy(dst, r.values[j], static_cast<size_t>(dim) * sizeof(float));
    } else {
      int64_t d = 0;
      for (; d + kLanes <= dim; d += kLanes) V::store(dst + d, load_kv16<V, T>(r.values[j], d, r.scale[j]));
      for (; d < dim; ++d) dst[d] = load_kv1<T>(r.values[j], d, r.scale[j]);
    }
  }
}

// Copies the K (or V) rows of the 16 keys of the tile starting at `tile` into
// buf [16][dim] as f32 (zero rows for keys outside [j0, j1): their scores
// are masked and their weights 0).
template <class V, KvCacheDtype T>
STRATA_INLINE void copy_tile(const uint8_t* cache, const PagedAttentionBatch& b, int32_t seq,
                             int64_t kv_head, int64_t tile, int64_t j0, int64_t j1, int64_t dim,
                             float* buf) {
  KvTileRows rows;
  tile_rows<T>(cache, b, seq, kv_head, tile, j0, j1, nullptr, &rows);
  convert_tile<V, T>(rows, nullptr, dim, buf);
}

// scores[j][lane] = Σ_d qt[d][lane] · k[j][d] for the tile's 16 keys.
// kDim > 0: the head size as a constant (one base pointer, fixed offsets).
template <class V, int kDim>
STRATA_INLINE void tile_scores(const float* k, const float* qt, int64_t head_dim, V* scores) {
  const int64_t dim = kDim > 0 ? kDim : head_dim;
#pragma GCC unroll 16
  for (int j = 0; j < kLanes; ++j) scores[j] = V::zero();
  for (int64_t d = 0; d < dim; ++d) {
    const V q = V::load(qt + d * kLanes);
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j) scores[j] = V::fmadd(q, V::set1(k[j * dim + d]), scores[j]);
  }
}

// ot[d][lane] = ot[d][lane] · correction[lane] + Σ_j p[j][lane] · v[j][d],
// 8 values of d at a time held in registers across the tile's 16 keys.
template <class V, int kDim>
STRATA_INLINE void tile_values(const float* v, const float* p, V correction, int64_t head_dim,
                               float* ot) {
  const int64_t dim = kDim > 0 ? kDim : head_dim;
  int64_t d = 0;
  for (; d + 8 <= dim; d += 8) {
    V o[8];
#pragma GCC unroll 8
    for (int e = 0; e < 8; ++e) o[e] = V::mul(V::load(ot + (d + e) * kLanes), correction);
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j) {
      const V pj = V::load(p + j * kLanes);
#pragma GCC unroll 8
      for (int e = 0; e < 8; ++e) o[e] = V::fmadd(pj, V::set1(v[j * dim + d + e]), o[e]);
    }
#pragma GCC unroll 8
    for (int e = 0; e < 8; ++e) V::store(ot + (d + e) * kLanes, o[e]);
  }
  if constexpr (kDim % 8 == 0 && kDim > 0) return;  // no tail
  for (; d < dim; ++d) {
    V o = V::mul(V::load(ot + d * kLanes), correction);
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j) {
      o = V::fmadd(V::load(p + j * kLanes), V::set1(v[j * dim + d]), o);
    }
    V::store(ot + d * kLanes, o);
  }
}

template <class V, KvCacheDtype T, int kDim>
void paged_attention_item_impl(const PagedAttentionBatch& b, const PagedAttentionItem& item,
                               float* scratch) {
  const int64_t group = b.num_heads / b.num_kv_heads;
  const int64_t dim = kDim > 0 ? kDim : b.head_dim;
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
  float* kv = out_l + kLanes;              // [16 keys][dim]: a tile's K, then its V

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
  for (int64_t tile = min_first / kLanes * kLanes; tile <= max_last; tile += kLanes) {
    const int64_t j0 = tile > min_first ? tile : min_first;
    const int64_t j1 = tile + kLanes < max_last + 1 ? tile + kLanes : max_last + 1;
    copy_tile<V, T>(b.k_cache, b, s, item.kv_head, tile, j0, j1, dim, kv);
    tile_scores<V, kDim>(kv, qt, dim, scores);
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
    copy_tile<V, T>(b.v_cache, b, s, item.kv_head, tile, j0, j1, dim, kv);
    tile_values<V, kDim>(kv, p, correction, dim, ot);
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

// Decode: a sequence with one new token. Its rows (the query heads of one kv
// head) are too few to fill 16 lanes, so here the lanes run along keys for
// Q·Kᵀ (the K tile transposed to kt[d][key] in scratch) and along head_dim
// for P·V. Every score, weight and output element goes through exactly the
// operations of paged_attention_item_impl in the same order (fma over d in
// order, the same exp, tile sums left to right, o·c then fma over keys in
// order), so a token decoded here gives the same bits as the same token in a
// prefill chunk: reloaded or recomputed KV equals decoded KV.
template <class V, KvCacheDtype T, int kDim, int kRows>
void paged_attention_decode_rows(const PagedAttentionBatch& b, const PagedAttentionItem& item,
                                 float* scratch) {
  const int64_t group = b.num_heads / b.num_kv_heads;
  const int64_t dim = kDim > 0 ? kDim : b.head_dim;
  const int64_t chunks = dim / kLanes;
  const int32_t s = item.seq;
  const int64_t token = b.query_start_loc[s];
  const int64_t pos = b.seq_lens[s] - 1;
  const int64_t first = b.sliding_window > 0 && pos - b.sliding_window + 1 > 0
                            ? pos - b.sliding_window + 1
                            : 0;
  const int64_t num_rows = item.row_end - item.row_begin;
  float* qs = scratch;                 // [kRows][dim]: scale · q (zero rows past num_rows)
  float* o_rows = qs + kRows * dim;    // [kRows][dim]
  float* kt = o_rows + kRows * dim;    // [dim][16]: the tile's K, transposed
  float* zero_row = kt + dim * kLanes; // [dim] zeros: keys outside the range
  float* p = zero_row + dim;           // [kRows][16] weights of the tile
  float* vt = p + kRows * kLanes;      // [16][dim]: the tile's V as f32 (compact types)
  const float* q_rows = b.q + (token * b.num_heads + item.kv_head * group + item.row_begin) * dim;
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t d = 0; d < dim; ++d) {
      qs[r * dim + d] = r < num_rows ? q_rows[r * dim + d] * b.scale : 0.0f;
      o_rows[r * dim + d] = 0.0f;
    }
  }
  for (int64_t d = 0; d < dim; ++d) zero_row[d] = 0.0f;
  V m[kRows], l[kRows];
  for (int r = 0; r < kRows; ++r) {
    m[r] = V::set1(kNoScoreYet);  // every lane the row's running max
    l[r] = V::zero();
  }
  const uint8_t* zero_bytes = reinterpret_cast<const uint8_t*>(zero_row);
  constexpr int64_t kHeadBytes = kDim * tensor::kv_element_bytes(T);  // 0 for a run-time dim
  const int64_t head_bytes = kHeadBytes > 0 ? kHeadBytes : dim * tensor::kv_element_bytes(T);
  KvTileRows k, v, k_next, v_next;
  const float* v_rows[kLanes];  // the tile's V rows as f32
  const int64_t first_tile = first / kLanes * kLanes;
  tile_rows<T>(b.k_cache, b, s, item.kv_head, first_tile, first, pos + 1, zero_bytes, &k_next);
  tile_rows<T>(b.v_cache, b, s, item.kv_head, first_tile, first, pos + 1, zero_bytes, &v_next);
  for (int64_t tile = first_tile; tile <= pos; tile += kLanes) {
    k = k_next;
    v = v_next;
    // Long contexts are read from memory: ask for the next tile's rows (16
    // scattered head rows of K and of V) while this one is computed.
    if (tile + kLanes <= pos) {
      tile_rows<T>(b.k_cache, b, s, item.kv_head, tile + kLanes, first, pos + 1, zero_bytes,
                   &k_next);
      tile_rows<T>(b.v_cache, b, s, item.kv_head, tile + kLanes, first, pos + 1, zero_bytes,
                   &v_next);
      for (int j = 0; j < kLanes; ++j) {
        for (int64_t off = 0; off < head_bytes; off += 64) {
          __builtin_prefetch(k_next.values[j] + off);
          __builtin_prefetch(v_next.values[j] + off);
        }
      }
    }
    for (int64_t c = 0; c < chunks; ++c) {
      V rows[kLanes];
#pragma GCC unroll 16
      for (int j = 0; j < kLanes; ++j) rows[j] = load_kv16<V, T>(k.values[j], c * kLanes, k.scale[j]);
      V::transpose16(rows);
#pragma GCC unroll 16
      for (int i = 0; i < kLanes; ++i) V::store(kt + (c * kLanes + i) * kLanes, rows[i]);
    }
    if constexpr (T == KvCacheDtype::kF32) {
      for (int j = 0; j < kLanes; ++j) v_rows[j] = reinterpret_cast<const float*>(v.values[j]);
    } else {  // converted once, read by every row of the item
      for (int j = 0; j < kLanes; ++j) {
        float* dst = vt + j * dim;
        for (int64_t c = 0; c < chunks; ++c) {
          V::store(dst + c * kLanes, load_kv16<V, T>(v.values[j], c * kLanes, v.scale[j]));
        }
        v_rows[j] = dst;
      }
    }
    V scores[kRows];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) scores[r] = V::zero();
    for (int64_t d = 0; d < dim; ++d) {
      const V kd = V::load(kt + d * kLanes);
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) scores[r] = V::fmadd(V::set1(qs[r * dim + d]), kd, scores[r]);
    }
    V correction[kRows];
    for (int r = 0; r < num_rows; ++r) {
      const V sc = V::visible_keys(scores[r], static_cast<float>(tile), static_cast<float>(first),
                                   static_cast<float>(pos));
      const V m_new = V::max(m[r], V::set1(V::reduce_max(sc)));
      correction[r] = V::exp_nonpositive(V::sub(m[r], m_new));
      const V pv = V::exp_nonpositive(V::sub(sc, m_new));
      float* pr = p + r * kLanes;
      V::store(pr, pv);
      float tile_sum = 0.0f;
      for (int j = 0; j < kLanes; ++j) tile_sum += pr[j];  // left to right, as the lane kernel
      l[r] = V::fmadd(l[r], correction[r], V::set1(tile_sum));
      m[r] = m_new;
    }
    // P·V one 16-wide slice of head_dim at a time: the tile's 16 V slices stay
    // in registers for every row (o·c, then fma over the keys in order).
    for (int64_t c = 0; c < chunks; ++c) {
      V vc[kLanes];
#pragma GCC unroll 16
      for (int j = 0; j < kLanes; ++j) vc[j] = V::load(v_rows[j] + c * kLanes);
      for (int r = 0; r < num_rows; ++r) {
        const float* pr = p + r * kLanes;
        float* o = o_rows + r * dim + c * kLanes;
        V oc = V::mul(V::load(o), correction[r]);
#pragma GCC unroll 16
        for (int j = 0; j < kLanes; ++j) oc = V::fmadd(V::set1(pr[j]), vc[j], oc);
        V::store(o, oc);
      }
    }
  }
  float l_lanes[kLanes];
  for (int64_t r = 0; r < num_rows; ++r) {
    V::store(l_lanes, l[r]);
    float* out = b.out + (token * b.num_heads + item.kv_head * group + item.row_begin + r) * dim;
    const float inv = 1.0f / l_lanes[0];
    for (int64_t d = 0; d < dim; ++d) out[d] = o_rows[r * dim + d] * inv;
  }
}

// The decode kernel with room for the item's rows (2, 4, 8 or 16).
template <class V, KvCacheDtype T, int kDim>
void paged_attention_decode_impl(const PagedAttentionBatch& b, const PagedAttentionItem& item,
                                 float* scratch) {
  const int64_t rows = item.row_end - item.row_begin;
  if (rows <= 2) return paged_attention_decode_rows<V, T, kDim, 2>(b, item, scratch);
  if (rows <= 4) return paged_attention_decode_rows<V, T, kDim, 4>(b, item, scratch);
  if (rows <= 8) return paged_attention_decode_rows<V, T, kDim, 8>(b, item, scratch);
  return paged_attention_decode_rows<V, T, kDim, 16>(b, item, scratch);
}

// Calls f(KvType<T>{}) for the batch's KV element type.
template <KvCacheDtype T>
struct KvType {
  static constexpr KvCacheDtype kValue = T;
};
template <class F>
STRATA_INLINE void with_kv_dtype(KvCacheDtype dtype, F&& f) {
  switch (dtype) {
    case KvCacheDtype::kF32:
      return f(KvType<KvCacheDtype::kF32>{});
    case KvCacheDtype::kBF16:
      return f(KvType<KvCacheDtype::kBF16>{});
    case KvCacheDtype::kF16:
      return f(KvType<KvCacheDtype::kF16>{});
    case KvCacheDtype::kFp8E4M3:
      return f(KvType<KvCacheDtype::kFp8E4M3>{});
    case KvCacheDtype::kFp8E5M2:
      return f(KvType<KvCacheDtype::kFp8E5M2>{});
  }
}

template <int N>
struct HeadDim {
  static constexpr int kValue = N;
};

// Calls f(HeadDim<64>), f(HeadDim<128>) or f(HeadDim<0>) (any other size, at run time).
template <class F>
STRATA_INLINE void with_head_dim(int64_t head_dim, F&& f) {
  switch (head_dim) {
    case 64:
      return f(HeadDim<64>{});
    case 128:
      return f(HeadDim<128>{});
    default:
      return f(HeadDim<0>{});
  }
}

// A sequence with one new token takes the decode kernel (when head_dim is a
// multiple of 16); a token's kernel depends only on its own sequence's step.
template <class V>
void paged_attention_item_for(const PagedAttentionBatch& b, const PagedAttentionItem& item,
                              float* scratch) {
  const bool decode = b.query_start_loc[item.seq + 1] - b.query_start_loc[item.seq] == 1 &&
                      b.head_dim % kLanes == 0;
  with_kv_dtype(b.kv_dtype, [&](auto kv_type) {
    constexpr KvCacheDtype T = decltype(kv_type)::kValue;
    with_head_dim(b.head_dim, [&](auto dim) {
      constexpr int kDim = decltype(dim)::kValue;
      if (decode) {
        paged_attention_decode_impl<V, T, kDim>(b, item, scratch);
      } else {
        paged_attention_item_impl<V, T, kDim>(b, item, scratch);
      }
    });
  });
}
