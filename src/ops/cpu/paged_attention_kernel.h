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
// visible_keys(s, tile, first, last) (lane j is key tile + j) and
// keep_keys(s, tile, first, last) (the same lanes kept, 0 elsewhere), and
// reduce_max.
//
// The caches are laid out in tiles of tensor::KvTileLayout: with a block
// size that is a multiple of 16, the 16 keys of a tile of absolute positions
// are one pool tile, where element d of the 16 keys of a kv head is 16
// consecutive elements (K transposed) and their values 16 consecutive rows.
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

// The K (or V) of one kv head for the 16 keys of a tile: values[j] points at
// key tile + j's element 0 (`outside`, a zero row, for keys outside [j0,
// j1)); element d follows at values[j] + d * dim_stride (V: the element
// size; K: W elements, tensor::KvTileLayout). scale[j] is its fp8 scale (0
// outside; 1 for the plain types). lanes != nullptr when the 16 keys are one
// pool tile: then element d of key j is at lanes + (d * 16 + j) * e (K) or
// lanes + (j * head_dim + d) * e (V), also for keys outside [j0, j1).
struct KvTileRows {
  const uint8_t* values[kLanes];
  float scale[kLanes];
  const uint8_t* lanes;
  int64_t dim_stride;
};

// Pool geometry (tensor::KvTileLayout) of a batch for element type T.
template <KvCacheDtype T>
struct PoolTiles {
  static constexpr int64_t kElem = tensor::kv_element_bytes(T);
  static constexpr bool kScales = tensor::kv_cache_dtype_has_scales(T);
  int64_t tokens, values_bytes, tile_bytes, head_bytes;  // head_bytes: one head's W tokens
  explicit PoolTiles(const PagedAttentionBatch& b)
      : tokens(tensor::kv_tile_tokens(b.block_size)),
        values_bytes(b.num_kv_heads * b.head_dim * kElem),
        tile_bytes(tokens * (values_bytes + (kScales ? b.num_kv_heads * 4 : 0))),
        head_bytes(tokens * b.head_dim * kElem) {}
};

// Byte offset, in either cache, of kv_head's part of the pool tile holding
// the 16 keys from `tile` (a multiple of 16) on: pools of 16-token tiles only.
template <KvCacheDtype T>
STRATA_INLINE int64_t pool_tile_offset(const PagedAttentionBatch& b, const PoolTiles<T>& g,
                                       int32_t seq, int64_t kv_head, int64_t tile) {
  const int32_t block = b.block_tables[int64_t{seq} * b.max_blocks_per_seq + tile / b.block_size];
  const int64_t slot = int64_t{block} * b.block_size + tile % b.block_size;
  return slot / kLanes * g.tile_bytes + kv_head * g.head_bytes;
}

template <KvCacheDtype T>
STRATA_INLINE void tile_rows(const uint8_t* cache, const PagedAttentionBatch& b, int32_t seq,
                             int64_t kv_head, int64_t tile, int64_t j0, int64_t j1, bool keys,
                             const uint8_t* outside, KvTileRows* out) {
  using G = PoolTiles<T>;
  const G g(b);
  const int64_t token_stride = keys ? G::kElem : b.head_dim * G::kElem;
  out->dim_stride = keys ? g.tokens * G::kElem : G::kElem;
  const int32_t* table = b.block_tables + int64_t{seq} * b.max_blocks_per_seq;
  // The pool tile holding slot (block, offset) and the key's index in it.
  auto place = [&](int64_t key, const uint8_t** tile_base, int64_t* index) {
    const int64_t slot = int64_t{table[key / b.block_size]} * b.block_size + key % b.block_size;
    *tile_base = cache + slot / g.tokens * g.tile_bytes;
    *index = slot % g.tokens;
  };
  const uint8_t* base = nullptr;
  int64_t index = 0;
  if (g.tokens == kLanes) {  // the tile is one pool tile: one lookup
    out->lanes = cache + pool_tile_offset<T>(b, g, seq, kv_head, tile);
    base = out->lanes - kv_head * g.head_bytes;
  } else {
    out->lanes = nullptr;
  }
  for (int j = 0; j < kLanes; ++j) {
    const int64_t key = tile + j;
    if (key < j0 || key >= j1) {
      out->values[j] = outside;
      out->scale[j] = 0.0f;
      continue;
    }
    if (out->lanes == nullptr) {
      place(key, &base, &index);
    } else {
      index = j;
    }
    out->values[j] = base + kv_head * g.head_bytes + index * token_stride;
    if constexpr (G::kScales) {
      __builtin_memcpy(&out->scale[j],
                       base + g.tokens * g.values_bytes + (kv_head * g.tokens + index) * 4, 4);
    } else {
      out->scale[j] = 1.0f;
    }
  }
}

