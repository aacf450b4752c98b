// Filesystem KV tier I/O (see BENCHMARKS.md, "Filesystem tier I/O: threads vs io_uring").
//
// BM_RawRead / BM_RawWrite: moving chunk-sized files (whole file, offset 0,
// buffered I/O as the tier does it) with `depth` operations in flight, either
// on plain threads (pread/pwrite on the tier's IoThreadPool) or with io_uring
// (one submitting thread, queue depth `depth`). Files are opened beforehand in
// both modes, so the figures compare only the data transfer. cold:1 drops the
// files' page cache (posix_fadvise DONTNEED, outside the timed region) before
// each iteration, so reads come from the disk.
//
// BM_FsTierStore / BM_FsTierLoad: the FS tier through its public API
// (make_fs_tier, submit_store/submit_load, drain, poll_finished) with 1 MiB
// chunks, 4 read and 4 write threads, 64 chunks per iteration.
//
//   build/release/bench/micro/fs_tier_bench --benchmark_min_time=1
// Files go under $STRATA_BENCH_DIR (default /tmp) in a fresh directory.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "offload/tiers/fs/fs_tier.h"
#include "offload/tiers/common/io_thread_pool.h"

namespace {

using strata::offload::IoThreadPool;
namespace fs = std::filesystem;

constexpr int kNumFiles = 32;
constexpr int kTierChunks = 64;

std::string make_bench_dir() {
  const char* base = std::getenv("STRATA_BENCH_DIR");
  std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/strata_fs_bench_XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

void fill_random(std::vector<uint8_t>& bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(bytes.data() + i, &v, 8);
  }
}

// kNumFiles files of `file_bytes` each, open read-write, plus one buffer per file.
class ChunkFiles {
 public:
  explicit ChunkFiles(size_t file_bytes) : file_bytes_(file_bytes), dir_(make_bench_dir()) {
    for (int i = 0; i < kNumFiles; ++i) {
      buffers_.emplace_back(file_bytes);
      fill_random(buffers_.back(), i + 1);
      const std::string path = dir_ + "/chunk" + std::to_string(i);
      const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
      if (fd < 0 ||
          ::pwrite(fd, buffers_.back().data(), file_bytes, 0) != static_cast<ssize_t>(file_bytes)) {
        is_ok_ = false;
      }
      fds_.push_back(fd);
    }
    for (int fd : fds_) ::fdatasync(fd);
  }
  ~ChunkFiles() {
    for (int fd : fds_) ::close(fd);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  bool ok() const { return is_ok_ && !dir_.empty(); }
  size_t file_bytes() const { return file_bytes_; }
  int fd(int i) const { return fds_[i]; }
  uint8_t* buffer(int i) { return buffers_[i].data(); }
  void drop_cache() {
    for (int fd : fds_) {
      ::fdatasync(fd);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    }
  }

 private:
  size_t file_bytes_;
  std::string dir_;
  std::vector<int> fds_;
  std::vector<std::vector<uint8_t>> buffers_;
  bool is_ok_ = true;
};

// Whole-file pread/pwrite at offset 0, resuming short transfers.
bool transfer_file(bool is_write, int fd, uint8_t* buf, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = is_write ? ::pwrite(fd, buf + done, bytes - done, done)
                               : ::pread(fd, buf + done, bytes - done, done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool run_threads(IoThreadPool& pool, IoThreadPool::Queue queue, ChunkFiles& files, bool is_write) {
  std::atomic<int> failures{0};
  for (int i = 0; i < kNumFiles; ++i) {
    pool.submit(queue, [&, i] {
      if (!transfer_file(is_write, files.fd(i), files.buffer(i), files.file_bytes())) ++failures;
    });
  }
  pool.wait_idle();
  return failures == 0;
}

// Keeps up to `depth` whole-file reads/writes in flight on one ring.
bool run_uring(io_uring& ring, int depth, ChunkFiles& files, bool is_write) {
  std::vector<size_t> done(kNumFiles, 0);
  const size_t bytes = files.file_bytes();
  int next = 0;
  int in_flight = 0;
  int num_finished = 0;
  auto queue = [&](int i) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    if (is_write) {
      io_uring_prep_write(sqe, files.fd(i), files.buffer(i) + done[i], bytes - done[i], done[i]);
    } else {
      io_uring_prep_read(sqe, files.fd(i), files.buffer(i) + done[i], bytes - done[i], done[i]);
    }
    io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(i));
    ++in_flight;
  };
  while (next < kNumFiles && in_flight < depth) queue(next++);
  io_uring_submit(&ring);
  while (num_finished < kNumFiles) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(&ring, &cqe) != 0) return false;
    const int i = static_cast<int>(io_uring_cqe_get_data64(cqe));
    const int res = cqe->res;
    io_uring_cqe_seen(&ring, cqe);
    --in_flight;
    if (res <= 0) return false;
    done[i] += static_cast<size_t>(res);
    if (done[i] < bytes) {
      queue(i);  // short transfer: continue where it stopped
    } else {
      ++num_finished;
      if (next < kNumFiles) queue(next++);
    }
    io_uring_submit(&ring);
  }
  return true;
}

