#include "bench_serve/serving_metrics.h"

#include <algorithm>
#include <cmath>

namespace strata::bench {
namespace {

bool meets_slo(const RequestRecord& r, const GoodputSlo& slo) {
  const double tpot_ms = request_tpot_s(r).value_or(0) * 1000;
  if (slo.ttft_ms && r.ttft_s * 1000 > *slo.ttft_ms) return false;
  if (slo.tpot_ms && tpot_ms > *slo.tpot_ms) return false;
  if (slo.e2el_ms && r.latency_s * 1000 > *slo.e2el_ms) return false;
  return true;
}

// Peak output chunks per 1-s bucket and peak requests active in a bucket,
// counted from the first request's start.
void compute_peaks(const std::vector<RequestRecord>& records, ServingMetrics* m) {
  double first = INFINITY, last = -INFINITY;
  for (const RequestRecord& r : records) {
    if (!r.success) continue;
    first = std::min(first, r.start_s);
    last = std::max(last, r.start_s + r.latency_s);
  }
  if (first > last) return;
  const size_t num_buckets = static_cast<size_t>(std::ceil(last - first)) + 1;
  std::vector<double> tokens(num_buckets, 0);
  std::vector<int64_t> active(num_buckets, 0);
  for (const RequestRecord& r : records) {
    if (!r.success) continue;
    double t = r.start_s + r.ttft_s;
    auto add_token = [&](double when) {
      const double bucket = std::floor(when - first);
      if (bucket >= 0 && bucket < static_cast<double>(num_buckets)) {
        tokens[static_cast<size_t>(bucket)] += 1;
      }
    };
    add_token(t);
    for (double gap : r.itl_s) add_token(t += gap);
    const size_t from = static_cast<size_t>(r.start_s - first);
    const size_t to =
        std::min(num_buckets - 1, static_cast<size_t>(r.start_s + r.latency_s - first));
    for (size_t s = from; s <= to; ++s) ++active[s];
  }
  m->max_output_tokens_per_s = *std::max_element(tokens.begin(), tokens.end());
  m->max_concurrent_requests = *std::max_element(active.begin(), active.end());
}

}  // namespace

std::optional<double> request_tpot_s(const RequestRecord& r) {
  if (r.output_tokens <= 1) return std::nullopt;
  return (r.latency_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1);
}

ServingMetrics compute_serving_metrics(const std::vector<RequestRecord>& records, double duration_s,
                                       const std::vector<double>& percentiles,
                                       const GoodputSlo& slo) {
  ServingMetrics m;
  m.duration_s = duration_s;
  std::vector<double> ttfts, tpots, itls, e2els;
  int64_t good = 0;
  for (const RequestRecord& r : records) {
    if (!r.success) {
      ++m.failed;
      continue;
    }
    ++m.completed;
    m.total_input += r.prompt_len;
    m.total_output += r.output_tokens;
    if (std::optional<double> tpot = request_tpot_s(r)) tpots.push_back(*tpot);
    itls.insert(itls.end(), r.itl_s.begin(), r.itl_s.end());
    ttfts.push_back(r.ttft_s);
    e2els.push_back(r.latency_s);
    if (!slo.empty() && meets_slo(r, slo)) ++good;
  }
  if (duration_s > 0) {
    m.request_throughput = static_cast<double>(m.completed) / duration_s;
    m.output_throughput = static_cast<double>(m.total_output) / duration_s;
    m.total_token_throughput = static_cast<double>(m.total_input + m.total_output) / duration_s;
    if (!slo.empty()) m.request_goodput = static_cast<double>(good) / duration_s;
  }
  m.ttft_ms = summarize(ttfts, percentiles, 1000);
  m.tpot_ms = summarize(tpots, percentiles, 1000);
  m.itl_ms = summarize(itls, percentiles, 1000);
  m.e2el_ms = summarize(e2els, percentiles, 1000);
  compute_peaks(records, &m);
  return m;
}

}  // namespace strata::bench
