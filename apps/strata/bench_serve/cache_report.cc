#include "bench_serve/cache_report.h"

#include <set>

namespace strata::bench {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

double delta(const std::vector<PromSample>& before, const std::vector<PromSample>& after,
             const std::string& name, const std::string& key = "", const std::string& value = "") {
  return sum_samples(after, name, key, value) - sum_samples(before, name, key, value);
}

void add_token_row(const std::vector<PromSample>& before, const std::vector<PromSample>& after,
                   const std::string& tier, const std::string& queries, const std::string& hits,
                   CacheReport* out) {
  if (!has_samples(after, queries)) return;
  out->rows.push_back(
      {tier, "tokens", queries, delta(before, after, queries), delta(before, after, hits)});
}

void add_tier_rows(const std::vector<PromSample>& before, const std::vector<PromSample>& after,
                   CacheReport* out) {
  std::set<std::pair<std::string, std::string>> seen;  // (queries metric, tier)
  for (const PromSample& s : after) {
    auto tier = s.labels.find("tier");
    if (tier == s.labels.end() || !seen.insert({s.name, tier->second}).second) continue;
    std::string base;
    if (ends_with(s.name, "queries_total")) {
      base = s.name.substr(0, s.name.size() - 13);
    } else if (ends_with(s.name, "lookups_total")) {
      base = s.name.substr(0, s.name.size() - 13);
    } else {
      continue;
    }
    const std::string hits = base + "hits_total";
    if (!has_samples(after, hits)) continue;
    const std::string unit = s.name.find("chunk") != std::string::npos ? "chunks" : "tokens";
    out->rows.push_back({tier->second, unit, s.name,
                         delta(before, after, s.name, "tier", tier->second),
                         delta(before, after, hits, "tier", tier->second)});
  }
}

}  // namespace

CacheReport compute_cache_report(const std::vector<PromSample>& before,
                                 const std::vector<PromSample>& after) {
  CacheReport r;
  if (has_samples(after, "vllm:prefix_cache_queries_total")) {
    add_token_row(before, after, "device", "vllm:prefix_cache_queries_total",
                  "vllm:prefix_cache_hits_total", &r);
  } else {  // names before vLLM 0.9
    add_token_row(before, after, "device", "vllm:gpu_prefix_cache_queries_total",
                  "vllm:gpu_prefix_cache_hits_total", &r);
  }
  add_token_row(before, after, "external", "vllm:external_prefix_cache_queries_total",
                "vllm:external_prefix_cache_hits_total", &r);
  add_tier_rows(before, after, &r);
  std::set<std::string> sources;
  for (const PromSample& s : after) {
    auto src = s.labels.find("source");
    if (s.name == "vllm:prompt_tokens_by_source_total" && src != s.labels.end() &&
        sources.insert(src->second).second) {
      r.prompt_tokens_by_source.emplace_back(src->second,
                                             delta(before, after, s.name, "source", src->second));
    }
  }
  return r;
}

}  // namespace strata::bench