// Args: chunk KiB, depth (threads or ring entries in flight), use io_uring, cold cache.
void raw_io(benchmark::State& state, bool is_write) {
  const size_t chunk_bytes = static_cast<size_t>(state.range(0)) * 1024;
  const int depth = static_cast<int>(state.range(1));
  const bool use_uring = state.range(2) != 0;
  const bool is_cold = state.range(3) != 0;
  ChunkFiles files(chunk_bytes);
  if (!files.ok()) return state.SkipWithError("cannot create the chunk files");

  io_uring ring;
  if (use_uring && io_uring_queue_init(static_cast<unsigned>(2 * depth), &ring, 0) != 0) {
    return state.SkipWithError("io_uring_queue_init failed (io_uring disabled?)");
  }
  IoThreadPool pool(is_write ? 0 : depth, is_write ? depth : 0);
  const IoThreadPool::Queue queue =
      is_write ? IoThreadPool::Queue::kWrite : IoThreadPool::Queue::kRead;
  for (auto _ : state) {
    if (is_cold) {
      state.PauseTiming();
      files.drop_cache();
      state.ResumeTiming();
    }
    const bool ok = use_uring ? run_uring(ring, depth, files, is_write)
                              : run_threads(pool, queue, files, is_write);
    if (!ok) {
      state.SkipWithError("I/O failed");
      break;
    }
  }
  if (use_uring) io_uring_queue_exit(&ring);
  state.SetBytesProcessed(state.iterations() * kNumFiles * static_cast<int64_t>(chunk_bytes));
  state.SetLabel(use_uring ? "io_uring" : "threads");
}

void BM_RawRead(benchmark::State& state) { raw_io(state, false); }
void BM_RawWrite(benchmark::State& state) { raw_io(state, true); }

void raw_args(benchmark::internal::Benchmark* b, bool with_cold) {
  b->ArgNames({"kib", "depth", "uring", "cold"});
  for (int64_t kib : {128, 512, 2048}) {
    for (int64_t uring : {0, 1}) {
      for (int64_t cold : {int64_t{0}, int64_t{1}}) {
        if (cold == 0 || with_cold) b->Args({kib, 4, uring, cold});
      }
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_RawRead)->Apply([](benchmark::internal::Benchmark* b) { raw_args(b, true); });
BENCHMARK(BM_RawWrite)->Apply([](benchmark::internal::Benchmark* b) { raw_args(b, false); });

// ---- the FS tier through its public API ----

// 16 layers * 2 * 16 tokens * 8 heads * 64 dims * 4 bytes = 1 MiB payloads.
strata::offload::ChunkFormat mib_format() {
  strata::offload::ChunkFormat f;
  f.model_fingerprint = "fs-tier-bench";
  f.num_layers = 16;
  f.num_kv_heads = 8;
  f.head_dim = 64;
  f.block_size = 16;
  return f;
}

struct TierBench {
  TierBench()
      : format(mib_format()), host(static_cast<size_t>(format.payload_bytes() * kTierChunks)) {
    fill_random(host, 7);
    region = {host.data(), kTierChunks, format.payload_bytes()};
    dir = make_bench_dir();
    strata::offload::FsTierConfig config;
    config.root_dir = dir;
    config.n_read_threads = 4;
    config.n_write_threads = 4;
    config.max_bytes = int64_t{256} << 20;  // steady state includes LRU eviction (unlink)
    auto made = strata::offload::make_fs_tier(config, format, region);
    if (made.ok()) tier = std::move(made).value();
  }
  ~TierBench() {
    tier.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  strata::offload::TierJob job(int64_t job_id, uint64_t first_key) const {
    strata::offload::TierJob j;
    j.job_id = job_id;
    for (int i = 0; i < kTierChunks; ++i) {
      j.keys.push_back({first_key + i, 0xbe7c4});
      j.slots.push_back(i);
    }
    return j;
  }
  // Runs one job to completion; false if any chunk failed.
  bool run(strata::offload::TierJob j, bool is_load) {
    if (is_load) {
      tier->submit_load(std::move(j));
    } else {
      tier->submit_store(std::move(j));
    }
    tier->drain();
    for (const auto& r : tier->poll_finished()) {
      for (bool ok : r.ok) {
        if (!ok) return false;
      }
    }
    return true;
  }

  strata::offload::ChunkFormat format;
  std::vector<uint8_t> host;
  strata::offload::HostRegion region;
  std::string dir;
  std::unique_ptr<strata::offload::SecondaryTier> tier;
};

void BM_FsTierStore(benchmark::State& state) {
  TierBench b;
  if (b.tier == nullptr) return state.SkipWithError("make_fs_tier failed");
  uint64_t next_key = 1;
  for (auto _ : state) {
    if (!b.run(b.job(static_cast<int64_t>(next_key), next_key), false)) {
      return state.SkipWithError("store failed");
    }
    next_key += kTierChunks;  // new keys every iteration: every chunk is written
  }
  state.SetBytesProcessed(state.iterations() * kTierChunks * b.format.payload_bytes());
  state.counters["evictions"] = static_cast<double>(b.tier->stats().evictions);
}
BENCHMARK(BM_FsTierStore)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FsTierLoad(benchmark::State& state) {
  const bool is_cold = state.range(0) != 0;
  TierBench b;
  if (b.tier == nullptr || !b.run(b.job(0, 1), false)) return state.SkipWithError("setup failed");
  std::vector<int> fds;
  for (int i = 0; i < kTierChunks; ++i) {
    const std::string path =
        strata::offload::fs_tier_chunk_path(b.dir, b.format, {uint64_t(1 + i), 0xbe7c4});
    fds.push_back(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }
  int64_t job_id = 1;
  for (auto _ : state) {
    if (is_cold) {
      state.PauseTiming();
      for (int fd : fds) {
        ::fdatasync(fd);
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      }
      state.ResumeTiming();
    }
    if (!b.run(b.job(job_id++, 1), true)) return state.SkipWithError("load failed");
  }
  for (int fd : fds) ::close(fd);
  state.SetBytesProcessed(state.iterations() * kTierChunks * b.format.payload_bytes());
}
BENCHMARK(BM_FsTierLoad)
    ->ArgName("cold")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
