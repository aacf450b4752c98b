// A linear layer built from one or more checkpoint tensors that share their
// input (q/k/v; gate/up), run as one matmul over the rows of all of them.
// The parts are fused into one weight at load time when their dtypes agree
// (always for safetensors; GGUF K-quant mixes may store v or up in another
// type, and then each part runs its own matmul into the same output).
// Immutable after load; forward() is called on the engine thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/check.h"
#include "base/status.h"
#include "model/loader/weight_source.h"
#include "ops/ops.h"

namespace strata::model {

class FusedLinear {
 public:
  struct Part {
    std::string name;  // checkpoint tensor, [n, in_features]
    int64_t n;
  };

  FusedLinear() = default;
  // Loads every part ([part.n, in_features]); errors name the tensor.
  static StatusOr<FusedLinear> load(const WeightSource& weights, const std::vector<Part>& parts,
                                    int64_t in_features);

  // y[m, n()] = x[m, k] · [W_0; W_1; ...]ᵀ (+ bias[n()] when given): part i
  // fills columns [offset_i, offset_i + n_i). scratch: [m, widest part]
  // floats, used only when the parts are not fused.
  void forward(backend::Backend& backend, const float* x, int64_t m, const float* bias, float* y,
               float* scratch) const;

  int64_t n() const { return n_; }
  bool is_fused() const { return weights_.size() == 1; }
  // The one weight [n(), in_features] of a fused layer (is_fused() only).
  const ops::MatmulWeight& fused_weight() const {
    STRATA_CHECK(is_fused()) << "fused_weight() of an unfused FusedLinear";
    return weights_[0];
  }
  int64_t size_bytes() const;

 private:
  std::vector<ops::MatmulWeight> weights_;  // one when fused, else one per part
  std::vector<int64_t> part_n_;
  int64_t n_ = 0;
};

// One plain linear weight [n, k] of any supported dtype; the error names the
// tensor when k is not a multiple of its dtype's block.
StatusOr<ops::MatmulWeight> load_linear(const WeightSource& weights, const std::string& name,
                                        int64_t n, int64_t k);

}  // namespace strata::model
