#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "attention/paged_attention.h"
#include "base/check.h"

namespace strata::model {
namespace {

std::string layer_prefix(int64_t layer_idx) {
  return "model.layers." + std::to_string(layer_idx) + ".";
}

// Small tensors (norms, biases) are used as f32 whatever their stored dtype.
StatusOr<std::vector<float>> load_f32(const WeightSource& weights, const std::string& name,
                                      std::vector<int64_t> shape) {
  STRATA_ASSIGN_OR_RETURN(tensor::TensorView view, weights.get(name, shape));
  std::vector<float> out(view.num_elements());
  tensor::convert_to_f32(view.data, view.dtype, view.num_elements(), out.data());
  return out;
}

StatusOr<ops::MatmulWeight> load_linear(const WeightSource& weights, const std::string& name,
                                        int64_t n, int64_t k) {
  STRATA_ASSIGN_OR_RETURN(tensor::TensorView view, weights.get(name, {n, k}));
  const int64_t block = tensor::dtype_block_size(view.dtype);
  if (k % block != 0) {
    return invalid_argument(name + ": " + tensor::dtype_name(view.dtype) +
                            " needs in_features divisible by " + std::to_string(block) + ", got " +
                            std::to_string(k));
  }
  return ops::MatmulWeight::prepare(view);
}

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

}  // namespace

StatusOr<std::unique_ptr<Model>> Model::load(ModelFiles files, const LoadProgress& progress) {
  std::unique_ptr<Model> model(new Model(std::move(files)));
  STRATA_RETURN_IF_ERROR(model->prepare_weights(progress).with_prefix(model->files_.path));
  return model;
}

Status Model::prepare_weights(const LoadProgress& progress) {
  const ModelConfig& c = config_;
  const WeightSource& w = files_.weights;
  STRATA_ASSIGN_OR_RETURN(embed_tokens_,
                          w.get("model.embed_tokens.weight", {c.vocab_size, c.hidden_size}));
  if (c.hidden_size % tensor::dtype_block_size(embed_tokens_.dtype) != 0) {
    return invalid_argument(std::string("model.embed_tokens.weight: ") +
                            tensor::dtype_name(embed_tokens_.dtype) + " needs hidden_size % " +
                            std::to_string(tensor::dtype_block_size(embed_tokens_.dtype)) +
                            " == 0");
  }
  STRATA_ASSIGN_OR_RETURN(final_norm_, load_f32(w, "model.norm.weight", {c.hidden_size}));
  if (c.tie_word_embeddings && !w.has("lm_head.weight")) {
    lm_head_ = ops::MatmulWeight::prepare(embed_tokens_);
  } else {
    STRATA_ASSIGN_OR_RETURN(lm_head_,
                            load_linear(w, "lm_head.weight", c.vocab_size, c.hidden_size));
  }
  layers_.resize(c.num_hidden_layers);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    STRATA_RETURN_IF_ERROR(prepare_layer(i, layers_[i]));
    if (progress) progress(i + 1, c.num_hidden_layers);
  }
  rope_inv_freq_ = c.rope_inv_freq();
  kv_scales_ = !layers_.empty() &&
               std::all_of(layers_.begin(), layers_.end(), [](const LayerWeights& l) {
                 return l.k_scale > 0.0f && l.v_scale > 0.0f;
               });
  return Status();
}

Status Model::prepare_layer(int64_t layer_idx, LayerWeights& layer) {
  const ModelConfig& c = config_;
  const WeightSource& w = files_.weights;
  const std::string p = layer_prefix(layer_idx);
  const int64_t q_dim = c.num_attention_heads * c.head_dim;
  const int64_t kv_dim = c.num_key_value_heads * c.head_dim;
  STRATA_ASSIGN_OR_RETURN(layer.input_norm, load_f32(w, p + "input_layernorm.weight",
                                                     {c.hidden_size}));
  STRATA_ASSIGN_OR_RETURN(layer.post_attention_norm,
                          load_f32(w, p + "post_attention_layernorm.weight", {c.hidden_size}));
  STRATA_ASSIGN_OR_RETURN(layer.q_proj, load_linear(w, p + "self_attn.q_proj.weight", q_dim,
                                                    c.hidden_size));
  STRATA_ASSIGN_OR_RETURN(layer.k_proj, load_linear(w, p + "self_attn.k_proj.weight", kv_dim,
                                                    c.hidden_size));
  STRATA_ASSIGN_OR_RETURN(layer.v_proj, load_linear(w, p + "self_attn.v_proj.weight", kv_dim,
                                                    c.hidden_size));
  STRATA_ASSIGN_OR_RETURN(layer.o_proj, load_linear(w, p + "self_attn.o_proj.weight",
                                                    c.hidden_size, q_dim));
  if (c.attention_bias) {
    STRATA_ASSIGN_OR_RETURN(layer.q_bias, load_f32(w, p + "self_attn.q_proj.bias", {q_dim}));
    STRATA_ASSIGN_OR_RETURN(layer.k_bias, load_f32(w, p + "self_attn.k_proj.bias", {kv_dim}));
    STRATA_ASSIGN_OR_RETURN(layer.v_bias, load_f32(w, p + "self_attn.v_proj.bias", {kv_dim}));
  }
  STRATA_ASSIGN_OR_RETURN(layer.k_scale, load_kv_scale(w, p, "k"));
  STRATA_ASSIGN_OR_RETURN(layer.v_scale, load_kv_scale(w, p, "v"));
  if (c.qk_norm) {
    STRATA_ASSIGN_OR_RETURN(layer.q_norm, load_f32(w, p + "self_attn.q_norm.weight",
                                                   {c.head_dim}));
    STRATA_ASSIGN_OR_RETURN(layer.k_norm, load_f32(w, p + "self_attn.k_norm.weight",
                                                   {c.head_dim}));
  }
  STRATA_ASSIGN_OR_RETURN(layer.gate_proj, load_linear(w, p + "mlp.gate_proj.weight",
                                                       c.intermediate_size, c.hidden_size));
  STRATA_ASSIGN_OR_RETURN(layer.up_proj, load_linear(w, p + "mlp.up_proj.weight",
                                                     c.intermediate_size, c.hidden_size));
  STRATA_ASSIGN_OR_RETURN(layer.down_proj, load_linear(w, p + "mlp.down_proj.weight",
                                                       c.hidden_size, c.intermediate_size));
  return Status();
}

