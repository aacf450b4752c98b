#include "offload/tiers/fs/fs_tier.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "offload/tiers/testing/tier_test_util.h"

namespace strata::offload {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using testing::HostMemory;
using testing::load;
using testing::load_one;
using testing::settled_lookup;
using testing::small_format;
using testing::store;
using testing::TempDir;

uint64_t mix64(uint64_t x) {  // splitmix64 finalizer: keys spread over shard directories
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
ChunkKey key_of(uint64_t i) { return {mix64(2 * i), mix64(2 * i + 1)}; }

std::unique_ptr<SecondaryTier> make_tier(const FsTierConfig& config, const ChunkFormat& format,
                                         const HostRegion& region) {
  StatusOr<std::unique_ptr<SecondaryTier>> tier = make_fs_tier(config, format, region);
  EXPECT_TRUE(tier.ok()) << tier.status().to_string();
  return tier.ok() ? std::move(tier).value() : nullptr;
}

FsTierConfig config_for(const TempDir& dir) {
  FsTierConfig c;
  c.root_dir = dir.path();
  c.n_read_threads = 2;
  c.n_write_threads = 2;
  return c;
}

std::vector<std::string> files_under(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string p = it->path().string();
    if (p.size() >= suffix.size() &&
        p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(p);
    }
  }
  return out;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

int64_t file_bytes(const ChunkFormat& f) { return kHeaderBytes + f.payload_bytes(); }

TEST(FsTier, RoundTripStoreLookupLoad) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 8);
  auto tier = make_tier(config_for(dir), format, host.region);
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->name(), "fs");

  for (int i = 0; i < 3; ++i) host.fill(i, 100 + i);
  TierJobResult stored = store(*tier, {key_of(0), key_of(1), key_of(2)}, {0, 1, 2});
  EXPECT_EQ(stored.ok, std::vector<bool>({true, true, true}));
  EXPECT_EQ(stored.bytes, 3 * format.payload_bytes());
  EXPECT_GE(stored.seconds, 0.0);

  const std::string path = fs_tier_chunk_path(dir.path(), format, key_of(1));
  const std::string hex = key_of(1).to_hex();
  EXPECT_EQ(path, dir.path() + "/" + format.namespace_id_hex() + "/" + hex.substr(0, 3) + "/" +
                      hex.substr(3, 2) + "/" + hex + ".kv");
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(path)), file_bytes(format));
  const std::vector<uint8_t> format_txt =
      read_bytes(dir.path() + "/" + format.namespace_id_hex() + "/format.txt");
  EXPECT_EQ(std::string(format_txt.begin(), format_txt.end()), format.namespace_string() + "\n");
  EXPECT_TRUE(files_under(dir.path(), ".tmp").empty());

  // Own writes are known without a probe.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(tier->lookup(key_of(i)), LookupResult::kHit);

  TierJobResult loaded = load(*tier, {key_of(2), key_of(0), key_of(1)}, {5, 6, 7});
  EXPECT_EQ(loaded.ok, std::vector<bool>({true, true, true}));
  EXPECT_EQ(loaded.bytes, 3 * format.payload_bytes());
  EXPECT_TRUE(host.holds(5, 102));
  EXPECT_TRUE(host.holds(6, 100));
  EXPECT_TRUE(host.holds(7, 101));

  const TierStats s = tier->stats();
  EXPECT_EQ(s.tier, "fs");
  EXPECT_EQ(s.chunk_lookups, 3);
  EXPECT_EQ(s.chunk_hits, 3);
  EXPECT_EQ(s.store_bytes, 3 * format.payload_bytes());
  EXPECT_EQ(s.load_bytes, 3 * format.payload_bytes());
  EXPECT_EQ(s.hit_tokens, 3 * format.tokens_per_chunk());
  EXPECT_GT(s.store_seconds, 0.0);
  EXPECT_GT(s.load_seconds, 0.0);
  EXPECT_EQ(s.load_failures, 0);
  EXPECT_EQ(s.store_failures, 0);
  EXPECT_EQ(s.num_chunks, 3);
  EXPECT_EQ(s.used_bytes, 3 * file_bytes(format));
  EXPECT_EQ(s.capacity_bytes, 0);
  EXPECT_TRUE(tier->poll_finished().empty());
}

