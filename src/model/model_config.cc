#include "model/model_config.h"

#include <algorithm>
#include <cmath>

#include "config/json_fields.h"

namespace strata::model {
namespace {

using config::JsonFields;
using nlohmann::json;

using ArchInfo = ArchitectureSpec;

std::string supported_architectures() {
  std::string s;
  for (const ArchInfo* a : all_architectures()) {
    s += std::string(s.empty() ? "" : ", ") + a->hf_name;
  }
  return s;
}

StatusOr<const ArchInfo*> find_arch(const json& config, const std::string& path) {
  std::string name;
  JsonFields fields(config, path);
  if (fields.has("architectures")) {
    const json& list = config.at("architectures");
    if (!list.is_array() || list.empty() || !list[0].is_string()) {
      return fields.type_error("architectures", "a non-empty list of strings");
    }
    name = list[0].get<std::string>();
    for (const ArchInfo* a : all_architectures()) {
      if (name == a->hf_name) return a;
    }
  } else {
    STRATA_RETURN_IF_ERROR(fields.optional_string("model_type", &name));
    for (const ArchInfo* a : all_architectures()) {
      if (name == a->model_type) return a;
    }
    if (name.empty()) name = "(none: no 'architectures' or 'model_type')";
  }
  return unimplemented(path + ": architecture '" + name +
                       "' is not supported; supported: " + supported_architectures());
}

Status parse_llama3_scaling(const JsonFields& f, RopeScaling* s) {
  int64_t original = 0;
  STRATA_RETURN_IF_ERROR(f.required_double("factor", &s->factor));
  STRATA_RETURN_IF_ERROR(f.required_double("low_freq_factor", &s->low_freq_factor));
  STRATA_RETURN_IF_ERROR(f.required_double("high_freq_factor", &s->high_freq_factor));
  STRATA_RETURN_IF_ERROR(f.required_int("original_max_position_embeddings", &original));
  s->original_max_position_embeddings = original;
  s->type = "llama3";
  return Status();
}

// rope_scaling (or transformers v5's rope_parameters): only "llama3" changes
// anything; "default" is plain rope; other types are not implemented.
Status parse_rope(const json& config, const std::string& path, ModelConfig* c) {
  JsonFields top(config, path);
  const char* key = top.has("rope_scaling") ? "rope_scaling" : "rope_parameters";
  if (!top.has(key)) return Status();
  const json& obj = config.at(key);
  if (!obj.is_object()) return top.type_error(key, "an object or null");
  JsonFields f = top.nested(key);
  STRATA_RETURN_IF_ERROR(f.optional_double("rope_theta", &c->rope_theta));
  std::string type;
  STRATA_RETURN_IF_ERROR(f.optional_string("type", &type));
  STRATA_RETURN_IF_ERROR(f.optional_string("rope_type", &type));
  if (type.empty() || type == "default") return Status();
  if (type == "llama3") return parse_llama3_scaling(f, &c->rope_scaling);
  return unimplemented(path + ": " + key + " type '" + type +
                       "' is not supported; supported: llama3 (or none)");
}

Status parse_shapes(const JsonFields& f, const ArchInfo& a, const std::string& path,
                    ModelConfig* c) {
  STRATA_RETURN_IF_ERROR(f.required_int("vocab_size", &c->vocab_size));
  STRATA_RETURN_IF_ERROR(f.required_int("hidden_size", &c->hidden_size));
  STRATA_RETURN_IF_ERROR(f.required_int("intermediate_size", &c->intermediate_size));
  STRATA_RETURN_IF_ERROR(f.required_int("num_hidden_layers", &c->num_hidden_layers));
  STRATA_RETURN_IF_ERROR(f.required_int("num_attention_heads", &c->num_attention_heads));
  c->num_key_value_heads = c->num_attention_heads;
  STRATA_RETURN_IF_ERROR(f.optional_int("num_key_value_heads", &c->num_key_value_heads));
  c->max_position_embeddings = a.default_max_position_embeddings;
  STRATA_RETURN_IF_ERROR(f.optional_int("max_position_embeddings", &c->max_position_embeddings));
  c->head_dim = a.default_head_dim;
  STRATA_RETURN_IF_ERROR(f.optional_int("head_dim", &c->head_dim));
  if (c->head_dim == 0 && c->num_attention_heads > 0) {
    if (c->hidden_size % c->num_attention_heads != 0) {
      return invalid_argument(path + ": hidden_size " + std::to_string(c->hidden_size) +
                              " is not divisible by num_attention_heads " +
                              std::to_string(c->num_attention_heads) +
                              " and head_dim is not given");
    }
    c->head_dim = c->hidden_size / c->num_attention_heads;
  }
  return Status();
}

// Features that vary by architecture: biases, q/k norm, sliding window.
Status parse_features(const JsonFields& f, const ArchInfo& a, const std::string& path,
                      ModelConfig* c) {
  bool attention_bias = false, mlp_bias = false, use_sliding_window = false;
  STRATA_RETURN_IF_ERROR(f.optional_bool("attention_bias", &attention_bias));
  STRATA_RETURN_IF_ERROR(f.optional_bool("mlp_bias", &mlp_bias));
  STRATA_RETURN_IF_ERROR(f.optional_bool("use_sliding_window", &use_sliding_window));
  // Llama and Qwen3 put attention_bias on o_proj too; no released model does.
  if (a.attention_bias_means_o_proj && attention_bias) {
    return unimplemented(path + ": attention_bias = true (bias on o_proj) is not supported");
  }
  if (mlp_bias) return unimplemented(path + ": mlp_bias = true is not supported");
  c->attention_bias = a.qkv_bias;
  c->qk_norm = a.qk_norm;
  if (a.sliding_window == SlidingWindowSource::kFromConfig) {
    // Absent: transformers' default 4096; null: no window (Mistral v0.2+).
    c->sliding_window = f.is_null("sliding_window") ? 0 : a.default_sliding_window;
    STRATA_RETURN_IF_ERROR(f.optional_int("sliding_window", &c->sliding_window));
  } else if (use_sliding_window) {
    // Qwen applies the window only to layers >= max_window_layers.
    return unimplemented(path + ": use_sliding_window = true is not supported");
  }
  return Status();
}

// Mixture-of-experts fields (transformers' defaults for absent ones).
Status parse_moe(const JsonFields& f, const ArchInfo& a, const std::string& path,
                 ModelConfig* c) {
  if (a.feed_forward != FeedForwardKind::kMixtureOfExperts) return Status();
  MoeConfig& m = c->moe;
  const MoeNames& names = a.moe;
  STRATA_RETURN_IF_ERROR(f.required_int(names.num_experts_key, &m.num_experts));
  STRATA_RETURN_IF_ERROR(f.required_int("num_experts_per_tok", &m.num_experts_per_tok));
  STRATA_RETURN_IF_ERROR(f.required_int(names.expert_intermediate_key, &m.moe_intermediate_size));
  STRATA_RETURN_IF_ERROR(f.optional_bool("norm_topk_prob", &m.norm_topk_prob));
  STRATA_RETURN_IF_ERROR(f.optional_int("decoder_sparse_step", &m.decoder_sparse_step));
  STRATA_RETURN_IF_ERROR(f.optional_token_ids("mlp_only_layers", &m.mlp_only_layers));
  if (names.shared_expert) {
    STRATA_RETURN_IF_ERROR(f.required_int("shared_expert_intermediate_size",
                                          &m.shared_expert_intermediate_size));
  }
  if (m.num_experts < 1 || m.num_experts_per_tok < 1 || m.num_experts_per_tok > m.num_experts) {
    return invalid_argument(path + ": num_experts_per_tok " +
                            std::to_string(m.num_experts_per_tok) + " must be in [1, " +
                            names.num_experts_key + " = " + std::to_string(m.num_experts) + "]");
  }
  if (m.moe_intermediate_size < 1 || m.decoder_sparse_step < 1 ||
      m.shared_expert_intermediate_size < 0) {
    return invalid_argument(path + ": " + names.expert_intermediate_key +
                            ", decoder_sparse_step and shared_expert_intermediate_size must be " +
                            "positive");
  }
  return Status();
}

Status parse_numerics(const JsonFields& f, const ArchInfo& a, const std::string& path,
                      ModelConfig* c) {
  std::string act = "silu";
  STRATA_RETURN_IF_ERROR(f.optional_string("hidden_act", &act));
  if (act != "silu") {
    return unimplemented(path + ": hidden_act '" + act + "' is not supported; supported: silu");
  }
  STRATA_RETURN_IF_ERROR(f.optional_double("rms_norm_eps", &c->rms_norm_eps));
  STRATA_RETURN_IF_ERROR(f.optional_double("rope_theta", &c->rope_theta));
  STRATA_RETURN_IF_ERROR(f.optional_bool("tie_word_embeddings", &c->tie_word_embeddings));
  c->bos_token_id = a.default_bos_token_id;
  STRATA_RETURN_IF_ERROR(f.optional_int("bos_token_id", &c->bos_token_id));
  if (a.default_eos_token_id >= 0) c->eos_token_ids = {a.default_eos_token_id};
  return f.optional_token_ids("eos_token_id", &c->eos_token_ids);
}

Status check_positive(const std::string& path, const char* name, int64_t value) {
  if (value > 0) return Status();
  return invalid_argument(path + ": " + name + " must be positive; got " + std::to_string(value));
}

Status validate_rope(const ModelConfig& c, const std::string& path) {
  if (!(c.rope_theta > 0)) {
    return invalid_argument(path + ": rope_theta must be positive; got " +
                            std::to_string(c.rope_theta));
  }
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "llama3" &&
      !(s.factor > 0 && s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor &&
        s.original_max_position_embeddings > 0)) {
    return invalid_argument(path +
                            ": llama3 rope_scaling needs factor > 0, 0 < low_freq_factor < "
                            "high_freq_factor and original_max_position_embeddings > 0");
  }
  if (!c.rope_freq_factors.empty() &&
      static_cast<int64_t>(c.rope_freq_factors.size()) != c.head_dim / 2) {
    return invalid_argument(path + ": rope_freq_factors has " +
                            std::to_string(c.rope_freq_factors.size()) + " values; expected " +
                            std::to_string(c.head_dim / 2) + " (head_dim / 2)");
  }
  return Status();
}

// Applies transformers' _compute_llama3_parameters in float32, op by op.
void apply_llama3_scaling(const RopeScaling& s, std::vector<float>& inv_freq) {
  const float factor = static_cast<float>(s.factor);
  const float old_len = static_cast<float>(s.original_max_position_embeddings);
  const double old_len_d = static_cast<double>(s.original_max_position_embeddings);
  const float low_wavelen = static_cast<float>(old_len_d / s.low_freq_factor);
  const float high_wavelen = static_cast<float>(old_len_d / s.high_freq_factor);
  const float two_pi = static_cast<float>(2 * M_PI);
  const float low = static_cast<float>(s.low_freq_factor);
  const float span = static_cast<float>(s.high_freq_factor - s.low_freq_factor);
  for (float& f : inv_freq) {
    const float wavelen = (1.0f / f) * two_pi;
    const float scaled = wavelen > low_wavelen ? f / factor : f;
    const float smooth = ((1.0f / wavelen) * old_len - low) / span;
    const float smoothed = ((1.0f - smooth) * scaled) / factor + smooth * scaled;
    const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
    f = medium ? smoothed : scaled;
  }
}

}  // namespace