// 16 consecutive elements at p as f32, lane j times scale lane j (fp8).
template <class V, KvCacheDtype T>
STRATA_INLINE V load_kv16_lanes(const uint8_t* p, V scale) {
  if constexpr (T == KvCacheDtype::kFp8E4M3) {
    return V::mul(V::load_fp8_e4m3(p), scale);
  } else if constexpr (T == KvCacheDtype::kFp8E5M2) {
    return V::mul(V::load_fp8_e5m2(p), scale);
  } else {
    return load_kv16<V, T>(p, 0, 1.0f);
  }
}

// kt[d][lane] = element d of key tile + lane as f32 (load_kv1's value), 0
// for keys outside [j0, j1): the tile's K transposed, from K rows r.
template <class V, KvCacheDtype T>
STRATA_INLINE void key_tile(const KvTileRows& r, const uint8_t* outside, int64_t tile, int64_t j0,
                            int64_t j1, int64_t dim, float* kt) {
  if (r.lanes != nullptr) {
    const V scale = V::load(r.scale);
    const float first = static_cast<float>(j0), last = static_cast<float>(j1 - 1);
    const bool whole = j0 <= tile && tile + kLanes <= j1;
    for (int64_t d = 0; d < dim; ++d) {
      V x = load_kv16_lanes<V, T>(r.lanes + d * r.dim_stride, scale);
      if (!whole) x = V::keep_keys(x, static_cast<float>(tile), first, last);
      V::store(kt + d * kLanes, x);
    }
    return;
  }
  for (int j = 0; j < kLanes; ++j) {
    if (r.values[j] == outside) {
      for (int64_t d = 0; d < dim; ++d) kt[d * kLanes + j] = 0.0f;
      continue;
    }
    for (int64_t d = 0; d < dim; ++d) {
      kt[d * kLanes + j] = load_kv1<T>(r.values[j] + d * r.dim_stride, 0, r.scale[j]);
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
      for (; d + kLanes <= dim; d += kLanes)
        V::store(dst + d, load_kv16<V, T>(r.values[j], d, r.scale[j]));
      for (; d < dim; ++d) dst[d] = load_kv1<T>(r.values[j], d, r.scale[j]);
    }
  }
}

// Copies the V rows of the 16 keys of the tile starting at `tile` into buf
// [16][dim] as f32 (zero rows for keys outside [j0, j1): their weights are 0).
template <class V, KvCacheDtype T>
STRATA_INLINE void copy_value_tile(const uint8_t* cache, const PagedAttentionBatch& b, int32_t seq,
                                   int64_t kv_head, int64_t tile, int64_t j0, int64_t j1,
                                   int64_t dim, float* buf) {
  KvTileRows rows;
  tile_rows<T>(cache, b, seq, kv_head, tile, j0, j1, false, nullptr, &rows);
  convert_tile<V, T>(rows, nullptr, dim, buf);
}

// Copies the K of the 16 keys of the tile into kt [dim][16] as f32 (key_tile).
template <class V, KvCacheDtype T>
STRATA_INLINE void copy_key_tile(const uint8_t* cache, const PagedAttentionBatch& b, int32_t seq,
                                 int64_t kv_head, int64_t tile, int64_t j0, int64_t j1, int64_t dim,
                                 float* kt) {
  KvTileRows rows;
  tile_rows<T>(cache, b, seq, kv_head, tile, j0, j1, true, nullptr, &rows);
  key_tile<V, T>(rows, nullptr, tile, j0, j1, dim, kt);
}