TEST(FsTier, UnknownKeyRetriesUntilProbedThenMisses) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 1);
  FsTierConfig config = config_for(dir);
  config.miss_ttl_ms = 60000;
  auto tier = make_tier(config, format, host.region);
  ASSERT_NE(tier, nullptr);

  EXPECT_EQ(tier->lookup(key_of(7)), LookupResult::kRetry);
  EXPECT_EQ(tier->stats().chunk_lookups, 0);  // retries are not counted
  tier->drain();
  EXPECT_EQ(tier->lookup(key_of(7)), LookupResult::kMiss);
  EXPECT_EQ(tier->lookup(key_of(7)), LookupResult::kMiss);  // remembered, no new probe
  const TierStats s = tier->stats();
  EXPECT_EQ(s.chunk_lookups, 2);
  EXPECT_EQ(s.chunk_hits, 0);
  EXPECT_FALSE(load_one(*tier, key_of(7), 0));
  EXPECT_EQ(tier->stats().load_failures, 1);
}

TEST(FsTier, ZeroMissTtlDeliversEachProbeAnswerOnce) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 1);
  FsTierConfig config = config_for(dir);
  config.miss_ttl_ms = 0;
  auto tier = make_tier(config, format, host.region);
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->lookup(key_of(1)), LookupResult::kRetry);
  tier->drain();
  EXPECT_EQ(tier->lookup(key_of(1)), LookupResult::kMiss);
  EXPECT_EQ(tier->lookup(key_of(1)), LookupResult::kRetry);  // expired: probed again
}

TEST(FsTier, StoreSkipsKeysAlreadyPresent) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 4);
  auto tier = make_tier(config_for(dir), format, host.region);
  ASSERT_NE(tier, nullptr);
  host.fill(0, 1);
  host.fill(1, 2);

  EXPECT_EQ(store(*tier, {key_of(0)}, {0}).ok, std::vector<bool>({true}));
  const auto mtime = fs::last_write_time(fs_tier_chunk_path(dir.path(), format, key_of(0)));

  // Known key and a duplicate inside one job: reported ok, not written again.
  TierJobResult again = store(*tier, {key_of(0), key_of(1), key_of(1)}, {1, 1, 1});
  EXPECT_EQ(again.ok, std::vector<bool>({true, true, true}));
  EXPECT_EQ(again.bytes, format.payload_bytes());  // only key 1 was written
  EXPECT_EQ(fs::last_write_time(fs_tier_chunk_path(dir.path(), format, key_of(0))), mtime);
  ASSERT_TRUE(load_one(*tier, key_of(0), 2));
  EXPECT_TRUE(host.holds(2, 1));  // still the first bytes

  // A file written by another process meanwhile is found by the I/O thread.
  auto other = make_tier(config_for(dir), format, host.region);
  ASSERT_NE(other, nullptr);
  host.fill(3, 9);
  EXPECT_EQ(store(*other, {key_of(5)}, {3}).ok, std::vector<bool>({true}));
  EXPECT_EQ(store(*tier, {key_of(5)}, {3}).ok, std::vector<bool>({true}));

  const TierStats s = tier->stats();
  EXPECT_EQ(s.stores_skipped, 3);
  EXPECT_EQ(s.store_bytes, 2 * format.payload_bytes());
  EXPECT_EQ(s.num_chunks, 3);
  EXPECT_EQ(tier->lookup(key_of(5)), LookupResult::kHit);
}

