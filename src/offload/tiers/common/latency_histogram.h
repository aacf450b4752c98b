// A latency histogram with fixed buckets (seconds), kept as plain counts so
// the offload code can fill it and /metrics can render it (server/metrics.h)
// without either depending on the other. Not thread-safe: its owner guards it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace strata::offload {

struct LatencyHistogram {
  // Upper bounds in seconds, 100 us .. 10 s.
  static const std::vector<double>& bounds() {
    static const std::vector<double> kBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                                1.0,    2.5,     5.0,    10.0};
    return kBounds;
  }

  void observe(double seconds) {
    if (counts.empty()) counts.assign(bounds().size() + 1, 0);
    const auto& b = bounds();
    ++counts[static_cast<size_t>(std::lower_bound(b.begin(), b.end(), seconds) - b.begin())];
    sum += seconds;
  }
  int64_t count() const {
    int64_t n = 0;
    for (int64_t c : counts) n += c;
    return n;
  }

  std::vector<int64_t> counts;  // per bucket (not cumulative), last = above every bound; empty = none
  double sum = 0;
};

}  // namespace strata::offload
