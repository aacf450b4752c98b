#include "model/layers/expert_load.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/check.h"

namespace strata::model {

ExpertLoad::ExpertLoad(const std::vector<int32_t>& moe_layers, int64_t num_layers,
                       int64_t num_experts)
    : num_experts_(num_experts),
      layers_(moe_layers),
      row_of_layer_(static_cast<size_t>(num_layers), -1),
      tokens_(moe_layers.size() * static_cast<size_t>(num_experts), 0) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    STRATA_CHECK(layers_[i] >= 0 && layers_[i] < num_layers) << "MoE layer " << layers_[i];
    row_of_layer_[layers_[i]] = static_cast<int32_t>(i);
  }
}

void ExpertLoad::add(int64_t layer, const int32_t* experts, int64_t n) {
  STRATA_CHECK(layer >= 0 && layer < static_cast<int64_t>(row_of_layer_.size()) &&
               row_of_layer_[layer] >= 0)
      << "layer " << layer << " has no expert counters";
  int64_t* row = tokens_.data() + row_of_layer_[layer] * num_experts_;
  for (int64_t i = 0; i < n; ++i) ++row[experts[i]];
}

void ExpertLoad::clear() { std::fill(tokens_.begin(), tokens_.end(), 0); }

std::vector<LayerBalance> balance(const ExpertLoad& load) {
  std::vector<LayerBalance> out;
  const int64_t e = load.num_experts();
  for (size_t i = 0; i < load.layers().size(); ++i) {
    LayerBalance b;
    b.layer = load.layers()[i];
    int64_t most = 0;
    for (int64_t j = 0; j < e; ++j) {
      const int64_t t = load.tokens(static_cast<int64_t>(i), j);
      b.total += t;
      most = std::max(most, t);
      b.zero_experts += t == 0 ? 1 : 0;
    }
    if (b.total > 0) {
      const double mean = static_cast<double>(b.total) / static_cast<double>(e);
      double var = 0.0;
      for (int64_t j = 0; j < e; ++j) {
        const double d = static_cast<double>(load.tokens(static_cast<int64_t>(i), j)) - mean;
        var += d * d;
      }
      b.max_over_mean = static_cast<double>(most) / mean;
      b.cv = std::sqrt(var / static_cast<double>(e)) / mean;
    }
    out.push_back(b);
  }
  return out;
}

std::string format_balance(const ExpertLoad& load) {
  std::string out;
  char line[160];
  double worst_ratio = 0.0, sum_cv = 0.0;
  int64_t zero = 0;
  const std::vector<LayerBalance> layers = balance(load);
  for (const LayerBalance& b : layers) {
    std::snprintf(line, sizeof(line),
                  "  layer %2lld: %lld routed rows, max/mean %.2f, cv %.3f, %lld of %lld experts "
                  "idle\n",
                  static_cast<long long>(b.layer), static_cast<long long>(b.total),
                  b.max_over_mean, b.cv, static_cast<long long>(b.zero_experts),
                  static_cast<long long>(load.num_experts()));
    out += line;
    worst_ratio = std::max(worst_ratio, b.max_over_mean);
    sum_cv += b.cv;
    zero += b.zero_experts;
  }
  if (!layers.empty()) {
    std::snprintf(line, sizeof(line),
                  "  all %zu MoE layers: worst max/mean %.2f, mean cv %.3f, %lld idle experts\n",
                  layers.size(), worst_ratio, sum_cv / static_cast<double>(layers.size()),
                  static_cast<long long>(zero));
    out += line;
  }
  return out;
}

}  // namespace strata::model
