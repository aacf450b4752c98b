// The token embedding table, kept in its stored dtype (pointing into the
// mapped file); rows are widened to f32 when looked up.
// Immutable after load; lookup() is called on the engine thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "model/loader/weight_source.h"
#include "tensor/tensor_view.h"

namespace strata::model {

class Embedding {
 public:
  Embedding() = default;
  // `name` must be [vocab, hidden] with hidden a multiple of its dtype's block.
  static StatusOr<Embedding> load(const WeightSource& weights, const std::string& name,
                                  int64_t vocab, int64_t hidden);

  // x[t, :] = table[tokens[t], :] as f32; tokens: [num_tokens], x: [num_tokens, hidden].
  // Token ids must lie in [0, vocab) (checked).
  void lookup(const int32_t* tokens, int64_t num_tokens, float* x) const;

  const tensor::TensorView& table() const { return table_; }  // [vocab, hidden]
  int64_t row_bytes() const { return table_.row_bytes(); }

 private:
  tensor::TensorView table_;
};

}  // namespace strata::model
