// Portable C++ kernels: the fallback on CPUs without AVX-512 (and the path
// STRATA_CPU=generic forces). Same numerics as the AVX-512 kernels (f32 sums,
// bf16-rounded x in kBF16 mode) with a different summation order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/cpu/kernels.h"
#include "ops/reference.h"
#include "tensor/kv_cache_dtype.h"

namespace strata::ops::cpu {
namespace {

using tensor::DType;

// Dot product with 8 independent partial sums (vectorizable without -ffast-math).
float dot(const float* a, const float* b, int64_t n) {
  float part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) part[l] += a[i + l] * b[i + l];
  }
  for (; i < n; ++i) part[i % 8] += a[i] * b[i];
  float s = 0;
  for (float p : part) s += p;
  return s;
}

// Widens weight row j of w [n, k] to f32 (exact).
void widen_row(const MatmulArgs& a, int64_t j, float* out) {
  int64_t row_bytes = tensor::dtype_size_bytes(a.w_dtype, a.k);
  const char* row = static_cast<const char*>(a.w) + j * row_bytes;
  tensor::convert_to_f32(row, a.w_dtype, a.k, out);
}

float bias_at(const MatmulArgs& a, int64_t j) { return a.bias != nullptr ? a.bias[j] : 0.0f; }

void matmul_f32_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  std::vector<float> wrow(static_cast<size_t>(a.k));
  for (int64_t j = n_begin; j < n_end; ++j) {
    widen_row(a, j, wrow.data());
    for (int64_t i = 0; i < a.m; ++i) {
      a.y[i * a.n + j] = dot(a.x + i * a.k, wrow.data(), a.k) + bias_at(a, j);
    }
  }
}

void matmul_bf16_range(const MatmulArgs& a, int64_t n_begin, int64_t n_end, uint16_t*) {
  std::vector<float> wrow(static_cast<size_t>(a.k));
  std::vector<float> xrow(static_cast<size_t>(a.k));
  for (int64_t j = n_begin; j < n_end; ++j) {
    widen_row(a, j, wrow.data());
    if (a.w_dtype != DType::kBF16) {
      for (float& f : wrow) f = tensor::bf16_to_f32(tensor::f32_to_bf16(f));
    }
    for (int64_t i = 0; i < a.m; ++i) {
      const uint16_t* xb = a.x_bf16 + i * a.k_pad;
      for (int64_t l = 0; l < a.k; ++l) xrow[l] = tensor::bf16_to_f32(xb[l]);
      a.y[i * a.n + j] = dot(xrow.data(), wrow.data(), a.k) + bias_at(a, j);
    }
  }
}

void x_to_bf16(const float* x, int64_t rows, int64_t k, int64_t k_pad, uint16_t* out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t l = 0; l < k; ++l) out[r * k_pad + l] = tensor::f32_to_bf16(x[r * k + l]);
    for (int64_t l = k; l < k_pad; ++l) out[r * k_pad + l] = 0;
  }
}

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float inv = 1.0f / std::sqrt(dot(xr, xr, dim) / static_cast<float>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = xr[i] * inv * weight[i];
  }
}

void rope_apply(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, const float* cos,
                const float* sin, RopeStyle style) {
  int64_t half = head_dim / 2;
  bool neox = style == RopeStyle::kNeox;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int64_t h = 0; h < num_heads; ++h) {
      float* xh = x + (t * num_heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        float* p0 = neox ? xh + i : xh + 2 * i;
        float* p1 = neox ? xh + i + half : xh + 2 * i + 1;
        float x0 = *p0, x1 = *p1;
        *p0 = x0 * c[i] - x1 * s[i];
        *p1 = x1 * c[i] + x0 * s[i];
      }
    }
  }
}

// silu_mul, softmax and add_inplace: the portable versions are the plain
// reference loops themselves (ops/reference.h).
using reference::add_inplace;
using reference::silu_mul;
using reference::softmax;

void attention_rows(const float* q, const float* k, const float* v, const AttentionShape& s,
                    int64_t row_begin, int64_t row_end, float* scores, float* out) {
  int64_t group = s.num_heads / s.num_kv_heads;
  int64_t d = s.head_dim;
  for (int64_t row = row_begin; row < row_end; ++row) {
    int64_t t = row / s.num_heads, h = row % s.num_heads, kvh = h / group;
    int64_t p = s.start_pos + t;
    int64_t lo = s.sliding_window > 0 ? std::max<int64_t>(0, p - s.sliding_window + 1) : 0;
    const float* qh = q + row * d;
    for (int64_t j = lo; j <= p; ++j) {
      scores[j - lo] = dot(qh, k + (j * s.num_kv_heads + kvh) * d, d) * s.scale;
    }
    softmax(scores, p - lo + 1);
    float* oh = out + row * d;
    std::fill(oh, oh + d, 0.0f);
    for (int64_t j = lo; j <= p; ++j) {
      const float* vj = v + (j * s.num_kv_heads + kvh) * d;
      for (int64_t i = 0; i < d; ++i) oh[i] += scores[j - lo] * vj[i];
    }
  }
}

