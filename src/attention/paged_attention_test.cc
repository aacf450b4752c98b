#include "attention/paged_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "base/cpu_features.h"
#include "ops/cpu/kernels.h"

namespace strata::attention {
namespace {

using tensor::KvCacheDtype;

struct Case {
  std::vector<int> context_lens;  // per sequence, after this step
  std::vector<int> num_new;       // per sequence
  int num_heads, num_kv_heads, head_dim, block_size;
  int sliding_window = 0;
  KvCacheDtype kv_dtype = KvCacheDtype::kF32;
};

// Contiguous per-sequence K/V, scattered into shuffled blocks (encoded in
// the case's dtype); the expected output is computed from the contiguous
// copy of the values the cache holds (decoded), independently of block tables.
struct Built {
  std::vector<float> q, expected;
  std::vector<uint8_t> k_cache, v_cache;
  std::vector<std::vector<float>> k_seq, v_seq;
  AttentionMetadata md;
};

// The values a row reads back as once stored in `layout`.
std::vector<float> stored_values(const std::vector<float>& x, const tensor::KvRowLayout& layout) {
  const int64_t row = layout.num_kv_heads * layout.head_dim;
  std::vector<float> out(x.size());
  std::vector<uint8_t> bytes(layout.row_bytes());
  for (size_t r = 0; r * row < x.size(); ++r) {
    tensor::encode_kv_row(&x[r * row], layout, 0.0f, bytes.data());
    for (int64_t h = 0; h < layout.num_kv_heads; ++h) {
      tensor::decode_kv_head(bytes.data(), layout, h, &out[r * row + h * layout.head_dim]);
    }
  }
  return out;
}

Built build(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  Built b;
  const int row = c.num_kv_heads * c.head_dim;
  const tensor::KvRowLayout layout{c.kv_dtype, c.num_kv_heads, c.head_dim};
  const tensor::KvTileLayout tiles{layout, tensor::kv_tile_tokens(c.block_size)};
  const int64_t row_bytes = layout.row_bytes();
  std::vector<uint8_t> row_buf(row_bytes);
  const int num_seqs = static_cast<int>(c.context_lens.size());
  int max_blocks = 0, total_blocks = 0;
  for (int len : c.context_lens) {
    int nb = (len + c.block_size - 1) / c.block_size;
    max_blocks = std::max(max_blocks, nb);
    total_blocks += nb;
  }
  total_blocks += 3;  // unused blocks in between
  std::vector<int32_t> free_ids(total_blocks);
  std::iota(free_ids.begin(), free_ids.end(), 0);
  std::shuffle(free_ids.begin(), free_ids.end(), rng);
  // Unused slots poisoned: all-ones bytes read as NaN in f32, bf16, f16 and
  // e5m2, and as NaN scales in e4m3.
  b.k_cache.assign(int64_t{total_blocks} * c.block_size * row_bytes, 0xff);
  b.v_cache = b.k_cache;
  b.md.max_blocks_per_seq = max_blocks;
  b.md.block_tables.assign(num_seqs * max_blocks, -1);
  b.md.query_start_loc.push_back(0);
  int next_free = 0;
  for (int s = 0; s < num_seqs; ++s) {
    const int len = c.context_lens[s];
    for (int blk = 0; blk * c.block_size < len; ++blk) {
      b.md.block_tables[s * max_blocks + blk] = free_ids[next_free++];
    }
    std::vector<float> ks(len * row), vs(len * row);
    for (float& x : ks) x = dist(rng);
    for (float& x : vs) x = dist(rng);
    for (int pos = 0; pos < len; ++pos) {
      int64_t slot =
          int64_t{b.md.block_tables[s * max_blocks + pos / c.block_size]} * c.block_size +
          pos % c.block_size;
      tensor::encode_kv_row(&ks[pos * row], layout, 0.0f, row_buf.data());
      tensor::store_kv_row(row_buf.data(), tiles, tensor::KvSide::kKey, slot, b.k_cache.data());
      tensor::encode_kv_row(&vs[pos * row], layout, 0.0f, row_buf.data());
      tensor::store_kv_row(row_buf.data(), tiles, tensor::KvSide::kValue, slot, b.v_cache.data());
      if (pos >= len - c.num_new[s]) b.md.slot_mapping.push_back(slot);
    }
    b.k_seq.push_back(stored_values(ks, layout));
    b.v_seq.push_back(stored_values(vs, layout));
    b.md.seq_lens.push_back(len);
    b.md.query_start_loc.push_back(b.md.query_start_loc.back() + c.num_new[s]);
  }
  const int64_t num_tokens = b.md.query_start_loc.back();
  b.q.resize(num_tokens * c.num_heads * c.head_dim);
  for (float& x : b.q) x = dist(rng);
  // Expected, from contiguous K/V.
  b.expected.assign(b.q.size(), 0.0f);
  const int group = c.num_heads / c.num_kv_heads;
  const double scale = 1.0 / std::sqrt(double(c.head_dim));
  for (int s = 0; s < num_seqs; ++s) {
    for (int i = 0; i < c.num_new[s]; ++i) {
      const int t = b.md.query_start_loc[s] + i;
      const int pos = c.context_lens[s] - c.num_new[s] + i;
      const int first = c.sliding_window > 0 ? std::max(0, pos - c.sliding_window + 1) : 0;
      for (int h = 0; h < c.num_heads; ++h) {
        const float* qh = &b.q[(t * c.num_heads + h) * c.head_dim];
        std::vector<double> w;
        for (int j = first; j <= pos; ++j) {
          double d = 0;
          for (int e = 0; e < c.head_dim; ++e) {
            d += qh[e] * b.k_seq[s][j * row + (h / group) * c.head_dim + e];
          }
          w.push_back(d * scale);
        }
        double mx = *std::max_element(w.begin(), w.end()), sum = 0;
        for (double& x : w) sum += x = std::exp(x - mx);
        for (int e = 0; e < c.head_dim; ++e) {
          double acc = 0;
          for (int j = first; j <= pos; ++j) {
            acc += w[j - first] * b.v_seq[s][j * row + (h / group) * c.head_dim + e];
          }
          b.expected[(t * c.num_heads + h) * c.head_dim + e] = acc / sum;
        }
      }
    }
  }
  return b;
}

// The kernel tables this CPU can run: generic always, AVX2 and the AVX-512
// ones when present.
std::vector<const ops::cpu::KernelTable*> tables() {
  std::vector<const ops::cpu::KernelTable*> out = {&ops::cpu::generic_kernels()};
  if (ops::cpu::avx2_supported()) out.push_back(&ops::cpu::avx2_kernels());
  if (ops::cpu::avx512_supported()) out.push_back(ops::cpu::avx512_kernels());
  if (ops::cpu::avx512_vnni_supported()) out.push_back(ops::cpu::avx512_vnni_kernels());
  return out;
}

ops::PagedAttentionBatch batch_of(const Built& b, const PagedAttentionParams& p, const float* q,
                                  float* out) {
  return paged_attention_batch(q, b.k_cache.data(), b.v_cache.data(), b.md, p, out);
}

PagedAttentionParams params_of(const Case& c) {
  return {c.num_heads,
          c.num_kv_heads,
          c.head_dim,
          c.block_size,
          static_cast<float>(1.0 / std::sqrt(double(c.head_dim))),
          c.sliding_window,
          c.kv_dtype};
}

// Every kernel table, with q and out shifted off their natural alignment by
// `misalign` floats, against the f64 expectation.
void run_tables(const Case& c, uint32_t seed, int misalign, float tolerance) {
  Built b = build(c, seed);
  const PagedAttentionParams p = params_of(c);
  std::vector<float> q(b.q.size() + misalign), out(b.q.size() + misalign, NAN);
  std::copy(b.q.begin(), b.q.end(), q.begin() + misalign);
  ThreadPool pool(2);
  for (const ops::cpu::KernelTable* t : tables()) {
    std::fill(out.begin(), out.end(), NAN);
    ops::cpu::run_paged_attention(*t, batch_of(b, p, q.data() + misalign, out.data() + misalign),
                                  pool);
    for (size_t i = 0; i < b.expected.size(); ++i) {
      ASSERT_NEAR(out[misalign + i], b.expected[i], tolerance) << t->name << ", element " << i;
    }
  }
}

void run_case(const Case& c, uint32_t seed) {
  Built b = build(c, seed);
  const PagedAttentionParams p = params_of(c);
  std::vector<float> out(b.q.size()), ref(b.q.size());
  ThreadPool pool(2);
  paged_attention(b.q.data(), b.k_cache.data(), b.v_cache.data(), b.md, p, out.data(), pool);
  paged_attention_reference(b.q.data(), b.k_cache.data(), b.v_cache.data(), b.md, p, ref.data());
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_NEAR(ref[i], b.expected[i], 1e-5) << "reference, element " << i;
    ASSERT_NEAR(out[i], b.expected[i], 2e-5) << "kernel, element " << i;
  }
}

constexpr KvCacheDtype kAllDtypes[] = {KvCacheDtype::kF32, KvCacheDtype::kBF16, KvCacheDtype::kF16,
                                       KvCacheDtype::kFp8E4M3, KvCacheDtype::kFp8E5M2};

Case with_dtype(Case c, KvCacheDtype dtype) {
  c.kv_dtype = dtype;
  return c;
}

TEST(PagedAttentionTest, DecodeBatchOfMixedLengths) {
  run_case({{1, 5, 16, 17, 40}, {1, 1, 1, 1, 1}, 4, 2, 16, 16}, 1);
}

TEST(PagedAttentionTest, MixedPrefillChunksAndDecodes) {
  run_case({{7, 33, 20}, {7, 10, 1}, 6, 3, 8, 4}, 2);
}

TEST(PagedAttentionTest, MultiHeadAndOddHeadDim) { run_case({{9, 3}, {9, 3}, 3, 3, 13, 5}, 3); }

TEST(PagedAttentionTest, SlidingWindow) { run_case({{30, 12}, {30, 1}, 4, 1, 16, 4, 8}, 4); }

// The compact dtypes through both kernels (decode and lane) and the
// reference: the kernels must compute with exactly the stored values.
TEST(PagedAttentionTest, CompactKvDtypesReadTheStoredValues) {
  for (KvCacheDtype d : kAllDtypes) {
    SCOPED_TRACE(tensor::kv_cache_dtype_name(d));
    run_case(with_dtype({{1, 5, 16, 17, 40}, {1, 1, 1, 1, 1}, 4, 2, 16, 16}, d), 1);
    run_case(with_dtype({{7, 33, 20}, {7, 10, 1}, 6, 3, 8, 4}, d), 2);
    run_case(with_dtype({{9, 3}, {9, 3}, 3, 3, 13, 5}, d), 3);
    run_tables(with_dtype({{300, 37, 1, 129}, {44, 37, 1, 1}, 14, 2, 64, 16}, d), 11, 0, 2e-5f);
    run_tables(with_dtype({{300, 37, 1, 129}, {44, 37, 1, 1}, 14, 2, 64, 16}, d), 12, 3, 2e-5f);
    run_tables(with_dtype({{70, 18}, {33, 2}, 8, 2, 128, 32}, d), 13, 1, 2e-5f);
    run_tables(with_dtype({{23, 51}, {23, 7}, 6, 3, 13, 5}, d), 14, 2, 2e-5f);
    run_tables(with_dtype({{90, 40}, {40, 3}, 4, 1, 16, 16, 21}, d), 15, 0, 2e-5f);
    run_tables(with_dtype({{90}, {90}, 2, 2, 40, 8, 5}, d), 16, 1, 2e-5f);  // 16-wide + tail
  }
}

TEST(PagedAttentionTest, EveryKernelTableOverShapesAndMisalignments) {
  // Qwen2.5-0.5B's heads (14 query heads on 2 kv heads, head_dim 64): rows of
  // a token straddle the 16-lane items.
  run_tables({{300, 37, 1, 129}, {44, 37, 1, 1}, 14, 2, 64, 16}, 11, 0, 2e-5f);
  run_tables({{300, 37, 1, 129}, {44, 37, 1, 1}, 14, 2, 64, 16}, 12, 3, 2e-5f);
  // head_dim 128 and 13 (odd: the 8-wide value loop's tail), blocks of 5 and 32.
  run_tables({{70, 18}, {33, 2}, 8, 2, 128, 32}, 13, 1, 2e-5f);
  run_tables({{23, 51}, {23, 7}, 6, 3, 13, 5}, 14, 2, 2e-5f);
  // Sliding windows that start inside a tile and in a lane's own later tile.
  run_tables({{90, 40}, {40, 3}, 4, 1, 16, 16, 21}, 15, 0, 2e-5f);
  run_tables({{90}, {90}, 2, 2, 32, 8, 5}, 16, 1, 2e-5f);
}

void check_rows_alone_equal_batched(const Case& together) {
  SCOPED_TRACE(tensor::kv_cache_dtype_name(together.kv_dtype));
  Built all = build(together, 21);
  const PagedAttentionParams p = params_of(together);
  ThreadPool pool(2), serial(1);
  const int64_t row = 14 * 64;
  for (const ops::cpu::KernelTable* t : tables()) {
    std::vector<float> batched(all.q.size());
    ops::cpu::run_paged_attention(*t, batch_of(all, p, all.q.data(), batched.data()), pool);
    Built last5 = all;
    last5.md.query_start_loc = {0, 5};
    last5.md.seq_lens = {80};
    last5.md.block_tables.assign(all.md.block_tables.begin() + all.md.max_blocks_per_seq,
                                 all.md.block_tables.begin() + 2 * all.md.max_blocks_per_seq);
    const int64_t first = 45 + 12;  // batch index of the sequence's 13th new token
    std::vector<float> q(all.q.begin() + first * row, all.q.begin() + (first + 5) * row);
    std::vector<float> alone(q.size());
    ops::cpu::run_paged_attention(*t, batch_of(last5, p, q.data(), alone.data()), serial);
    EXPECT_EQ(std::memcmp(alone.data(), batched.data() + first * row, alone.size() * sizeof(float)),
              0)
        << t->name;
  }
}

// A row's result must not depend on what else is in the batch: the last 5
// tokens of a sequence, computed as part of a 17-token prefill chunk beside
// other sequences (so their rows share 16-lane items with other tokens) and
// alone as a 5-token chunk on one thread, give the same bits.
// With a sliding window the batched items also visit tiles that are wholly
// outside these rows' windows, which must change nothing.
TEST(PagedAttentionTest, RowResultsDoNotDependOnTheBatch) {
  for (int window : {0, 21}) {
    SCOPED_TRACE("sliding_window " + std::to_string(window));
    for (KvCacheDtype d : kAllDtypes) {
      check_rows_alone_equal_batched({{45, 80, 3}, {45, 17, 1}, 14, 2, 64, 16, window, d});
    }
  }
}

// The AVX2 table runs the shared kernel with the same operations as the
// AVX-512 one (16 lanes as two __m256, FMA): the same bits, every dtype, decode
// and prefill rows, sliding window or not; so does the AVX-512 table built
// without BF16 (avx512_vnni). Checked where all can run.
TEST(PagedAttentionTest, Avx2KernelComputesTheAvx512KernelsBits) {
  if (!ops::cpu::avx2_supported() || !ops::cpu::avx512_supported() ||
      !ops::cpu::avx512_vnni_supported()) {
    GTEST_SKIP() << "needs AVX2, AVX-512 BF16 and VNNI";
  }
  ThreadPool pool(2);
  for (KvCacheDtype d : kAllDtypes) {
    SCOPED_TRACE(tensor::kv_cache_dtype_name(d));
    for (const Case& c :
         {Case{{300, 37, 1, 129}, {44, 37, 1, 1}, 14, 2, 64, 16, 0, d},
          Case{{70, 18}, {33, 2}, 8, 2, 128, 32, 0, d},
          Case{{90, 40}, {40, 3}, 4, 1, 16, 16, 21, d}, Case{{95}, {95}, 4, 2, 32, 16, 0, d}}) {
      Built b = build(c, 41);
      const PagedAttentionParams p = params_of(c);
      std::vector<float> avx2(b.q.size()), avx512(b.q.size()), vnni(b.q.size());
      ops::cpu::run_paged_attention(ops::cpu::avx2_kernels(),
                                    batch_of(b, p, b.q.data(), avx2.data()), pool);
      ops::cpu::run_paged_attention(*ops::cpu::avx512_kernels(),
                                    batch_of(b, p, b.q.data(), avx512.data()), pool);
      ops::cpu::run_paged_attention(*ops::cpu::avx512_vnni_kernels(),
                                    batch_of(b, p, b.q.data(), vnni.data()), pool);
      EXPECT_EQ(std::memcmp(avx2.data(), avx512.data(), avx2.size() * sizeof(float)), 0)
          << "head_dim " << c.head_dim;
      EXPECT_EQ(std::memcmp(vnni.data(), avx512.data(), vnni.size() * sizeof(float)), 0)
          << "head_dim " << c.head_dim;
    }
  }
}

// The invariant "reused KV == recomputed KV" needs a decoded token (one new
// token: the decode kernel) to give the same bits as the same token computed
// in a prefill chunk (the lane kernel), for every head grouping it serves.
void check_decode_equals_prefill(int heads, int kv_heads, int dim, int window,
                                 KvCacheDtype dtype = KvCacheDtype::kF32, int block_size = 16) {
  SCOPED_TRACE(tensor::kv_cache_dtype_name(dtype));
  SCOPED_TRACE("block_size " + std::to_string(block_size));
  const int ctx = 93;
  const Case chunk{{ctx}, {6}, heads, kv_heads, dim, block_size, window, dtype};
  Built b = build(chunk, 31);
  const PagedAttentionParams p = params_of(chunk);
  ThreadPool pool(2);
  const int64_t row = int64_t{heads} * dim;
  for (const ops::cpu::KernelTable* t : tables()) {
    std::vector<float> prefill(b.q.size());
    ops::cpu::run_paged_attention(*t, batch_of(b, p, b.q.data(), prefill.data()), pool);
    Built one = b;
    one.md.query_start_loc = {0, 1};
    std::vector<float> q(b.q.end() - row, b.q.end()), decoded(q.size());
    ops::cpu::run_paged_attention(*t, batch_of(one, p, q.data(), decoded.data()), pool);
    EXPECT_EQ(std::memcmp(decoded.data(), prefill.data() + 5 * row, decoded.size() * sizeof(float)),
              0)
        << t->name << " heads " << heads << "/" << kv_heads << " dim " << dim;
    for (size_t i = 0; i < decoded.size(); ++i) {
      ASSERT_NEAR(decoded[i], b.expected[5 * row + i], 2e-5) << t->name << ", element " << i;
    }
  }
}

TEST(PagedAttentionTest, DecodedTokenEqualsTheSameTokenInAPrefillChunk) {
  check_decode_equals_prefill(8, 4, 64, 0);    // 2 rows per item
  check_decode_equals_prefill(14, 2, 64, 0);   // 7
  check_decode_equals_prefill(12, 3, 128, 0);  // 4, head_dim 128
  check_decode_equals_prefill(12, 1, 32, 0);   // 12 rows (16-row variant), runtime head_dim
  check_decode_equals_prefill(20, 1, 16, 0);   // 20 rows: two items
  check_decode_equals_prefill(8, 2, 64, 37);   // sliding window
  // Blocks of 32 (two pool tiles a block) and of 5 and 8 (a pool tile a
  // block: keys read one by one).
  check_decode_equals_prefill(14, 2, 64, 0, KvCacheDtype::kF32, 32);
  check_decode_equals_prefill(14, 2, 64, 0, KvCacheDtype::kBF16, 5);
  check_decode_equals_prefill(8, 2, 64, 37, KvCacheDtype::kFp8E4M3, 8);
  for (KvCacheDtype d : kAllDtypes) {
    check_decode_equals_prefill(14, 2, 64, 0, d);
    check_decode_equals_prefill(12, 1, 32, 0, d);
    check_decode_equals_prefill(8, 2, 64, 37, d);
  }
}

TEST(PagedAttentionTest, ReshapeAndCacheWritesSlots) {
  AttentionMetadata md;
  md.slot_mapping = {5, 0};
  std::vector<float> k = {1, 2, 3, 4}, v = {5, 6, 7, 9};
  // Tiles of 4 slots (block size 4), 1 head of 2: K [d][4], V [4][d].
  const tensor::KvTileLayout f32{{KvCacheDtype::kF32, 1, 2}, 4};
  std::vector<uint8_t> kc(8 * 8, 0), vc(8 * 8, 0);
  reshape_and_cache(k.data(), v.data(), md, f32, 0.0f, 0.0f, kc.data(), vc.data());
  auto at = [](const std::vector<uint8_t>& c, int i) {
    float f;
    std::memcpy(&f, c.data() + 4 * i, 4);
    return f;
  };
  EXPECT_EQ(at(kc, 8 + 1), 1);  // slot 5: tile 1 (floats 8..15), index 1
  EXPECT_EQ(at(kc, 8 + 4 + 1), 2);
  EXPECT_EQ(at(kc, 0), 3);
  EXPECT_EQ(at(kc, 4), 4);
  EXPECT_EQ(at(vc, 8 + 2), 5);
  EXPECT_EQ(at(vc, 8 + 3), 6);
  EXPECT_EQ(at(vc, 1), 9);
  // fp8: a tile's 4 x 2 value bytes, then its 4 scales; a fixed scale is
  // written as given.
  const tensor::KvTileLayout fp8{{KvCacheDtype::kFp8E4M3, 1, 2}, 4};
  std::vector<uint8_t> k8(8 * fp8.row.row_bytes(), 0), v8(k8.size(), 0);
  reshape_and_cache(k.data(), v.data(), md, fp8, 0.0f, 0.25f, k8.data(), v8.data());
  std::vector<uint8_t> bytes(fp8.row.row_bytes());
  float row[2];
  tensor::load_kv_row(k8.data(), fp8, tensor::KvSide::kKey, 5, bytes.data());
  tensor::decode_kv_head(bytes.data(), fp8.row, 0, row);
  EXPECT_EQ(row[0], 1);
  EXPECT_EQ(row[1], 2);
  float v_scale;
  std::memcpy(&v_scale, v8.data() + fp8.scale_offset(0, 0), 4);
  EXPECT_EQ(v_scale, 0.25f);
  tensor::load_kv_row(v8.data(), fp8, tensor::KvSide::kValue, 0, bytes.data());
  tensor::decode_kv_head(bytes.data(), fp8.row, 0, row);
  EXPECT_EQ(row[1], 9);  // 36 * 0.25, exact in e4m3
}

}  // namespace
}  // namespace strata::attention
