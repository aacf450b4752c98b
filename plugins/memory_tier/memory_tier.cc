// Example Strata tier plugin: chunks kept in this process's memory, evicted
// oldest-first beyond "max_bytes". It shows the whole C ABI
// (src/offload/tiers/plugin/strata_tier_plugin.h) and is built and tested in
// CI; a real plugin would do its I/O on threads of its own. Everything here
// completes inside submit_*, which is allowed because memcpy does not block.
//
// Built out of tree against an installed Strata (PREFIX/include/strata):
//   g++ -std=c++20 -O2 -shared -fPIC -fvisibility=hidden -I PREFIX/include/strata
//       memory_tier.cc -o libstrata_memory_tier.so
//
// Config: {"type": "memory", "module_path": ".../libstrata_memory_tier.so",
//          "max_bytes": 1073741824}
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "strata_tier_plugin.h"

namespace {

using Key = std::pair<uint64_t, uint64_t>;

struct Result {
  int64_t job_id;
  std::vector<uint8_t> ok;
  uint64_t bytes;
  double seconds;
};

// Reads "max_bytes": N from the entry's JSON (the only key this example has).
int64_t max_bytes_of(const char* json) {
  const char* p = std::strstr(json, "\"max_bytes\"");
  if (p == nullptr) return 0;
  p = std::strchr(p, ':');
  return p == nullptr ? 0 : std::strtoll(p + 1, nullptr, 10);
}

}  // namespace

struct strata_tier {
  strata_tier_init init;
  int64_t max_bytes = 0;
  std::map<Key, std::vector<uint8_t>> chunks;
  std::deque<Key> order;  // insertion order, for eviction
  std::vector<Result> done;
  std::vector<Result> handed_out;  // keeps `ok` arrays alive until the next poll
  mutable std::mutex mu;           // stats() may come from any thread
  strata_tier_stats stats{};
};

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void evict_for(strata_tier* t, uint64_t bytes) {
  while (t->max_bytes > 0 && t->stats.used_bytes + static_cast<int64_t>(bytes) > t->max_bytes &&
         !t->order.empty()) {
    auto it = t->chunks.find(t->order.front());
    t->order.pop_front();
    if (it == t->chunks.end()) continue;
    t->stats.used_bytes -= static_cast<int64_t>(it->second.size());
    t->chunks.erase(it);
    ++t->stats.evictions;
  }
}

strata_tier* create(const strata_tier_init* init, char* error, size_t error_len) {
  if (init->slot_bytes == 0) {
    std::snprintf(error, error_len, "slot_bytes is 0");
    return nullptr;
  }
  auto* t = new strata_tier;
  t->init = *init;
  t->max_bytes = max_bytes_of(init->config_json);
  if (t->max_bytes < 0) {
    std::snprintf(error, error_len, "max_bytes must be >= 0");
    delete t;
    return nullptr;
  }
  t->stats.capacity_bytes = t->max_bytes;
  return t;
}

void destroy(strata_tier* t) { delete t; }

strata_lookup_result lookup(strata_tier* t, strata_chunk_key key) {
  std::lock_guard<std::mutex> lock(t->mu);
  ++t->stats.chunk_lookups;
  if (t->chunks.count({key.low, key.high}) == 0) return STRATA_LOOKUP_MISS;
  ++t->stats.chunk_hits;
  return STRATA_LOOKUP_HIT;
}

void submit_store(strata_tier* t, const strata_tier_job* job) {
  const double start = now_s();
  std::lock_guard<std::mutex> lock(t->mu);
  Result r{job->job_id, std::vector<uint8_t>(job->num_keys, 1), 0, 0};
  for (uint64_t i = 0; i < job->num_keys; ++i) {
    const Key k{job->keys[i].low, job->keys[i].high};
    if (t->chunks.count(k) != 0) {
      ++t->stats.stores_skipped;
      continue;
    }
    const uint8_t* src = t->init.region_base + job->slots[i] * t->init.slot_bytes;
    evict_for(t, t->init.slot_bytes);
    t->chunks[k].assign(src, src + t->init.slot_bytes);
    t->order.push_back(k);
    t->stats.used_bytes += static_cast<int64_t>(t->init.slot_bytes);
    r.bytes += t->init.slot_bytes;
  }
  r.seconds = now_s() - start;
  t->stats.store_bytes += static_cast<int64_t>(r.bytes);
  t->stats.store_seconds += r.seconds;
  t->stats.num_chunks = static_cast<int64_t>(t->chunks.size());
  t->done.push_back(std::move(r));
}

void submit_load(strata_tier* t, const strata_tier_job* job) {
  const double start = now_s();
  std::lock_guard<std::mutex> lock(t->mu);
  Result r{job->job_id, std::vector<uint8_t>(job->num_keys, 0), 0, 0};
  for (uint64_t i = 0; i < job->num_keys; ++i) {
    auto it = t->chunks.find({job->keys[i].low, job->keys[i].high});
    if (it == t->chunks.end()) {
      ++t->stats.load_failures;  // evicted since the lookup
      continue;
    }
    std::memcpy(t->init.region_base + job->slots[i] * t->init.slot_bytes, it->second.data(),
                t->init.slot_bytes);
    r.ok[i] = 1;
    r.bytes += t->init.slot_bytes;
  }
  r.seconds = now_s() - start;
  t->stats.load_bytes += static_cast<int64_t>(r.bytes);
  t->stats.load_seconds += r.seconds;
  t->done.push_back(std::move(r));
}

size_t poll_finished(strata_tier* t, strata_tier_result* out, size_t max) {
  std::lock_guard<std::mutex> lock(t->mu);
  t->handed_out.clear();
  const size_t n = std::min(max, t->done.size());
  for (size_t i = 0; i < n; ++i) t->handed_out.push_back(std::move(t->done[i]));
  t->done.erase(t->done.begin(), t->done.begin() + static_cast<std::ptrdiff_t>(n));
  for (size_t i = 0; i < n; ++i) {
    const Result& r = t->handed_out[i];
    out[i] = {r.job_id, r.ok.data(), r.ok.size(), r.bytes, r.seconds};
  }
  return n;
}

void drain(strata_tier*) {}  // nothing runs in the background

void stats(strata_tier* t, strata_tier_stats* out) {
  std::lock_guard<std::mutex> lock(t->mu);
  *out = t->stats;
}

#ifndef STRATA_EXAMPLE_ABI_VERSION
#define STRATA_EXAMPLE_ABI_VERSION STRATA_TIER_ABI_VERSION
#endif
const strata_tier_vtable kVtable = {STRATA_EXAMPLE_ABI_VERSION, create, destroy, lookup,
                                    submit_store, submit_load, poll_finished, drain, stats};

}  // namespace

extern "C" __attribute__((visibility("default"))) const strata_tier_vtable* strata_tier_plugin_v1() {
  return &kVtable;
}
