#include "ops/reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"

namespace strata::ops::reference {
namespace {

// w [n, k] widened to f32.
std::vector<float> widen(const tensor::TensorView& w) {
  std::vector<float> out(static_cast<size_t>(w.num_elements()));
  tensor::convert_to_f32(w.data, w.dtype, w.num_elements(), out.data());
  return out;
}

void round_bf16(std::vector<float>& v) {
  for (float& f : v) f = tensor::bf16_to_f32(tensor::f32_to_bf16(f));
}

void matmul_f32(const float* x, int64_t m, const float* w, int64_t n, int64_t k, const float* bias,
                float* y) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l) acc += double(x[i * k + l]) * double(w[j * k + l]);
      y[i * n + j] = static_cast<float>(acc) + (bias != nullptr ? bias[j] : 0.0f);
    }
  }
}

}  // namespace

void matmul(const float* x, int64_t m, const tensor::TensorView& w, const float* bias, float* y) {
  STRATA_CHECK(w.rank() == 2) << "weight must be 2-D, got " << w.shape_string();
  std::vector<float> wf = widen(w);
  matmul_f32(x, m, wf.data(), w.dim(0), w.dim(1), bias, y);
}

void matmul_bf16_rounded(const float* x, int64_t m, const tensor::TensorView& w, const float* bias,
                         bool round_w, float* y) {
  STRATA_CHECK(w.rank() == 2) << "weight must be 2-D, got " << w.shape_string();
  int64_t k = w.dim(1);
  std::vector<float> xr(x, x + m * k);
  round_bf16(xr);
  std::vector<float> wf = widen(w);
  if (round_w) round_bf16(wf);
  matmul_f32(xr.data(), m, wf.data(), w.dim(0), k, bias, y);
}

void matmul_q8_activations(const float* x, int64_t m, const tensor::TensorView& w,
                           const float* bias, float* y, int64_t x_block) {
  STRATA_CHECK(w.rank() == 2 && w.dim(1) % 32 == 0)
      << "weight must be 2-D with k % 32 == 0, got " << w.shape_string();
  STRATA_CHECK(x_block > 0 && x_block % 32 == 0) << "x_block=" << x_block;
  int64_t n = w.dim(0), k = w.dim(1), nb = (k + x_block - 1) / x_block;
  std::vector<float> wf = widen(w);  // exact: d * q and the like are exact in double
  std::vector<int8_t> xq(static_cast<size_t>(k));
  std::vector<float> xd(static_cast<size_t>(nb));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t begin = b * x_block, end = std::min(k, begin + x_block);
      const float* v = x + i * k;
      float amax = 0.0f;
      for (int64_t l = begin; l < end; ++l) amax = std::fmax(amax, std::fabs(v[l]));
      float d = amax / 127.0f;
      float id = d != 0.0f ? 1.0f / d : 0.0f;
      xd[b] = d;
      for (int64_t l = begin; l < end; ++l) {
        float q = std::nearbyint(v[l] * id);
        xq[l] = static_cast<int8_t>(std::fmin(std::fmax(q, -128.0f), 127.0f));
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t b = 0; b < nb; ++b) {
        double sum = 0;
        for (int64_t l = b * x_block; l < std::min(k, (b + 1) * x_block); ++l) {
          sum += double(xq[l]) * double(wf[j * k + l]);
        }
        acc += double(xd[b]) * sum;
      }
      y[i * n + j] = static_cast<float>(acc) + (bias != nullptr ? bias[j] : 0.0f);
    }
  }
}

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float sum = 0;
    for (int64_t i = 0; i < dim; ++i) sum += xr[i] * xr[i];
    float inv = 1.0f / std::sqrt(sum / static_cast<float>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = xr[i] * inv * weight[i];
  }
}

void rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
          int64_t head_dim, const float* inv_freq, RopeStyle style) {
  int64_t half = head_dim / 2;
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t h = 0; h < num_heads; ++h) {
      float* xh = x + (t * num_heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        float angle = static_cast<float>(positions[t]) * inv_freq[i];
        float c = std::cos(angle), s = std::sin(angle);
        int64_t a = style == RopeStyle::kNeox ? i : 2 * i;
        int64_t b = style == RopeStyle::kNeox ? i + half : 2 * i + 1;
        float x0 = xh[a], x1 = xh[b];
        xh[a] = x0 * c - x1 * s;
        xh[b] = x1 * c + x0 * s;
      }
    }
  }
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void moe_route(const float* logits, int64_t num_tokens, int64_t num_experts, int64_t top_k,
               bool renormalize, int32_t* experts, float* weights) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    std::vector<float> p(logits + t * num_experts, logits + (t + 1) * num_experts);
    softmax(p.data(), num_experts);
    std::vector<int32_t> order(static_cast<size_t>(num_experts));
    for (int64_t e = 0; e < num_experts; ++e) order[e] = static_cast<int32_t>(e);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
    double sum = 0.0;
    for (int64_t i = 0; i < top_k; ++i) sum += p[order[i]];
    for (int64_t i = 0; i < top_k; ++i) {
      experts[t * top_k + i] = order[i];
      weights[t * top_k + i] = renormalize ? static_cast<float>(p[order[i]] / sum) : p[order[i]];
    }
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = *std::max_element(x, x + n);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  for (int64_t i = 0; i < n; ++i) x[i] /= sum;
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void attention(const float* q, const float* k, const float* v, const AttentionShape& s,
               float* out) {
  int64_t group = s.num_heads / s.num_kv_heads;
  int64_t d = s.head_dim;
  std::vector<float> scores(static_cast<size_t>(s.start_pos + s.num_tokens));
  for (int64_t t = 0; t < s.num_tokens; ++t) {
    int64_t p = s.start_pos + t;
    int64_t lo = s.sliding_window > 0 ? std::max<int64_t>(0, p - s.sliding_window + 1) : 0;
    for (int64_t h = 0; h < s.num_heads; ++h) {
      int64_t kvh = h / group;
      const float* qh = q + (t * s.num_heads + h) * d;
      for (int64_t j = lo; j <= p; ++j) {
        const float* kj = k + (j * s.num_kv_heads + kvh) * d;
        float dot = 0;
        for (int64_t i = 0; i < d; ++i) dot += qh[i] * kj[i];
        scores[j - lo] = dot * s.scale;
      }
      softmax(scores.data(), p - lo + 1);
      float* oh = out + (t * s.num_heads + h) * d;
      for (int64_t i = 0; i < d; ++i) oh[i] = 0;
      for (int64_t j = lo; j <= p; ++j) {
        const float* vj = v + (j * s.num_kv_heads + kvh) * d;
        for (int64_t i = 0; i < d; ++i) oh[i] += scores[j - lo] * vj[i];
      }
    }
  }
}

}  // namespace strata::ops::reference
