// Tiny model fixtures for the loader tests (see test_files.h).
#include "model/loader/test_files.h"

namespace strata::model::testing {
namespace {

struct TensorSpec {
  std::string suffix;  // HF name after "model.layers.N." or the global name
  std::string gguf;    // GGUF name after "blk.N." or the global name
  std::vector<int64_t> shape;
  bool linear;  // stored with the linear type in GGUF
};

std::vector<TensorSpec> layer_specs(const std::string& family, const TinyShape& s) {
  const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  std::vector<TensorSpec> specs = {
      {"input_layernorm.weight", "attn_norm.weight", {s.hidden}, false},
      {"self_attn.q_proj.weight", "attn_q.weight", {q, s.hidden}, true},
      {"self_attn.k_proj.weight", "attn_k.weight", {kv, s.hidden}, true},
      {"self_attn.v_proj.weight", "attn_v.weight", {kv, s.hidden}, true},
      {"self_attn.o_proj.weight", "attn_output.weight", {s.hidden, q}, true},
      {"post_attention_layernorm.weight", "ffn_norm.weight", {s.hidden}, false},
      {"mlp.gate_proj.weight", "ffn_gate.weight", {s.intermediate, s.hidden}, true},
      {"mlp.up_proj.weight", "ffn_up.weight", {s.intermediate, s.hidden}, true},
      {"mlp.down_proj.weight", "ffn_down.weight", {s.hidden, s.intermediate}, true},
  };
  if (family == "qwen2") {
    specs.push_back({"self_attn.q_proj.bias", "attn_q.bias", {q}, false});
    specs.push_back({"self_attn.k_proj.bias", "attn_k.bias", {kv}, false});
    specs.push_back({"self_attn.v_proj.bias", "attn_v.bias", {kv}, false});
  }
  if (family == "qwen3") {
    specs.push_back({"self_attn.q_norm.weight", "attn_q_norm.weight", {s.head_dim}, false});
    specs.push_back({"self_attn.k_norm.weight", "attn_k_norm.weight", {s.head_dim}, false});
  }
  return specs;
}

std::string family_of(const std::string& hf_arch) {
  if (hf_arch == "Qwen2ForCausalLM") return "qwen2";
  if (hf_arch == "Qwen3ForCausalLM") return "qwen3";
  return "llama";
}

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

nlohmann::json tiny_hf_config(const std::string& arch, const TinyShape& s) {
  nlohmann::json c = {
      {"architectures", {arch}},
      {"vocab_size", s.vocab},
      {"hidden_size", s.hidden},
      {"intermediate_size", s.intermediate},
      {"num_hidden_layers", s.layers},
      {"num_attention_heads", s.heads},
      {"num_key_value_heads", s.kv_heads},
      {"max_position_embeddings", 128},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", 10000.0},
      {"hidden_act", "silu"},
      {"bos_token_id", 1},
      {"eos_token_id", 2},
      {"torch_dtype", "float32"},
  };
  if (arch == "Qwen3ForCausalLM") c["head_dim"] = s.head_dim;
  return c;
}

std::vector<StTensor> tiny_hf_tensors(const std::string& arch, const TinyShape& s) {
  std::vector<StTensor> out;
  uint32_t seed = 1;
  auto add = [&](const std::string& name, const std::vector<int64_t>& shape) {
    out.push_back({name, "F32", shape, f32_bytes(test_values(product(shape), seed++))});
  };
  add("model.embed_tokens.weight", {s.vocab, s.hidden});
  add("model.norm.weight", {s.hidden});
  add("lm_head.weight", {s.vocab, s.hidden});
  for (int64_t l = 0; l < s.layers; ++l) {
    for (const TensorSpec& spec : layer_specs(family_of(arch), s)) {
      add("model.layers." + std::to_string(l) + "." + spec.suffix, spec.shape);
    }
  }
  return out;
}

static void add_gguf_metadata(GgufWriter& w, const std::string& arch, const TinyShape& s) {
  using T = GgufValueType;
  w.add_string("general.architecture", arch);
  w.add_string("general.name", "tiny " + arch);
  w.add_scalar(arch + ".context_length", T::kUint32, uint32_t{128});
  w.add_scalar(arch + ".embedding_length", T::kUint32, static_cast<uint32_t>(s.hidden));
  w.add_scalar(arch + ".block_count", T::kUint32, static_cast<uint32_t>(s.layers));
  w.add_scalar(arch + ".feed_forward_length", T::kUint32, static_cast<uint32_t>(s.intermediate));
  w.add_scalar(arch + ".attention.head_count", T::kUint32, static_cast<uint32_t>(s.heads));
  w.add_scalar(arch + ".attention.head_count_kv", T::kUint32, static_cast<uint32_t>(s.kv_heads));
  w.add_scalar(arch + ".attention.layer_norm_rms_epsilon", T::kFloat32, 1e-5f);
  w.add_scalar(arch + ".rope.freq_base", T::kFloat32, 1000000.0f);
  if (arch == "qwen3") {
    w.add_scalar(arch + ".attention.key_length", T::kUint32, static_cast<uint32_t>(s.head_dim));
    w.add_scalar(arch + ".attention.value_length", T::kUint32, static_cast<uint32_t>(s.head_dim));
  }
  std::vector<std::string> tokens;
  for (int64_t i = 0; i < s.vocab; ++i) tokens.push_back("tok" + std::to_string(i));
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_scalar("tokenizer.ggml.bos_token_id", T::kUint32, uint32_t{1});
  w.add_scalar("tokenizer.ggml.eos_token_id", T::kUint32, uint32_t{2});
}

GgufWriter tiny_gguf(const std::string& arch, uint32_t linear_type, bool with_output,
                     const TinyShape& s) {
  GgufWriter w;
  add_gguf_metadata(w, arch, s);
  uint32_t seed = 100;
  auto add = [&](const std::string& name, const std::vector<int64_t>& shape, bool linear) {
    std::vector<float> values = test_values(product(shape), seed++);
    uint32_t type = linear ? linear_type : kGgmlTypeF32;
    std::string bytes = type == kGgmlTypeQ8_0   ? q8_0_bytes(values)
                        : type == kGgmlTypeF16  ? f16_bytes(values)
                        : type == kGgmlTypeBF16 ? bf16_bytes(values)
                                                : f32_bytes(values);
    w.add_tensor(name, type, shape, bytes);
  };
  add("token_embd.weight", {s.vocab, s.hidden}, true);
  add("output_norm.weight", {s.hidden}, false);
  if (with_output) add("output.weight", {s.vocab, s.hidden}, true);
  for (int64_t l = 0; l < s.layers; ++l) {
    for (const TensorSpec& spec : layer_specs(arch, s)) {
      add("blk." + std::to_string(l) + "." + spec.gguf, spec.shape, spec.linear);
    }
  }
  return w;
}

}  // namespace strata::model::testing
