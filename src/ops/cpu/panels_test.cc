// The panel layout (cpu/panels.h) of Q8_0, Q4_0, IQ4_NL, Q5_0, IQ4_XS and
// the K-quants Q2_K ... Q6_K: packing round
// trip, zero rows past n, where values sit, and the prefill's bf16 tiles read
// from panels equal to those read from rows, bit for bit.
#include "ops/cpu/panels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "ops/cpu/kernels.h"
#include "ops/matmul_test_util.h"
#include "ops/ops.h"
#include "tensor/quant_blocks.h"

namespace strata::ops::cpu {
namespace {

using ops::testing::random_stored_weight;
using ops::testing::StoredWeight;
using tensor::DType;

constexpr DType kPanelTypes[] = {DType::kQ8_0,   DType::kQ4_0, DType::kIQ4_NL, DType::kQ5_0,
                                 DType::kIQ4_XS, DType::kQ2_K, DType::kQ3_K,   DType::kQ4_K,
                                 DType::kQ5_K,   DType::kQ6_K};

// A row length for type t: k for the 32-value types, the next multiple of
// 256 for the others (their super-blocks).
int64_t k_for(DType t, int64_t k) {
  return tensor::dtype_block_size(t) == 256 ? (k + 255) / 256 * 256 : k;
}

// Offset in a panel of code bytes [4, 8) of row 1 in the first block, and in
// its GGUF row.
int64_t first_codes_in_panel(DType t) {
  return (t == DType::kIQ4_XS ? kIq4XsPanelCodes : 0) + 64 + 4;
}
int64_t first_codes_in_row(DType t) {
  return (t == DType::kQ5_0 ? 6 : t == DType::kIQ4_XS ? 8 : 2) + 4;  // after d (and qh / scales)
}

TEST(Panels, PackedPartsUnpackToTheirRows) {
  // k = 96: one pair and a lone block; k = 128: two pairs. 37 + 4 rows end
  // mid-panel.
  for (DType t : kPanelTypes) {
    for (int64_t k : {k_for(t, 96), k_for(t, 128) * (k_for(t, 32) == 256 ? 2 : 1)}) {
      SCOPED_TRACE(std::string(tensor::dtype_name(t)) + " k=" + std::to_string(k));
      StoredWeight a = random_stored_weight(t, 37, k, 1);
      StoredWeight b = random_stored_weight(t, 4, k, 2);
      std::vector<uint8_t> panels(static_cast<size_t>(panel_count(41) * panel_bytes(t, k)));
      ASSERT_EQ(panel_count(41), 3);
      ASSERT_EQ(panel_bytes(t, k) % 64, 0);
      pack_panels(t, {{a.bytes.data(), 37}, {b.bytes.data(), 4}}, k, panels.data());
      const int64_t row_bytes = tensor::dtype_size_bytes(t, k);
      std::vector<uint8_t> rows(static_cast<size_t>(48 * row_bytes));
      unpack_panel_rows(t, panels.data(), k, 0, 48, rows.data());
      EXPECT_EQ(0, std::memcmp(rows.data(), a.bytes.data(), static_cast<size_t>(37 * row_bytes)));
      EXPECT_EQ(0, std::memcmp(rows.data() + 37 * row_bytes, b.bytes.data(),
                               static_cast<size_t>(4 * row_bytes)));
      for (int64_t i = 41 * row_bytes; i < 48 * row_bytes; ++i) ASSERT_EQ(rows[i], 0) << i;
      const uint8_t* row1 = a.bytes.data() + row_bytes;
      if (t == DType::kQ2_K || t == DType::kQ3_K) {
        // Row 1's dword of codes line i holds x positions 16 i + 4 j + c in
        // bits 2 j of byte c: line 0, plane 1 = values 4-7 (bits 0-1 of
        // qs[4..7]); line 2, plane 0 = positions 32.., x's slot 1, which
        // holds values 128.. (bits 0-1 of qs[32..]).
        const uint8_t* qs = row1 + (t == DType::kQ2_K ? offsetof(tensor::BlockQ2_K, qs)
                                                      : offsetof(tensor::BlockQ3_K, qs));
        for (int c = 0; c < 4; ++c) {
          EXPECT_EQ(panels[kKPanelCodes + 4 + c] >> 2 & 3, qs[4 + c] & 3) << c;
          EXPECT_EQ(panels[kKPanelCodes + 2 * 64 + 4 + c] & 3, qs[32 + c] & 3) << c;
        }
        continue;
      }
      if (t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K) {
        // Block 0 is a Q4_0 block of values 0-31: row 1's dword of its
        // second line holds values 4-7 (low nibbles of qs[4..7]; Q6_K:
        // ql) and 20-23 (low nibbles of qs[20..23]).
        const uint8_t* qs = row1 + (t == DType::kQ4_K   ? offsetof(tensor::BlockQ4_K, qs)
                                    : t == DType::kQ5_K ? offsetof(tensor::BlockQ5_K, qs)
                                                        : offsetof(tensor::BlockQ6_K, ql));
        for (int c = 0; c < 4; ++c) {
          EXPECT_EQ(panels[kK45PanelCodes + 64 + 4 + c], (qs[4 + c] & 0xF) | (qs[20 + c] & 0xF)
                                                                                 << 4)
              << c;
        }
        continue;
      }
      // A line holds 4 code bytes of 16 rows: row 1's bytes 4-7 of block 0
      // sit on the block's second line, at 4 (Q8_0: values 4-7 as w + 128;
      // nibbles: the qs bytes).
      for (int v = 0; v < 4; ++v) {
        const uint8_t stored = row1[first_codes_in_row(t) + v];
        EXPECT_EQ(panels[first_codes_in_panel(t) + v], t == DType::kQ8_0 ? stored ^ 0x80 : stored);
      }
    }
  }
}

// The fused weight of MatmulWeight::concat_rows holds the parts' rows.
TEST(Panels, ConcatRowsUnpacksToTheParts) {
  for (DType t : kPanelTypes) {
    if (!panels_in_use(t)) GTEST_SKIP() << "weights are not kept in panels on this CPU";
    SCOPED_TRACE(tensor::dtype_name(t));
    const int64_t k = k_for(t, 224);
    StoredWeight a = random_stored_weight(t, 19, k, 3);
    StoredWeight b = random_stored_weight(t, 30, k, 4);
    MatmulWeight fused = MatmulWeight::concat_rows({&a.view, &b.view});
    EXPECT_EQ(fused.view().data, nullptr);  // panels only
    ASSERT_NE(fused.panels(), nullptr);
    tensor::AlignedBuffer<uint8_t> rows = fused.unpack_rows();
    std::vector<uint8_t> want = a.bytes;
    want.insert(want.end(), b.bytes.begin(), b.bytes.end());
    ASSERT_EQ(rows.size(), static_cast<int64_t>(want.size()));
    EXPECT_EQ(0, std::memcmp(rows.data(), want.data(), want.size()));
  }
}

// The AVX-512 bf16 kernel (our own prefill, and the tiles oneDNN gets)
// dequantizes the same bf16 values from panels as from rows: the same bits,
// on tiles that start mid-weight and end mid-panel.
TEST(Panels, Bf16TilesFromPanelsEqualTilesFromRows) {
  const KernelTable& t = active_kernels();
  if (!is_avx512_table(t)) GTEST_SKIP() << "only the AVX-512 tables make bf16 tiles from panels";
  for (DType dtype : kPanelTypes) {
    if (!panels_in_use(dtype)) GTEST_SKIP() << "weights are not kept in panels on this CPU";
    for (auto [n, k_32] : {std::pair<int64_t, int64_t>{83, 96}, {150, 1088}, {40, 2080}}) {
      const int64_t k = k_for(dtype, k_32);
      SCOPED_TRACE(std::string(tensor::dtype_name(dtype)) + " " + std::to_string(n) + "x" +
                   std::to_string(k));
      StoredWeight s = random_stored_weight(dtype, n, k, 5);
      MatmulWeight w = MatmulWeight::prepare(s.view);
      ASSERT_NE(w.panels(), nullptr);
      const int64_t m = 20, k_pad = (k + 31) / 32 * 32;
      std::vector<float> x = ops::testing::random_floats(m * k, 6);
      std::vector<uint16_t> xb(static_cast<size_t>(m * k_pad));
      t.x_to_bf16(x.data(), m, k, k_pad, xb.data());
      std::vector<uint16_t> scratch(
          static_cast<size_t>(std::max(kBf16TileRows * kBf16TileK, kPrefillTileRows * k_pad)));
      MatmulArgs a;
      a.m = m;
      a.n = n;
      a.k = k;
      a.k_pad = k_pad;
      a.x_bf16 = xb.data();
      a.w_dtype = dtype;
      std::vector<float> from_rows(m * n, NAN), from_panels(m * n, NAN);
      a.w = s.view.data;
      a.y = from_rows.data();
      t.matmul_bf16_range(a, 16, n, scratch.data());
      a.w = nullptr;
      a.w_panels = w.panels();
      a.y = from_panels.data();
      t.matmul_bf16_range(a, 16, n, scratch.data());
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 16; j < n; ++j) {
          ASSERT_EQ(from_rows[i * n + j], from_panels[i * n + j]) << i << "," << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata::ops::cpu
