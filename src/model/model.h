// A decoder-only transformer ready to run: config plus prepared weights, and
// the forward pass shared by the supported architectures (Llama 2/3.x, Qwen2,
// Qwen3, Mistral). What differs between architectures is declared in
// architecture.h (biases, q/k norms, sliding window, tied embeddings).
//
// Weights stay in their stored dtype and, for plain dtypes, point into the
// memory-mapped files (ModelFiles must outlive nothing: Model keeps it).
// Norm weights and biases are converted to f32 at load (they are tiny).
//
// Thread-safety: a Model is immutable after load; forward() may be called by
// one thread at a time per KvArena (it uses the given ThreadPool).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "attention/attention_metadata.h"
#include "attention/kv_arena.h"
#include "model/loader/model_files.h"
#include "model/model_config.h"
#include "ops/ops.h"

namespace strata::model {

struct LayerWeights {
  std::vector<float> input_norm;           // [hidden]
  std::vector<float> post_attention_norm;  // [hidden]
  ops::MatmulWeight q_proj;                // [num_heads * head_dim, hidden]
  ops::MatmulWeight k_proj;                // [num_kv_heads * head_dim, hidden]
  ops::MatmulWeight v_proj;                // [num_kv_heads * head_dim, hidden]
  ops::MatmulWeight o_proj;                // [hidden, num_heads * head_dim]
  std::vector<float> q_bias, k_bias, v_bias;  // empty unless attention_bias
  std::vector<float> q_norm, k_norm;          // [head_dim]; empty unless qk_norm
  ops::MatmulWeight gate_proj;             // [intermediate, hidden]
  ops::MatmulWeight up_proj;               // [intermediate, hidden]
  ops::MatmulWeight down_proj;             // [hidden, intermediate]
  // fp8 KV scales from the checkpoint (vLLM's self_attn.k_scale / v_scale and
  // their older names): stored = x / scale. 0 when absent (scales per token).
  float k_scale = 0.0f, v_scale = 0.0f;
};

// One forward pass's inputs: tokens of many sequences, flat (see
// attention/attention_metadata.h for how sequences and KV slots are laid out).
struct ForwardBatch {
  std::vector<int32_t> token_ids;       // [num_tokens]
  std::vector<int32_t> positions;       // [num_tokens]
  attention::AttentionMetadata attn;
  std::vector<int32_t> logits_indices;  // [num_logits] token rows that produce logits

  // A batch of one sequence whose new tokens sit at positions start..start+n-1
  // of a single block (block 0) large enough for the whole context.
  static ForwardBatch single_sequence(const int32_t* tokens, int64_t num_tokens, int64_t start,
                                      bool all_logits);
};

class Model {
 public:
  // Called after each prepared layer with (layers done, layers in all).
  using LoadProgress = std::function<void(int64_t, int64_t)>;

  // Validates every tensor's presence and shape against the config and
  // prepares the weights. Errors name the file and the tensor.
  static StatusOr<std::unique_ptr<Model>> load(ModelFiles files,
                                               const LoadProgress& progress = {});

  const ModelConfig& config() const { return config_; }
  const ModelFiles& files() const { return files_; }
  int64_t vocab_size() const { return config_.vocab_size; }
  // Bytes of weights read by one decode step (all matmuls + one embedding row).
  int64_t decode_weight_bytes() const;
  int64_t num_parameters() const;

  // The dtype of the stored weights (the embedding's), which
  // --kv-cache-dtype auto follows.
  tensor::DType weight_dtype() const { return embed_tokens_.dtype; }
  // True when the checkpoint carries fp8 KV scales for every layer.
  bool has_kv_scales() const { return kv_scales_; }

  // One token's K (or V) row for this model in `dtype`.
  tensor::KvRowLayout kv_row_layout(tensor::KvCacheDtype dtype) const;
  // A KV arena shaped for this model, storing `dtype` (f32 unless given).
  attention::KvArena make_kv_arena(int64_t num_blocks, int64_t block_size,
                                   tensor::KvCacheDtype dtype = tensor::KvCacheDtype::kF32) const;
  int64_t kv_bytes_per_block(int64_t block_size,
                             tensor::KvCacheDtype dtype = tensor::KvCacheDtype::kF32) const;

  // Runs every token of `batch`, writing its K/V into `kv` through the slot
  // mapping (in kv's dtype), and writes logits [num_logits, vocab] for batch.logits_indices.
  void forward(const ForwardBatch& batch, attention::KvArena& kv, float* logits,
               ThreadPool& pool) const;

 private:
  Model(ModelFiles files) : files_(std::move(files)), config_(files_.config) {}
  Status prepare_weights(const LoadProgress& progress);
  Status prepare_layer(int64_t layer_idx, LayerWeights& layer);
  void embed(const int32_t* tokens, int64_t num_tokens, float* x) const;
  void attention_block(const LayerWeights& layer, int64_t layer_idx, float* x,
                       const ForwardBatch& batch, attention::KvArena& kv, ThreadPool& pool) const;
  void mlp_block(const LayerWeights& layer, float* x, int64_t num_tokens, ThreadPool& pool) const;

  ModelFiles files_;
  ModelConfig config_;
  tensor::TensorView embed_tokens_;  // [vocab, hidden], stored dtype
  std::vector<LayerWeights> layers_;
  std::vector<float> final_norm_;    // [hidden]
  ops::MatmulWeight lm_head_;        // [vocab, hidden] (the embedding when tied)
  std::vector<float> rope_inv_freq_;  // [head_dim / 2]
  bool kv_scales_ = false;            // every layer has k_scale and v_scale
};

}  // namespace strata::model