// scores[j][lane] = Σ_d qt[d][lane] · kt[d][j] for the tile's 16 keys.
// kDim > 0: the head size as a constant (one base pointer, fixed offsets).
template <class V, int kDim>
STRATA_INLINE void tile_scores(const float* kt, const float* qt, int64_t head_dim, V* scores) {
  const int64_t dim = kDim > 0 ? kDim : head_dim;
#pragma GCC unroll 16
  for (int j = 0; j < kLanes; ++j) scores[j] = V::zero();
  for (int64_t d = 0; d < dim; ++d) {
    const V q = V::load(qt + d * kLanes);
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j)
      scores[j] = V::fmadd(q, V::set1(kt[d * kLanes + j]), scores[j]);
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
  float* kv = out_l + kLanes;              // a tile's K [dim][16 keys], then its V [16 keys][dim]

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
    const int64_t first =
        b.sliding_window > 0 && pos - b.sliding_window + 1 > 0 ? pos - b.sliding_window + 1 : 0;
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
    copy_key_tile<V, T>(b.k_cache, b, s, item.kv_head, tile, j0, j1, dim, kv);
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
    copy_value_tile<V, T>(b.v_cache, b, s, item.kv_head, tile, j0, j1, dim, kv);
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

// Where the decode kernel reads element d of a tile's 16 keys from: the
// pool tile itself (PoolKeys: 16 consecutive elements, times the keys' fp8
// scales) or a kt[d][16] f32 copy in scratch (ScratchKeys: tiles that are
// partly outside the visible range, or pools whose tiles are not 16 wide).
// Both give key_tile's values.
template <class V, KvCacheDtype T>
struct PoolKeys {
  const uint8_t* lanes;
  int64_t dim_stride;
  V scale;
  STRATA_INLINE V at(int64_t d) const {
    return load_kv16_lanes<V, T>(lanes + d * dim_stride, scale);
  }
};
template <class V>
struct ScratchKeys {
  const float* kt;
  STRATA_INLINE V at(int64_t d) const { return V::load(kt + d * kLanes); }
};

// scores[g][r] lane j = Σ_d qs[r][d] · k_g[d][j] (fma over d in order) for
// kTiles tiles at once, so that kTiles * kRows chains are in flight.
template <class V, int kDim, int kRows, int kTiles, class Keys>
STRATA_INLINE void decode_tile_scores(const Keys (&keys)[kTiles], const float* qs, int64_t head_dim,
                                      V (&scores)[kTiles][kRows]) {
  const int64_t dim = kDim > 0 ? kDim : head_dim;
#pragma GCC unroll 4
  for (int g = 0; g < kTiles; ++g) {
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) scores[g][r] = V::zero();
  }
  for (int64_t d = 0; d < dim; ++d) {
#pragma GCC unroll 4
    for (int g = 0; g < kTiles; ++g) {
      const V kd = keys[g].at(d);
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        scores[g][r] = V::fmadd(V::set1(qs[r * dim + d]), kd, scores[g][r]);
      }
    }
  }
}

// The decode kernel's running state for one item: per row the running max m
// and denominator l (every lane the same), and the unnormalized output.
template <class V, int kRows>
struct DecodeRows {
  V m[kRows], l[kRows];
  float* o_rows;  // [kRows][dim]
  float* p;       // [kRows][16] weights of the current tile
};