TEST(FsTier, SecondInstanceOnSameDirectoryFindsChunks) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host_a(format, 4);
  HostMemory host_b(format, 4);
  FsTierConfig config = config_for(dir);
  config.miss_ttl_ms = 30;
  auto writer = make_tier(config, format, host_a.region);
  ASSERT_NE(writer, nullptr);
  // Started before anything is written: must rely on probes.
  auto early_reader = make_tier(config, format, host_b.region);
  ASSERT_NE(early_reader, nullptr);
  EXPECT_EQ(settled_lookup(*early_reader, key_of(0)), LookupResult::kMiss);

  host_a.fill(0, 40);
  host_a.fill(1, 41);
  ASSERT_EQ(store(*writer, {key_of(0), key_of(1)}, {0, 1}).ok, std::vector<bool>({true, true}));

  // Started after: the startup scan knows the files.
  auto late_reader = make_tier(config, format, host_b.region);
  ASSERT_NE(late_reader, nullptr);
  EXPECT_EQ(late_reader->stats().num_chunks, 2);
  EXPECT_EQ(late_reader->stats().used_bytes, 2 * file_bytes(format));
  EXPECT_EQ(late_reader->lookup(key_of(1)), LookupResult::kHit);
  ASSERT_TRUE(load_one(*late_reader, key_of(1), 2));
  EXPECT_TRUE(host_b.holds(2, 41));

  // The early reader's negative answer expires, then a probe finds the file.
  std::this_thread::sleep_for(milliseconds(40));
  EXPECT_EQ(settled_lookup(*early_reader, key_of(0)), LookupResult::kHit);
  ASSERT_TRUE(load_one(*early_reader, key_of(0), 3));
  EXPECT_TRUE(host_b.holds(3, 40));
}

// A chunk whose file is damaged after it was stored: the load fails, the
// file is deleted, the key is forgotten and counted.
class FsTierDamage : public ::testing::TestWithParam<const char*> {};

TEST_P(FsTierDamage, LoadFailsDeletesFileAndForgetsKey) {
  const std::string damage = GetParam();
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 4);
  auto tier = make_tier(config_for(dir), format, host.region);
  ASSERT_NE(tier, nullptr);
  host.fill(0, 1);
  host.fill(1, 2);
  ASSERT_EQ(store(*tier, {key_of(0), key_of(1)}, {0, 1}).ok, std::vector<bool>({true, true}));
  ASSERT_EQ(tier->lookup(key_of(0)), LookupResult::kHit);

  const std::string path = fs_tier_chunk_path(dir.path(), format, key_of(0));
  std::vector<uint8_t> bytes = read_bytes(path);
  ASSERT_EQ(static_cast<int64_t>(bytes.size()), file_bytes(format));
  if (damage == "payload_byte") {
    bytes[kHeaderBytes + 500] ^= 0x01;
  } else if (damage == "header_byte") {
    bytes[20] ^= 0x80;
  } else if (damage == "truncated") {
    bytes.resize(kHeaderBytes + 100);
  } else if (damage == "header_only") {
    bytes.resize(kHeaderBytes);
  } else if (damage == "empty") {
    bytes.clear();
  } else if (damage == "other_key") {
    bytes = read_bytes(fs_tier_chunk_path(dir.path(), format, key_of(1)));
  } else if (damage == "other_format") {
    // A valid chunk of the same key and size written for another model.
    const ChunkFormat other_format = small_format("another-model");
    HostMemory other_host(other_format, 1);
    auto other = make_tier(config_for(dir), other_format, other_host.region);
    ASSERT_NE(other, nullptr);
    other_host.fill(0, 1);
    ASSERT_EQ(store(*other, {key_of(0)}, {0}).ok, std::vector<bool>({true}));
    bytes = read_bytes(fs_tier_chunk_path(dir.path(), other_format, key_of(0)));
  }
  write_bytes(path, bytes);

  host.fill(2, 77);
  EXPECT_FALSE(load_one(*tier, key_of(0), 2));
  EXPECT_FALSE(fs::exists(path)) << "bad file not deleted";
  EXPECT_EQ(tier->lookup(key_of(0)), LookupResult::kMiss);
  TierStats s = tier->stats();
  EXPECT_EQ(s.load_failures, 1);
  EXPECT_EQ(s.num_chunks, 1);
  EXPECT_EQ(s.used_bytes, file_bytes(format));
  EXPECT_EQ(s.load_bytes, 0);

  // The healthy chunk is unaffected, and the key can be stored again.
  EXPECT_TRUE(load_one(*tier, key_of(1), 3));
  EXPECT_TRUE(host.holds(3, 2));
  ASSERT_EQ(store(*tier, {key_of(0)}, {0}).ok, std::vector<bool>({true}));
  EXPECT_TRUE(load_one(*tier, key_of(0), 2));
  EXPECT_TRUE(host.holds(2, 1));
}

