#include "model/layers/fused_linear.h"

#include <algorithm>

namespace strata::model {
namespace {

StatusOr<tensor::TensorView> linear_view(const WeightSource& weights, const std::string& name,
                                         int64_t n, int64_t k) {
  STRATA_ASSIGN_OR_RETURN(tensor::TensorView view, weights.get(name, {n, k}));
  const int64_t block = tensor::dtype_block_size(view.dtype);
  if (k % block != 0) {
    return invalid_argument(name + ": " + tensor::dtype_name(view.dtype) +
                            " needs in_features divisible by " + std::to_string(block) + ", got " +
                            std::to_string(k));
  }
  return view;
}

}  // namespace

StatusOr<ops::MatmulWeight> load_linear(const WeightSource& weights, const std::string& name,
                                        int64_t n, int64_t k) {
  STRATA_ASSIGN_OR_RETURN(tensor::TensorView view, linear_view(weights, name, n, k));
  ops::MatmulWeight w = ops::MatmulWeight::prepare(view);
  if (w.panels() != nullptr) weights.release_pages(view);  // the panels are the copy read
  return w;
}

StatusOr<FusedLinear> FusedLinear::load(const WeightSource& weights, const std::vector<Part>& parts,
                                        int64_t in_features) {
  FusedLinear out;
  std::vector<tensor::TensorView> views;
  for (const Part& part : parts) {
    STRATA_ASSIGN_OR_RETURN(tensor::TensorView view,
                            linear_view(weights, part.name, part.n, in_features));
    views.push_back(std::move(view));
    out.part_n_.push_back(part.n);
    out.n_ += part.n;
  }
  std::vector<const tensor::TensorView*> ptrs;
  for (const tensor::TensorView& v : views) ptrs.push_back(&v);
  if (views.size() == 1) {
    out.weights_.push_back(ops::MatmulWeight::prepare(views[0]));
    if (out.weights_[0].panels() != nullptr) weights.release_pages(views[0]);
  } else if (ops::MatmulWeight::can_concat_rows(ptrs)) {
    out.weights_.push_back(ops::MatmulWeight::concat_rows(ptrs));
    for (const tensor::TensorView& v : views) weights.release_pages(v);  // one resident copy
  } else {
    for (const tensor::TensorView& v : views) {
      out.weights_.push_back(ops::MatmulWeight::prepare(v));
      if (out.weights_.back().panels() != nullptr) weights.release_pages(v);
    }
  }
  return out;
}

void FusedLinear::forward(backend::Backend& backend, const float* x, int64_t m, const float* bias,
                          float* y, float* scratch) const {
  if (is_fused()) {
    backend.matmul(x, m, weights_[0], bias, y);
    return;
  }
  int64_t offset = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    const int64_t n = part_n_[i];
    const float* part_bias = bias == nullptr ? nullptr : bias + offset;
    if (m == 1) {  // one row: the part's columns are contiguous in y
      backend.matmul(x, m, weights_[i], part_bias, y + offset);
      offset += n;
      continue;
    }
    backend.matmul(x, m, weights_[i], part_bias, scratch);
    for (int64_t r = 0; r < m; ++r) {
      std::copy(scratch + r * n, scratch + (r + 1) * n, y + r * n_ + offset);
    }
    offset += n;
  }
}

int64_t FusedLinear::size_bytes() const {
  int64_t bytes = 0;
  for (const ops::MatmulWeight& w : weights_) bytes += w.size_bytes();
  return bytes;
}

}  // namespace strata::model
