#include "bench_serve/report.h"

#include <cmath>
#include <ctime>
#include <map>

namespace strata::bench {
namespace {

using nlohmann::ordered_json;

struct MetricSection {
  const char* key;     // ttft
  const char* title;   // the section rule's text
  const char* abbrev;  // TTFT
};
constexpr MetricSection kSections[] = {
    {"ttft", "Time to First Token", "TTFT"},
    {"tpot", "Time per Output Token (excl. 1st token)", "TPOT"},
    {"itl", "Inter-token Latency", "ITL"},
    {"e2el", "End-to-end Latency", "E2EL"},
};

const Distribution& distribution(const ServingMetrics& m, const std::string& key) {
  if (key == "ttft") return m.ttft_ms;
  if (key == "tpot") return m.tpot_ms;
  if (key == "itl") return m.itl_ms;
  return m.e2el_ms;
}

bool selected(const RunDescription& d, const char* key) {
  for (const std::string& k : d.percentile_metrics) {
    if (k == key) return true;
  }
  return false;
}

// `text` centred in a 50-column rule of `fill`, as Python's "{:c^50}".
std::string rule(const std::string& text, char fill) {
  const size_t width = 50;
  if (text.size() >= width) return text;
  const size_t left = (width - text.size()) / 2;
  return std::string(left, fill) + text + std::string(width - text.size() - left, fill);
}

void row(std::FILE* out, const std::string& name, const std::string& value) {
  std::fprintf(out, "%-40s %-10s\n", name.c_str(), value.c_str());
}
std::string fixed2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

}  // namespace

std::string timestamp_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return buf;
}

void print_summary(std::FILE* out, const RunDescription& d, const ServingMetrics& m) {
  std::fprintf(out, "%s\n", rule(" Serving Benchmark Result ", '=').c_str());
  row(out, "Successful requests:", std::to_string(m.completed));
  row(out, "Failed requests:", std::to_string(m.failed));
  if (d.max_concurrency > 0)
    row(out, "Maximum request concurrency:", std::to_string(d.max_concurrency));
  row(out, "Request rate configured (RPS):",
      std::isfinite(d.request_rate) ? fixed2(d.request_rate) : "inf");
  row(out, "Benchmark duration (s):", fixed2(m.duration_s));
  row(out, "Total input tokens:", std::to_string(m.total_input));
  row(out, "Total generated tokens:", std::to_string(m.total_output));
  row(out, "Request throughput (req/s):", fixed2(m.request_throughput));
  if (m.request_goodput) row(out, "Request goodput (req/s):", fixed2(*m.request_goodput));
  row(out, "Output token throughput (tok/s):", fixed2(m.output_throughput));
  row(out, "Peak output token throughput (tok/s):", fixed2(m.max_output_tokens_per_s));
  row(out, "Peak concurrent requests:", std::to_string(m.max_concurrent_requests));
  row(out, "Total token throughput (tok/s):", fixed2(m.total_token_throughput));
  for (const MetricSection& s : kSections) {
    if (!selected(d, s.key)) continue;
    const Distribution& dist = distribution(m, s.key);
    std::fprintf(out, "%s\n", rule(s.title, '-').c_str());
    const std::string a = s.abbrev;
    row(out, "Mean " + a + " (ms):", fixed2(dist.mean));
    row(out, "Median " + a + " (ms):", fixed2(dist.median));
    for (const auto& [p, v] : dist.percentiles) {
      row(out, "P" + percentile_label(p) + " " + a + " (ms):", fixed2(v));
    }
  }
  std::fprintf(out, "%s\n", std::string(50, '=').c_str());
}

std::vector<TurnStats> per_turn_stats(const std::vector<RequestRecord>& records) {
  struct Acc {
    std::vector<double> ttfts;
    double prompt = 0, cached = 0;
    bool has_cached = false;
  };
  std::map<int64_t, Acc> by_turn;
  for (const RequestRecord& r : records) {
    if (!r.success || r.turn_idx < 0) continue;
    Acc& a = by_turn[r.turn_idx];
    a.ttfts.push_back(r.ttft_s);
    a.prompt += static_cast<double>(r.prompt_len);
    if (r.cached_tokens >= 0) {
      a.cached += static_cast<double>(r.cached_tokens);
      a.has_cached = true;
    }
  }
  std::vector<TurnStats> out;
  for (const auto& [turn, a] : by_turn) {
    TurnStats t;
    t.turn_idx = turn;
    t.num_requests = static_cast<int64_t>(a.ttfts.size());
    t.mean_ttft_ms = mean_of(a.ttfts) * 1000;
    t.median_ttft_ms = percentile_of(a.ttfts, 50) * 1000;
    t.mean_prompt_tokens = a.prompt / static_cast<double>(a.ttfts.size());
    if (a.has_cached && a.prompt > 0) t.cached_fraction = a.cached / a.prompt;
    out.push_back(t);
  }
  return out;
}

void print_turn_table(std::FILE* out, const std::vector<TurnStats>& turns) {
  std::fprintf(out, "%s\n", rule(" TTFT by turn ", '-').c_str());
  std::fprintf(out, "%-5s %8s %13s %13s %11s %8s\n", "turn", "requests", "mean TTFT ms",
               "median ms", "prompt tok", "cached");
  for (const TurnStats& t : turns) {
    std::string cached = t.cached_fraction < 0 ? "n/a" : fixed2(t.cached_fraction * 100) + "%";
    std::fprintf(out, "%-5lld %8lld %13.2f %13.2f %11.1f %8s\n", static_cast<long long>(t.turn_idx),
                 static_cast<long long>(t.num_requests), t.mean_ttft_ms, t.median_ttft_ms,
                 t.mean_prompt_tokens, cached.c_str());
  }
}

