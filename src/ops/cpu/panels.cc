#include "ops/cpu/panels.h"

#include <emmintrin.h>  // SSE2: baseline x86-64

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "base/check.h"
#include "ops/cpu/kernels.h"
#include "tensor/quant_blocks.h"

namespace strata::ops::cpu {

namespace {

// GGUF blocks of the panel dtypes: an f16 d, Q5_0's 4 bytes of fifth bits
// (qh), then the code bytes (32 int8 values for Q8_0, 16 bytes of nibbles
// otherwise).
constexpr int64_t kScaleBytes = 2;
int64_t row_code_bytes(tensor::DType t) { return t == tensor::DType::kQ8_0 ? 32 : 16; }
int64_t high_bit_bytes(tensor::DType t) { return t == tensor::DType::kQ5_0 ? 4 : 0; }
int64_t codes_in_block(tensor::DType t) { return kScaleBytes + high_bit_bytes(t); }
int64_t block_bytes(tensor::DType t) { return codes_in_block(t) + row_code_bytes(t); }
// Q5_0's fifth bits (bit j of qh: value j's) as the panel's fifth-bit line
// holds one row's (panels.h), and back.
uint32_t spread_high_bits(uint32_t qh) {
  uint32_t out = 0;
  for (int c = 0; c < 4; ++c) {
    for (int g = 0; g < 4; ++g) {
      out |= (qh >> (4 * g + c) & 1u) << (8 * c + 2 * g);
      out |= (qh >> (16 + 4 * g + c) & 1u) << (8 * c + 2 * g + 1);
    }
  }
  return out;
}
uint32_t gather_high_bits(uint32_t spread) {
  uint32_t qh = 0;
  for (int c = 0; c < 4; ++c) {
    for (int g = 0; g < 4; ++g) {
      qh |= (spread >> (8 * c + 2 * g) & 1u) << (4 * g + c);
      qh |= (spread >> (8 * c + 2 * g + 1) & 1u) << (16 + 4 * g + c);
    }
  }
  return qh;
}
// Q8_0 stores w + 128 == w ^ 0x80 (the unsigned operand of vpdpbusd); the
// nibble types their bytes as they are.
uint8_t code_flip(tensor::DType t) { return t == tensor::DType::kQ8_0 ? 0x80 : 0; }

// Offset of code bytes [v, v + 4) of row r of block b (v % 4 == 0).
inline int64_t code_offset(tensor::DType t, int64_t b, int64_t r, int64_t v) {
  return panel_codes_offset(t, b) + v / 4 * 64 + r * 4;
}

// IQ4_XS: the panel of rows[0, rows_in) (16 slots; the rest zero) and its
// rows back (panels.h).
void pack_iq4_xs_panel(const uint8_t* const* rows, int64_t rows_in, int64_t k, uint8_t* panel) {
  // Rows past rows_in are zero GGUF blocks: scale code 0, so -32 here.
  std::memset(panel, 0, static_cast<size_t>(panel_bytes(tensor::DType::kIQ4_XS, k)));
  for (int64_t g = 0; g < k / 256; ++g) {
    for (int64_t s = 0; s < 8; ++s) {
      std::memset(panel + g * kIq4XsPanelGroupBytes + kIq4XsPanelScales + s * kPanelRows, 0xE0,
                  kPanelRows);
    }
  }
  for (int64_t r = 0; r < rows_in; ++r) {
    const auto* blocks = reinterpret_cast<const tensor::BlockIQ4_XS*>(rows[r]);
    for (int64_t g = 0; g < k / 256; ++g) {
      const tensor::BlockIQ4_XS& b = blocks[g];
      uint8_t* group = panel + g * kIq4XsPanelGroupBytes;
      std::memcpy(group + r * 2, &b.d, 2);
      for (int s = 0; s < 8; ++s) {
        group[kIq4XsPanelScales + s * kPanelRows + r] =
            static_cast<uint8_t>(static_cast<int8_t>(tensor::iq4xs_scale(b, s) - 32));
        for (int line = 0; line < 4; ++line) {
          std::memcpy(group + kIq4XsPanelCodes + (s * 4 + line) * 64 + r * 4,
                      b.qs + 16 * s + 4 * line, 4);
        }
      }
    }
  }
}

void unpack_iq4_xs_row(const uint8_t* panel, int64_t k, int64_t r, uint8_t* row) {
  auto* blocks = reinterpret_cast<tensor::BlockIQ4_XS*>(row);
  for (int64_t g = 0; g < k / 256; ++g) {
    tensor::BlockIQ4_XS& b = blocks[g];
    const uint8_t* group = panel + g * kIq4XsPanelGroupBytes;
    std::memcpy(&b.d, group + r * 2, 2);
    b.scales_h = 0;
    std::memset(b.scales_l, 0, 4);
    for (int s = 0; s < 8; ++s) {
      const int ls = static_cast<int8_t>(group[kIq4XsPanelScales + s * kPanelRows + r]) + 32;
      b.scales_l[s / 2] = static_cast<uint8_t>(b.scales_l[s / 2] | (ls & 0xF) << (4 * (s % 2)));
      b.scales_h = static_cast<uint16_t>(b.scales_h | (ls >> 4) << (2 * s));
      for (int line = 0; line < 4; ++line) {
        std::memcpy(b.qs + 16 * s + 4 * line,
                    group + kIq4XsPanelCodes + (s * 4 + line) * 64 + r * 4, 4);
      }
    }
  }
}

// Q2_K / Q3_K (panels.h): the value of a super-block at x position p (its
// 32-value chunk is the one x stores at slot p / 32).
int value_at_position(tensor::DType t, int p) {
  int chunk = 0;
  while (lowbit_x_chunk_slot(t, chunk) != p / 32) ++chunk;
  return 32 * chunk + p % 32;
}
uint32_t load_word(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

// Q4_K / Q5_K / Q6_K: nibble line `line` of a panel block (Q4_0's layout:
// byte c holds values 4 line + c and 16 + 4 line + c) from the nibbles at
// bit `shift` of q[0..32), and its bytes back into q.
uint32_t nibble_line_word(const uint8_t* q, int line, int shift) {
  return (load_word(q + 4 * line) >> shift & 0x0F0F0F0Fu) |
         (load_word(q + 16 + 4 * line) >> shift & 0x0F0F0F0Fu) << 4;
}
void unpack_nibble_line(uint32_t word, int line, int shift, uint8_t* q) {
  for (int c = 0; c < 4; ++c) {
    const int byte = static_cast<int>(word >> (8 * c) & 0xFF), l = 4 * line + c;
    q[l] = static_cast<uint8_t>(q[l] | (byte & 0xF) << shift);
    q[16 + l] = static_cast<uint8_t>(q[16 + l] | (byte >> 4) << shift);
  }
}

// Q3_K's sixteen 6-bit scales back into their 12 bytes (tensor::q3k_scales'
// layout: low 4 bits in the low (i < 8) or high nibble of byte i % 8, high 2
// bits at bits 2 (i / 4), + 1 of byte 8 + i % 4).
void pack_q3_k_scales(const uint8_t sc[16], uint8_t out[12]) {
  std::memset(out, 0, 12);
  for (int i = 0; i < 16; ++i) {
    out[i % 8] = static_cast<uint8_t>(out[i % 8] | (sc[i] & 0xF) << (i < 8 ? 0 : 4));
    out[8 + i % 4] = static_cast<uint8_t>(out[8 + i % 4] | (sc[i] >> 4) << (2 * (i / 4)));
  }
}

// Q2_K / Q3_K: the panel of rows[0, rows_in) (16 slots; the rest zero) and
// its rows back (panels.h). Slot s of x holds chunk 4 h + j, values 128 h +
// 32 j + [0, 32), whose codes are bits 2 j of qs[32 h + l] (and third bits
// bit 4 h + j of hmask[l]); its sub-blocks i = 2 s + half take l = 16 half +
// 4 j' + c to byte c, bits 2 j' of their codes word (and bit 4 half + j' of
// the slot's high-bit word), so a row's words are four (eight) of its qs
// (hmask) words masked, shifted and ORed.
void pack_k_panel(tensor::DType t, const uint8_t* const* rows, int64_t rows_in, int64_t k,
                  uint8_t* panel) {
  const bool q3 = t == tensor::DType::kQ3_K;
  const int64_t group_bytes = k_panel_group_bytes(t);
  // Rows past rows_in are zero GGUF blocks: Q3_K's scale code 0 is -32 here.
  std::memset(panel, 0, static_cast<size_t>(panel_bytes(t, k)));
  int chunk_at[8];  // chunk of x slot s
  for (int s = 0; s < 8; ++s) chunk_at[s] = value_at_position(t, 32 * s) / 32;
  for (int64_t g = 0; g < k / 256; ++g) {
    uint8_t* group = panel + g * group_bytes;
    if (q3) std::memset(group + kKPanelScales, 0xE0, 256);
    for (int64_t r = 0; r < rows_in; ++r) {
      const uint8_t* qs;
      const uint8_t* hmask = nullptr;
      uint8_t scale[16];
      if (q3) {
        const auto& b = reinterpret_cast<const tensor::BlockQ3_K*>(rows[r])[g];
        std::memcpy(group + r * 2, &b.d, 2);
        tensor::q3k_scales(b.scales, scale);
        for (uint8_t& sc : scale) sc = static_cast<uint8_t>(sc - 32);
        qs = b.qs;
        hmask = b.hmask;
      } else {
        const auto& b = reinterpret_cast<const tensor::BlockQ2_K*>(rows[r])[g];
        std::memcpy(group + r * 2, &b.d, 2);
        std::memcpy(group + 32 + r * 2, &b.dmin, 2);
        std::memcpy(scale, b.scales, 16);
        qs = b.qs;
      }
      for (int s = 0; s < 8; ++s) {
        const int h = chunk_at[s] / 4, j = chunk_at[s] % 4;
        uint32_t high = 0;
        for (int half = 0; half < 2; ++half) {
          const int i = 2 * s + half;
          group[kKPanelScales + i * kPanelRows + r] = scale[2 * chunk_at[s] + half];
          uint32_t low = 0;
          for (int jp = 0; jp < 4; ++jp) {
            const int l = 16 * half + 4 * jp;
            low |= (load_word(qs + 32 * h + l) >> (2 * j) & 0x03030303u) << (2 * jp);
            if (q3) high |= (load_word(hmask + l) >> (4 * h + j) & 0x01010101u) << (4 * half + jp);
          }
          std::memcpy(group + kKPanelCodes + i * 64 + r * 4, &low, 4);
        }
        if (q3) std::memcpy(group + kKPanelHighBits + s * 64 + r * 4, &high, 4);
      }
    }
  }
}

// Q4_K's / Q5_K's eight 6-bit scales and mins back into their 12 bytes
// (tensor::k4_scale_min's layout).
void pack_k4_scales(const uint8_t sc[8], const uint8_t mn[8], uint8_t out[12]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
    out[j + 4] = static_cast<uint8_t>(mn[j] | (mn[j + 4] >> 4) << 6);
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | (mn[j + 4] & 0xF) << 4);
  }
}

// The fields of block g of a Q4_K / Q5_K row (qh nullptr for Q4_K); Byte is
// uint8_t or const uint8_t.
template <class Byte>
struct K45Block {
  Byte* d;
  Byte* dmin;
  Byte* scales;
  Byte* qh;
  Byte* qs;
};
template <class Byte>
K45Block<Byte> k45_block(tensor::DType t, Byte* row, int64_t g) {
  if (t == tensor::DType::kQ5_K) {
    using B = tensor::BlockQ5_K;
    Byte* b = row + g * static_cast<int64_t>(sizeof(B));
    return {b + offsetof(B, d), b + offsetof(B, dmin), b + offsetof(B, scales), b + offsetof(B, qh),
            b + offsetof(B, qs)};
  }
  using B = tensor::BlockQ4_K;
  Byte* b = row + g * static_cast<int64_t>(sizeof(B));
  return {b + offsetof(B, d), b + offsetof(B, dmin), b + offsetof(B, scales), nullptr,
          b + offsetof(B, qs)};
}

// Q4_K / Q5_K (panels.h): sub-block s (values 32 s + l) is nibble s % 2 of
// qs[32 (s / 2) + l] (and bit s of qh[l]); in the panel it is a Q4_0
// (Q5_0) block whose qs byte l holds values l and 16 + l, and whose qh bit
// j is value j's fifth bit.
void pack_k45_panel(tensor::DType t, const uint8_t* const* rows, int64_t rows_in, int64_t k,
                    uint8_t* panel) {
  const int64_t group_bytes = k_panel_group_bytes(t), block_codes = panel_block_codes(t);
  std::memset(panel, 0, static_cast<size_t>(panel_bytes(t, k)));
  for (int64_t g = 0; g < k / 256; ++g) {
    uint8_t* group = panel + g * group_bytes;
    for (int64_t r = 0; r < rows_in; ++r) {
      const K45Block<const uint8_t> b = k45_block(t, rows[r], g);
      std::memcpy(group + r * 2, b.d, 2);
      std::memcpy(group + 32 + r * 2, b.dmin, 2);
      for (int sb = 0; sb < 8; ++sb) {
        uint8_t sc, mn;
        tensor::k4_scale_min(b.scales, sb, &sc, &mn);
        group[kK45PanelScales + sb * kPanelRows + r] = sc;
        group[kK45PanelMins + sb * kPanelRows + r] = mn;
        uint8_t* codes = group + kK45PanelCodes + sb * block_codes;
        const uint8_t* qs = b.qs + 32 * (sb / 2);
        const int shift = 4 * (sb % 2);
        for (int line = 0; line < 4; ++line) {
          const uint32_t word = nibble_line_word(qs, line, shift);
          std::memcpy(codes + line * 64 + r * 4, &word, 4);
        }
        if (b.qh != nullptr) {
          uint32_t qh = 0;
          for (int l = 0; l < 32; ++l) qh |= static_cast<uint32_t>(b.qh[l] >> sb & 1) << l;
          const uint32_t spread = spread_high_bits(qh);
          std::memcpy(codes + 4 * 64 + r * 4, &spread, 4);
        }
      }
    }
  }
}

void unpack_k45_row(tensor::DType t, const uint8_t* panel, int64_t k, int64_t r, uint8_t* row) {
  const int64_t group_bytes = k_panel_group_bytes(t), block_codes = panel_block_codes(t);
  for (int64_t g = 0; g < k / 256; ++g) {
    const uint8_t* group = panel + g * group_bytes;
    const K45Block<uint8_t> b = k45_block(t, row, g);
    std::memcpy(b.d, group + r * 2, 2);
    std::memcpy(b.dmin, group + 32 + r * 2, 2);
    uint8_t sc[8], mn[8];
    std::memset(b.qs, 0, 128);
    if (b.qh != nullptr) std::memset(b.qh, 0, 32);
    for (int sb = 0; sb < 8; ++sb) {
      sc[sb] = group[kK45PanelScales + sb * kPanelRows + r];
      mn[sb] = group[kK45PanelMins + sb * kPanelRows + r];
      const uint8_t* codes = group + kK45PanelCodes + sb * block_codes;
      uint8_t* qs = b.qs + 32 * (sb / 2);
      const int shift = 4 * (sb % 2);
      for (int line = 0; line < 4; ++line) {
        unpack_nibble_line(load_word(codes + line * 64 + r * 4), line, shift, qs);
      }
      if (b.qh != nullptr) {
        uint32_t spread;
        std::memcpy(&spread, codes + 4 * 64 + r * 4, 4);
        const uint32_t qh = gather_high_bits(spread);
        for (int l = 0; l < 32; ++l) b.qh[l] = static_cast<uint8_t>(b.qh[l] | (qh >> l & 1) << sb);
      }
    }
    pack_k4_scales(sc, mn, b.scales);
  }
}

// Q6_K (panels.h): value 128 n + 32 k + l (l < 32) has its low 4 bits in
// nibble k / 2 of ql[64 n + 32 (k % 2) + l] and its top 2 bits at bits 2 k
// of qh[32 n + l]; block p of the panel is n = p / 4, k = p % 4, and its
// lines take l = 4 L + c (low nibbles, top-bit line 0) and 16 + 4 L + c
// (high nibbles, line 1) to byte c.
void pack_q6_k_panel(const uint8_t* const* rows, int64_t rows_in, int64_t k, uint8_t* panel) {
  constexpr tensor::DType t = tensor::DType::kQ6_K;
  const int64_t group_bytes = k_panel_group_bytes(t), block_codes = panel_block_codes(t);
  std::memset(panel, 0, static_cast<size_t>(panel_bytes(t, k)));
  for (int64_t g = 0; g < k / 256; ++g) {
    uint8_t* group = panel + g * group_bytes;
    for (int64_t r = 0; r < rows_in; ++r) {
      const auto& b = reinterpret_cast<const tensor::BlockQ6_K*>(rows[r])[g];
      std::memcpy(group + r * 2, &b.d, 2);
      for (int i = 0; i < 16; ++i) {
        group[kQ6KPanelScales + i * kPanelRows + r] = static_cast<uint8_t>(b.scales[i]);
      }
      for (int p = 0; p < 8; ++p) {
        const int n = p / 4, kk = p % 4;
        const uint8_t* ql = b.ql + 64 * n + 32 * (kk % 2);
        const uint8_t* qh = b.qh + 32 * n;
        const int shift = 4 * (kk / 2);
        uint8_t* codes = group + kQ6KPanelCodes + p * block_codes;
        for (int line = 0; line < 4; ++line) {
          const int l = 4 * line;
          const uint32_t low = nibble_line_word(ql, line, shift);
          std::memcpy(codes + line * 64 + r * 4, &low, 4);
          for (int h = 0; h < 2; ++h) {
            uint32_t top;
            std::memcpy(&top, codes + (4 + h) * 64 + r * 4, 4);
            top |= (load_word(qh + 16 * h + l) >> (2 * kk) & 0x03030303u) << (2 * line);
            std::memcpy(codes + (4 + h) * 64 + r * 4, &top, 4);
          }
        }
      }
    }
  }
}

void unpack_q6_k_row(const uint8_t* panel, int64_t k, int64_t r, uint8_t* row) {
  constexpr tensor::DType t = tensor::DType::kQ6_K;
  const int64_t group_bytes = k_panel_group_bytes(t), block_codes = panel_block_codes(t);
  for (int64_t g = 0; g < k / 256; ++g) {
    const uint8_t* group = panel + g * group_bytes;
    auto& b = reinterpret_cast<tensor::BlockQ6_K*>(row)[g];
    std::memcpy(&b.d, group + r * 2, 2);
    std::memset(b.ql, 0, sizeof(b.ql));
    std::memset(b.qh, 0, sizeof(b.qh));
    for (int i = 0; i < 16; ++i) {
      b.scales[i] = static_cast<int8_t>(group[kQ6KPanelScales + i * kPanelRows + r]);
    }
    for (int p = 0; p < 8; ++p) {
      const int n = p / 4, kk = p % 4;
      uint8_t* ql = b.ql + 64 * n + 32 * (kk % 2);
      uint8_t* qh = b.qh + 32 * n;
      const int shift = 4 * (kk / 2);
      const uint8_t* codes = group + kQ6KPanelCodes + p * block_codes;
      for (int line = 0; line < 4; ++line) {
        unpack_nibble_line(load_word(codes + line * 64 + r * 4), line, shift, ql);
        for (int c = 0; c < 4; ++c) {
          const int l = 4 * line + c;
          for (int h = 0; h < 2; ++h) {
            const int top = codes[(4 + h) * 64 + r * 4 + c] >> (2 * line) & 3;
            qh[16 * h + l] = static_cast<uint8_t>(qh[16 * h + l] | top << (2 * kk));
          }
        }
      }
    }
  }
}

void unpack_k_row(tensor::DType t, const uint8_t* panel, int64_t k, int64_t r, uint8_t* row) {
  const bool q3 = t == tensor::DType::kQ3_K;
  const int64_t group_bytes = k_panel_group_bytes(t);
  int value[256];
  for (int p = 0; p < 256; ++p) value[p] = value_at_position(t, p);
  for (int64_t g = 0; g < k / 256; ++g) {
    const uint8_t* group = panel + g * group_bytes;
    uint8_t qs[64] = {}, hmask[32] = {}, scale[16];
    for (int i = 0; i < 16; ++i) {
      scale[value[16 * i] / 16] = group[kKPanelScales + i * kPanelRows + r];
      for (int c = 0; c < 4; ++c) {
        const uint8_t low = group[kKPanelCodes + i * 64 + r * 4 + c];
        const uint8_t high = q3 ? group[kKPanelHighBits + i / 2 * 64 + r * 4 + c] : 0;
        for (int j = 0; j < 4; ++j) {
          const int v = value[16 * i + 4 * j + c];
          qs[32 * (v / 128) + v % 32] |=
              static_cast<uint8_t>((low >> (2 * j) & 3) << (2 * (v % 128 / 32)));
          hmask[v % 32] |= static_cast<uint8_t>((high >> (4 * (i % 2) + j) & 1)
                                                << (4 * (v / 128) + v % 128 / 32));
        }
      }
    }
    if (q3) {
      auto& b = reinterpret_cast<tensor::BlockQ3_K*>(row)[g];
      std::memcpy(&b.d, group + r * 2, 2);
      for (uint8_t& s : scale) s = static_cast<uint8_t>(s + 32);
      pack_q3_k_scales(scale, b.scales);
      std::memcpy(b.qs, qs, 64);
      std::memcpy(b.hmask, hmask, 32);
    } else {
      auto& b = reinterpret_cast<tensor::BlockQ2_K*>(row)[g];
      std::memcpy(&b.d, group + r * 2, 2);
      std::memcpy(&b.dmin, group + 32 + r * 2, 2);
      std::memcpy(b.scales, scale, 16);
      std::memcpy(b.qs, qs, 64);
    }
  }
}

}  // namespace