// The online softmax step and P·V for the tile at `tile` with its scores:
// the operations of paged_attention_item_impl in its order.
template <class V, KvCacheDtype T, int kDim, int kRows>
STRATA_INLINE void decode_tile_update(const PagedAttentionBatch& b, int32_t seq, int64_t kv_head,
                                      int64_t tile, int64_t first, int64_t pos, int64_t num_rows,
                                      const uint8_t* zero_bytes, const V (&scores)[kRows],
                                      DecodeRows<V, kRows>* st) {
  const int64_t dim = kDim > 0 ? kDim : b.head_dim;
  const int64_t chunks = dim / kLanes;
  KvTileRows v;
  tile_rows<T>(b.v_cache, b, seq, kv_head, tile, first, pos + 1, false, zero_bytes, &v);
  V correction[kRows];
  for (int r = 0; r < num_rows; ++r) {
    const V sc = V::visible_keys(scores[r], static_cast<float>(tile), static_cast<float>(first),
                                 static_cast<float>(pos));
    const V m_new = V::max(st->m[r], V::set1(V::reduce_max(sc)));
    correction[r] = V::exp_nonpositive(V::sub(st->m[r], m_new));
    const V pv = V::exp_nonpositive(V::sub(sc, m_new));
    float* pr = st->p + r * kLanes;
    V::store(pr, pv);
    float tile_sum = 0.0f;
    for (int j = 0; j < kLanes; ++j) tile_sum += pr[j];  // left to right, as the lane kernel
    st->l[r] = V::fmadd(st->l[r], correction[r], V::set1(tile_sum));
    st->m[r] = m_new;
  }
  // P·V one 16-wide slice of head_dim at a time: the tile's 16 V slices stay
  // in registers for every row (o·c, then fma over the keys in order).
  for (int64_t c = 0; c < chunks; ++c) {
    V vc[kLanes];  // converted once, used by every row of the item
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j) vc[j] = load_kv16<V, T>(v.values[j], c * kLanes, v.scale[j]);
    for (int r = 0; r < num_rows; ++r) {
      const float* pr = st->p + r * kLanes;
      float* o = st->o_rows + r * dim + c * kLanes;
      V oc = V::mul(V::load(o), correction[r]);
#pragma GCC unroll 16
      for (int j = 0; j < kLanes; ++j) oc = V::fmadd(V::set1(pr[j]), vc[j], oc);
      V::store(o, oc);
    }
  }
}

// Asks for the K and V of the tile at `tile` (each 16 contiguous head rows
// of a pool tile) ahead of their use; nothing for pools of other tile widths.
template <KvCacheDtype T>
STRATA_INLINE void prefetch_tile(const PagedAttentionBatch& b, int32_t seq, int64_t kv_head,
                                 int64_t tile, int64_t pos) {
  const PoolTiles<T> g(b);
  if (tile > pos || g.tokens != kLanes) return;
  const int64_t offset = pool_tile_offset<T>(b, g, seq, kv_head, tile);
  for (int64_t off = offset; off < offset + g.head_bytes; off += 64) {
    __builtin_prefetch(b.k_cache + off);
    __builtin_prefetch(b.v_cache + off);
  }
}

