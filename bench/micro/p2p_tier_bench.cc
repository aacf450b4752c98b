// Peer-to-peer KV tier on loopback (see BENCHMARKS.md, "Peer-to-peer tier").
//
// Two P2pTier instances in one process, A serving and B fetching, over
// 127.0.0.1 with the real protocol (HMAC handshake once per pooled
// connection, LOOKUP, FETCH, header + checksum verification):
//
//   BM_P2pStore/<KiB>        A.submit_store of 64 new chunks (copy + frame +
//                            checksum into the served store, LRU eviction in
//                            the steady state); bytes/s.
//   BM_P2pLoad/<KiB>         B loads the 64 chunks A holds as 64 one-chunk
//                            jobs (as the connector promotes them) on B's 4
//                            I/O threads; bytes/s.
//   BM_P2pLoadLatency/<KiB>  one chunk fetched and verified; time per chunk.
//   BM_P2pLookupLatency      one unknown key: lookup (kRetry) until B's I/O
//                            thread has asked A (one LOOKUP round trip).
//   BM_RawTcp/<KiB>          the peer: the same bytes through 4 plain
//                            loopback TCP streams (a writer and a reader
//                            thread each; no protocol, no checksum), what
//                            loopback TCP allows on this machine.
//
//   build/release/bench/micro/p2p_tier_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "offload/tiers/p2p/p2p_socket.h"
#include "offload/tiers/p2p/p2p_tier.h"

namespace {

using namespace strata::offload;

constexpr int kChunks = 64;
constexpr int kThreads = 4;
constexpr char kSecret[] = "benchmark-secret-0123456789";

// f32 KV of `kib` KiB per chunk: 16 tokens, 2 KV heads x 64 dims, layers to fit.
ChunkFormat format_of(int64_t kib) {
  ChunkFormat f;
  f.model_fingerprint = "bench";
  f.block_size = 16;
  f.num_kv_heads = 2;
  f.head_dim = 64;
  f.num_layers = kib * 1024 / (2 * 16 * 2 * 64 * 4);
  return f;
}

struct Memory {
  Memory(const ChunkFormat& f, int64_t slots) : bytes(f.payload_bytes() * slots) {
    std::mt19937_64 rng(7);
    for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
      const uint64_t v = rng();
      std::memcpy(bytes.data() + i, &v, 8);
    }
    region = {bytes.data(), slots, f.payload_bytes()};
  }
  std::vector<uint8_t> bytes;
  HostRegion region;
};

P2pTierConfig config_of(std::vector<std::string> peers, int64_t miss_ttl_ms = 1000) {
  P2pTierConfig c;
  c.port = 0;
  c.peers = std::move(peers);
  c.secret = kSecret;
  c.num_threads = kThreads;
  c.max_bytes = int64_t{256} << 20;
  c.miss_ttl_ms = miss_ttl_ms;
  return c;
}

std::unique_ptr<P2pTier> start(const P2pTierConfig& c, const ChunkFormat& f, const Memory& m) {
  auto tier = create_p2p_tier(c, f, m.region);
  return tier.ok() ? std::move(tier).value() : nullptr;
}

ChunkKey key_of(uint64_t i) { return {0x5eed0000 + i, i * 0x9e3779b97f4a7c15ull}; }

bool run(SecondaryTier& tier, bool is_load, const std::vector<TierJob>& jobs) {
  for (const TierJob& job : jobs) {
    if (is_load) {
      tier.submit_load(job);
    } else {
      tier.submit_store(job);
    }
  }
  tier.drain();
  bool ok = true;
  for (const TierJobResult& r : tier.poll_finished()) {
    for (bool b : r.ok) ok = ok && b;
  }
  return ok;
}

LookupResult settle(SecondaryTier& tier, const ChunkKey& key) {
  for (;;) {
    const LookupResult r = tier.lookup(key);
    if (r != LookupResult::kRetry) return r;
    std::this_thread::yield();
  }
}

void BM_P2pStore(benchmark::State& state) {
  const ChunkFormat f = format_of(state.range(0));
  Memory mem(f, kChunks);
  auto a = start(config_of({}), f, mem);
  if (a == nullptr) return state.SkipWithError("cannot start the tier");
  uint64_t next = 0;
  for (auto _ : state) {
    TierJob job{static_cast<int64_t>(next), {}, {}};
    for (int i = 0; i < kChunks; ++i) {
      job.keys.push_back(key_of(next++));
      job.slots.push_back(i);
    }
    if (!run(*a, false, {job})) return state.SkipWithError("store failed");
  }
  state.SetBytesProcessed(state.iterations() * kChunks * f.payload_bytes());
}