// 16 f32 lanes as a plain array for the paged attention kernel
// (paged_attention_kernel.h); the compiler vectorizes the lane loops with
// whatever the baseline ISA has.
struct VLanes {
  float v[16];
  static VLanes zero() { return set1(0.0f); }
  static VLanes set1(float x) {
    VLanes r;
    for (float& e : r.v) e = x;
    return r;
  }
  static VLanes load(const float* p) {
    VLanes r;
    for (int i = 0; i < 16; ++i) r.v[i] = p[i];
    return r;
  }
  static void store(float* p, const VLanes& a) {
    for (int i = 0; i < 16; ++i) p[i] = a.v[i];
  }
  // 16 two-byte values at p, each widened by `widen`.
  template <class F>
  static VLanes load_16bit(const uint8_t* p, F widen) {
    VLanes r;
    for (int i = 0; i < 16; ++i) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      r.v[i] = widen(h);
    }
    return r;
  }
  static VLanes load_bf16(const uint8_t* p) { return load_16bit(p, tensor::bf16_to_f32); }
  static VLanes load_f16(const uint8_t* p) { return load_16bit(p, tensor::f16_to_f32); }
  static VLanes load_fp8(const uint8_t* p, tensor::KvCacheDtype t) {
    VLanes r;
    for (int i = 0; i < 16; ++i) r.v[i] = tensor::fp8_to_f32(p[i], t);
    return r;
  }
  static VLanes load_fp8_e4m3(const uint8_t* p) { return load_fp8(p, tensor::KvCacheDtype::kFp8E4M3); }
  static VLanes load_fp8_e5m2(const uint8_t* p) { return load_fp8(p, tensor::KvCacheDtype::kFp8E5M2); }
  template <class F>
  static VLanes map(const VLanes& a, const VLanes& b, F f) {
    VLanes r;
    for (int i = 0; i < 16; ++i) r.v[i] = f(a.v[i], b.v[i]);
    return r;
  }
  static VLanes add(const VLanes& a, const VLanes& b) {
    return map(a, b, [](float x, float y) { return x + y; });
  }
  static VLanes sub(const VLanes& a, const VLanes& b) {
    return map(a, b, [](float x, float y) { return x - y; });
  }
  static VLanes mul(const VLanes& a, const VLanes& b) {
    return map(a, b, [](float x, float y) { return x * y; });
  }
  static VLanes max(const VLanes& a, const VLanes& b) {
    return map(a, b, [](float x, float y) { return x > y ? x : y; });
  }
  static VLanes fmadd(const VLanes& a, const VLanes& b, const VLanes& c) {
    VLanes r;
    for (int i = 0; i < 16; ++i) r.v[i] = a.v[i] * b.v[i] + c.v[i];
    return r;
  }
  // The same polynomial as the AVX-512 version (exactly 0 below -87, 1 at 0).
  static VLanes exp_nonpositive(const VLanes& x) {
    VLanes r;
    for (int i = 0; i < 16; ++i) {
      const float t = std::max(x.v[i], -87.0f) * 1.44269504088896341f;
      const float k = std::nearbyint(t);
      const float f = (t - k) * 0.693147180559945309f;
      float p = 1.0f / 720.0f;
      p = p * f + 1.0f / 120.0f;
      p = p * f + 1.0f / 24.0f;
      p = p * f + 1.0f / 6.0f;
      p = p * f + 0.5f;
      p = p * f + 1.0f;
      p = p * f + 1.0f;
      r.v[i] = x.v[i] < -87.0f ? 0.0f : std::ldexp(p, static_cast<int>(k));
    }
    return r;
  }
  static VLanes visible_keys(const VLanes& s, float tile, float first, float last) {
    VLanes r;
    for (int i = 0; i < 16; ++i) {
      const float key = tile + static_cast<float>(i);
      r.v[i] = first <= key && key <= last ? s.v[i] : -INFINITY;
    }
    return r;
  }
  static VLanes keep_keys(const VLanes& s, float tile, float first, float last) {
    VLanes r;
    for (int i = 0; i < 16; ++i) {
      const float key = tile + static_cast<float>(i);
      r.v[i] = first <= key && key <= last ? s.v[i] : 0.0f;
    }
    return r;
  }
  static float reduce_max(const VLanes& a) {
    float m = a.v[0];
    for (float e : a.v) m = e > m ? e : m;
    return m;
  }
  static VLanes visible(const VLanes& s, const VLanes& first, const VLanes& last, float key) {
    VLanes r;
    for (int i = 0; i < 16; ++i) {
      r.v[i] = first.v[i] <= key && key <= last.v[i] ? s.v[i] : -INFINITY;
    }
    return r;
  }
};

#include "ops/cpu/paged_attention_kernel.h"

void paged_attention_item(const PagedAttentionBatch& b, const PagedAttentionItem& item,
                          float* scratch) {
  paged_attention_item_for<VLanes>(b, item, scratch);
}

constexpr KernelTable kGeneric = {
    "generic", matmul_f32_range, matmul_bf16_range, nullptr,        x_to_bf16, rms_norm, rope_apply,
    silu_mul,  softmax,          add_inplace,       attention_rows, nullptr,   nullptr,
    nullptr,   nullptr,          paged_attention_item, nullptr, nullptr,
    nullptr,   false,
};

}  // namespace

const KernelTable& generic_kernels() { return kGeneric; }

}  // namespace strata::ops::cpu
