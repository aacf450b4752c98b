// Test helpers shared by the secondary tiers' tests (fs, obj, p2p): a small
// chunk format, host memory lent as a HostRegion with fill/compare helpers, a
// temporary directory, and jobs run to completion. Test-only.
//
//   small_format    a 1 KiB-payload ChunkFormat
//   HostMemory      a HostRegion over a vector; fill(slot, seed), holds(slot, seed)
//   TempDir         a fresh directory under /tmp, removed with its files
//   run_job / store / load / store_one / load_one   submit one job, drain,
//                   return its result (or whether its single key is ok)
//   settled_lookup  looks up until the answer is not kRetry
//
// Single-threaded, like the tests that call them.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "offload/tiers/common/secondary_tier.h"

namespace strata::offload::testing {

// 2 layers * 2 (K,V) * 4 tokens * 2 heads * 8 dims * 4 bytes = 1 KiB payloads.
inline ChunkFormat small_format(const std::string& model = "test-model") {
  ChunkFormat f;
  f.model_fingerprint = model;
  f.num_layers = 2;
  f.num_kv_heads = 2;
  f.head_dim = 8;
  f.block_size = 4;
  return f;
}

// Host memory as the host tier would lend it: slots of one payload each.
struct HostMemory {
  HostMemory(const ChunkFormat& format, int64_t num_slots)
      : bytes(static_cast<size_t>(format.payload_bytes() * num_slots)) {
    region = {bytes.data(), num_slots, format.payload_bytes()};
  }
  std::span<uint8_t> slot(int64_t idx) {
    return {region.slot(idx), static_cast<size_t>(region.slot_bytes)};
  }
  // Writes a pattern that depends on `seed` into slot `idx`.
  void fill(int64_t idx, int seed) {
    std::span<uint8_t> s = slot(idx);
    for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(seed * 31 + i * 7);
  }
  // True if slot `idx` holds the pattern fill() writes for `seed`.
  bool holds(int64_t idx, int seed) {
    std::span<uint8_t> s = slot(idx);
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != static_cast<uint8_t>(seed * 31 + i * 7)) return false;
    }
    return true;
  }

  std::vector<uint8_t> bytes;
  HostRegion region;
};

// A real directory under /tmp, removed with everything in it (permissions a
// test took away are given back first, so that works for non-root users too).
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/strata_tier_test_XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    EXPECT_NE(made, nullptr);
    path_ = made != nullptr ? made : "/tmp/strata_tier_test_failed";
  }
  ~TempDir() {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(path_, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Submits one job, waits for it and returns its result.
inline TierJobResult run_job(SecondaryTier& tier, bool is_load, int64_t job_id,
                             std::vector<ChunkKey> keys, std::vector<int64_t> slots) {
  TierJob job{job_id, std::move(keys), std::move(slots)};
  if (is_load) {
    tier.submit_load(std::move(job));
  } else {
    tier.submit_store(std::move(job));
  }
  tier.drain();
  std::vector<TierJobResult> results = tier.poll_finished();
  EXPECT_EQ(results.size(), 1u);
  if (results.empty()) return {};
  EXPECT_EQ(results[0].job_id, job_id);
  return results[0];
}
// The same, numbering jobs 1, 2, ...
inline TierJobResult run_job(SecondaryTier& tier, bool is_load, std::vector<ChunkKey> keys,
                             std::vector<int64_t> slots) {
  static int64_t next_job_id = 1;
  return run_job(tier, is_load, next_job_id++, std::move(keys), std::move(slots));
}

inline TierJobResult store(SecondaryTier& tier, std::vector<ChunkKey> keys,
                           std::vector<int64_t> slots) {
  return run_job(tier, false, std::move(keys), std::move(slots));
}
inline TierJobResult load(SecondaryTier& tier, std::vector<ChunkKey> keys,
                          std::vector<int64_t> slots) {
  return run_job(tier, true, std::move(keys), std::move(slots));
}
inline bool store_one(SecondaryTier& tier, const ChunkKey& key, int64_t slot) {
  TierJobResult r = store(tier, {key}, {slot});
  return r.ok.size() == 1 && r.ok[0];
}
inline bool load_one(SecondaryTier& tier, const ChunkKey& key, int64_t slot) {
  TierJobResult r = load(tier, {key}, {slot});
  return r.ok.size() == 1 && r.ok[0];
}

// Asks until the answer is not kRetry, draining probes in between.
inline LookupResult settled_lookup(SecondaryTier& tier, const ChunkKey& key) {
  LookupResult r = tier.lookup(key);
  for (int i = 0; i < 20 && r == LookupResult::kRetry; ++i) {
    tier.drain();
    r = tier.lookup(key);
  }
  return r;
}

}  // namespace strata::offload::testing
