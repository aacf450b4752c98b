// Summary statistics with numpy's conventions, so numbers match
// `vllm bench serve` on the same samples:
//   mean, median, std (population, ddof = 0), and percentiles by linear
//   interpolation between closest ranks (numpy.percentile's default method:
//   position p/100 * (n - 1) in the sorted samples).
// An empty sample set summarizes to zeros (vLLM's `np.mean(x or 0)`).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace strata::bench {

double mean_of(const std::vector<double>& values);
double std_of(const std::vector<double>& values);  // population standard deviation
// p in [0, 100]; values need not be sorted.
double percentile_of(std::vector<double> values, double p);

struct Distribution {
  double mean = 0;
  double median = 0;
  double std = 0;
  std::vector<std::pair<double, double>> percentiles;  // (p, value)
};

// Summary of `values` scaled by `scale` (1000 turns seconds into ms).
Distribution summarize(const std::vector<double>& values, const std::vector<double>& percentiles,
                       double scale);

// "99" for 99, "99.9" for 99.9: the key fragment vLLM writes (p99_ttft_ms).
std::string percentile_label(double p);

}  // namespace strata::bench