int64_t Model::decode_weight_bytes() const {
  int64_t bytes = lm_head_.size_bytes() + embed_tokens_.row_bytes();
  for (const LayerWeights& l : layers_) {
    for (const ops::MatmulWeight* m :
         {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) {
      bytes += m->size_bytes();
    }
  }
  return bytes;
}

int64_t Model::num_parameters() const {
  int64_t n = 0;
  for (const std::string& name : files_.weights.names()) {
    n += files_.weights.find(name)->view.num_elements();
  }
  return n;
}

tensor::KvRowLayout Model::kv_row_layout(tensor::KvCacheDtype dtype) const {
  return {dtype, config_.num_key_value_heads, config_.head_dim};
}

attention::KvArena Model::make_kv_arena(int64_t num_blocks, int64_t block_size,
                                        tensor::KvCacheDtype dtype) const {
  return attention::KvArena(config_.num_hidden_layers, num_blocks, block_size,
                            kv_row_layout(dtype));
}

int64_t Model::kv_bytes_per_block(int64_t block_size, tensor::KvCacheDtype dtype) const {
  return attention::KvArena::bytes_per_block(config_.num_hidden_layers, block_size,
                                             kv_row_layout(dtype));
}

ForwardBatch ForwardBatch::single_sequence(const int32_t* tokens, int64_t num_tokens,
                                           int64_t start, bool all_logits) {
  ForwardBatch batch;
  batch.token_ids.assign(tokens, tokens + num_tokens);
  for (int64_t t = 0; t < num_tokens; ++t) {
    batch.positions.push_back(static_cast<int32_t>(start + t));
    batch.attn.slot_mapping.push_back(start + t);
  }
  batch.attn.query_start_loc = {0, static_cast<int32_t>(num_tokens)};
  batch.attn.seq_lens = {static_cast<int32_t>(start + num_tokens)};
  batch.attn.block_tables = {0};
  batch.attn.max_blocks_per_seq = 1;
  for (int64_t t = all_logits ? 0 : num_tokens - 1; t < num_tokens; ++t) {
    batch.logits_indices.push_back(static_cast<int32_t>(t));
  }
  return batch;
}

void Model::embed(const int32_t* tokens, int64_t num_tokens, float* x) const {
  const int64_t hidden = config_.hidden_size;
  const auto* base = static_cast<const uint8_t*>(embed_tokens_.data);
  const int64_t row_bytes = embed_tokens_.row_bytes();
  for (int64_t t = 0; t < num_tokens; ++t) {
    STRATA_CHECK(tokens[t] >= 0 && tokens[t] < config_.vocab_size)
        << "token id " << tokens[t] << " outside vocabulary of " << config_.vocab_size;
    tensor::convert_to_f32(base + tokens[t] * row_bytes, embed_tokens_.dtype, hidden,
                           x + t * hidden);
  }
}

void Model::attention_block(const LayerWeights& layer, int64_t layer_idx, float* x,
                            const ForwardBatch& batch, attention::KvArena& kv,
                            ThreadPool& pool) const {
  const ModelConfig& c = config_;
  const int64_t num_tokens = static_cast<int64_t>(batch.token_ids.size());
  const int64_t hidden = c.hidden_size;
  const int64_t q_dim = c.num_attention_heads * c.head_dim;
  const int64_t kv_dim = c.num_key_value_heads * c.head_dim;

  tensor::AlignedBuffer<float> h(num_tokens * hidden);
  tensor::AlignedBuffer<float> q(num_tokens * q_dim);
  tensor::AlignedBuffer<float> k(num_tokens * kv_dim);
  tensor::AlignedBuffer<float> v(num_tokens * kv_dim);
  tensor::AlignedBuffer<float> attn(num_tokens * q_dim);
  ops::rms_norm(x, layer.input_norm.data(), num_tokens, hidden, c.rms_norm_eps, h.data());

  auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };
  ops::matmul(h.data(), num_tokens, layer.q_proj, bias(layer.q_bias), q.data(), pool);
  ops::matmul(h.data(), num_tokens, layer.k_proj, bias(layer.k_bias), k.data(), pool);
  ops::matmul(h.data(), num_tokens, layer.v_proj, bias(layer.v_bias), v.data(), pool);
  if (c.qk_norm) {
    ops::rms_norm(q.data(), layer.q_norm.data(), num_tokens * c.num_attention_heads, c.head_dim,
                  c.rms_norm_eps, q.data());
    ops::rms_norm(k.data(), layer.k_norm.data(), num_tokens * c.num_key_value_heads, c.head_dim,
                  c.rms_norm_eps, k.data());
  }
  ops::rope(q.data(), batch.positions.data(), num_tokens, c.num_attention_heads, c.head_dim,
            rope_inv_freq_.data(), c.rope_style);
  ops::rope(k.data(), batch.positions.data(), num_tokens, c.num_key_value_heads, c.head_dim,
            rope_inv_freq_.data(), c.rope_style);

  // Every new K/V row of the step is in the cache before any attention reads.
  // Checkpoint scales apply only when every layer has them (the plain
  // dtypes ignore them).
  attention::reshape_and_cache(k.data(), v.data(), batch.attn, kv.layout(),
                               kv_scales_ ? layer.k_scale : 0.0f,
                               kv_scales_ ? layer.v_scale : 0.0f, kv.k(layer_idx),
                               kv.v(layer_idx));
  attention::PagedAttentionParams params{
      c.num_attention_heads,
      c.num_key_value_heads,
      c.head_dim,
      kv.block_size(),
      static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim))),
      c.sliding_window,
      kv.layout().dtype};
  attention::paged_attention(q.data(), kv.k(layer_idx), kv.v(layer_idx), batch.attn, params,
                             attn.data(), pool);
  ops::matmul(attn.data(), num_tokens, layer.o_proj, nullptr, h.data(), pool);
  ops::add_inplace(x, h.data(), num_tokens * hidden);
}

