#include "tensor/quant_blocks.h"

#include <cstring>

#include "base/check.h"

namespace strata::tensor {
namespace {

float h(uint16_t v) { return f16_to_f32(v); }

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Fifth bit of value j (0..31) of a Q5_0 / Q5_1 block.
int q5_high(uint32_t qh, int j) { return static_cast<int>((qh >> j) & 1u) << 4; }

// ---- dequantize: llama.cpp's formulas, same order of f32 operations ----

void deq_q4_0(const BlockQ4_0* x, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h(x[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>((x[i].qs[j] & 0xF) - 8) * d;
      y[j + 16] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void deq_q4_1(const BlockQ4_1* x, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h(x[i].d), m = h(x[i].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(x[i].qs[j] & 0xF) * d + m;
      y[j + 16] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
    }
  }
}

void deq_q5_0(const BlockQ5_0* x, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h(x[i].d);
    const uint32_t qh = load_u32(x[i].qh);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(((x[i].qs[j] & 0xF) | q5_high(qh, j)) - 16) * d;
      y[j + 16] = static_cast<float>(((x[i].qs[j] >> 4) | q5_high(qh, j + 16)) - 16) * d;
    }
  }
}

void deq_q5_1(const BlockQ5_1* x, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h(x[i].d), m = h(x[i].m);
    const uint32_t qh = load_u32(x[i].qh);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>((x[i].qs[j] & 0xF) | q5_high(qh, j)) * d + m;
      y[j + 16] = static_cast<float>((x[i].qs[j] >> 4) | q5_high(qh, j + 16)) * d + m;
    }
  }
}

void deq_iq4_nl(const BlockIQ4_NL* x, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h(x[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIq4Values[x[i].qs[j] & 0xF]);
      y[j + 16] = d * static_cast<float>(kIq4Values[x[i].qs[j] >> 4]);
    }
  }
}

void deq_q2_k(const BlockQ2_K* x, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h(x[i].d), dmin = h(x[i].dmin);
    for (int e = 0; e < 256; e += 16) {  // sub-block e / 16
      const uint8_t sc = x[i].scales[e / 16];
      const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
      const uint8_t* q = x[i].qs + 32 * (e / 128) + (e % 32);
      const int shift = 2 * ((e % 128) / 32);
      for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[l] >> shift) & 3) - ml;
    }
  }
}

void deq_q3_k(const BlockQ3_K* x, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h(x[i].d);
    uint8_t sc[16];
    q3k_scales(x[i].scales, sc);
    for (int e = 0; e < 256; e += 16) {
      const float dl = d * static_cast<float>(sc[e / 16] - 32);
      const int half = e / 128, j = (e % 128) / 32, l0 = e % 32;
      const uint8_t* q = x[i].qs + 32 * half + l0;
      const uint8_t* hm = x[i].hmask + l0;
      const uint8_t bit = static_cast<uint8_t>(1u << (4 * half + j));
      for (int l = 0; l < 16; ++l) {
        int v = ((q[l] >> (2 * j)) & 3) - ((hm[l] & bit) ? 0 : 4);
        *y++ = dl * static_cast<float>(v);
      }
    }
  }
}

void deq_q4_k(const BlockQ4_K* x, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h(x[i].d), dmin = h(x[i].dmin);
    for (int s = 0; s < 8; ++s) {  // 32-value sub-block s
      uint8_t sc, mn;
      k4_scale_min(x[i].scales, s, &sc, &mn);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
      const uint8_t* q = x[i].qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((q[l] >> shift) & 0xF) - m1;
    }
  }
}

void deq_q5_k(const BlockQ5_K* x, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h(x[i].d), dmin = h(x[i].dmin);
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, mn;
      k4_scale_min(x[i].scales, s, &sc, &mn);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
      const uint8_t* q = x[i].qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) {
        int v = ((q[l] >> shift) & 0xF) + ((x[i].qh[l] >> s) & 1 ? 16 : 0);
        *y++ = d1 * static_cast<float>(v) - m1;
      }
    }
  }
}

