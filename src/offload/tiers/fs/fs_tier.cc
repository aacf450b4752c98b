#include "offload/tiers/fs/fs_tier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/check.h"
#include "base/log.h"
#include "offload/policy/eviction_policy.h"
#include "offload/tiers/fs/fs_chunk_files.h"
#include "offload/tiers/common/io_thread_pool.h"
#include "offload/tiers/common/tier_bookkeeping.h"

namespace strata::offload {
namespace {

using fs_files::check_format_file;
using fs_files::check_writable;
using fs_files::chunk_file_path;
using fs_files::errno_text;
using fs_files::make_dir;
using fs_files::make_dirs;
using fs_files::preadv_all;
using fs_files::pwritev_all;
using fs_files::scan_namespace;
using fs_files::ScannedFile;
using fs_files::shard_dir;
using fs_files::strip_trailing_slashes;
using fs_files::temp_path_for;

// SecondaryTier over one namespace directory (behaviour in fs_tier.h). The
// engine thread and the I/O threads share the state below mu_; both hold it
// only for bookkeeping, never across a filesystem call, so the engine thread
// never waits for the disk.
class FsTier final : public SecondaryTier {
 public:
  FsTier(const FsTierConfig& config, const ChunkFormat& format, const HostRegion& region,
         std::string ns_dir, const std::vector<ScannedFile>& scanned)
      : config_(config),
        format_(format),
        region_(region),
        ns_dir_(std::move(ns_dir)),
        payload_bytes_(format.payload_bytes()),
        file_bytes_(kHeaderBytes + format.payload_bytes()),
        lru_(std::move(make_eviction_policy("lru", 0).value())),
        lookups_(config.miss_ttl_ms),
        jobs_(config.n_read_threads, config.n_write_threads) {
    for (const ScannedFile& f : scanned) add_to_index_locked(f.key, f.bytes);
  }

  ~FsTier() override { drain(); }

  const std::string& name() const override { return name_; }

  LookupResult lookup(const ChunkKey& key) override {
    bool start_probe = false;
    LookupResult result;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const bool is_held = index_.count(key) != 0;
      if (is_held) lru_->touch(key);
      result = lookups_.answer(key, is_held, stats_, &start_probe);
    }
    if (start_probe) jobs_.submit(IoThreadPool::Queue::kRead, [this, key] { run_probe(key); });
    return result;
  }

  void submit_store(TierJob job) override {
    auto state = make_job_state(std::move(job), region_);
    std::vector<size_t> to_write;
    {
      std::lock_guard<std::mutex> lock(mu_);
      to_write = lookups_.claim_stores(
          *state, stats_, [this](const ChunkKey& key) { return index_.count(key) != 0; });
    }
    jobs_.run_store(std::move(state), to_write,
                    [this](TierJobState& s, size_t i) { run_store(s, i); });
  }

  void submit_load(TierJob job) override {
    auto state = make_job_state(std::move(job), region_);
    {
      // Pinned keys are not evicted while their file is read.
      std::lock_guard<std::mutex> lock(mu_);
      for (const ChunkKey& key : state->job.keys) ++load_pins_[key];
    }
    jobs_.run_load(std::move(state), [this](TierJobState& s, size_t i) { run_load(s, i); });
  }

  std::vector<TierJobResult> poll_finished() override { return jobs_.poll_finished(); }

  void drain() override { jobs_.wait_idle(); }

  std::vector<ChunkKey> take_removed() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<ChunkKey> out;
    out.swap(removed_);
    return out;
  }

  TierStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    TierStats out = stats_;
    jobs_.fill_seconds(out);
    out.tier = name_;
    out.used_bytes = used_bytes_;
    out.capacity_bytes = config_.max_bytes;
    out.num_chunks = static_cast<int64_t>(index_.size());
    return out;
  }

 private:
  // Outcome of one chunk's load, decided on an I/O thread.
  struct LoadOutcome {
    Status status;
    bool is_bad_file = false;  // exists but can never load: delete it
  };

  enum class StoreKind { kStored, kPresent, kFailed };
  struct StoreOutcome {
    StoreKind kind = StoreKind::kFailed;
    int64_t file_bytes = 0;
    bool is_reserved = false;  // holds file_bytes_ of reserved_bytes_
    Status status;
  };

  std::string chunk_path(const ChunkKey& key) const { return chunk_file_path(ns_dir_, key); }

  void debug_delay() const {
    if (config_.debug_read_delay.count() > 0) std::this_thread::sleep_for(config_.debug_read_delay);
  }

  // ---- state shared with I/O threads (mu_ held) ----

  void add_to_index_locked(const ChunkKey& key, int64_t bytes) {
    lookups_.forget_miss(key);
    if (!index_.emplace(key, bytes).second) return;
    used_bytes_ += bytes;
    lru_->insert(key);
  }

  void forget_locked(const ChunkKey& key) {
    lru_->remove(key);
    erase_from_index_locked(key);
  }

  void erase_from_index_locked(const ChunkKey& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    used_bytes_ -= it->second;
    index_.erase(it);
    removed_.push_back(key);  // for BlockRemoved events (take_removed)
  }

  // ---- I/O threads ----

  void run_probe(const ChunkKey& key) {
    debug_delay();
    const std::string path = chunk_path(key);
    struct stat st;
    const bool exists = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    const bool is_present = exists && st.st_size == file_bytes_;
    if (exists && !is_present) ::unlink(path.c_str());  // wrong size: can never load
    std::lock_guard<std::mutex> lock(mu_);
    lookups_.end_probe(key, is_present);
    if (is_present) add_to_index_locked(key, st.st_size);
  }

  void run_store(TierJobState& state, size_t i) {
    const ChunkKey& key = state.job.keys[i];
    StoreOutcome outcome = store_chunk(key, region_.slot(state.job.slots[i]));
    int64_t num_failures = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      lookups_.end_store(key);
      if (outcome.is_reserved) reserved_bytes_ -= file_bytes_;
      switch (outcome.kind) {
        case StoreKind::kStored:
          add_to_index_locked(key, outcome.file_bytes);
          stats_.store_bytes += payload_bytes_;
          state.bytes += payload_bytes_;
          break;
        case StoreKind::kPresent:
          add_to_index_locked(key, outcome.file_bytes);
          ++stats_.stores_skipped;
          break;
        case StoreKind::kFailed:
          num_failures = ++stats_.store_failures;
          break;
      }
    }
    state.ok[i] = outcome.kind != StoreKind::kFailed;
    warn_chunk_failure(name_, "store", key, outcome.status.message(), num_failures);
  }

  StoreOutcome store_chunk(const ChunkKey& key, const uint8_t* payload) {
    StoreOutcome out;
    const std::string path = chunk_path(key);
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == file_bytes_) {
      out.kind = StoreKind::kPresent;  // written by another process
      out.file_bytes = st.st_size;
      return out;
    }
    out.status = reserve_space();
    if (!out.status.ok()) return out;
    out.is_reserved = true;
    out.status = write_chunk_file(path, key, payload);
    if (out.status.ok()) {
      out.kind = StoreKind::kStored;
      out.file_bytes = file_bytes_;
    }
    return out;
  }

  // Reserves room for one file, deleting least recently used unpinned files
  // while the account (known files + writes in flight) would exceed max_bytes.
  Status reserve_space() {
    std::vector<ChunkKey> victims;
    bool is_full = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t cap = config_.max_bytes;
      while (cap > 0 && used_bytes_ + reserved_bytes_ + file_bytes_ > cap) {
        const std::vector<ChunkKey> evicted =
            lru_->evict(1, [this](const ChunkKey& k) { return load_pins_.count(k) == 0; });
        if (evicted.empty()) {
          is_full = true;
          break;
        }
        erase_from_index_locked(evicted[0]);  // evict() already dropped it from lru_
        ++stats_.evictions;
        victims.push_back(evicted[0]);
      }
      if (!is_full) reserved_bytes_ += file_bytes_;
    }
    for (const ChunkKey& key : victims) ::unlink(chunk_path(key).c_str());
    if (is_full) {
      return Status(StatusCode::kResourceExhausted, "tier full: max_bytes " +
                                                        std::to_string(config_.max_bytes) +
                                                        " held by chunks being read or written");
    }
    return Status::ok_status();
  }

  Status write_chunk_file(const std::string& path, const ChunkKey& key, const uint8_t* payload) {
    const std::string tmp = temp_path_for(path);
    int fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ENOENT) {
      const std::string hex = key.to_hex();
      STRATA_RETURN_IF_ERROR(make_dir(ns_dir_ + "/" + hex.substr(0, 3)));
      STRATA_RETURN_IF_ERROR(make_dir(shard_dir(ns_dir_, hex)));
      fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    }
    if (fd < 0) return unavailable("cannot create '" + tmp + "': " + errno_text(errno));

    std::array<uint8_t, kHeaderBytes> header;
    const std::span<const uint8_t> body(payload, static_cast<size_t>(payload_bytes_));
    encode_chunk_header(format_, key, body, header);
    iovec iov[2] = {{header.data(), header.size()},
                    {const_cast<uint8_t*>(payload), static_cast<size_t>(payload_bytes_)}};
    const int64_t n = pwritev_all(fd, iov, 2);
    const int close_errno = ::close(fd) == 0 ? 0 : errno;

    Status status;
    if (n < 0) {
      status = unavailable("cannot write '" + tmp + "': " + errno_text(static_cast<int>(-n)));
    } else if (n != file_bytes_) {
      status = unavailable("short write to '" + tmp + "': " + std::to_string(n) + " of " +
                           std::to_string(file_bytes_) + " bytes");
    } else if (close_errno != 0) {
      status = unavailable("cannot close '" + tmp + "': " + errno_text(close_errno));
    } else if (::rename(tmp.c_str(), path.c_str()) != 0) {
      status = unavailable("cannot rename '" + tmp + "' to '" + path + "': " + errno_text(errno));
    }
    if (!status.ok()) ::unlink(tmp.c_str());
    return status;
  }

  void run_load(TierJobState& state, size_t i) {
    const ChunkKey& key = state.job.keys[i];
    const LoadOutcome outcome = load_chunk(key, region_.slot(state.job.slots[i]));
    if (outcome.is_bad_file) ::unlink(chunk_path(key).c_str());
    int64_t num_failures = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto pin = load_pins_.find(key);
      if (--pin->second == 0) load_pins_.erase(pin);
      if (outcome.status.ok()) {
        lru_->touch(key);
        stats_.load_bytes += payload_bytes_;
        stats_.hit_tokens += format_.tokens_per_chunk();
        state.bytes += payload_bytes_;
      } else {
        num_failures = ++stats_.load_failures;
        forget_locked(key);
        lookups_.remember_miss(key);
      }
    }
    state.ok[i] = outcome.status.ok();
    warn_chunk_failure(name_, "load", key,
                       outcome.status.message() + (outcome.is_bad_file ? " (file deleted)" : ""),
                       num_failures);
  }

  // Reads `key`'s file into `slot` and verifies it.
  LoadOutcome load_chunk(const ChunkKey& key, uint8_t* slot) const {
    debug_delay();
    const std::string path = chunk_path(key);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return {errno == ENOENT ? not_found("no file '" + path + "'")
                              : unavailable("cannot open '" + path + "': " + errno_text(errno)),
              false};
    }
    LoadOutcome out = read_and_verify(fd, path, key, slot);
    ::close(fd);
    return out;
  }

  LoadOutcome read_and_verify(int fd, const std::string& path, const ChunkKey& key,
                              uint8_t* slot) const {
    struct stat st;
    if (::fstat(fd, &st) != 0) return {unavailable("cannot stat '" + path + "'"), false};
    if (st.st_size != file_bytes_) {
      return {data_loss("'" + path + "' has " + std::to_string(st.st_size) + " bytes; expected " +
                        std::to_string(file_bytes_)),
              true};
    }
    std::array<uint8_t, kHeaderBytes> header;
    iovec iov[2] = {{header.data(), header.size()}, {slot, static_cast<size_t>(payload_bytes_)}};
    const int64_t n = preadv_all(fd, iov, 2);
    if (n < 0) {
      const int err = static_cast<int>(-n);
      return {unavailable("cannot read '" + path + "': " + errno_text(err)), err == EIO};
    }
    if (n != file_bytes_) {
      return {data_loss("'" + path + "' ended after " + std::to_string(n) + " bytes; expected " +
                        std::to_string(file_bytes_)),
              true};
    }
    StatusOr<ChunkHeader> decoded = decode_chunk_header(format_, key, header);
    if (!decoded.ok()) return {decoded.status().with_prefix(path), true};
    const std::span<const uint8_t> payload(slot, static_cast<size_t>(payload_bytes_));
    Status verified = verify_chunk_payload(*decoded, payload);
    if (!verified.ok()) return {verified.with_prefix(path), true};
    return {Status::ok_status(), false};
  }

  const FsTierConfig config_;
  const ChunkFormat format_;
  const HostRegion region_;
  const std::string name_ = "fs";
  const std::string ns_dir_;
  const int64_t payload_bytes_;
  const int64_t file_bytes_;

  mutable std::mutex mu_;
  std::unordered_map<ChunkKey, int64_t, kv::BlockHashHasher> index_;  // known files -> bytes
  std::unique_ptr<EvictionPolicy> lru_;                               // over index_ keys
  int64_t used_bytes_ = 0;                                            // sum of index_ bytes
  int64_t reserved_bytes_ = 0;  // stores in flight that passed reserve_space()
  std::unordered_map<ChunkKey, int, kv::BlockHashHasher> load_pins_;  // loads in flight
  ProbedLookups lookups_;
  TierStats stats_;  // but load/store_seconds, which jobs_ keeps
  std::vector<ChunkKey> removed_;  // left index_ since the last take_removed()

  // Last: destroyed (threads joined) before the state above.
  TierJobs jobs_;
};