void pack_panels(tensor::DType t, const std::vector<PanelRows>& parts, int64_t k, uint8_t* out) {
  STRATA_CHECK(has_panel_layout(t)) << tensor::dtype_name(t) << " has no panel layout";
  std::vector<const uint8_t*> rows;  // every row of the weight, in order
  for (const PanelRows& part : parts) {
    for (int64_t i = 0; i < part.n; ++i) {
      rows.push_back(static_cast<const uint8_t*>(part.blocks) + i * tensor::dtype_size_bytes(t, k));
    }
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  if (t == tensor::DType::kIQ4_XS || panels_read_x_groups(t)) {
    for (int64_t p = 0; p < panel_count(n); ++p) {
      const uint8_t* const* panel_rows = rows.data() + p * kPanelRows;
      const int64_t rows_in = std::min<int64_t>(kPanelRows, n - p * kPanelRows);
      uint8_t* panel = out + p * panel_bytes(t, k);
      if (t == tensor::DType::kIQ4_XS) {
        pack_iq4_xs_panel(panel_rows, rows_in, k, panel);
      } else if (t == tensor::DType::kQ2_K || t == tensor::DType::kQ3_K) {
        pack_k_panel(t, panel_rows, rows_in, k, panel);
      } else if (t == tensor::DType::kQ6_K) {
        pack_q6_k_panel(panel_rows, rows_in, k, panel);
      } else {
        pack_k45_panel(t, panel_rows, rows_in, k, panel);
      }
    }
    return;
  }
  const int64_t blocks = k / 32, p_bytes = panel_bytes(t, k), b_bytes = block_bytes(t);
  const int64_t halves = row_code_bytes(t) / 16;
  const __m128i flip = _mm_set1_epi8(static_cast<char>(code_flip(t)));
  // Each panel is written front to back: per block, its lines of 16 rows'
  // 4 code bytes, then the scales. Rows past n are zero blocks: scale +0,
  // codes as zero bytes of GGUF (128 in Q8_0's panels).
  for (int64_t p = 0; p < panel_count(n); ++p) {
    uint8_t* panel = out + p * p_bytes;
    const int64_t r_end = std::min<int64_t>(kPanelRows, n - p * kPanelRows);
    if (r_end < kPanelRows) {
      std::memset(panel, 0, static_cast<size_t>(p_bytes));
    } else if (blocks % 2 == 1) {  // the padding after a lone last block's scales
      std::memset(panel + p_bytes - 32, 0, 32);
    }
    const uint8_t* const* panel_rows = rows.data() + p * kPanelRows;
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* codes = panel + panel_codes_offset(t, b);
      // Four rows at a time: their 16-byte halves, transposed as 4 x 4
      // dwords, are 16 bytes of four lines each.
      for (int64_t r = 0; r < kPanelRows; r += 4) {
        for (int64_t half = 0; half < halves; ++half) {
          __m128i v[4];
          for (int64_t i = 0; i < 4; ++i) {
            v[i] = r + i < r_end
                       ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(
                             panel_rows[r + i] + b * b_bytes + codes_in_block(t) + half * 16))
                       : _mm_setzero_si128();
          }
          const __m128i t01lo = _mm_unpacklo_epi32(v[0], v[1]),
                        t01hi = _mm_unpackhi_epi32(v[0], v[1]);
          const __m128i t23lo = _mm_unpacklo_epi32(v[2], v[3]),
                        t23hi = _mm_unpackhi_epi32(v[2], v[3]);
          const __m128i line[4] = {
              _mm_unpacklo_epi64(t01lo, t23lo), _mm_unpackhi_epi64(t01lo, t23lo),
              _mm_unpacklo_epi64(t01hi, t23hi), _mm_unpackhi_epi64(t01hi, t23hi)};
          for (int64_t g = 0; g < 4; ++g) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + (half * 4 + g) * 64 + r * 4),
                             _mm_xor_si128(line[g], flip));
          }
        }
      }
      if (high_bit_bytes(t) != 0) {  // the fifth-bit line after the 4 nibble lines
        for (int64_t r = 0; r < r_end; ++r) {
          uint32_t qh;
          std::memcpy(&qh, panel_rows[r] + b * b_bytes + kScaleBytes, 4);
          const uint32_t spread = spread_high_bits(qh);
          std::memcpy(codes + 4 * 64 + r * 4, &spread, 4);
        }
      }
      uint8_t* scales = panel + panel_scales_offset(t, blocks, b);
      for (int64_t r = 0; r < r_end; ++r) {
        std::memcpy(scales + r * 2, panel_rows[r] + b * b_bytes, kScaleBytes);
      }
    }
  }
}

