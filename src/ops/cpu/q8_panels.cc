#include "ops/cpu/q8_panels.h"

#include <cstring>

namespace strata::ops::cpu {

namespace {

// Offset of values [v, v + 4) of row r of block b (v % 4 == 0).
inline int64_t code_offset(int64_t b, int64_t r, int64_t v) {
  return q8_panel_codes_offset(b) + v / 4 * 64 + r * 4;
}

}  // namespace

void pack_q8_panels(const std::vector<Q8Rows>& parts, int64_t k, uint8_t* out) {
  const int64_t blocks = k / 32, panel_bytes = q8_panel_bytes(k);
  int64_t n = 0;
  for (const Q8Rows& p : parts) n += p.n;
  // Zero rows: code 0 stored as 128, scale 0 (f16 +0 is all zero bits).
  const int64_t panels = q8_panel_count(n);
  std::memset(out, 0, static_cast<size_t>(panels * panel_bytes));
  for (int64_t p = n / kQ8PanelRows; p < panels; ++p) {
    for (int64_t b = 0; b < blocks; ++b) {
      std::memset(out + p * panel_bytes + q8_panel_codes_offset(b), 0x80, kQ8PanelBlockCodes);
    }
  }
  int64_t j = 0;
  for (const Q8Rows& part : parts) {
    for (int64_t i = 0; i < part.n; ++i, ++j) {
      uint8_t* panel = out + j / kQ8PanelRows * panel_bytes;
      const int64_t r = j % kQ8PanelRows;
      const tensor::BlockQ8_0* row = part.blocks + i * blocks;
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t v = 0; v < 32; v += 4) {  // w + 128 == w ^ 0x80 as a byte
          uint32_t four;
          std::memcpy(&four, row[b].values + v, 4);
          four ^= 0x80808080u;
          std::memcpy(panel + code_offset(b, r, v), &four, 4);
        }
        std::memcpy(panel + q8_panel_scales_offset(blocks, b) + r * 2, &row[b].scale_f16, 2);
      }
    }
  }
}

void unpack_q8_panel_rows(const uint8_t* panels, int64_t k, int64_t j0, int64_t rows,
                          tensor::BlockQ8_0* out) {
  const int64_t blocks = k / 32;
  for (int64_t j = j0; j < j0 + rows; ++j) {
    const uint8_t* panel = panels + j / kQ8PanelRows * q8_panel_bytes(k);
    const int64_t r = j % kQ8PanelRows;
    tensor::BlockQ8_0* row = out + (j - j0) * blocks;
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t v = 0; v < 32; v += 4) {
        uint32_t four;
        std::memcpy(&four, panel + code_offset(b, r, v), 4);
        four ^= 0x80808080u;
        std::memcpy(row[b].values + v, &four, 4);
      }
      std::memcpy(&row[b].scale_f16, panel + q8_panel_scales_offset(blocks, b) + r * 2, 2);
    }
  }
}

}  // namespace strata::ops::cpu
