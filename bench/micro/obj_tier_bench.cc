// Object-store tier on loopback: chunk store/load bandwidth and per-chunk
// latency for 1 MiB and 128 KiB chunks, with the filesystem tier (the peer)
// measured in the same run on the same host memory. See BENCHMARKS.md,
// "Object-store tier (S3 on loopback)".
//
//   obj_tier_bench [--endpoint URL --bucket B] [--io-threads 4] [--repeats 3]
//                  [--latency-samples 50] [--bulk-mib 64]
//
// Without --endpoint it starts s3rver itself (tools/s3-server, objects under
// $STRATA_BENCH_DIR or /tmp) and reports the CPU time s3rver used per phase;
// with --endpoint it uses that server, credentials from AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY (else s3rver's test pair).
//
// Bandwidth: one job of bulk-mib worth of chunks (new keys each repeat for
// stores; the same chunks for loads), submit -> drain -> poll; median of
// `repeats`. Latency: one-chunk jobs one after another (store of a new key;
// load of a stored key), submit -> drain -> poll; p50 and p90 of
// `latency-samples`. CPU columns: CPU seconds per wall second during the
// bulk phases, of this process (the tier's threads) and of s3rver. The
// filesystem tier uses the same thread count split the
// same way (half read, half write) and a fresh directory (page cache).
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "offload/tiers/fs/fs_tier.h"
#include "offload/tiers/obj/obj_tier.h"
#include "offload/tiers/testing/s3_test_server.h"

namespace strata::offload {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string endpoint;
  std::string bucket = "strata-bench";
  int io_threads = 4;
  int repeats = 3;
  int latency_samples = 50;
  int64_t bulk_mib = 64;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--endpoint") {
      o.endpoint = v;
    } else if (k == "--bucket") {
      o.bucket = v;
    } else if (k == "--io-threads") {
      o.io_threads = std::stoi(v);
    } else if (k == "--repeats") {
      o.repeats = std::stoi(v);
    } else if (k == "--latency-samples") {
      o.latency_samples = std::stoi(v);
    } else if (k == "--bulk-mib") {
      o.bulk_mib = std::stoll(v);
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && o.io_threads >= 1 && o.repeats >= 1 && o.latency_samples >= 1;
}

// layers * 2 (K,V) * 16 tokens * 8 heads * 64 dims * 4 bytes = layers * 64 KiB.
ChunkFormat format_with_layers(int64_t num_layers) {
  ChunkFormat f;
  f.model_fingerprint = "obj-tier-bench";
  f.num_layers = num_layers;
  f.num_kv_heads = 8;
  f.head_dim = 64;
  f.block_size = 16;
  return f;
}

std::string bench_dir(const std::string& name) {
  const char* base = std::getenv("STRATA_BENCH_DIR");
  std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/" + name + "_XXXXXX";
  return ::mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
}

// CPU seconds (user + system) a process has used, from /proc/<pid>/stat.
double process_cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Host memory and a key generator shared by both tiers' runs.
struct Workload {
  explicit Workload(const ChunkFormat& f, int64_t num_slots)
      : format(f), memory(static_cast<size_t>(f.payload_bytes() * num_slots)) {
    std::mt19937_64 rng(42);
    for (size_t i = 0; i + 8 <= memory.size(); i += 8) {
      const uint64_t x = rng();
      std::memcpy(memory.data() + i, &x, 8);
    }
    region = {memory.data(), num_slots, f.payload_bytes()};
  }
  ChunkKey next_key() { return {++key_counter, 0xbe7c4ull}; }

  ChunkFormat format;
  std::vector<uint8_t> memory;
  HostRegion region;
  uint64_t key_counter = static_cast<uint64_t>(
      std::chrono::system_clock::now().time_since_epoch().count());  // fresh keys per run
};

// Runs one job; returns its wall time, or -1 if any chunk failed.
double run_job(SecondaryTier& tier, bool is_load, const std::vector<ChunkKey>& keys,
               int64_t first_slot) {
  static int64_t next_job_id = 1;
  TierJob job{next_job_id++, keys, {}};
  for (size_t i = 0; i < keys.size(); ++i)
    job.slots.push_back(first_slot + static_cast<int64_t>(i));
  const Clock::time_point start = Clock::now();
  if (is_load) {
    tier.submit_load(std::move(job));
  } else {
    tier.submit_store(std::move(job));
  }
  tier.drain();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const TierJobResult& r : tier.poll_finished()) {
    for (bool ok : r.ok) {
      if (!ok) return -1;
    }
  }
  return seconds;
}