Status validate_config(const FsTierConfig& config, const ChunkFormat& format,
                       const HostRegion& region) {
  if (config.root_dir.empty()) {
    return invalid_argument("fs tier: root_dir is empty; set it to a writable directory");
  }
  if (config.n_read_threads < 0 || config.n_write_threads < 0 ||
      config.n_read_threads + config.n_write_threads < 1) {
    return invalid_argument("fs tier: n_read_threads " + std::to_string(config.n_read_threads) +
                            ", n_write_threads " + std::to_string(config.n_write_threads) +
                            "; need at least one thread in total");
  }
  if (config.miss_ttl_ms < 0) {
    return invalid_argument("fs tier: miss_ttl_ms " + std::to_string(config.miss_ttl_ms) +
                            " is negative");
  }
  STRATA_RETURN_IF_ERROR(check_format_and_region("fs", format, region));
  const int64_t payload_bytes = format.payload_bytes();
  if (config.max_bytes < 0 ||
      (config.max_bytes > 0 && config.max_bytes < kHeaderBytes + payload_bytes)) {
    return invalid_argument("fs tier: max_bytes " + std::to_string(config.max_bytes) +
                            " is smaller than one chunk file (" +
                            std::to_string(kHeaderBytes + payload_bytes) +
                            " bytes); use 0 for no cap");
  }
  return Status::ok_status();
}

}  // namespace