void deq_q6_k(const BlockQ6_K* x, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i, y += 256) {
    const float d = h(x[i].d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[i].ql + 64 * half;
      const uint8_t* qh = x[i].qh + 32 * half;
      const int8_t* sc = x[i].scales + 8 * half;
      float* yh = y + 128 * half;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        yh[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        yh[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        yh[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        yh[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void deq_iq4_xs(const BlockIQ4_XS* x, int64_t nb, float* y) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h(x[i].d);
    for (int ib = 0; ib < 8; ++ib, y += 32) {
      const float dl = d * static_cast<float>(iq4xs_scale(x[i], ib) - 32);
      const uint8_t* qs = x[i].qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIq4Values[qs[j] & 0xF]);
        y[j + 16] = dl * static_cast<float>(kIq4Values[qs[j] >> 4]);
      }
    }
  }
}

// ---- unpack_group ----

void set_pair(UnpackedGroup* out, int block, float a, float b) {  // 32-value block in the group
  out->a[2 * block] = out->a[2 * block + 1] = a;
  out->b[2 * block] = out->b[2 * block + 1] = b;
}

// Legacy 32-value blocks: the group's 8 blocks (fewer at the row's end).
void unpack_blocks32(const void* row, DType dtype, int64_t k, int64_t g, UnpackedGroup* out) {
  const int64_t first = g * 8, nblocks = k / 32;
  for (int bi = 0; bi < 8; ++bi) {
    uint8_t* u = out->u + 32 * bi;
    const int64_t blk = first + bi;
    if (blk >= nblocks) {
      std::memset(u, 0, 32);
      set_pair(out, bi, 0.0f, 0.0f);
      continue;
    }
    switch (dtype) {
      case DType::kQ4_0: {
        const BlockQ4_0& b = static_cast<const BlockQ4_0*>(row)[blk];
        for (int j = 0; j < 16; ++j) u[j] = b.qs[j] & 0xF, u[j + 16] = b.qs[j] >> 4;
        set_pair(out, bi, h(b.d), 8.0f * h(b.d));
        break;
      }
      case DType::kQ4_1: {
        const BlockQ4_1& b = static_cast<const BlockQ4_1*>(row)[blk];
        for (int j = 0; j < 16; ++j) u[j] = b.qs[j] & 0xF, u[j + 16] = b.qs[j] >> 4;
        set_pair(out, bi, h(b.d), -h(b.m));
        break;
      }
      case DType::kQ5_0:
      case DType::kQ5_1: {
        const uint8_t* qs;
        uint32_t qh;
        if (dtype == DType::kQ5_0) {
          const BlockQ5_0& b = static_cast<const BlockQ5_0*>(row)[blk];
          qs = b.qs, qh = load_u32(b.qh);
          set_pair(out, bi, h(b.d), 16.0f * h(b.d));
        } else {
          const BlockQ5_1& b = static_cast<const BlockQ5_1*>(row)[blk];
          qs = b.qs, qh = load_u32(b.qh);
          set_pair(out, bi, h(b.d), -h(b.m));
        }
        for (int j = 0; j < 16; ++j) {
          u[j] = static_cast<uint8_t>((qs[j] & 0xF) | q5_high(qh, j));
          u[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | q5_high(qh, j + 16));
        }
        break;
      }
      case DType::kQ8_0: {
        const BlockQ8_0& b = static_cast<const BlockQ8_0*>(row)[blk];
        for (int j = 0; j < 32; ++j) u[j] = static_cast<uint8_t>(b.values[j] + 128);
        set_pair(out, bi, h(b.scale_f16), 128.0f * h(b.scale_f16));
        break;
      }
      case DType::kIQ4_NL: {
        const BlockIQ4_NL& b = static_cast<const BlockIQ4_NL*>(row)[blk];
        for (int j = 0; j < 16; ++j) {
          u[j] = static_cast<uint8_t>(kIq4Values[b.qs[j] & 0xF] + 128);
          u[j + 16] = static_cast<uint8_t>(kIq4Values[b.qs[j] >> 4] + 128);
        }
        set_pair(out, bi, h(b.d), 128.0f * h(b.d));
        break;
      }
      default:
        STRATA_CHECK(false) << "unpack_blocks32: " << dtype_name(dtype);
    }
  }
}

void unpack_superblock(const void* row, DType dtype, int64_t g, UnpackedGroup* out) {
  uint8_t* u = out->u;
  switch (dtype) {
    case DType::kQ2_K: {
      const BlockQ2_K& b = static_cast<const BlockQ2_K*>(row)[g];
      const float d = h(b.d), dmin = h(b.dmin);
      for (int e = 0; e < 256; ++e) {
        u[e] = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      }
      for (int j = 0; j < 16; ++j) {
        out->a[j] = d * static_cast<float>(b.scales[j] & 0xF);
        out->b[j] = dmin * static_cast<float>(b.scales[j] >> 4);
      }
      return;
    }
    case DType::kQ3_K: {
      const BlockQ3_K& b = static_cast<const BlockQ3_K*>(row)[g];
      const float d = h(b.d);
      for (int e = 0; e < 256; ++e) {
        const int half = e / 128, j = (e % 128) / 32, l = e % 32;
        const int low = (b.qs[32 * half + l] >> (2 * j)) & 3;
        const int hb = (b.hmask[l] >> (4 * half + j)) & 1;
        u[e] = static_cast<uint8_t>(low | hb << 2);
      }
      uint8_t sc[16];
      q3k_scales(b.scales, sc);
      for (int j = 0; j < 16; ++j) {
        out->a[j] = d * static_cast<float>(sc[j] - 32);
        out->b[j] = 4.0f * out->a[j];
      }
      return;
    }
    case DType::kQ4_K:
    case DType::kQ5_K: {
      const uint8_t *scales, *qs, *qh = nullptr;
      float d, dmin;
      if (dtype == DType::kQ4_K) {
        const BlockQ4_K& b = static_cast<const BlockQ4_K*>(row)[g];
        scales = b.scales, qs = b.qs, d = h(b.d), dmin = h(b.dmin);
      } else {
        const BlockQ5_K& b = static_cast<const BlockQ5_K*>(row)[g];
        scales = b.scales, qs = b.qs, qh = b.qh, d = h(b.d), dmin = h(b.dmin);
      }
      for (int e = 0; e < 256; ++e) {
        const int s = e / 32, l = e % 32;
        int v = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0xF;
        if (qh != nullptr) v |= ((qh[l] >> s) & 1) << 4;
        u[e] = static_cast<uint8_t>(v);
      }
      for (int s = 0; s < 8; ++s) {
        uint8_t sc, mn;
        k4_scale_min(scales, s, &sc, &mn);
        out->a[2 * s] = out->a[2 * s + 1] = d * static_cast<float>(sc);
        out->b[2 * s] = out->b[2 * s + 1] = dmin * static_cast<float>(mn);
      }
      return;
    }
    case DType::kQ6_K: {
      const BlockQ6_K& b = static_cast<const BlockQ6_K*>(row)[g];
      const float d = h(b.d);
      for (int e = 0; e < 256; ++e) {
        const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
        const uint8_t ql = b.ql[64 * half + 32 * (quarter % 2) + l];
        const int low = (ql >> (4 * (quarter / 2))) & 0xF;
        const int high = (b.qh[32 * half + l] >> (2 * quarter)) & 3;
        u[e] = static_cast<uint8_t>(low | high << 4);
      }
      for (int j = 0; j < 16; ++j) {
        out->a[j] = d * static_cast<float>(b.scales[j]);
        out->b[j] = 32.0f * out->a[j];
      }
      return;
    }
    case DType::kIQ4_XS: {
      const BlockIQ4_XS& b = static_cast<const BlockIQ4_XS*>(row)[g];
      const float d = h(b.d);
      for (int ib = 0; ib < 8; ++ib) {
        for (int j = 0; j < 16; ++j) {
          u[32 * ib + j] = static_cast<uint8_t>(kIq4Values[b.qs[16 * ib + j] & 0xF] + 128);
          u[32 * ib + j + 16] = static_cast<uint8_t>(kIq4Values[b.qs[16 * ib + j] >> 4] + 128);
        }
        const float a = d * static_cast<float>(iq4xs_scale(b, ib) - 32);
        set_pair(out, ib, a, 128.0f * a);
      }
      return;
    }
    default:
      STRATA_CHECK(false) << "unpack_superblock: " << dtype_name(dtype);
  }
}

}  // namespace

void q3k_scales(const uint8_t* s, uint8_t out[16]) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<uint8_t>(low | high << 4);
  }
}