const char* architecture_name(Architecture arch) { return architecture_spec(arch).hf_name; }

Status validate_model_config(const ModelConfig& c, const std::string& path) {
  STRATA_RETURN_IF_ERROR(check_positive(path, "vocab_size", c.vocab_size));
  STRATA_RETURN_IF_ERROR(check_positive(path, "hidden_size", c.hidden_size));
  STRATA_RETURN_IF_ERROR(check_positive(path, "intermediate_size", c.intermediate_size));
  STRATA_RETURN_IF_ERROR(check_positive(path, "num_hidden_layers", c.num_hidden_layers));
  STRATA_RETURN_IF_ERROR(check_positive(path, "num_attention_heads", c.num_attention_heads));
  STRATA_RETURN_IF_ERROR(check_positive(path, "num_key_value_heads", c.num_key_value_heads));
  STRATA_RETURN_IF_ERROR(check_positive(path, "head_dim", c.head_dim));
  STRATA_RETURN_IF_ERROR(
      check_positive(path, "max_position_embeddings", c.max_position_embeddings));
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return invalid_argument(
        path + ": num_attention_heads " + std::to_string(c.num_attention_heads) +
        " is not a multiple of num_key_value_heads " + std::to_string(c.num_key_value_heads));
  }
  if (c.head_dim % 2 != 0) {
    return invalid_argument(path + ": head_dim must be even for rope; got " +
                            std::to_string(c.head_dim));
  }
  if (!(c.rms_norm_eps > 0)) {
    return invalid_argument(path + ": rms_norm_eps must be positive; got " +
                            std::to_string(c.rms_norm_eps));
  }
  if (c.sliding_window < 0) {
    return invalid_argument(path + ": sliding_window must be >= 0; got " +
                            std::to_string(c.sliding_window));
  }
  return validate_rope(c, path);
}