std::string fs_tier_chunk_path(const std::string& root_dir, const ChunkFormat& format,
                               const ChunkKey& key) {
  return chunk_file_path(strip_trailing_slashes(root_dir) + "/" + format.namespace_id_hex(), key);
}

StatusOr<std::unique_ptr<SecondaryTier>> make_fs_tier(const FsTierConfig& config,
                                                      const ChunkFormat& format,
                                                      const HostRegion& region) {
  STRATA_RETURN_IF_ERROR(validate_config(config, format, region));
  const std::string root_dir = strip_trailing_slashes(config.root_dir);
  const std::string ns_dir = root_dir + "/" + format.namespace_id_hex();
  Status made = make_dirs(ns_dir);
  if (!made.ok()) {
    return Status(made.code(), "fs tier: cannot use root_dir '" + root_dir + "': " + made.message());
  }
  STRATA_RETURN_IF_ERROR(check_writable(root_dir, ns_dir));
  STRATA_RETURN_IF_ERROR(check_format_file(ns_dir, format));
  const std::vector<ScannedFile> scanned =
      scan_namespace(ns_dir, kHeaderBytes + format.payload_bytes());
  STRATA_LOG(kInfo) << "fs tier: " << ns_dir << ": " << scanned.size() << " chunks found";
  return std::unique_ptr<SecondaryTier>(new FsTier(config, format, region, ns_dir, scanned));
}

}  // namespace strata::offload
