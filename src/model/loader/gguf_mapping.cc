#include "model/loader/gguf_mapping.h"

#include <cctype>
#include <utility>

namespace strata::model {
namespace {

struct NamePair {
  const char* gguf;
  const char* hf;
};

constexpr NamePair kGlobalNames[] = {
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
};

constexpr NamePair kLayerNames[] = {
    {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
};

std::optional<std::string> map_base(const std::string& base, const NamePair* table, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (base == table[i].gguf) return std::string(table[i].hf);
  }
  return std::nullopt;
}

// "blk.<layer>.<base>" split into its parts; nullopt for other names.
struct LayerName {
  std::string layer;
  std::string base;
};
std::optional<LayerName> split_layer_name(const std::string& stem) {
  if (stem.rfind("blk.", 0) != 0) return std::nullopt;
  const size_t layer_end = stem.find('.', 4);
  if (layer_end == std::string::npos || layer_end == 4) return std::nullopt;
  const std::string layer = stem.substr(4, layer_end - 4);
  for (char ch : layer) {
    if (!std::isdigit(static_cast<unsigned char>(ch))) return std::nullopt;
  }
  return LayerName{layer, stem.substr(layer_end + 1)};
}

// A stacked expert tensor (llama.cpp's converter): blk.<l>.ffn_<part>_exps.weight,
// [num_experts, n, k], split into one [n, k] view per expert under HF names.
struct ExpertTensor {
  std::string layer;
  const char* hf_part;  // the spec's gate / up / down name
};
// "blk.<layer>.<base>.weight" split into its parts; nullopt for other names.
std::optional<LayerName> split_layer_weight(const std::string& gguf_name) {
  const std::string weight = ".weight";
  if (gguf_name.size() <= weight.size() ||
      gguf_name.compare(gguf_name.size() - weight.size(), weight.size(), weight) != 0) {
    return std::nullopt;
  }
  return split_layer_name(gguf_name.substr(0, gguf_name.size() - weight.size()));
}

std::optional<ExpertTensor> gguf_expert_tensor(const std::string& gguf_name,
                                               const ArchitectureSpec& spec) {
  if (spec.feed_forward != FeedForwardKind::kMixtureOfExperts) return std::nullopt;
  std::optional<LayerName> layer = split_layer_weight(gguf_name);
  if (!layer) return std::nullopt;
  if (layer->base == "ffn_gate_exps") return ExpertTensor{layer->layer, spec.moe.gate};
  if (layer->base == "ffn_up_exps") return ExpertTensor{layer->layer, spec.moe.up};
  if (layer->base == "ffn_down_exps") return ExpertTensor{layer->layer, spec.moe.down};
  return std::nullopt;
}

// A Qwen2-MoE shared expert's tensors, under "<block>." (llama.cpp's names).
constexpr NamePair kSharedExpertNames[] = {
    {"ffn_gate_inp_shexp", "shared_expert_gate"},
    {"ffn_gate_shexp", "shared_expert.gate_proj"},
    {"ffn_up_shexp", "shared_expert.up_proj"},
    {"ffn_down_shexp", "shared_expert.down_proj"},
};

template <typename Add>
Status add_expert_views(const GgufFile& file, const GgufTensorInfo& info,
                        const ExpertTensor& experts, const ArchitectureSpec& spec, Add& add) {
  const tensor::TensorView& v = info.view;
  if (v.rank() != 3) {
    return invalid_argument(file.path() + ": tensor '" + info.name + "' has shape " +
                            v.shape_string() + "; expected [num_experts, rows, columns]");
  }
  const int64_t expert_bytes = tensor::dtype_size_bytes(v.dtype, v.dim(1) * v.dim(2));
  for (int64_t e = 0; e < v.dim(0); ++e) {
    const tensor::TensorView one{
        static_cast<const uint8_t*>(v.data) + e * expert_bytes, v.dtype, {v.dim(1), v.dim(2)}};
    const std::string name = "model.layers." + experts.layer + "." + spec.moe.block + "." +
                             spec.moe.experts + "." + std::to_string(e) + "." + experts.hf_part +
                             ".weight";
    STRATA_RETURN_IF_ERROR(add(info.name, name, one));
  }
  return Status();
}

StatusOr<const ArchitectureSpec*> find_arch(const GgufFile& file) {
  STRATA_ASSIGN_OR_RETURN(std::string name, file.get_string("general.architecture"));
  STRATA_ASSIGN_OR_RETURN(int64_t num_experts, file.get_int_or(name + ".expert_count", 0));
  std::string supported;
  const ArchitectureSpec* dense = nullptr;
  for (const ArchitectureSpec* a : all_architectures()) {
    // A dense family's GGUF name with experts is its mixture-of-experts sibling.
    if (num_experts > 0 && a->gguf_experts_of != nullptr && name == a->gguf_experts_of) return a;
    if (a->gguf_name == nullptr) continue;
    if (name == a->gguf_name) dense = a;
    supported += std::string(supported.empty() ? "" : ", ") + a->gguf_name;
  }
  if (dense != nullptr) return dense;
  return unimplemented(file.path() + ": GGUF architecture '" + name +
                       "' is not supported; supported: " + supported);
}

// Mixture-of-experts keys (<arch>.expert_*); a layer is sparse when it has a
// router tensor, so files with dense layers among sparse ones load too.
Status read_experts(const GgufFile& f, const std::string& arch, const ArchitectureSpec& spec,
                    ModelConfig* c) {
  if (spec.feed_forward != FeedForwardKind::kMixtureOfExperts) return Status();
  auto key = [&](const char* k) { return arch + "." + k; };
  MoeConfig& m = c->moe;
  STRATA_ASSIGN_OR_RETURN(m.num_experts, f.get_int(key("expert_count")));
  STRATA_ASSIGN_OR_RETURN(m.num_experts_per_tok, f.get_int(key("expert_used_count")));
  STRATA_ASSIGN_OR_RETURN(m.moe_intermediate_size,
                          f.get_int_or(key("expert_feed_forward_length"), c->intermediate_size));
  STRATA_ASSIGN_OR_RETURN(m.shared_expert_intermediate_size,
                          f.get_int_or(key("expert_shared_feed_forward_length"), 0));
  m.norm_topk_prob = spec.gguf_norm_topk_prob;
  for (int64_t l = 0; l < c->num_hidden_layers; ++l) {
    if (f.find_tensor("blk." + std::to_string(l) + ".ffn_gate_inp.weight") == nullptr) {
      m.mlp_only_layers.push_back(l);
    }
  }
  if (m.num_experts < 1 || m.num_experts_per_tok < 1 || m.num_experts_per_tok > m.num_experts) {
    return invalid_argument(f.path() + ": " + key("expert_used_count") + " " +
                            std::to_string(m.num_experts_per_tok) + " must be in [1, " +
                            key("expert_count") + " = " + std::to_string(m.num_experts) + "]");
  }
  if (spec.moe.shared_expert && m.shared_expert_intermediate_size <= 0) {
    return not_found(f.path() + ": " + key("expert_shared_feed_forward_length") +
                     " (the shared expert's width) is missing");
  }
  return Status();
}

// Shapes and numerics from "<arch>.*" keys.
Status read_shapes(const GgufFile& f, const std::string& arch, ModelConfig* c) {
  auto key = [&](const char* k) { return arch + "." + k; };
  STRATA_ASSIGN_OR_RETURN(c->max_position_embeddings, f.get_int(key("context_length")));
  STRATA_ASSIGN_OR_RETURN(c->hidden_size, f.get_int(key("embedding_length")));
  STRATA_ASSIGN_OR_RETURN(c->num_hidden_layers, f.get_int(key("block_count")));
  STRATA_ASSIGN_OR_RETURN(c->intermediate_size, f.get_int(key("feed_forward_length")));
  STRATA_ASSIGN_OR_RETURN(c->num_attention_heads, f.get_int(key("attention.head_count")));
  STRATA_ASSIGN_OR_RETURN(c->num_key_value_heads,
                          f.get_int_or(key("attention.head_count_kv"), c->num_attention_heads));
  STRATA_ASSIGN_OR_RETURN(c->rms_norm_eps, f.get_float(key("attention.layer_norm_rms_epsilon")));
  STRATA_ASSIGN_OR_RETURN(c->rope_theta, f.get_float_or(key("rope.freq_base"), 10000.0));
  const int64_t derived = c->num_attention_heads > 0 ? c->hidden_size / c->num_attention_heads : 0;
  STRATA_ASSIGN_OR_RETURN(c->head_dim, f.get_int_or(key("attention.key_length"), derived));
  STRATA_ASSIGN_OR_RETURN(int64_t value_dim,
                          f.get_int_or(key("attention.value_length"), c->head_dim));
  STRATA_ASSIGN_OR_RETURN(int64_t rope_dim, f.get_int_or(key("rope.dimension_count"), c->head_dim));
  if (value_dim != c->head_dim || rope_dim != c->head_dim) {
    return unimplemented(f.path() + ": " + key("attention.value_length") + " " +
                         std::to_string(value_dim) + " / " + key("rope.dimension_count") + " " +
                         std::to_string(rope_dim) + " differ from head_dim " +
                         std::to_string(c->head_dim) + "; not supported");
  }
  return Status();
}

// rope.scaling.* keys (only "none" is plain rope) and the rope_freqs tensor.
Status read_rope_scaling(const GgufFile& f, const std::string& arch, ModelConfig* c) {
  const std::string type_key = arch + ".rope.scaling.type";
  if (f.has(type_key)) {
    STRATA_ASSIGN_OR_RETURN(std::string type, f.get_string(type_key));
    if (type != "none") {
      return unimplemented(f.path() + ": " + type_key + " '" + type +
                           "' is not supported; supported: none (llama3 via rope_freqs)");
    }
  }
  const GgufTensorInfo* freqs = f.find_tensor("rope_freqs.weight");
  if (freqs == nullptr) return Status();
  // A bad head_dim (<= 0) cannot match a real shape; validate_model_config names it.
  if (freqs->view.shape != std::vector<int64_t>{c->head_dim / 2}) {
    return invalid_argument(f.path() + ": tensor 'rope_freqs.weight' has shape " +
                            freqs->view.shape_string() + "; expected [" +
                            std::to_string(c->head_dim / 2) + "] (head_dim / 2)");
  }
  c->rope_freq_factors.resize(c->head_dim / 2);
  tensor::convert_to_f32(freqs->view.data, freqs->view.dtype, c->head_dim / 2,
                         c->rope_freq_factors.data());
  return Status();
}

Status read_vocab(const GgufFile& f, const std::string& arch, ModelConfig* c) {
  if (const GgufTensorInfo* embed = f.find_tensor("token_embd.weight")) {
    c->vocab_size = embed->view.shape[0];
  } else if (f.has("tokenizer.ggml.tokens")) {
    STRATA_ASSIGN_OR_RETURN(uint64_t n, f.get_array_length("tokenizer.ggml.tokens"));
    c->vocab_size = static_cast<int64_t>(n);
  } else {
    STRATA_ASSIGN_OR_RETURN(c->vocab_size, f.get_int_or(arch + ".vocab_size", 0));
  }
  STRATA_ASSIGN_OR_RETURN(c->bos_token_id, f.get_int_or("tokenizer.ggml.bos_token_id", -1));
  // eot/eom end a turn in chat models; stopping on them matches llama.cpp.
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    STRATA_ASSIGN_OR_RETURN(int64_t id, f.get_int_or(key, -1));
    bool seen = false;
    for (int64_t e : c->eos_token_ids) seen = seen || e == id;
    if (id >= 0 && !seen) c->eos_token_ids.push_back(id);
  }
  return Status();
}

Status read_features(const GgufFile& f, ModelConfig* c) {
  c->tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  c->attention_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  const ArchitectureSpec& spec = architecture_spec(c->arch);
  c->qk_norm = spec.qk_norm;
  if (f.find_tensor("blk.0.attn_output.bias") != nullptr ||
      f.find_tensor("blk.0.ffn_down.bias") != nullptr) {
    return unimplemented(f.path() + ": biases on attn_output or ffn tensors are not supported");
  }
  if (spec.qkv_bias && !c->attention_bias) {
    return not_found(f.path() + ": " + spec.gguf_name +
                     " needs tensor 'blk.0.attn_q.bias', which is missing");
  }
  return Status();
}

}  // namespace

