#include "model/model.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/check.h"
#include "base/cpu_features.h"
#include "model/layers/fused_linear.h"
#include "tensor/dtype.h"

namespace strata::model {

StatusOr<std::unique_ptr<Model>> Model::load(ModelFiles files, const LoadProgress& progress) {
  std::unique_ptr<Model> model(new Model(std::move(files)));
  STRATA_RETURN_IF_ERROR(model->prepare_weights(progress).with_prefix(model->files_.path));
  return model;
}

Status Model::prepare_weights(const LoadProgress& progress) {
  const ModelConfig& c = config_;
  const WeightSource& w = files_.weights;
  STRATA_ASSIGN_OR_RETURN(
      embed_tokens_, Embedding::load(w, "model.embed_tokens.weight", c.vocab_size, c.hidden_size));
  STRATA_ASSIGN_OR_RETURN(final_norm_,
                          RmsNorm::load(w, "model.norm.weight", c.hidden_size, c.rms_norm_eps));
  // The head and the layers are prepared as independent tasks on a few
  // threads: repacking weights into panels and copying fused weights run at the
  // speed of first-touch page faults and memory, and one core leaves the
  // others idle (on 2 cores a Q8_0 file of Qwen2.5-0.5B's shape loads in
  // 0.8 s instead of 1.7). Results land in their slots, so the model is the
  // same whatever the thread count.
  const int64_t num_layers = c.num_hidden_layers;
  Status head_status;
  std::vector<std::optional<StatusOr<DecoderLayer>>> loaded(static_cast<size_t>(num_layers));
  std::mutex progress_mutex;
  int64_t layers_done = 0;
  auto run_task = [&](int64_t task) {  // task 0: the head; task i > 0: layer i - 1
    if (task == 0) {
      head_status = prepare_lm_head();
      return;
    }
    loaded[static_cast<size_t>(task - 1)].emplace(DecoderLayer::load(w, spec_, c, task - 1));
    std::lock_guard<std::mutex> lock(progress_mutex);
    ++layers_done;
    if (progress) progress(layers_done, num_layers);
  };
  std::atomic<int64_t> next_task{0};
  auto worker = [&] {
    for (int64_t t = next_task.fetch_add(1); t <= num_layers; t = next_task.fetch_add(1)) {
      run_task(t);
    }
  };
  const int64_t threads =
      std::min<int64_t>({num_hardware_threads(), kMaxLoadThreads, num_layers + 1});
  std::vector<std::thread> helpers;
  for (int64_t i = 1; i < threads; ++i) helpers.emplace_back(worker);
  worker();
  for (std::thread& t : helpers) t.join();

  STRATA_RETURN_IF_ERROR(head_status);
  layers_.reserve(static_cast<size_t>(num_layers));
  for (std::optional<StatusOr<DecoderLayer>>& layer : loaded) {
    STRATA_RETURN_IF_ERROR(layer->status());
    layers_.push_back(std::move(*layer).value());
  }
  rope_inv_freq_ = c.rope_inv_freq();
  kv_scales_ =
      !layers_.empty() && std::all_of(layers_.begin(), layers_.end(), [](const DecoderLayer& l) {
        return l.attention().k_scale() > 0.0f && l.attention().v_scale() > 0.0f;
      });
  return Status();
}

Status Model::prepare_lm_head() {
  const ModelConfig& c = config_;
  const WeightSource& w = files_.weights;
  if (c.tie_word_embeddings && !w.has("lm_head.weight")) {
    lm_head_ = ops::MatmulWeight::prepare(embed_tokens_.table());
    // Weights in panels: the head reads those; the table's pages come back row
    // by row as tokens are looked up.
    if (lm_head_.panels() != nullptr) w.release_pages(embed_tokens_.table());
    return Status();
  }
  STRATA_ASSIGN_OR_RETURN(lm_head_, load_linear(w, "lm_head.weight", c.vocab_size, c.hidden_size));
  return Status();
}

int64_t Model::decode_weight_bytes() const {
  int64_t bytes = lm_head_.size_bytes() + embed_tokens_.row_bytes();
  for (const DecoderLayer& l : layers_) bytes += l.weight_bytes();
  return bytes;
}

int64_t Model::prefill_flops_per_token() const {
  int64_t bytes = 0;
  for (const DecoderLayer& l : layers_) bytes += l.weight_bytes();
  const tensor::DType dtype = weight_dtype();
  const double elements = static_cast<double>(bytes) *
                          static_cast<double>(tensor::dtype_block_size(dtype)) /
                          static_cast<double>(tensor::dtype_block_bytes(dtype));
  return static_cast<int64_t>(2.0 * elements);
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

backend::KvMemoryHandle Model::make_kv_memory(backend::Backend& backend, int64_t num_blocks,
                                              int64_t block_size,
                                              tensor::KvCacheDtype dtype) const {
  return backend.allocate_kv_memory(config_.num_hidden_layers, num_blocks, block_size,
                                    kv_row_layout(dtype));
}

int64_t Model::kv_bytes_per_block(int64_t block_size, tensor::KvCacheDtype dtype) const {
  return backend::KvMemory::bytes_per_block(config_.num_hidden_layers, block_size,
                                            kv_row_layout(dtype));
}

Workspace Model::make_workspace(backend::Backend& backend, int64_t num_tokens,
                                int64_t num_logits) const {
  Workspace ws(config_, backend);
  ws.reserve(num_tokens, num_logits);
  return ws;
}

ForwardBatch ForwardBatch::single_sequence(const int32_t* tokens, int64_t num_tokens, int64_t start,
                                           int64_t block_size, bool all_logits) {
  ForwardBatch batch;
  batch.token_ids.assign(tokens, tokens + num_tokens);
  for (int64_t t = 0; t < num_tokens; ++t) {
    batch.positions.push_back(static_cast<int32_t>(start + t));
    batch.attn.slot_mapping.push_back(start + t);  // block b holds positions b * block_size + ...
  }
  const int64_t end = start + num_tokens;
  batch.attn.query_start_loc = {0, static_cast<int32_t>(num_tokens)};
  batch.attn.seq_lens = {static_cast<int32_t>(end)};
  const int64_t num_blocks = (end + block_size - 1) / block_size;
  for (int64_t b = 0; b < num_blocks; ++b)
    batch.attn.block_tables.push_back(static_cast<int32_t>(b));
  batch.attn.max_blocks_per_seq = static_cast<int32_t>(num_blocks);
  for (int64_t t = all_logits ? 0 : num_tokens - 1; t < num_tokens; ++t) {
    batch.logits_indices.push_back(static_cast<int32_t>(t));
  }
  return batch;
}

void Model::compute_logits(const ForwardBatch& batch, Workspace& ws, float* logits,
                           backend::Backend& backend) const {
  const int64_t hidden = config_.hidden_size;
  const int64_t num_out = static_cast<int64_t>(batch.logits_indices.size());
  for (int64_t i = 0; i < num_out; ++i) {
    const float* row = ws.residual() + int64_t{batch.logits_indices[i]} * hidden;
    std::copy(row, row + hidden, ws.final_rows() + i * hidden);
  }
  final_norm_.apply(backend, ws.final_rows(), num_out, ws.final_rows());
  backend.matmul(ws.final_rows(), num_out, lm_head_, nullptr, logits);
}

void Model::forward(const ForwardBatch& batch, backend::KvMemory& kv, Workspace& workspace,
                    float* logits, backend::Backend& backend) const {
  const int64_t num_tokens = batch.num_tokens();
  STRATA_CHECK(num_tokens > 0);
  STRATA_CHECK(static_cast<int64_t>(batch.positions.size()) == num_tokens);
  STRATA_CHECK(batch.attn.num_tokens() == num_tokens);
  workspace.reserve(num_tokens, static_cast<int64_t>(batch.logits_indices.size()));
  embed_tokens_.lookup(batch.token_ids.data(), num_tokens, workspace.residual());
  const ForwardContext ctx{batch, backend, kv, workspace, rope_inv_freq_.data(), kv_scales_};
  for (int64_t l = 0; l < config_.num_hidden_layers; ++l) layers_[l].forward(ctx, l);
  // Only the rows that produce logits go through the final norm and lm_head.
  compute_logits(batch, workspace, logits, backend);
}

}  // namespace strata::model