void dequantize_row(const void* src, DType dtype, int64_t n, float* out) {
  const int64_t block = dtype_block_size(dtype);
  STRATA_CHECK(is_quantized(dtype) && n % block == 0)
      << "dequantize_row: " << dtype_name(dtype) << " n=" << n;
  const int64_t nb = n / block;
  switch (dtype) {
    case DType::kQ8_0: return dequantize_q8_0(static_cast<const BlockQ8_0*>(src), n, out);
    case DType::kQ4_0: return deq_q4_0(static_cast<const BlockQ4_0*>(src), nb, out);
    case DType::kQ4_1: return deq_q4_1(static_cast<const BlockQ4_1*>(src), nb, out);
    case DType::kQ5_0: return deq_q5_0(static_cast<const BlockQ5_0*>(src), nb, out);
    case DType::kQ5_1: return deq_q5_1(static_cast<const BlockQ5_1*>(src), nb, out);
    case DType::kIQ4_NL: return deq_iq4_nl(static_cast<const BlockIQ4_NL*>(src), nb, out);
    case DType::kQ2_K: return deq_q2_k(static_cast<const BlockQ2_K*>(src), nb, out);
    case DType::kQ3_K: return deq_q3_k(static_cast<const BlockQ3_K*>(src), nb, out);
    case DType::kQ4_K: return deq_q4_k(static_cast<const BlockQ4_K*>(src), nb, out);
    case DType::kQ5_K: return deq_q5_k(static_cast<const BlockQ5_K*>(src), nb, out);
    case DType::kQ6_K: return deq_q6_k(static_cast<const BlockQ6_K*>(src), nb, out);
    case DType::kIQ4_XS: return deq_iq4_xs(static_cast<const BlockIQ4_XS*>(src), nb, out);
    default: break;
  }
  STRATA_CHECK(false) << "dequantize_row: " << dtype_name(dtype);
}

void unpack_group(const void* row, DType dtype, int64_t k, int64_t g, UnpackedGroup* out) {
  STRATA_CHECK(is_quantized(dtype) && k % dtype_block_size(dtype) == 0 && g * kQuantGroup < k)
      << "unpack_group: " << dtype_name(dtype) << " k=" << k << " g=" << g;
  if (dtype_block_size(dtype) == 32) {
    unpack_blocks32(row, dtype, k, g, out);
  } else {
    unpack_superblock(row, dtype, g, out);
  }
}

int iq4xs_scale(const BlockIQ4_XS& b, int ib) {
  return ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((b.scales_h >> (2 * ib)) & 3) << 4);
}

}  // namespace strata::tensor