std::optional<std::string> gguf_to_hf_name(const std::string& gguf_name) {
  const size_t dot = gguf_name.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string suffix = gguf_name.substr(dot);  // ".weight" or ".bias"
  if (suffix != ".weight" && suffix != ".bias") return std::nullopt;
  const std::string stem = gguf_name.substr(0, dot);
  if (auto hf = map_base(stem, kGlobalNames, std::size(kGlobalNames))) return *hf + suffix;
  std::optional<LayerName> layer = split_layer_name(stem);
  if (!layer) return std::nullopt;
  auto hf = map_base(layer->base, kLayerNames, std::size(kLayerNames));
  if (!hf) return std::nullopt;
  return "model.layers." + layer->layer + "." + *hf + suffix;
}

std::optional<std::string> gguf_to_hf_name(const std::string& gguf_name,
                                           const ArchitectureSpec& spec) {
  if (spec.feed_forward != FeedForwardKind::kMixtureOfExperts) return gguf_to_hf_name(gguf_name);
  if (std::optional<LayerName> layer = split_layer_weight(gguf_name)) {
    const std::string block = "model.layers." + layer->layer + "." + spec.moe.block + ".";
    if (layer->base == "ffn_gate_inp") return block + spec.moe.router + ".weight";
    if (auto shared = map_base(layer->base, kSharedExpertNames, std::size(kSharedExpertNames))) {
      return block + *shared + ".weight";
    }
  }
  return gguf_to_hf_name(gguf_name);
}

