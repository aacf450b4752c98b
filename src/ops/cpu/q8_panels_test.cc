// The Q8_0 panel layout (cpu/q8_panels.h): packing round trip, zero rows past
// n, and the prefill's bf16 tiles read from panels equal to those read from
// rows, bit for bit.
#include "ops/cpu/q8_panels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "ops/cpu/kernels.h"
#include "ops/matmul_test_util.h"
#include "ops/ops.h"

namespace strata::ops::cpu {
namespace {

using ops::testing::random_floats;
using ops::testing::store_weight;
using ops::testing::StoredWeight;
using tensor::BlockQ8_0;
using tensor::DType;

TEST(Q8Panels, PackedPartsUnpackToTheirRows) {
  // k = 96: one pair and a lone block; k = 128: two pairs. 37 + 4 rows end
  // mid-panel.
  for (int64_t k : {96, 128}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    StoredWeight a = store_weight(random_floats(37 * k, 1, -3, 3), 37, k, DType::kQ8_0);
    StoredWeight b = store_weight(random_floats(4 * k, 2, -3, 3), 4, k, DType::kQ8_0);
    std::vector<uint8_t> panels(static_cast<size_t>(q8_panel_count(41) * q8_panel_bytes(k)));
    ASSERT_EQ(q8_panel_count(41), 3);
    ASSERT_EQ(q8_panel_bytes(k) % 64, 0);
    pack_q8_panels({{reinterpret_cast<const BlockQ8_0*>(a.bytes.data()), 37},
                    {reinterpret_cast<const BlockQ8_0*>(b.bytes.data()), 4}},
                   k, panels.data());
    const int64_t row_bytes = k / 32 * static_cast<int64_t>(sizeof(BlockQ8_0));
    std::vector<uint8_t> rows(static_cast<size_t>(48 * row_bytes));
    unpack_q8_panel_rows(panels.data(), k, 0, 48, reinterpret_cast<BlockQ8_0*>(rows.data()));
    EXPECT_EQ(0, std::memcmp(rows.data(), a.bytes.data(), static_cast<size_t>(37 * row_bytes)));
    EXPECT_EQ(0, std::memcmp(rows.data() + 37 * row_bytes, b.bytes.data(),
                             static_cast<size_t>(4 * row_bytes)));
    for (int64_t i = 41 * row_bytes; i < 48 * row_bytes; ++i) ASSERT_EQ(rows[i], 0) << i;
    // A line holds 4 values of 16 rows: row 1's values 4-7 of block 0 sit at 64 + 4.
    const auto* a0 = reinterpret_cast<const BlockQ8_0*>(a.bytes.data());
    for (int v = 0; v < 4; ++v) {
      EXPECT_EQ(panels[64 + 4 + v], static_cast<uint8_t>(a0[k / 32].values[4 + v] + 128));
    }
  }
}

// The fused weight of MatmulWeight::concat_rows holds the parts' rows.
TEST(Q8Panels, ConcatRowsUnpacksToTheParts) {
  if (!q8_panels_in_use()) GTEST_SKIP() << "Q8_0 is not kept in panels on this CPU";
  const int64_t k = 224;
  StoredWeight a = store_weight(random_floats(19 * k, 3), 19, k, DType::kQ8_0);
  StoredWeight b = store_weight(random_floats(30 * k, 4), 30, k, DType::kQ8_0);
  MatmulWeight fused = MatmulWeight::concat_rows({&a.view, &b.view});
  EXPECT_EQ(fused.view().data, nullptr);  // panels only
  ASSERT_NE(fused.q8_panels(), nullptr);
  tensor::AlignedBuffer<uint8_t> rows = fused.unpack_rows();
  std::vector<uint8_t> want = a.bytes;
  want.insert(want.end(), b.bytes.begin(), b.bytes.end());
  ASSERT_EQ(rows.size(), static_cast<int64_t>(want.size()));
  EXPECT_EQ(0, std::memcmp(rows.data(), want.data(), want.size()));
}

// The AVX-512 bf16 kernel (our own prefill, and the Q8_0 tiles oneDNN gets)
// dequantizes the same bf16 values from panels as from rows: the same bits,
// on tiles that start mid-weight and end mid-panel.
TEST(Q8Panels, Bf16TilesFromPanelsEqualTilesFromRows) {
  if (!q8_panels_in_use()) GTEST_SKIP() << "Q8_0 is not kept in panels on this CPU";
  const KernelTable& t = active_kernels();
  for (auto [n, k] : {std::pair<int64_t, int64_t>{83, 96}, {150, 1088}, {40, 2080}}) {
    SCOPED_TRACE(std::to_string(n) + "x" + std::to_string(k));
    StoredWeight s = store_weight(random_floats(n * k, 5, -2, 2), n, k, DType::kQ8_0);
    MatmulWeight w = MatmulWeight::prepare(s.view);
    ASSERT_NE(w.q8_panels(), nullptr);
    const int64_t m = 20, k_pad = (k + 31) / 32 * 32;
    std::vector<float> x = random_floats(m * k, 6);
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
    a.w_dtype = DType::kQ8_0;
    std::vector<float> from_rows(m * n, NAN), from_panels(m * n, NAN);
    a.w = s.view.data;
    a.y = from_rows.data();
    t.matmul_bf16_range(a, 16, n, scratch.data());
    a.w = nullptr;
    a.w_panels = w.q8_panels();
    a.y = from_panels.data();
    t.matmul_bf16_range(a, 16, n, scratch.data());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 16; j < n; ++j) {
        ASSERT_EQ(from_rows[i * n + j], from_panels[i * n + j]) << i << "," << j;
      }
    }
  }
}

}  // namespace
}  // namespace strata::ops::cpu