void Model::mlp_block(const LayerWeights& layer, float* x, int64_t num_tokens,
                      ThreadPool& pool) const {
  const int64_t hidden = config_.hidden_size;
  const int64_t inter = config_.intermediate_size;
  tensor::AlignedBuffer<float> h(num_tokens * hidden);
  tensor::AlignedBuffer<float> gate(num_tokens * inter);
  tensor::AlignedBuffer<float> up(num_tokens * inter);
  ops::rms_norm(x, layer.post_attention_norm.data(), num_tokens, hidden, config_.rms_norm_eps,
                h.data());
  ops::matmul(h.data(), num_tokens, layer.gate_proj, nullptr, gate.data(), pool);
  ops::matmul(h.data(), num_tokens, layer.up_proj, nullptr, up.data(), pool);
  ops::silu_mul(gate.data(), up.data(), num_tokens * inter, gate.data());
  ops::matmul(gate.data(), num_tokens, layer.down_proj, nullptr, h.data(), pool);
  ops::add_inplace(x, h.data(), num_tokens * hidden);
}

void Model::forward(const ForwardBatch& batch, attention::KvArena& kv, float* logits,
                    ThreadPool& pool) const {
  const int64_t num_tokens = static_cast<int64_t>(batch.token_ids.size());
  STRATA_CHECK(num_tokens > 0);
  STRATA_CHECK(static_cast<int64_t>(batch.positions.size()) == num_tokens);
  STRATA_CHECK(batch.attn.num_tokens() == num_tokens);
  const int64_t hidden = config_.hidden_size;
  tensor::AlignedBuffer<float> x(num_tokens * hidden);
  embed(batch.token_ids.data(), num_tokens, x.data());
  for (int64_t l = 0; l < config_.num_hidden_layers; ++l) {
    attention_block(layers_[l], l, x.data(), batch, kv, pool);
    mlp_block(layers_[l], x.data(), num_tokens, pool);
  }
  // Only the rows that produce logits go through the final norm and lm_head.
  const int64_t num_out = static_cast<int64_t>(batch.logits_indices.size());
  tensor::AlignedBuffer<float> last(num_out * hidden);
  for (int64_t i = 0; i < num_out; ++i) {
    const float* row = x.data() + int64_t{batch.logits_indices[i]} * hidden;
    std::copy(row, row + hidden, last.data() + i * hidden);
  }
  ops::rms_norm(last.data(), final_norm_.data(), num_out, hidden, config_.rms_norm_eps,
                last.data());
  ops::matmul(last.data(), num_out, lm_head_, nullptr, logits, pool);
}

}  // namespace strata::model
