// A decoder-only transformer ready to run: config plus prepared layers, and
// the one forward pass every caller runs (serving's runner, `strata
// generate`, benchmarks, golden tests). The architecture's spec
// (model/arch/) says how its layers are wired; the layers (model/layers/)
// hold the weights and compute.
//
// Weights stay in their stored dtype and, for plain dtypes, point into the
// memory-mapped files (Model keeps ModelFiles). q/k/v and gate/up are fused
// into owned copies at load when their dtypes agree. Norm weights and biases
// are converted to f32 at load (they are tiny).
//
// Thread-safety: a Model is immutable after load; forward() may be called by
// one thread at a time per KvMemory and Workspace (it runs on the given
// backend's kernels).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_memory.h"
#include "base/status.h"
#include "model/arch/architecture.h"
#include "model/layers/decoder_layer.h"
#include "model/layers/embedding.h"
#include "model/layers/forward_context.h"
#include "model/layers/rms_norm.h"
#include "model/layers/workspace.h"
#include "model/loader/model_files.h"
#include "model/model_config.h"
#include "ops/ops.h"

namespace strata::model {

class Model {
 public:
  // Called after each prepared layer with (layers done, layers in all), from
  // the loading thread or a helper of load(), one call at a time, done
  // counting up.
  using LoadProgress = std::function<void(int64_t, int64_t)>;

  // Validates every tensor's presence and shape against the config and
  // prepares the weights. Errors name the file and the tensor.
  static StatusOr<std::unique_ptr<Model>> load(ModelFiles files, const LoadProgress& progress = {});

  const ModelConfig& config() const { return config_; }
  const ArchitectureSpec& architecture() const { return spec_; }
  const ModelFiles& files() const { return files_; }
  int64_t vocab_size() const { return config_.vocab_size; }
  // Bytes of weights read by one decode step (all matmuls + one embedding row).
  int64_t decode_weight_bytes() const;
  // Matmul FLOPs (2 per multiply-add) one prompt token costs in the decoder
  // layers (attention projections, the MLP or the routed top-k experts and
  // the shared expert). The lm_head is left out: a prefill step computes
  // logits only for the rows it samples. Counted from the layers' weight bytes
  // at the model's weight dtype, so mixed-precision files are approximate.
  int64_t prefill_flops_per_token() const;
  int64_t num_parameters() const;

  // The dtype of the stored weights (the embedding's), which
  // --kv-cache-dtype auto follows.
  tensor::DType weight_dtype() const { return embed_tokens_.table().dtype; }
  // True when the checkpoint carries fp8 KV scales for every layer.
  bool has_kv_scales() const { return kv_scales_; }

  // One token's K (or V) row for this model in `dtype`.
  tensor::KvRowLayout kv_row_layout(tensor::KvCacheDtype dtype) const;
  // The paged KV memory for this model on `backend`: num_blocks blocks of
  // block_size token slots per layer, storing `dtype` (f32 unless given).
  backend::KvMemoryHandle make_kv_memory(
      backend::Backend& backend, int64_t num_blocks, int64_t block_size,
      tensor::KvCacheDtype dtype = tensor::KvCacheDtype::kF32) const;
  int64_t kv_bytes_per_block(int64_t block_size,
                             tensor::KvCacheDtype dtype = tensor::KvCacheDtype::kF32) const;

  // Activations for this model's forward pass, reserved for `num_tokens`
  // tokens per step (they grow when a step needs more).
  Workspace make_workspace(backend::Backend& backend, int64_t num_tokens = 1,
                           int64_t num_logits = 1) const;

  // Runs every token of `batch`, writing its K/V into `kv` through the slot
  // mapping (in kv's dtype), and writes logits [num_logits, vocab] for
  // batch.logits_indices. `workspace` (from make_workspace) holds the
  // activations and grows as needed.
  void forward(const ForwardBatch& batch, backend::KvMemory& kv, Workspace& workspace,
               float* logits, backend::Backend& backend) const;

 private:
  explicit Model(ModelFiles files)
      : files_(std::move(files)), config_(files_.config), spec_(architecture_spec(config_.arch)) {}
  // Prepares the head and the layers, on up to kMaxLoadThreads threads.
  Status prepare_weights(const LoadProgress& progress);
  Status prepare_lm_head();  // after embed_tokens_ (the head may be its table)
  static constexpr int64_t kMaxLoadThreads = 8;
  // Final norm and lm_head over the rows of batch.logits_indices.
  void compute_logits(const ForwardBatch& batch, Workspace& workspace, float* logits,
                      backend::Backend& backend) const;

  ModelFiles files_;
  ModelConfig config_;
  const ArchitectureSpec& spec_;
  Embedding embed_tokens_;  // [vocab, hidden], stored dtype
  std::vector<DecoderLayer> layers_;
  RmsNorm final_norm_;                // [hidden]
  ops::MatmulWeight lm_head_;         // [vocab, hidden] (the embedding when tied)
  std::vector<float> rope_inv_freq_;  // [head_dim / 2]
  bool kv_scales_ = false;            // every layer has k_scale and v_scale
};

}  // namespace strata::model
