// What one forward pass runs over (the flat batch) and what every layer of it
// borrows (the backend's kernels, KV memory, workspace, rope tables).
//
// ForwardBatch: tokens of many sequences laid end to end (see
// attention/attention_metadata.h for slots and block tables).
// ForwardContext: built by Model::forward for one step; layers read it on the
// engine thread and must not keep pointers past the call.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/attention_metadata.h"
#include "backend/backend.h"
#include "backend/kv_memory.h"
#include "model/layers/workspace.h"

namespace strata::model {

struct ForwardBatch {
  std::vector<int32_t> token_ids;  // [num_tokens]
  std::vector<int32_t> positions;  // [num_tokens]
  attention::AttentionMetadata attn;
  std::vector<int32_t> logits_indices;  // [num_logits] token rows that produce logits

  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }

  // A batch of one sequence whose new tokens sit at positions
  // start..start+n-1, in blocks 0, 1, 2, ... of `block_size` token slots
  // (the blocks must hold start + num_tokens positions).
  static ForwardBatch single_sequence(const int32_t* tokens, int64_t num_tokens, int64_t start,
                                      int64_t block_size, bool all_logits);
};

struct ForwardContext {
  const ForwardBatch& batch;
  backend::Backend& backend;
  backend::KvMemory& kv;
  Workspace& workspace;
  const float* rope_inv_freq;  // [head_dim / 2]
  bool use_kv_scales;          // checkpoint fp8 KV scales apply (every layer has them)
};

}  // namespace strata::model