void unpack_panel_rows(tensor::DType t, const uint8_t* panels, int64_t k, int64_t j0, int64_t rows,
                       void* out) {
  STRATA_CHECK(has_panel_layout(t)) << tensor::dtype_name(t) << " has no panel layout";
  if (t == tensor::DType::kIQ4_XS || panels_read_x_groups(t)) {
    for (int64_t j = j0; j < j0 + rows; ++j) {
      const uint8_t* panel = panels + j / kPanelRows * panel_bytes(t, k);
      uint8_t* row = static_cast<uint8_t*>(out) + (j - j0) * tensor::dtype_size_bytes(t, k);
      if (t == tensor::DType::kIQ4_XS) {
        unpack_iq4_xs_row(panel, k, j % kPanelRows, row);
      } else if (t == tensor::DType::kQ2_K || t == tensor::DType::kQ3_K) {
        unpack_k_row(t, panel, k, j % kPanelRows, row);
      } else if (t == tensor::DType::kQ6_K) {
        unpack_q6_k_row(panel, k, j % kPanelRows, row);
      } else {
        unpack_k45_row(t, panel, k, j % kPanelRows, row);
      }
    }
    return;
  }
  const int64_t blocks = k / 32, b_bytes = block_bytes(t), codes = row_code_bytes(t);
  const uint32_t flip = code_flip(t) * 0x01010101u;
  for (int64_t j = j0; j < j0 + rows; ++j) {
    const uint8_t* panel = panels + j / kPanelRows * panel_bytes(t, k);
    const int64_t r = j % kPanelRows;
    uint8_t* row = static_cast<uint8_t*>(out) + (j - j0) * blocks * b_bytes;
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* block = row + b * b_bytes;
      std::memcpy(block, panel + panel_scales_offset(t, blocks, b) + r * 2, kScaleBytes);
      if (high_bit_bytes(t) != 0) {
        uint32_t spread;
        std::memcpy(&spread, panel + code_offset(t, b, r, 16), 4);
        const uint32_t qh = gather_high_bits(spread);
        std::memcpy(block + kScaleBytes, &qh, 4);
      }
      for (int64_t v = 0; v < codes; v += 4) {
        uint32_t four;
        std::memcpy(&four, panel + code_offset(t, b, r, v), 4);
        four ^= flip;
        std::memcpy(block + codes_in_block(t) + v, &four, 4);
      }
    }
  }
}

}  // namespace strata::ops::cpu