struct Figures {
  double store_mb_s = 0, load_mb_s = 0;
  double store_p50_ms = 0, store_p90_ms = 0, load_p50_ms = 0, load_p90_ms = 0;
  double server_cpu_store = -1, server_cpu_load = -1;  // server CPU s per wall s
  double self_cpu_store = 0, self_cpu_load = 0;        // this process's CPU s per wall s
  bool ok = true;
};

// `server_pid` > 0: also reports that process's CPU use during the bulk phases.
Figures measure(SecondaryTier& tier, Workload& w, const Options& o, int64_t bulk_chunks,
                pid_t server_pid) {
  Figures f;
  const double bulk_mb = static_cast<double>(bulk_chunks * w.format.payload_bytes()) / 1e6;
  std::vector<ChunkKey> loaded;
  std::vector<double> store_s, load_s;
  double cpu = server_pid > 0 ? process_cpu_seconds(server_pid) : 0;
  double self_cpu = process_cpu_seconds(::getpid());
  double wall = 0;
  for (int r = 0; r < o.repeats; ++r) {
    std::vector<ChunkKey> keys;
    for (int64_t i = 0; i < bulk_chunks; ++i) keys.push_back(w.next_key());
    const double s = run_job(tier, false, keys, 0);
    if (s < 0) f.ok = false;
    store_s.push_back(s);
    wall += s;
    loaded = keys;
  }
  if (server_pid > 0) f.server_cpu_store = (process_cpu_seconds(server_pid) - cpu) / wall;
  f.self_cpu_store = (process_cpu_seconds(::getpid()) - self_cpu) / wall;
  cpu = server_pid > 0 ? process_cpu_seconds(server_pid) : 0;
  self_cpu = process_cpu_seconds(::getpid());
  wall = 0;
  for (int r = 0; r < o.repeats; ++r) {
    const double s = run_job(tier, true, loaded, bulk_chunks);
    if (s < 0) f.ok = false;
    load_s.push_back(s);
    wall += s;
  }
  if (server_pid > 0) f.server_cpu_load = (process_cpu_seconds(server_pid) - cpu) / wall;
  f.self_cpu_load = (process_cpu_seconds(::getpid()) - self_cpu) / wall;
  f.store_mb_s = bulk_mb / median(store_s);
  f.load_mb_s = bulk_mb / median(load_s);

  std::vector<double> store_ms, load_ms;
  for (int i = 0; i < o.latency_samples; ++i) {
    const ChunkKey key = w.next_key();
    const double s = run_job(tier, false, {key}, 0);
    const double l = run_job(tier, true, {key}, 1);
    if (s < 0 || l < 0) f.ok = false;
    store_ms.push_back(s * 1e3);
    load_ms.push_back(l * 1e3);
  }
  f.store_p50_ms = percentile(store_ms, 0.5);
  f.store_p90_ms = percentile(store_ms, 0.9);
  f.load_p50_ms = percentile(load_ms, 0.5);
  f.load_p90_ms = percentile(load_ms, 0.9);
  return f;
}

void print_row(const char* tier, const char* chunk, const Figures& f, const Figures* peer) {
  std::printf("| %s | %s | %.0f | %.0f | %.2f / %.2f | %.2f / %.2f |", tier, chunk, f.store_mb_s,
              f.load_mb_s, f.store_p50_ms, f.store_p90_ms, f.load_p50_ms, f.load_p90_ms);
  if (peer != nullptr) {
    std::printf(" %.2fx / %.2fx |", f.store_mb_s / peer->store_mb_s, f.load_mb_s / peer->load_mb_s);
  } else {
    std::printf(" 1x (peer) |");
  }
  std::printf(" %.2f / %.2f |", f.self_cpu_store, f.self_cpu_load);
  if (f.server_cpu_store >= 0) {
    std::printf(" %.2f / %.2f |", f.server_cpu_store, f.server_cpu_load);
  } else {
    std::printf(" - |");
  }
  std::printf("%s\n", f.ok ? "" : " (some chunks FAILED)");
}

