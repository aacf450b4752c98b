// The activations of one forward pass, allocated once and grown only when a
// step carries more tokens (or logits rows) than any before, so steady-state
// serving allocates nothing per step (gemma.cpp's Activations). Owned by
// whoever runs the forward pass (the runner; generate); layers borrow it.
// Buffers come from the backend, so they live in its memory.
//
// Shapes below are for the reserved num_tokens T and num_logits L; a step
// uses the first rows. Engine thread only (one forward pass at a time).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "model/layers/expert_load.h"
#include "model/model_config.h"

namespace strata::model {

// One token's row routed to an expert, with its routing weight.
using RoutedRow = ops::WeightedRow;

class Workspace {
 public:
  Workspace(const ModelConfig& config, backend::Backend& backend);

  // Makes room for a step of `num_tokens` tokens producing `num_logits`
  // rows of logits (never shrinks).
  void reserve(int64_t num_tokens, int64_t num_logits);
  int64_t capacity_tokens() const { return capacity_tokens_; }

  float* residual() { return residual_.as<float>(); }    // [T, hidden] the residual stream
  float* normed() { return normed_.as<float>(); }        // [T, hidden] a norm's output
  float* block_out() { return block_out_.as<float>(); }  // [T, hidden] a block's output
  float* qkv() { return qkv_.as<float>(); }              // [T, q_dim + 2 kv_dim] fused projection
  float* q() { return q_.as<float>(); }                  // [T, num_heads, head_dim]
  float* k() { return k_.as<float>(); }                  // [T, num_kv_heads, head_dim]
  float* v() { return v_.as<float>(); }                  // [T, num_kv_heads, head_dim]
  float* attn() { return attn_.as<float>(); }            // [T, num_heads, head_dim]
  float* gate_up() { return gate_up_.as<float>(); }      // [T, 2 intermediate] fused projection
  float* act() { return act_.as<float>(); }              // [T, intermediate]
  // [T, widest part of an unfused projection] (see FusedLinear).
  float* split_scratch() { return split_scratch_.as<float>(); }
  float* final_rows() { return final_rows_.as<float>(); }  // [L, hidden]
  // Mixture of experts (empty for dense models).
  float* router_logits() { return router_logits_.as<float>(); }        // [T, num_experts]
  int32_t* routed_experts() { return routed_experts_.as<int32_t>(); }  // [T, top_k]
  float* routed_weights() { return routed_weights_.as<float>(); }      // [T, top_k]
  float* expert_rows() { return expert_rows_.as<float>(); }  // [T, hidden] one expert's tokens
  float* expert_out() { return expert_out_.as<float>(); }    // [T, hidden]
  float* shared_gate() { return shared_gate_.as<float>(); }  // [T]
  // Host-side grouping of routed rows by expert, reused every step: rows of
  // expert e are routed_rows()[start(e), end(e)) (MoeLayer).
  std::vector<RoutedRow>& routed_rows() { return routed_rows_; }
  std::vector<int32_t>& expert_offsets() { return expert_offsets_; }
  // A decode step's experts in one pass (MoeLayer, up to ops::kGroupedMaxRows
  // tokens): R = kGroupedMaxRows * (top_k + 1) routed rows, the shared
  // expert's included.
  float* grouped_x() { return grouped_x_.as<float>(); }              // [R, hidden]
  float* grouped_gate_up() { return grouped_gate_up_.as<float>(); }  // [R, 2 intermediate]
  float* grouped_act() { return grouped_act_.as<float>(); }          // [R, intermediate]
  float* grouped_out() { return grouped_out_.as<float>(); }          // [R, hidden]
  std::vector<ops::GroupedMatmul>& grouped_matmuls() { return grouped_matmuls_; }
  // Tokens routed to each expert of each MoE layer since the workspace was made.
  ExpertLoad& expert_load() { return expert_load_; }
  const ExpertLoad& expert_load() const { return expert_load_; }

 private:
  backend::DeviceBuffer floats(int64_t n) { return backend_->allocate(tensor::DType::kF32, n); }

  backend::Backend* backend_;
  int64_t hidden_, q_dim_, kv_dim_, intermediate_, num_experts_, top_k_;
  int64_t capacity_tokens_ = 0, capacity_logits_ = 0;
  backend::DeviceBuffer residual_, normed_, block_out_, qkv_, q_, k_, v_, attn_, gate_up_, act_,
      split_scratch_, final_rows_, router_logits_, routed_experts_, routed_weights_, expert_rows_,
      expert_out_, shared_gate_, grouped_x_, grouped_gate_up_, grouped_act_, grouped_out_;
  std::vector<RoutedRow> routed_rows_;
  std::vector<int32_t> expert_offsets_;
  std::vector<ops::GroupedMatmul> grouped_matmuls_;
  ExpertLoad expert_load_;
};

}  // namespace strata::model