StatusOr<ModelConfig> gguf_model_config(const GgufFile& file) {
  STRATA_ASSIGN_OR_RETURN(const ArchitectureSpec* arch, find_arch(file));
  ModelConfig c;
  c.arch = arch->arch;
  c.rope_style = arch->gguf_rope_style;
  // The metadata prefix: the file's own name (Mixtral's is "llama").
  STRATA_ASSIGN_OR_RETURN(const std::string gguf_arch, file.get_string("general.architecture"));
  STRATA_RETURN_IF_ERROR(read_shapes(file, gguf_arch, &c));
  STRATA_RETURN_IF_ERROR(read_rope_scaling(file, gguf_arch, &c));
  STRATA_RETURN_IF_ERROR(read_vocab(file, gguf_arch, &c));
  STRATA_RETURN_IF_ERROR(read_features(file, &c));
  STRATA_RETURN_IF_ERROR(read_experts(file, gguf_arch, *arch, &c));
  STRATA_RETURN_IF_ERROR(validate_model_config(c, file.path()));
  return c;
}

StatusOr<WeightSource> gguf_weight_source(const GgufFile& file) {
  STRATA_ASSIGN_OR_RETURN(const ArchitectureSpec* arch, find_arch(file));
  std::map<std::string, TensorEntry> entries;
  auto add = [&](const std::string& gguf_name, const std::string& name,
                 const tensor::TensorView& view) -> Status {
    if (!entries.emplace(name, TensorEntry{view, file.path()}).second) {
      return invalid_argument(file.path() + ": tensor '" + gguf_name + "' maps to '" + name +
                              "', which another tensor already uses");
    }
    return Status();
  };
  for (const GgufTensorInfo& info : file.tensors()) {
    if (std::optional<ExpertTensor> experts = gguf_expert_tensor(info.name, *arch)) {
      STRATA_RETURN_IF_ERROR(add_expert_views(file, info, *experts, *arch, add));
      continue;
    }
    const std::string name = gguf_to_hf_name(info.name, *arch).value_or(info.name);
    tensor::TensorView view = info.view;
    // llama.cpp stores the shared expert's gate as [hidden]; HF as [1, hidden].
    if (view.rank() == 1 && name.find("shared_expert_gate.weight") != std::string::npos) {
      view.shape = {1, view.dim(0)};
    }
    STRATA_RETURN_IF_ERROR(add(info.name, name, view));
  }
  WeightSource weights;
  STRATA_RETURN_IF_ERROR(weights.add_file(file.mapping(), std::move(entries)));
  return weights;
}

}  // namespace strata::model