StatusOr<ModelConfig> parse_hf_config(const std::string& json_text, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(json config, config::parse_json_object(json_text, path));
  STRATA_ASSIGN_OR_RETURN(const ArchInfo* arch, find_arch(config, path));
  ModelConfig c;
  c.arch = arch->arch;
  c.rope_style = ops::RopeStyle::kNeox;
  JsonFields fields(config, path);
  STRATA_RETURN_IF_ERROR(parse_shapes(fields, *arch, path, &c));
  STRATA_RETURN_IF_ERROR(parse_features(fields, *arch, path, &c));
  STRATA_RETURN_IF_ERROR(parse_moe(fields, *arch, path, &c));
  STRATA_RETURN_IF_ERROR(parse_numerics(fields, *arch, path, &c));
  STRATA_RETURN_IF_ERROR(parse_rope(config, path, &c));
  STRATA_RETURN_IF_ERROR(validate_model_config(c, path));
  return c;
}

StatusOr<GenerationConfig> parse_generation_config(const std::string& json_text,
                                                   const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(json config, config::parse_json_object(json_text, path));
  JsonFields f(config, path);
  GenerationConfig g;
  g.present = true;
  STRATA_RETURN_IF_ERROR(f.optional_double("temperature", &g.temperature));
  STRATA_RETURN_IF_ERROR(f.optional_double("top_p", &g.top_p));
  STRATA_RETURN_IF_ERROR(f.optional_int("top_k", &g.top_k));
  STRATA_RETURN_IF_ERROR(f.optional_double("repetition_penalty", &g.repetition_penalty));
  STRATA_RETURN_IF_ERROR(f.optional_int("bos_token_id", &g.bos_token_id));
  STRATA_RETURN_IF_ERROR(f.optional_token_ids("eos_token_id", &g.eos_token_ids));
  if (g.temperature < 0 || g.top_p <= 0 || g.top_p > 1 || g.top_k < 0 ||
      g.repetition_penalty <= 0) {
    return invalid_argument(path +
                            ": sampling defaults out of range (temperature >= 0, "
                            "0 < top_p <= 1, top_k >= 0, repetition_penalty > 0)");
  }
  return g;
}

bool MoeConfig::is_sparse_layer(int64_t layer_idx) const {
  if (!is_moe() || decoder_sparse_step <= 0 || (layer_idx + 1) % decoder_sparse_step != 0) {
    return false;
  }
  return std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer_idx) ==
         mlp_only_layers.end();
}

std::vector<float> ModelConfig::rope_inv_freq() const {
  // inv_freq = 1 / base ** (arange(0, dim, 2).float() / dim), all float32.
  std::vector<float> inv_freq(head_dim / 2);
  const float base = static_cast<float>(rope_theta);
  const float dim = static_cast<float>(head_dim);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const float exponent = static_cast<float>(2 * i) / dim;
    const float power = static_cast<float>(std::pow(static_cast<double>(base), exponent));
    inv_freq[i] = 1.0f / power;
  }
  if (rope_scaling.type == "llama3") apply_llama3_scaling(rope_scaling, inv_freq);
  for (size_t i = 0; i < inv_freq.size() && i < rope_freq_factors.size(); ++i) {
    inv_freq[i] /= rope_freq_factors[i];
  }
  return inv_freq;
}

}  // namespace strata::model
