// Prefix-cache hit rates by tier over one benchmark run, from GET /metrics
// scraped before and after it (counter deltas). Rows appear only for the
// metrics the server exposes:
//   device       vllm:prefix_cache_{queries,hits}_total (tokens; the KV pool)
//   external     vllm:external_prefix_cache_{queries,hits}_total (tokens
//                served through the KV connector: all offload tiers together)
//   tier=<name>  any counter pair <base>queries_total / <base>hits_total (or
//                lookups_total / hits_total) labelled `tier`, e.g.
//                vllm:kv_offload_tiering_chunk_queries_total{tier="cpu"}
//                (chunks, not tokens)
// plus the deltas of vllm:prompt_tokens_by_source_total by `source`.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench_serve/prometheus_text.h"

namespace strata::bench {

struct HitRateRow {
  std::string tier;    // "device", "external", "cpu", "fs", ...
  std::string unit;    // "tokens" or "chunks"
  std::string metric;  // the queries counter it came from
  double queries = 0;
  double hits = 0;
  double hit_rate() const { return queries > 0 ? hits / queries : 0; }
};

struct CacheReport {
  std::vector<HitRateRow> rows;
  std::vector<std::pair<std::string, double>> prompt_tokens_by_source;
  bool empty() const { return rows.empty() && prompt_tokens_by_source.empty(); }
};

CacheReport compute_cache_report(const std::vector<PromSample>& before,
                                 const std::vector<PromSample>& after);

}  // namespace strata::bench