INSTANTIATE_TEST_SUITE_P(Damage, FsTierDamage,
                         ::testing::Values("payload_byte", "header_byte", "truncated",
                                           "header_only", "empty", "other_key", "other_format"));

TEST(FsTier, FileDeletedAfterLookupHitFailsLoad) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 2);
  auto tier = make_tier(config_for(dir), format, host.region);
  ASSERT_NE(tier, nullptr);
  host.fill(0, 5);
  ASSERT_EQ(store(*tier, {key_of(0), key_of(1)}, {0, 0}).ok, std::vector<bool>({true, true}));
  ASSERT_EQ(tier->lookup(key_of(0)), LookupResult::kHit);
  ASSERT_TRUE(fs::remove(fs_tier_chunk_path(dir.path(), format, key_of(0))));

  TierJobResult r = load(*tier, {key_of(1), key_of(0)}, {1, 0});
  EXPECT_EQ(r.ok, std::vector<bool>({true, false}));  // per key, the rest still loads
  EXPECT_EQ(r.bytes, format.payload_bytes());
  EXPECT_EQ(tier->lookup(key_of(0)), LookupResult::kMiss);
  EXPECT_EQ(tier->stats().load_failures, 1);
  EXPECT_EQ(tier->stats().num_chunks, 1);
}

TEST(FsTier, UnwritableShardDirectoryFailsStoreOnly) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 2);
  auto tier = make_tier(config_for(dir), format, host.region);
  ASSERT_NE(tier, nullptr);
  // chmod does not stop root, so block the shard directory with a regular
  // file: mkdir and open fail with ENOTDIR for any user.
  const std::string hex = key_of(0).to_hex();
  ASSERT_NE(hex.substr(0, 3), key_of(1).to_hex().substr(0, 3));
  const std::string shard = dir.path() + "/" + format.namespace_id_hex() + "/" + hex.substr(0, 3);
  write_bytes(shard, {1, 2, 3});
  host.fill(0, 3);

  TierJobResult r = store(*tier, {key_of(0), key_of(1)}, {0, 0});
  EXPECT_EQ(r.ok, std::vector<bool>({false, true}));
  EXPECT_EQ(r.bytes, format.payload_bytes());
  TierStats s = tier->stats();
  EXPECT_EQ(s.store_failures, 1);
  EXPECT_EQ(s.num_chunks, 1);
  EXPECT_TRUE(files_under(dir.path(), ".tmp").empty());
  EXPECT_EQ(settled_lookup(*tier, key_of(0)), LookupResult::kMiss);
  EXPECT_TRUE(load_one(*tier, key_of(1), 1));
}

TEST(FsTier, PermissionDeniedShardDirectoryFailsStore) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "running as root, which ignores directory permissions; "
                    "UnwritableShardDirectoryFailsStoreOnly and the mount-namespace tests cover "
                    "unwritable directories";
  }
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 1);
  auto tier = make_tier(config_for(dir), format, host.region);
  ASSERT_NE(tier, nullptr);
  const std::string ns_dir = dir.path() + "/" + format.namespace_id_hex();
  fs::permissions(ns_dir, fs::perms::owner_read | fs::perms::owner_exec);
  host.fill(0, 3);
  EXPECT_EQ(store(*tier, {key_of(0)}, {0}).ok, std::vector<bool>({false}));
  EXPECT_EQ(tier->stats().store_failures, 1);

  FsTierConfig config = config_for(dir);
  StatusOr<std::unique_ptr<SecondaryTier>> again = make_fs_tier(config, format, host.region);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("not writable"), std::string::npos)
      << again.status().message();
}