// Decode: a sequence with one new token. Its rows (the query heads of one kv
// head) are too few to fill 16 lanes, so here the lanes run along keys for
// Q·Kᵀ (element d of 16 keys, as the pool tile holds them) and along
// head_dim for P·V. Whole tiles go kTiles at a time through Q·Kᵀ (enough
// independent chains for few rows), then one by one through the softmax
// step and P·V. Every score, weight and output element goes through exactly
// the operations of paged_attention_item_impl in the same order (fma over d
// in order, the same exp, tile sums left to right, o·c then fma over keys in
// order), so a token decoded here gives the same bits as the same token in a
// prefill chunk: reloaded or recomputed KV equals decoded KV.
template <class V, KvCacheDtype T, int kDim, int kRows>
void paged_attention_decode_rows(const PagedAttentionBatch& b, const PagedAttentionItem& item,
                                 float* scratch) {
  constexpr int kTiles = kRows >= 8 ? 1 : 8 / kRows;
  const int64_t group = b.num_heads / b.num_kv_heads;
  const int64_t dim = kDim > 0 ? kDim : b.head_dim;
  const int32_t s = item.seq;
  const int64_t token = b.query_start_loc[s];
  const int64_t pos = b.seq_lens[s] - 1;
  const int64_t first =
      b.sliding_window > 0 && pos - b.sliding_window + 1 > 0 ? pos - b.sliding_window + 1 : 0;
  const int64_t num_rows = item.row_end - item.row_begin;
  DecodeRows<V, kRows> st;
  float* qs = scratch;                  // [kRows][dim]: scale · q (zero rows past num_rows)
  st.o_rows = qs + kRows * dim;         // [kRows][dim]
  float* kt = st.o_rows + kRows * dim;  // [dim][16]: a tile's K (ScratchKeys)
  float* zero_row = kt + dim * kLanes;  // [dim] zeros: keys outside the range
  st.p = zero_row + dim;                // [kRows][16]
  const float* q_rows = b.q + (token * b.num_heads + item.kv_head * group + item.row_begin) * dim;
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t d = 0; d < dim; ++d) {
      qs[r * dim + d] = r < num_rows ? q_rows[r * dim + d] * b.scale : 0.0f;
      st.o_rows[r * dim + d] = 0.0f;
    }
  }
  for (int64_t d = 0; d < dim; ++d) zero_row[d] = 0.0f;
  for (int r = 0; r < kRows; ++r) {
    st.m[r] = V::set1(kNoScoreYet);  // every lane the row's running max
    st.l[r] = V::zero();
  }
  const uint8_t* zero_bytes = reinterpret_cast<const uint8_t*>(zero_row);
  const bool pool_tiles = tensor::kv_tile_tokens(b.block_size) == kLanes;
  const int64_t first_tile = first / kLanes * kLanes;
  prefetch_tile<T>(b, s, item.kv_head, first_tile, pos);
  for (int64_t tile = first_tile; tile <= pos;) {
    const int64_t span = kTiles * kLanes;
    // Long contexts are read from memory: ask for the tiles after these.
    for (int64_t ahead = tile + span; ahead < tile + 2 * span; ahead += kLanes) {
      prefetch_tile<T>(b, s, item.kv_head, ahead, pos);
    }
    if (pool_tiles && tile >= first && tile + span <= pos + 1) {  // kTiles whole pool tiles
      PoolKeys<V, T> keys[kTiles];
      for (int g = 0; g < kTiles; ++g) {
        KvTileRows k;
        tile_rows<T>(b.k_cache, b, s, item.kv_head, tile + g * kLanes, first, pos + 1, true,
                     zero_bytes, &k);
        keys[g] = {k.lanes, k.dim_stride, V::load(k.scale)};
      }
      V scores[kTiles][kRows];
      decode_tile_scores<V, kDim, kRows, kTiles>(keys, qs, dim, scores);
      for (int g = 0; g < kTiles; ++g) {
        decode_tile_update<V, T, kDim, kRows>(b, s, item.kv_head, tile + g * kLanes, first, pos,
                                              num_rows, zero_bytes, scores[g], &st);
      }
      tile += span;
    } else {  // one tile through scratch
      KvTileRows k;
      tile_rows<T>(b.k_cache, b, s, item.kv_head, tile, first, pos + 1, true, zero_bytes, &k);
      key_tile<V, T>(k, zero_bytes, tile, first, pos + 1, dim, kt);
      const ScratchKeys<V> keys[1] = {{kt}};
      V scores[1][kRows];
      decode_tile_scores<V, kDim, kRows, 1>(keys, qs, dim, scores);
      decode_tile_update<V, T, kDim, kRows>(b, s, item.kv_head, tile, first, pos, num_rows,
                                            zero_bytes, scores[0], &st);
      tile += kLanes;
    }
  }
  float l_lanes[kLanes];
  for (int64_t r = 0; r < num_rows; ++r) {
    V::store(l_lanes, st.l[r]);
    float* out = b.out + (token * b.num_heads + item.kv_head * group + item.row_begin + r) * dim;
    const float inv = 1.0f / l_lanes[0];
    for (int64_t d = 0; d < dim; ++d) out[d] = st.o_rows[r * dim + d] * inv;
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
