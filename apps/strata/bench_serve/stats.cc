#include "bench_serve/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace strata::bench {

double mean_of(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double std_of(const std::vector<double>& values) {
  if (values.empty()) return 0;
  const double m = mean_of(values);
  double sq = 0;
  for (double v : values) sq += (v - m) * (v - m);
  return std::sqrt(sq / static_cast<double>(values.size()));
}

double percentile_of(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

Distribution summarize(const std::vector<double>& values, const std::vector<double>& percentiles,
                       double scale) {
  Distribution d;
  d.mean = mean_of(values) * scale;
  d.median = percentile_of(values, 50) * scale;
  d.std = std_of(values) * scale;
  for (double p : percentiles) d.percentiles.emplace_back(p, percentile_of(values, p) * scale);
  return d;
}

std::string percentile_label(double p) {
  if (p == std::floor(p)) return std::to_string(static_cast<long long>(p));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", p);
  return buf;
}

}  // namespace strata::bench