TEST(FsTier, MakeFsTierRejectsUnusableRootDir) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 1);

  FsTierConfig config;
  StatusOr<std::unique_ptr<SecondaryTier>> t = make_fs_tier(config, format, host.region);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("root_dir is empty"), std::string::npos);

  // Under a regular file: cannot be created.
  const std::string file = dir.path() + "/a_file";
  write_bytes(file, {0});
  config.root_dir = file + "/kv";
  t = make_fs_tier(config, format, host.region);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(file), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("not a directory"), std::string::npos)
      << t.status().message();

  config.root_dir = file;
  EXPECT_FALSE(make_fs_tier(config, format, host.region).ok());

  config = config_for(dir);
  config.n_read_threads = 0;
  config.n_write_threads = 0;
  EXPECT_EQ(make_fs_tier(config, format, host.region).status().code(),
            StatusCode::kInvalidArgument);

  config = config_for(dir);
  config.max_bytes = file_bytes(format) - 1;
  t = make_fs_tier(config, format, host.region);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("smaller than one chunk file"), std::string::npos);

  HostMemory wrong_slots(small_format(), 1);
  wrong_slots.region.slot_bytes -= 4;
  EXPECT_EQ(make_fs_tier(config_for(dir), format, wrong_slots.region).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(FsTier, MakeFsTierRejectsForeignFormatFile) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 1);
  const std::string ns_dir = dir.path() + "/" + format.namespace_id_hex();
  fs::create_directories(ns_dir);
  // A well-formed line naming another format: the directory really is not ours.
  const std::string other = small_format("another-model").namespace_string() + "\n";
  write_bytes(ns_dir + "/format.txt", std::vector<uint8_t>(other.begin(), other.end()));
  StatusOr<std::unique_ptr<SecondaryTier>> t = make_fs_tier(config_for(dir), format, host.region);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("format.txt"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("another-model"), std::string::npos)
      << t.status().message();
}

// A damaged format.txt (cut short, garbage, empty) is rewritten: the
// directory's name is this format's namespace id and every chunk header is
// still verified on load, so chunks stored before stay loadable.
class FsTierDamagedFormatFile : public ::testing::TestWithParam<int> {};

TEST_P(FsTierDamagedFormatFile, IsRewrittenAndChunksStillLoad) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 2);
  {
    auto tier = make_tier(config_for(dir), format, host.region);
    ASSERT_NE(tier, nullptr);
    host.fill(0, 5);
    ASSERT_TRUE(testing::store_one(*tier, key_of(1), 0));
  }
  const std::string path = dir.path() + "/" + format.namespace_id_hex() + "/format.txt";
  const std::string want = format.namespace_string() + "\n";
  std::vector<uint8_t> damaged;
  switch (GetParam()) {
    case 0: damaged.assign(want.begin(), want.begin() + want.size() / 2); break;  // cut short
    case 1: damaged = {0x00, 0xff, 0x13, 'x', '\n'}; break;                        // garbage
    case 2: break;                                                                 // empty
    case 3: {  // a crash mid-write left the line without its end
      const std::string no_newline = want.substr(0, want.size() - 1);
      damaged.assign(no_newline.begin(), no_newline.end());
      break;
    }
  }
  write_bytes(path, damaged);
  auto tier = make_tier(config_for(dir), format, host.region);
  ASSERT_NE(tier, nullptr);
  const std::vector<uint8_t> now = read_bytes(path);
  EXPECT_EQ(std::string(now.begin(), now.end()), want);
  EXPECT_EQ(settled_lookup(*tier, key_of(1)), LookupResult::kHit);
  EXPECT_TRUE(load_one(*tier, key_of(1), 1));
  EXPECT_TRUE(host.holds(1, 5));
}

INSTANTIATE_TEST_SUITE_P(Damage, FsTierDamagedFormatFile, ::testing::Values(0, 1, 2, 3));

TEST(FsTier, UnreadableFormatFileIsUnavailableNotAConfigurationError) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 1);
  const std::string ns_dir = dir.path() + "/" + format.namespace_id_hex();
  fs::create_directories(ns_dir + "/format.txt");  // read() fails with EISDIR
  StatusOr<std::unique_ptr<SecondaryTier>> t = make_fs_tier(config_for(dir), format, host.region);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable) << t.status().to_string();
  EXPECT_NE(t.status().message().find("format.txt"), std::string::npos) << t.status().message();
}

