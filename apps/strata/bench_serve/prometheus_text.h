// A reader for the Prometheus text exposition format (what GET /metrics
// returns), enough to diff counters before and after a run: samples with
// their labels; comments, HELP and TYPE lines are skipped; label values may
// hold escaped quotes, backslashes and newlines.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::bench {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

StatusOr<std::vector<PromSample>> parse_prometheus_text(std::string_view text);

// Sum of every sample called `name` (whose label `label_key` equals
// `label_value`, when a key is given).
double sum_samples(const std::vector<PromSample>& samples, const std::string& name,
                   const std::string& label_key = "", const std::string& label_value = "");
bool has_samples(const std::vector<PromSample>& samples, const std::string& name);

}  // namespace strata::bench
