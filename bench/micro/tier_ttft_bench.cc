// Time to first token for a request whose long prefix is (a) computed,
// (b) in the KV pool, (c) in the host tier only, (d) only on disk (the
// filesystem tier), on one engine with a host + filesystem tier; plus the
// bandwidth each tier moved while doing it. The computed case is the peer:
// each tier's TTFT is reported as a ratio to it, measured in the same run.
//
//   tier_ttft_bench --model DIR [--prefix-len 2000] [--suffix-len 16]
//                   [--repeats 3] [--threads N] [--fs-dir DIR]
//
// Per repeat i: prefix P_i (random ids) + suffix s. (a) P_i+s1 on an engine
// that never saw P_i; (b) P_i+s2 (KV-pool hit); then a 2nd prompt of the same
// length evicts P_i from the pool (sized for one prompt); (c) P_i+s3 reloads
// from the host tier; reset_prefix_cache() empties pool and host tier;
// (d) P_i+s4 reloads from disk (chunk files evicted from the page cache
// first, so the disk itself is read). Stores to the tiers finish between cases.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "engine/engine_core.h"
#include "offload/tiers/fs/fs_tier.h"
#include "ops/ops.h"

namespace strata {
namespace {

struct Options {
  std::string model;
  std::string fs_dir;
  int64_t prefix_len = 2000;
  int64_t suffix_len = 16;
  int repeats = 3;
  int threads = 0;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") o.model = v;
    else if (k == "--fs-dir") o.fs_dir = v;
    else if (k == "--prefix-len") o.prefix_len = std::stoll(v);
    else if (k == "--suffix-len") o.suffix_len = std::stoll(v);
    else if (k == "--repeats") o.repeats = std::stoi(v);
    else if (k == "--threads") o.threads = std::stoi(v);
    else return false;
  }
  return !o.model.empty();
}

std::vector<int32_t> random_ids(int64_t n, uint32_t seed, int64_t vocab) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(100, static_cast<int32_t>(std::min<int64_t>(vocab, 30000) - 1));
  std::vector<int32_t> v(n);
  for (int32_t& t : v) t = pick(rng);
  return v;
}

// Seconds from add_request to the first generated token (max_tokens 1).
double ttft(engine::EngineCore& core, const std::string& id, std::vector<int32_t> prompt) {
  engine::EngineRequest r;
  r.request_id = id;
  r.prompt_token_ids = std::move(prompt);
  r.sampling.temperature = 0;
  r.stop.max_tokens = 1;
  const auto start = std::chrono::steady_clock::now();
  Status s = core.add_request(std::move(r));
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    std::exit(1);
  }
  double first = -1;
  while (core.has_unfinished_requests()) {
    for (const engine::RequestOutput& out : core.step()) {
      if (first < 0 && !out.new_tokens.empty()) {
        first = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
    }
    if (first >= 0) break;
  }
  while (core.has_unfinished_requests()) core.step();
  core.wait_for_offload();
  return first;
}