TEST(FsTier, MaxBytesEvictsLeastRecentlyUsedFiles) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 5);
  FsTierConfig config = config_for(dir);
  config.max_bytes = 3 * file_bytes(format) + 10;
  auto tier = make_tier(config, format, host.region);
  ASSERT_NE(tier, nullptr);
  for (int i = 0; i < 4; ++i) host.fill(i, 10 + i);

  // One job per key keeps the insertion order deterministic.
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(store(*tier, {key_of(i)}, {i}).ok, std::vector<bool>({true}));
  ASSERT_EQ(tier->lookup(key_of(0)), LookupResult::kHit);  // key 0 becomes most recent
  ASSERT_EQ(store(*tier, {key_of(3)}, {3}).ok, std::vector<bool>({true}));

  TierStats s = tier->stats();
  EXPECT_EQ(s.evictions, 1);
  EXPECT_EQ(s.num_chunks, 3);
  EXPECT_EQ(s.used_bytes, 3 * file_bytes(format));
  EXPECT_EQ(s.capacity_bytes, config.max_bytes);
  EXPECT_FALSE(fs::exists(fs_tier_chunk_path(dir.path(), format, key_of(1))));
  EXPECT_EQ(settled_lookup(*tier, key_of(1)), LookupResult::kMiss);
  for (int i : {0, 2, 3}) {
    EXPECT_EQ(tier->lookup(key_of(i)), LookupResult::kHit) << i;
    EXPECT_TRUE(load_one(*tier, key_of(i), 4));
    EXPECT_TRUE(host.holds(4, 10 + i));
  }
  EXPECT_EQ(files_under(dir.path(), ".kv").size(), 3u);
}

TEST(FsTier, MaxBytesCountsFilesFoundAtStartupOldestFirst) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 5);
  {
    auto writer = make_tier(config_for(dir), format, host.region);
    ASSERT_NE(writer, nullptr);
    for (int i = 0; i < 4; ++i) host.fill(i, i);
    ASSERT_EQ(store(*writer, {key_of(0), key_of(1), key_of(2), key_of(3)}, {0, 1, 2, 3}).ok.size(),
              4u);
  }
  // Ages: key 2 oldest, then 0, 3, 1.
  const auto now = fs::file_time_type::clock::now();
  const int age_rank[4] = {3, 1, 4, 2};
  for (int i = 0; i < 4; ++i) {
    fs::last_write_time(fs_tier_chunk_path(dir.path(), format, key_of(i)),
                        now - std::chrono::minutes(10 * age_rank[i]));
  }

  FsTierConfig config = config_for(dir);
  config.max_bytes = 3 * file_bytes(format);
  auto tier = make_tier(config, format, host.region);
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->stats().used_bytes, 4 * file_bytes(format));  // over the cap until a store
  host.fill(4, 4);
  ASSERT_EQ(store(*tier, {key_of(4)}, {4}).ok, std::vector<bool>({true}));

  TierStats s = tier->stats();
  EXPECT_EQ(s.evictions, 2);
  EXPECT_EQ(s.used_bytes, 3 * file_bytes(format));
  EXPECT_FALSE(fs::exists(fs_tier_chunk_path(dir.path(), format, key_of(2))));
  EXPECT_FALSE(fs::exists(fs_tier_chunk_path(dir.path(), format, key_of(0))));
  for (int i : {1, 3, 4}) EXPECT_EQ(tier->lookup(key_of(i)), LookupResult::kHit) << i;
}

TEST(FsTier, SlowDiskNeverBlocksTheCaller) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 2);
  FsTierConfig config = config_for(dir);
  config.debug_read_delay = milliseconds(400);
  auto tier = make_tier(config, format, host.region);
  ASSERT_NE(tier, nullptr);
  host.fill(0, 8);
  ASSERT_EQ(store(*tier, {key_of(0)}, {0}).ok, std::vector<bool>({true}));

  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(tier->lookup(key_of(9)), LookupResult::kRetry);  // probe sleeps on an I/O thread
  tier->submit_load(TierJob{42, {key_of(0)}, {1}});
  EXPECT_TRUE(tier->poll_finished().empty());
  EXPECT_EQ(tier->lookup(key_of(9)), LookupResult::kRetry);
  const auto caller_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
  EXPECT_LT(caller_ms, 200) << "lookup/submit_load/poll_finished blocked on the slow disk";

  tier->drain();
  std::vector<TierJobResult> results = tier->poll_finished();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].job_id, 42);
  EXPECT_EQ(results[0].ok, std::vector<bool>({true}));
  EXPECT_GE(results[0].seconds, 0.35);
  EXPECT_TRUE(host.holds(1, 8));
  EXPECT_EQ(tier->lookup(key_of(9)), LookupResult::kMiss);
}

