// What a model is: architecture, shapes and numeric settings, read from a
// Hugging Face config.json or from GGUF metadata (loader/), validated once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/arch/architecture.h"
#include "ops/ops.h"

namespace strata::model {

const char* architecture_name(Architecture arch);  // "LlamaForCausalLM", ...

struct RopeScaling {
  std::string type;  // "" (none) or "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

// Mixture-of-experts settings (Qwen3-MoE, Qwen2-MoE, Mixtral); num_experts 0
// means a dense model.
struct MoeConfig {
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;     // top-k
  int64_t moe_intermediate_size = 0;   // each routed expert's MLP width
  bool norm_topk_prob = false;         // renormalise the top-k probabilities to sum 1
  int64_t decoder_sparse_step = 1;     // layer i is sparse when (i + 1) % step == 0 ...
  std::vector<int64_t> mlp_only_layers;  // ... and i is not listed here
  int64_t shared_expert_intermediate_size = 0;  // 0 = no shared expert

  bool is_moe() const { return num_experts > 0; }
  bool is_sparse_layer(int64_t layer_idx) const;
};

struct ModelConfig {
  Architecture arch = Architecture::kLlama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // hidden_size / num_attention_heads unless given
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  ops::RopeStyle rope_style = ops::RopeStyle::kNeox;  // kInterleaved for GGUF llama
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry biases (Qwen2)
  bool qk_norm = false;         // per-head RMSNorm on q and k (Qwen3)
  int64_t sliding_window = 0;   // 0 = none (Mistral sets it)
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;
  // Per-frequency divisors from a GGUF rope_freqs.weight tensor (llama.cpp's way
  // of storing llama3 scaling): inv_freq[i] /= rope_freq_factors[i]. Empty = none.
  std::vector<float> rope_freq_factors;  // [head_dim / 2] or empty
  MoeConfig moe;

  // inv_freq[head_dim / 2] including llama3 scaling (and rope_freq_factors), as
  // transformers computes it: float32 throughout, pow within 1 ulp of torch.
  std::vector<float> rope_inv_freq() const;
};

// Sampling defaults from generation_config.json (absent fields keep these).
struct GenerationConfig {
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = 0;  // 0 = off
  double repetition_penalty = 1.0;
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;
  bool present = false;  // a generation_config.json was found
};

// Parses a Hugging Face config.json. `path` is used in error messages. Errors
// name the field and what was expected; unknown architectures list the ones
// Strata supports.
StatusOr<ModelConfig> parse_hf_config(const std::string& json_text, const std::string& path);
// Checks the shapes and numeric settings agree (heads divide, head_dim even,
// positive sizes, valid rope scaling). Called by both parsers; `path` names
// the source in the message.
Status validate_model_config(const ModelConfig& config, const std::string& path);

StatusOr<GenerationConfig> parse_generation_config(const std::string& json_text,
                                                   const std::string& path);

}  // namespace strata::model