// Drops the chunk files from the page cache, so (d) reads the disk itself.
void evict_page_cache(const std::string& dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const int fd = open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int run(const Options& o) {
  StatusOr<model::ModelFiles> files = model::open_model(o.model);
  if (!files.ok()) return std::fprintf(stderr, "%s\n", files.status().to_string().c_str()), 1;
  StatusOr<std::unique_ptr<model::Model>> model = model::Model::load(std::move(*files));
  if (!model.ok()) return std::fprintf(stderr, "%s\n", model.status().to_string().c_str()), 1;
  const int64_t total = o.prefix_len + o.suffix_len;
  std::string fs_dir = o.fs_dir;
  if (fs_dir.empty()) {
    char tmpl[] = "/tmp/strata-tier-ttft-XXXXXX";
    fs_dir = mkdtemp(tmpl);
  }
  engine::EngineConfig c;
  c.block_size = 16;
  c.num_blocks = (total + 1) / c.block_size + 8;  // one prompt at a time
  c.scheduler.max_model_len = c.num_blocks * c.block_size;
  c.scheduler.max_num_batched_tokens = 2048;
  c.offload.enabled = true;
  c.offload.cpu_bytes_to_use = 4 * (total + 64) * (*model)->kv_bytes_per_block(1);
  offload::SecondaryTierConfig fs;
  fs.type = "fs";
  fs.emplace<offload::FsTierConfig>().root_dir = fs_dir;
  c.offload.secondary_tiers.push_back(fs);
  ThreadPool pool(o.threads > 0 ? o.threads : num_hardware_threads());
  StatusOr<std::unique_ptr<engine::EngineCore>> core = engine::EngineCore::create(**model, c, pool);
  if (!core.ok()) return std::fprintf(stderr, "%s\n", core.status().to_string().c_str()), 1;
  engine::EngineCore& e = **core;
  const int64_t vocab = (*model)->vocab_size();
  std::vector<double> computed, pooled, host, disk;
  for (int i = 0; i < o.repeats; ++i) {
    const std::vector<int32_t> prefix = random_ids(o.prefix_len, 1000 + i, vocab);
    auto with_suffix = [&](uint32_t seed) {
      std::vector<int32_t> p = prefix;
      std::vector<int32_t> s = random_ids(o.suffix_len, seed, vocab);
      p.insert(p.end(), s.begin(), s.end());
      return p;
    };
    const std::string tag = std::to_string(i);
    computed.push_back(ttft(e, "a" + tag, with_suffix(1)));
    pooled.push_back(ttft(e, "b" + tag, with_suffix(2)));
    ttft(e, "evict" + tag, random_ids(total, 5000 + i, vocab));
    host.push_back(ttft(e, "c" + tag, with_suffix(3)));
    e.reset_prefix_cache();
    evict_page_cache(fs_dir);
    disk.push_back(ttft(e, "d" + tag, with_suffix(4)));
    e.reset_prefix_cache();
  }
  const engine::EngineStats st = e.stats();
  std::printf("model %s, prefix %lld + suffix %lld tokens, block 16, %d threads, %s, %d repeats (median)\n",
              o.model.c_str(), static_cast<long long>(o.prefix_len),
              static_cast<long long>(o.suffix_len), pool.num_threads(), ops::cpu_backend_name(),
              o.repeats);
  std::printf("KV per token %lld bytes; prefix KV %.1f MB\n",
              static_cast<long long>((*model)->kv_bytes_per_block(1)),
              o.prefix_len * (*model)->kv_bytes_per_block(1) / 1e6);
  const double base = median(computed);
  const std::pair<const char*, double> rows[] = {{"(a) computed", base},
                                                  {"(b) KV pool", median(pooled)},
                                                  {"(c) host tier", median(host)},
                                                  {"(d) filesystem tier", median(disk)}};
  std::printf("%-22s %12s %14s\n", "prefix source", "TTFT ms", "vs computed");
  for (const auto& [name, t] : rows) {
    std::printf("%-22s %12.1f %13.1fx\n", name, t * 1e3, base / t);
  }
  std::printf("%-22s %12s %14s %12s %12s\n", "tier bandwidth", "store MB/s", "load MB/s",
              "stored MB", "loaded MB");
  for (const offload::TierStats& t : st.offload.tiers) {
    auto rate = [](int64_t bytes, double s) { return s > 0 ? bytes / s / 1e6 : 0.0; };
    std::printf("%-22s %12.0f %14.0f %12.1f %12.1f\n",
                (t.tier == "cpu" ? "cpu (pool<->host)" : t.tier.c_str()),
                rate(t.store_bytes, t.store_seconds), rate(t.load_bytes, t.load_seconds),
                t.store_bytes / 1e6, t.load_bytes / 1e6);
  }
  if (o.fs_dir.empty()) std::filesystem::remove_all(fs_dir);
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  strata::Options o;
  if (!strata::parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: tier_ttft_bench --model DIR [--prefix-len 2000] [--suffix-len 16] "
                 "[--repeats 3] [--threads N] [--fs-dir DIR]\n");
    return 2;
  }
  return strata::run(o);
}