TEST(FsTier, ManyJobsThroughAllThreads) {
  TempDir dir;
  const ChunkFormat format = small_format();
  constexpr int kChunks = 64;
  HostMemory host(format, 2 * kChunks);
  FsTierConfig config = config_for(dir);
  config.n_read_threads = 3;
  config.n_write_threads = 1;
  auto tier = make_tier(config, format, host.region);
  ASSERT_NE(tier, nullptr);
  for (int i = 0; i < kChunks; ++i) {
    host.fill(i, 1000 + i);
    tier->submit_store(TierJob{i, {key_of(i)}, {i}});
  }
  tier->drain();
  std::vector<TierJobResult> stored = tier->poll_finished();
  ASSERT_EQ(stored.size(), static_cast<size_t>(kChunks));
  for (const TierJobResult& r : stored) EXPECT_EQ(r.ok, std::vector<bool>({true})) << r.job_id;
  for (int i = 0; i < kChunks; ++i) tier->submit_load(TierJob{100 + i, {key_of(i)}, {kChunks + i}});
  tier->drain();
  EXPECT_EQ(tier->poll_finished().size(), static_cast<size_t>(kChunks));
  for (int i = 0; i < kChunks; ++i) EXPECT_TRUE(host.holds(kChunks + i, 1000 + i)) << i;
}

TEST(FsTier, EmptyJobsCompleteAndDestructorDrains) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 8);
  FsTierConfig config = config_for(dir);
  config.debug_read_delay = milliseconds(20);
  auto tier = make_tier(config, format, host.region);
  ASSERT_NE(tier, nullptr);
  tier->submit_store(TierJob{1, {}, {}});
  tier->submit_load(TierJob{2, {}, {}});
  std::vector<TierJobResult> r = tier->poll_finished();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].ok.empty());

  for (int i = 0; i < 4; ++i) host.fill(i, i);
  tier->submit_store(TierJob{3, {key_of(0), key_of(1), key_of(2), key_of(3)}, {0, 1, 2, 3}});
  // Other slots: a job's slots are reserved for it alone until its result is polled.
  tier->submit_load(TierJob{4, {key_of(0), key_of(1), key_of(2), key_of(3)}, {4, 5, 6, 7}});
  for (int i = 0; i < 8; ++i) tier->lookup(key_of(100 + i));
  tier.reset();  // must wait for the I/O threads, not crash
  EXPECT_TRUE(files_under(dir.path(), ".tmp").empty());
}

TEST(FsTier, StartupScanRemovesStaleTempAndWrongSizeFiles) {
  TempDir dir;
  const ChunkFormat format = small_format();
  HostMemory host(format, 2);
  {
    auto writer = make_tier(config_for(dir), format, host.region);
    ASSERT_NE(writer, nullptr);
    ASSERT_EQ(store(*writer, {key_of(0), key_of(1)}, {0, 1}).ok.size(), 2u);
  }
  const std::string path0 = fs_tier_chunk_path(dir.path(), format, key_of(0));
  const std::string stale = path0 + ".0123456789abcdef.tmp";
  const std::string fresh = path0 + ".fedcba9876543210.tmp";
  write_bytes(stale, {1});
  write_bytes(fresh, {1});
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(2));
  const std::string path1 = fs_tier_chunk_path(dir.path(), format, key_of(1));
  fs::resize_file(path1, 10);

  auto tier = make_tier(config_for(dir), format, host.region);
  ASSERT_NE(tier, nullptr);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));  // may belong to a live writer
  EXPECT_FALSE(fs::exists(path1));
  EXPECT_EQ(tier->stats().num_chunks, 1);
  EXPECT_EQ(tier->lookup(key_of(0)), LookupResult::kHit);
}

// ---- Tests that need their own mount namespace (ctest: fs_tier_mount_ns_test) ----