int run(const Options& o) {
  std::unique_ptr<testing::ChildProcess> server;
  std::string server_dir;
  ObjTierConfig obj;
  obj.bucket = o.bucket;
  obj.io_threads = o.io_threads;
  if (o.endpoint.empty()) {
    server_dir = bench_dir("strata_obj_bench_s3");
    StatusOr<std::unique_ptr<testing::ChildProcess>> s =
        testing::start_s3_server(server_dir, {o.bucket});
    if (!s.ok()) {
      std::fprintf(stderr, "cannot start s3rver: %s\n", s.status().message().c_str());
      return 1;
    }
    server = std::move(s).value();
    obj.endpoint = server->endpoint();
    obj.access_key = testing::kTestAccessKey;
    obj.secret_key = testing::kTestSecretKey;
  } else {
    obj.endpoint = o.endpoint;
    if (std::getenv("AWS_ACCESS_KEY_ID") == nullptr) {
      obj.access_key = testing::kTestAccessKey;
      obj.secret_key = testing::kTestSecretKey;
    }
  }
  const std::string fs_dir = bench_dir("strata_obj_bench_fs");
  std::printf("obj tier: %s bucket %s, %d I/O threads; fs tier: %s, %d read + %d write threads\n",
              obj.endpoint.c_str(), o.bucket.c_str(), o.io_threads, fs_dir.c_str(),
              (o.io_threads + 1) / 2, o.io_threads / 2);
  std::printf("bulk: %lld MiB per job, median of %d; latency: %d one-chunk jobs\n\n",
              static_cast<long long>(o.bulk_mib), o.repeats, o.latency_samples);
  std::printf(
      "| tier | chunk | store MB/s | load MB/s | store ms p50 / p90 | load ms p50 / p90 | "
      "MB/s vs fs (store / load) | bench CPU s/s (store / load) | s3rver CPU s/s (store / load) "
      "|\n"
      "|---|---|---|---|---|---|---|---|---|\n");

  int rc = 0;
  const std::pair<const char*, int64_t> sizes[] = {{"1 MiB", 16}, {"128 KiB", 2}};
  for (const auto& [label, layers] : sizes) {
    const ChunkFormat format = format_with_layers(layers);
    const int64_t bulk_chunks = (o.bulk_mib << 20) / format.payload_bytes();
    Workload w(format, 2 * bulk_chunks);

    FsTierConfig fs_config;
    fs_config.root_dir = fs_dir;
    fs_config.n_read_threads = (o.io_threads + 1) / 2;
    fs_config.n_write_threads = o.io_threads / 2;
    StatusOr<std::unique_ptr<SecondaryTier>> fs_tier = make_fs_tier(fs_config, format, w.region);
    StatusOr<std::unique_ptr<SecondaryTier>> obj_tier = make_obj_tier(obj, format, w.region);
    if (!fs_tier.ok() || !obj_tier.ok()) {
      std::fprintf(stderr, "cannot make the tiers: %s %s\n", fs_tier.status().message().c_str(),
                   obj_tier.status().message().c_str());
      rc = 1;
      break;
    }
    const Figures peer = measure(**fs_tier, w, o, bulk_chunks, 0);
    const Figures f = measure(**obj_tier, w, o, bulk_chunks, server ? server->pid() : 0);
    print_row("fs (page cache)", label, peer, nullptr);
    print_row("obj (s3rver)", label, f, &peer);
    std::fflush(stdout);
    if (!f.ok || !peer.ok) rc = 1;
  }
  server.reset();
  std::error_code ec;
  fs::remove_all(fs_dir, ec);
  if (!server_dir.empty()) fs::remove_all(server_dir, ec);
  return rc;
}

}  // namespace
}  // namespace strata::offload

int main(int argc, char** argv) {
  strata::offload::Options o;
  if (!strata::offload::parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: obj_tier_bench [--endpoint URL --bucket B] [--io-threads 4] "
                 "[--repeats 3] [--latency-samples 50] [--bulk-mib 64]\n");
    return 2;
  }
  return strata::offload::run(o);
}