void print_cache_report(std::FILE* out, const CacheReport& report) {
  std::fprintf(out, "%s\n", rule(" Prefix cache hits (from /metrics) ", '-').c_str());
  if (report.empty()) {
    std::fprintf(out, "(the server exposes no prefix-cache counters)\n");
    return;
  }
  std::fprintf(out, "%-10s %-7s %14s %14s %9s\n", "tier", "unit", "queries", "hits", "hit rate");
  for (const HitRateRow& r : report.rows) {
    std::fprintf(out, "%-10s %-7s %14.0f %14.0f %8.2f%%\n", r.tier.c_str(), r.unit.c_str(),
                 r.queries, r.hits, r.hit_rate() * 100);
  }
  double total = 0;
  for (const auto& [source, n] : report.prompt_tokens_by_source) total += n;
  for (const auto& [source, n] : report.prompt_tokens_by_source) {
    std::fprintf(out, "prompt tokens from %-22s %12.0f (%.2f%%)\n", (source + ":").c_str(), n,
                 total > 0 ? n / total * 100 : 0.0);
  }
}

ordered_json result_json(const RunDescription& d, const ServingMetrics& m,
                         const std::vector<RequestRecord>& records, bool detailed) {
  ordered_json j;
  j["date"] = d.date;
  j["endpoint_type"] = d.backend;
  j["backend"] = d.backend;
  j["label"] = d.label.empty() ? ordered_json(nullptr) : ordered_json(d.label);
  j["model_id"] = d.model_id;
  j["tokenizer_id"] = d.tokenizer_id;
  j["base_url"] = d.base_url;
  j["endpoint"] = d.endpoint;
  j["dataset_name"] = d.dataset_name;
  j["num_prompts"] = d.num_prompts;
  j["request_rate"] = std::isfinite(d.request_rate) ? ordered_json(d.request_rate) : "inf";
  j["burstiness"] = d.burstiness;
  j["max_concurrency"] = d.max_concurrency > 0 ? ordered_json(d.max_concurrency) : nullptr;
  j["duration"] = m.duration_s;
  j["completed"] = m.completed;
  j["failed"] = m.failed;
  j["total_input_tokens"] = m.total_input;
  j["total_output_tokens"] = m.total_output;
  j["request_throughput"] = m.request_throughput;
  j["request_goodput"] = m.request_goodput ? ordered_json(*m.request_goodput) : nullptr;
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
  j["max_output_tokens_per_s"] = m.max_output_tokens_per_s;
  j["max_concurrent_requests"] = m.max_concurrent_requests;
  ordered_json latencies = ordered_json::array(), queue_times = ordered_json::array();
  for (const RequestRecord& r : records) {
    latencies.push_back(r.latency_s);
    queue_times.push_back(r.queue_s);
  }
  j["latencies"] = std::move(latencies);
  j["queue_times"] = std::move(queue_times);
  for (const MetricSection& s : kSections) {
    if (!selected(d, s.key)) continue;
    const Distribution& dist = distribution(m, s.key);
    const std::string k = s.key;
    j["mean_" + k + "_ms"] = dist.mean;
    j["median_" + k + "_ms"] = dist.median;
    j["std_" + k + "_ms"] = dist.std;
    for (const auto& [p, v] : dist.percentiles) j["p" + percentile_label(p) + "_" + k + "_ms"] = v;
  }
  if (!detailed) return j;
  ordered_json input_lens = ordered_json::array(), output_lens = ordered_json::array(),
               ttfts = ordered_json::array(), itls = ordered_json::array(),
               start_times = ordered_json::array(), texts = ordered_json::array(),
               errors = ordered_json::array();
  for (const RequestRecord& r : records) {
    input_lens.push_back(r.prompt_len);
    output_lens.push_back(r.success ? r.output_tokens : 0);
    ttfts.push_back(r.ttft_s);
    itls.push_back(r.itl_s);
    start_times.push_back(r.start_s);
    texts.push_back(r.generated_text);
    errors.push_back(r.error);
  }
  j["input_lens"] = std::move(input_lens);
  j["output_lens"] = std::move(output_lens);
  j["ttfts"] = std::move(ttfts);
  j["itls"] = std::move(itls);
  j["start_times"] = std::move(start_times);
  j["generated_texts"] = std::move(texts);
  j["errors"] = std::move(errors);
  return j;
}

ordered_json turn_stats_json(const std::vector<TurnStats>& turns) {
  ordered_json a = ordered_json::array();
  for (const TurnStats& t : turns) {
    a.push_back({{"turn", t.turn_idx},
                 {"requests", t.num_requests},
                 {"mean_ttft_ms", t.mean_ttft_ms},
                 {"median_ttft_ms", t.median_ttft_ms},
                 {"mean_prompt_tokens", t.mean_prompt_tokens},
                 {"cached_fraction", t.cached_fraction < 0 ? ordered_json(nullptr)
                                                           : ordered_json(t.cached_fraction)}});
  }
  return a;
}

ordered_json cache_report_json(const CacheReport& report) {
  ordered_json tiers = ordered_json::array();
  for (const HitRateRow& r : report.rows) {
    tiers.push_back({{"tier", r.tier},
                     {"unit", r.unit},
                     {"metric", r.metric},
                     {"queries", r.queries},
                     {"hits", r.hits},
                     {"hit_rate", r.hit_rate()}});
  }
  ordered_json sources = ordered_json::object();
  for (const auto& [source, n] : report.prompt_tokens_by_source) sources[source] = n;
  return {{"tiers", tiers}, {"prompt_tokens_by_source", sources}};
}

}  // namespace strata::bench