// A holding kChunks chunks, B with every verdict known (hits).
struct Pair {
  explicit Pair(int64_t kib) : f(format_of(kib)), mem_a(f, kChunks), mem_b(f, kChunks) {
    a = start(config_of({}), f, mem_a);
    if (a == nullptr) return;
    b = start(config_of({"127.0.0.1:" + std::to_string(a->port())}), f, mem_b);
    TierJob job{1, {}, {}};
    for (int i = 0; i < kChunks; ++i) {
      job.keys.push_back(key_of(i));
      job.slots.push_back(i);
    }
    is_ready = b != nullptr && run(*a, false, {job});
    for (int i = 0; is_ready && i < kChunks; ++i) {
      is_ready = settle(*b, key_of(i)) == LookupResult::kHit;
    }
  }
  ChunkFormat f;
  Memory mem_a;
  Memory mem_b;
  std::unique_ptr<P2pTier> a;
  std::unique_ptr<P2pTier> b;
  bool is_ready = false;
};

void BM_P2pLoad(benchmark::State& state) {
  Pair p(state.range(0));
  if (!p.is_ready) return state.SkipWithError("cannot set up two tiers");
  std::vector<TierJob> jobs;
  for (int i = 0; i < kChunks; ++i) jobs.push_back(TierJob{i, {key_of(i)}, {i}});
  for (auto _ : state) {
    if (!run(*p.b, true, jobs)) return state.SkipWithError("load failed");
  }
  state.SetBytesProcessed(state.iterations() * kChunks * p.f.payload_bytes());
}

void BM_P2pLoadLatency(benchmark::State& state) {
  Pair p(state.range(0));
  if (!p.is_ready) return state.SkipWithError("cannot set up two tiers");
  const std::vector<TierJob> job = {TierJob{1, {key_of(0)}, {0}}};
  for (auto _ : state) {
    if (!run(*p.b, true, job)) return state.SkipWithError("load failed");
  }
  state.SetBytesProcessed(state.iterations() * p.f.payload_bytes());
}

void BM_P2pLookupLatency(benchmark::State& state) {
  const ChunkFormat f = format_of(96);
  Memory mem_a(f, 1);
  Memory mem_b(f, 1);
  auto a = start(config_of({}), f, mem_a);
  if (a == nullptr) return state.SkipWithError("cannot start the tier");
  auto b = start(config_of({"127.0.0.1:" + std::to_string(a->port())}, 0), f, mem_b);
  if (b == nullptr) return state.SkipWithError("cannot start the tier");
  uint64_t next = 1000;
  for (auto _ : state) {
    if (settle(*b, key_of(next++)) != LookupResult::kMiss) {
      return state.SkipWithError("unexpected hit");
    }
  }
}

// kThreads loopback TCP streams, each moving kChunks / kThreads chunks.
void BM_RawTcp(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0)) * 1024;
  auto listener = p2p::listen_tcp("127.0.0.1", 0, kThreads);
  if (!listener.ok()) return state.SkipWithError("cannot listen");
  std::vector<p2p::Socket> clients;
  std::vector<p2p::Socket> servers;
  for (int i = 0; i < kThreads; ++i) {
    auto c = p2p::connect_tcp("127.0.0.1", p2p::local_port(*listener), 1000);
    if (!c.ok()) return state.SkipWithError("cannot connect");
    clients.push_back(std::move(c).value());
    servers.emplace_back(::accept(listener->fd(), nullptr, nullptr));
  }
  std::vector<uint8_t> src(bytes, 0x5a);
  std::vector<std::vector<uint8_t>> dst(kThreads, std::vector<uint8_t>(bytes));
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kChunks / kThreads; ++i) {
          iovec iov[1] = {{src.data(), bytes}};
          (void)p2p::write_all(servers[t].fd(), iov, 5000);
        }
      });
      threads.emplace_back([&, t] {
        for (int i = 0; i < kChunks / kThreads; ++i) {
          (void)p2p::read_exact(clients[t].fd(), dst[t].data(), bytes, 5000);
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  state.SetBytesProcessed(state.iterations() * kChunks * static_cast<int64_t>(bytes));
}

BENCHMARK(BM_P2pStore)->Arg(96)->Arg(384)->Arg(1024)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_P2pLoad)->Arg(96)->Arg(384)->Arg(1024)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RawTcp)->Arg(96)->Arg(384)->Arg(1024)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_P2pLoadLatency)
    ->Arg(96)
    ->Arg(384)
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_P2pLookupLatency)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
