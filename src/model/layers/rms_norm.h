// An RMSNorm layer: its weight (converted to f32 at load) and epsilon.
// Immutable after load; apply() is called on the engine thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"
#include "model/loader/weight_source.h"

namespace strata::model {

class RmsNorm {
 public:
  RmsNorm() = default;
  // Loads `name` ([dim], any stored dtype) as f32.
  static StatusOr<RmsNorm> load(const WeightSource& weights, const std::string& name, int64_t dim,
                                double eps);

  // y[r, :] = x[r, :] / rms(x[r, :]) * weight; x, y: [rows, dim] (y may alias x).
  void apply(backend::Backend& backend, const float* x, int64_t rows, float* y) const;
  int64_t dim() const { return static_cast<int64_t>(weight_.size()); }

 private:
  std::vector<float> weight_;  // [dim]
  float eps_ = 1e-6f;
};

// A small tensor (norm weight, bias) of any stored dtype as f32.
StatusOr<std::vector<float>> load_f32(const WeightSource& weights, const std::string& name,
                                      std::vector<int64_t> shape);

}  // namespace strata::model
