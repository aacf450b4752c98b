#include "bench_serve/arrival.h"

#include <cmath>
#include <random>

namespace strata::bench {

std::vector<double> make_arrival_times(int64_t n, double rate, double burstiness, uint64_t seed) {
  std::vector<double> due(static_cast<size_t>(std::max<int64_t>(0, n)), 0.0);
  if (due.empty() || !std::isfinite(rate) || rate <= 0) return due;
  std::mt19937_64 rng(seed);
  double t = 0;
  for (double& d : due) {
    if (!std::isfinite(burstiness)) {
      t += 1.0 / rate;
    } else {
      std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
      t += gap(rng);
    }
    d = t;
  }
  if (due.back() > 0) {
    const double scale = (static_cast<double>(n) / rate) / due.back();
    for (double& d : due) d *= scale;
  }
  return due;
}

}  // namespace strata::bench