// A small tmpfs mounted on a temporary directory: real ENOSPC and EROFS.
class FsTierMountNs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("STRATA_FS_TIER_MOUNT_NS") == nullptr) {
      GTEST_SKIP() << "mounts a tmpfs; run by the ctest entry fs_tier_mount_ns_test under "
                      "`unshare -rm` with STRATA_FS_TIER_MOUNT_NS=1";
    }
    ASSERT_EQ(::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, "size=256k"), 0)
        << "mount tmpfs: " << std::strerror(errno);
    is_mounted_ = true;
  }
  void TearDown() override {
    if (is_mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }

  // ~64 KiB payloads: 4 layers * 2 * 16 tokens * 2 heads * 64 dims * 4 bytes.
  static ChunkFormat big_format() {
    ChunkFormat f = small_format();
    f.num_layers = 4;
    f.head_dim = 64;
    f.block_size = 16;
    return f;
  }

  TempDir dir_;
  bool is_mounted_ = false;
};

TEST_F(FsTierMountNs, EnospcFailsStoresAndKeepsExistingChunks) {
  const ChunkFormat format = big_format();
  ASSERT_EQ(format.payload_bytes(), 65536);
  constexpr int kChunks = 8;  // ~512 KiB into a 256 KiB file system
  HostMemory host(format, kChunks + 1);
  FsTierConfig config = config_for(dir_);
  auto tier = make_tier(config, format, host.region);
  ASSERT_NE(tier, nullptr);

  std::vector<ChunkKey> keys;
  std::vector<int64_t> slots;
  for (int i = 0; i < kChunks; ++i) {
    host.fill(i, 50 + i);
    keys.push_back(key_of(i));
    slots.push_back(i);
  }
  TierJobResult r = store(*tier, keys, slots);
  ASSERT_EQ(r.ok.size(), static_cast<size_t>(kChunks));
  const int64_t num_ok = std::count(r.ok.begin(), r.ok.end(), true);
  EXPECT_GE(num_ok, 1);
  EXPECT_LT(num_ok, kChunks) << "the tmpfs should have filled up";
  EXPECT_EQ(r.bytes, num_ok * format.payload_bytes());

  TierStats s = tier->stats();
  EXPECT_EQ(s.store_failures, kChunks - num_ok);
  EXPECT_EQ(s.num_chunks, num_ok);
  EXPECT_TRUE(files_under(dir_.path(), ".tmp").empty()) << "temporary files left behind";
  EXPECT_EQ(static_cast<int64_t>(files_under(dir_.path(), ".kv").size()), num_ok);

  for (int i = 0; i < kChunks; ++i) {
    if (r.ok[i]) {
      EXPECT_EQ(tier->lookup(keys[i]), LookupResult::kHit);
      EXPECT_TRUE(load_one(*tier, keys[i], kChunks));
      EXPECT_TRUE(host.holds(kChunks, 50 + i));
    } else {
      EXPECT_EQ(settled_lookup(*tier, keys[i]), LookupResult::kMiss);
    }
  }
  EXPECT_EQ(tier->stats().load_failures, 0);
}

TEST_F(FsTierMountNs, ReadOnlyFileSystemFailsStoresAndCreation) {
  const ChunkFormat format = small_format();
  HostMemory host(format, 2);
  auto tier = make_tier(config_for(dir_), format, host.region);
  ASSERT_NE(tier, nullptr);
  host.fill(0, 6);
  ASSERT_EQ(store(*tier, {key_of(0)}, {0}).ok, std::vector<bool>({true}));

  ASSERT_EQ(::mount(nullptr, dir_.path().c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  EXPECT_EQ(store(*tier, {key_of(1)}, {0}).ok, std::vector<bool>({false}));
  EXPECT_EQ(tier->stats().store_failures, 1);
  EXPECT_TRUE(load_one(*tier, key_of(0), 1));
  EXPECT_TRUE(host.holds(1, 6));

  FsTierConfig config = config_for(dir_);
  StatusOr<std::unique_ptr<SecondaryTier>> again = make_fs_tier(config, format, host.region);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("not writable"), std::string::npos)
      << again.status().message();
  EXPECT_NE(again.status().message().find("Read-only file system"), std::string::npos)
      << again.status().message();

  config.root_dir = dir_.path() + "/new_root";
  again = make_fs_tier(config, format, host.region);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find(config.root_dir), std::string::npos)
      << again.status().message();
}

}  // namespace
}  // namespace strata::offload
