#include "model/layers/attention.h"

#include <algorithm>
#include <cmath>

namespace strata::model {
namespace {

// A scalar fp8 KV scale under any of vLLM's names; 0 when absent.
StatusOr<float> load_kv_scale(const WeightSource& weights, const std::string& prefix,
                              const std::string& which) {
  for (const std::string& name :
       {prefix + "self_attn." + which + "_scale", prefix + "self_attn.attn." + which + "_scale",
        prefix + "self_attn." + which + "_proj.output_scale"}) {
    if (!weights.has(name)) continue;
    const tensor::TensorView& view = weights.find(name)->view;
    if (view.num_elements() != 1) {
      return invalid_argument(name + ": a KV scale must hold one value, got " +
                              std::to_string(view.num_elements()));
    }
    float scale = 0.0f;
    tensor::convert_to_f32(view.data, view.dtype, 1, &scale);
    if (!(scale > 0.0f) || !std::isfinite(scale)) {
      return invalid_argument(name + ": a KV scale must be positive and finite, got " +
                              std::to_string(scale));
    }
    return scale;
  }
  return 0.0f;
}

// Rows [0, rows) of `src` [rows, stride], columns [col, col + n) -> dst [rows, n].
void copy_columns(const float* src, int64_t rows, int64_t stride, int64_t col, int64_t n,
                  float* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    std::copy(src + r * stride + col, src + r * stride + col + n, dst + r * n);
  }
}

}  // namespace

StatusOr<AttentionLayer> AttentionLayer::load(const WeightSource& w, const std::string& p,
                                              const ModelConfig& c) {
  AttentionLayer a;
  a.num_heads_ = c.num_attention_heads;
  a.num_kv_heads_ = c.num_key_value_heads;
  a.head_dim_ = c.head_dim;
  a.sliding_window_ = c.sliding_window;
  a.rope_style_ = c.rope_style;
  const int64_t q_dim = c.num_attention_heads * c.head_dim;
  const int64_t kv_dim = c.num_key_value_heads * c.head_dim;
  STRATA_ASSIGN_OR_RETURN(a.qkv_, FusedLinear::load(w,
                                                    {{p + "self_attn.q_proj.weight", q_dim},
                                                     {p + "self_attn.k_proj.weight", kv_dim},
                                                     {p + "self_attn.v_proj.weight", kv_dim}},
                                                    c.hidden_size));
  STRATA_ASSIGN_OR_RETURN(a.o_proj_,
                          load_linear(w, p + "self_attn.o_proj.weight", c.hidden_size, q_dim));
  if (c.attention_bias) {
    for (const auto& [name, n] : {std::pair{"q", q_dim}, {"k", kv_dim}, {"v", kv_dim}}) {
      STRATA_ASSIGN_OR_RETURN(std::vector<float> bias,
                              load_f32(w, p + "self_attn." + name + "_proj.bias", {n}));
      a.qkv_bias_.insert(a.qkv_bias_.end(), bias.begin(), bias.end());
    }
  }
  STRATA_ASSIGN_OR_RETURN(a.k_scale_, load_kv_scale(w, p, "k"));
  STRATA_ASSIGN_OR_RETURN(a.v_scale_, load_kv_scale(w, p, "v"));
  if (c.qk_norm) {
    STRATA_ASSIGN_OR_RETURN(
        a.q_norm_, RmsNorm::load(w, p + "self_attn.q_norm.weight", c.head_dim, c.rms_norm_eps));
    STRATA_ASSIGN_OR_RETURN(
        a.k_norm_, RmsNorm::load(w, p + "self_attn.k_norm.weight", c.head_dim, c.rms_norm_eps));
    a.has_qk_norm_ = true;
  }
  return a;
}

void AttentionLayer::split_qkv(const ForwardContext& ctx, float** q, float** k, float** v) const {
  Workspace& ws = ctx.workspace;
  const int64_t num_tokens = ctx.batch.num_tokens();
  const int64_t q_dim = num_heads_ * head_dim_, kv_dim = num_kv_heads_ * head_dim_;
  if (num_tokens == 1) {  // one row: q, k and v are already contiguous
    *q = ws.qkv();
    *k = ws.qkv() + q_dim;
    *v = ws.qkv() + q_dim + kv_dim;
    return;
  }
  const int64_t stride = q_dim + 2 * kv_dim;
  copy_columns(ws.qkv(), num_tokens, stride, 0, q_dim, ws.q());
  copy_columns(ws.qkv(), num_tokens, stride, q_dim, kv_dim, ws.k());
  copy_columns(ws.qkv(), num_tokens, stride, q_dim + kv_dim, kv_dim, ws.v());
  *q = ws.q();
  *k = ws.k();
  *v = ws.v();
}

void AttentionLayer::forward(const ForwardContext& ctx, int64_t layer_idx, const float* in,
                             float* out) const {
  const ForwardBatch& batch = ctx.batch;
  const int64_t num_tokens = batch.num_tokens();
  Workspace& ws = ctx.workspace;
  qkv_.forward(ctx.backend, in, num_tokens, qkv_bias_.empty() ? nullptr : qkv_bias_.data(),
               ws.qkv(), ws.split_scratch());
  float *q, *k, *v;
  split_qkv(ctx, &q, &k, &v);
  if (has_qk_norm_) {
    q_norm_.apply(ctx.backend, q, num_tokens * num_heads_, q);
    k_norm_.apply(ctx.backend, k, num_tokens * num_kv_heads_, k);
  }
  ctx.backend.rope(q, batch.positions.data(), num_tokens, num_heads_, head_dim_, ctx.rope_inv_freq,
                   rope_style_);
  ctx.backend.rope(k, batch.positions.data(), num_tokens, num_kv_heads_, head_dim_,
                   ctx.rope_inv_freq, rope_style_);

  // Every new K/V row of the step is in the cache before any attention reads.
  // Checkpoint scales apply only when every layer has them (the plain
  // dtypes ignore them).
  backend::KvMemory& kv = ctx.kv;
  ctx.backend.reshape_and_cache(k, v, batch.attn, ctx.use_kv_scales ? k_scale_ : 0.0f,
                                ctx.use_kv_scales ? v_scale_ : 0.0f, kv, layer_idx);
  const attention::PagedAttentionParams params{
      num_heads_,
      num_kv_heads_,
      head_dim_,
      kv.block_size(),
      static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim_))),
      sliding_window_,
      kv.layout().dtype};
  ctx.backend.paged_attention(q, kv, layer_idx, batch.attn, params, ws.attn());
  ctx.backend.matmul(ws.attn(), num_tokens, o_proj_, nullptr, out);
}

}  // namespace strata::model
