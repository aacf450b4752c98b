// The architecture families Strata runs, each described once: the names it
// goes by (Hugging Face "architectures" / "model_type", GGUF
// "general.architecture"), transformers' config defaults, and how its decoder
// layer is wired (q/k/v biases, per-head q/k norm, sliding window, the
// feed-forward kind). One file per family (llama.cc, qwen2.cc, ...) defines
// its spec; architecture.cc lists them. The config parsers (model_config.cc,
// loader/gguf_mapping.cc) and the model builder (model.cc) read only specs,
// never compare architecture ids.
//
// Adding a family: a new <family>.cc with its spec, one line in
// all_architectures(), and a new layer in model/layers/ only if its wiring
// needs one.
// Threading: specs are immutable statics.
#pragma once

#include <cstdint>
#include <span>

#include "ops/ops.h"

namespace strata::model {

enum class Architecture { kLlama, kQwen2, kQwen3, kMistral, kQwen3Moe, kQwen2Moe, kMixtral };

// Where a model's sliding attention window comes from.
enum class SlidingWindowSource {
  kNone,        // full attention; use_sliding_window = true is rejected
  kFromConfig,  // config "sliding_window" (absent: default_sliding_window, null: none)
};

// The block after attention in every decoder layer.
enum class FeedForwardKind {
  kGatedMlp,          // down(silu(gate(x)) * up(x))
  kMixtureOfExperts,  // routed gated-MLP experts (and a shared one) on sparse layers
};

// Where a mixture-of-experts block keeps its tensors, under
// "model.layers.<i>.<block>": router "<router>.weight" [num_experts, hidden],
// expert e's "<experts>.<e>.<gate|up|down>.weight", and, with a shared
// expert, "shared_expert.{gate,up,down}_proj.weight" plus its gate
// "shared_expert_gate.weight" [1, hidden].
struct MoeNames {
  const char* block;        // "mlp" (Qwen) or "block_sparse_moe" (Mixtral)
  const char* router;       // "gate"
  const char* experts;      // "experts"
  const char* gate;         // "gate_proj" / "w1"
  const char* up;           // "up_proj" / "w3"
  const char* down;         // "down_proj" / "w2"
  bool shared_expert;       // Qwen2-MoE
  bool always_renormalize;  // Mixtral renormalises the top-k whatever the config says
  // config.json keys: the expert count ("num_experts" / "num_local_experts")
  // and each expert's width ("moe_intermediate_size" / "intermediate_size").
  const char* num_experts_key;
  const char* expert_intermediate_key;
};

struct ArchitectureSpec {
  Architecture arch;
  const char* hf_name;             // config.json "architectures"[0]
  const char* model_type;          // config.json "model_type" (used when "architectures" is absent)
  const char* gguf_name;           // GGUF "general.architecture"; nullptr: not loaded from GGUF
  ops::RopeStyle gguf_rope_style;  // how the GGUF converter laid out q/k rows

  // transformers' defaults for fields a config.json may omit.
  int64_t default_max_position_embeddings;
  int64_t default_head_dim;      // 0 = hidden_size / num_attention_heads
  int64_t default_bos_token_id;  // -1 = none
  int64_t default_eos_token_id;  // -1 = none

  // Decoder layer wiring: pre-norm attention then pre-norm feed-forward, each
  // added to the residual stream.
  bool qkv_bias;  // q/k/v projections carry biases (always, whatever the config says)
  bool attention_bias_means_o_proj;  // config attention_bias = true would bias o_proj too
  bool qk_norm;                      // per-head RMSNorm on q and k before rope
  SlidingWindowSource sliding_window;
  int64_t default_sliding_window;  // kFromConfig with the key absent (0 = none)
  FeedForwardKind feed_forward;
  MoeNames moe{};  // feed_forward == kMixtureOfExperts only
  // GGUF files of this family say general.architecture = gguf_experts_of
  // (e.g. Mixtral's "llama") and carry <arch>.expert_count > 0.
  const char* gguf_experts_of = nullptr;
  // llama.cpp's graph for this family always renormalises the top-k
  // (GGUF has no norm_topk_prob key).
  bool gguf_norm_topk_prob = false;
};

// Families are mostly a known one with a difference: `derived` copies `base`
// under new names (its GGUF name cleared unless given), and `with_experts`
// makes a spec's feed-forward block a mixture of experts named `names`.
ArchitectureSpec derived(const ArchitectureSpec& base, Architecture arch, const char* hf_name,
                         const char* model_type, const char* gguf_name = nullptr);
ArchitectureSpec with_experts(ArchitectureSpec spec, const MoeNames& names);
// Qwen-MoE's tensor names (mlp.gate, mlp.experts.<e>.{gate,up,down}_proj).
MoeNames qwen_moe_names(bool shared_expert);

// Every supported family, in the order error messages list them.
std::span<const ArchitectureSpec* const> all_architectures();
const ArchitectureSpec& architecture_spec(Architecture arch);

// Per-family specs (one file each).
const ArchitectureSpec& llama_architecture();
const ArchitectureSpec& qwen2_architecture();
const ArchitectureSpec& qwen3_architecture();
const ArchitectureSpec& mistral_architecture();
const ArchitectureSpec& qwen3_moe_architecture();
const ArchitectureSpec& qwen2_moe_architecture();
const ArchitectureSpec& mixtral_architecture();

}  // namespace strata::model
