#include "model/layers/rms_norm.h"

namespace strata::model {

StatusOr<std::vector<float>> load_f32(const WeightSource& weights, const std::string& name,
                                      std::vector<int64_t> shape) {
  STRATA_ASSIGN_OR_RETURN(tensor::TensorView view, weights.get(name, shape));
  std::vector<float> out(view.num_elements());
  tensor::convert_to_f32(view.data, view.dtype, view.num_elements(), out.data());
  return out;
}

StatusOr<RmsNorm> RmsNorm::load(const WeightSource& weights, const std::string& name, int64_t dim,
                                double eps) {
  RmsNorm norm;
  STRATA_ASSIGN_OR_RETURN(norm.weight_, load_f32(weights, name, {dim}));
  norm.eps_ = static_cast<float>(eps);
  return norm;
}

void RmsNorm::apply(backend::Backend& backend, const float* x, int64_t rows, float* y) const {
  backend.rms_norm(x, weight_.data(), rows, dim(), eps_, y);
}

}  // namespace strata::model
