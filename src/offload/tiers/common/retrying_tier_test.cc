#include "offload/tiers/common/retrying_tier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "offload/tiers/fs/fs_tier.h"
#include "offload/tiers/testing/tier_test_util.h"

namespace strata::offload {
namespace {

namespace fs = std::filesystem;
using testing::HostMemory;
using testing::small_format;
using testing::TempDir;

constexpr ChunkKey kKey{0x1234, 0x5678};

TierRetryConfig fast_retry() { return {20, 100}; }

// Calls lookup (the engine thread's steady call) until the tier is up.
bool wait_until_up(SecondaryTier& tier, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    tier.poll_finished();
    if (tier.stats().is_up) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

struct FsFixture {
  FsFixture() : format(small_format()), host(format, 4) {
    config.root_dir = dir.path();
    config.n_read_threads = 1;
    config.n_write_threads = 1;
    ns_dir = dir.path() + "/" + format.namespace_id_hex();
  }
  TierFactory factory() {
    return [this] {
      ++num_starts;
      return make_fs_tier(config, format, host.region);
    };
  }
  TempDir dir;
  ChunkFormat format;
  HostMemory host;
  FsTierConfig config;
  std::string ns_dir;
  std::atomic<int> num_starts{0};
};

TEST(RetryingTier, StartsAtOnceWhenTheTierCan) {
  FsFixture f;
  StatusOr<std::unique_ptr<SecondaryTier>> t = start_tier_or_retry("fs", f.factory(), fast_retry());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_TRUE((*t)->stats().is_up);
  EXPECT_EQ((*t)->stats().start_failures, 0);
  EXPECT_EQ(f.num_starts, 1);
}

TEST(RetryingTier, ConfigurationErrorsFailFast) {
  FsFixture f;
  fs::create_directories(f.ns_dir);
  const std::string other = small_format("another-model").namespace_string() + "\n";
  std::ofstream(f.ns_dir + "/format.txt") << other;
  StatusOr<std::unique_ptr<SecondaryTier>> t = start_tier_or_retry("fs", f.factory(), fast_retry());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("another KV format"), std::string::npos)
      << t.status().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(f.num_starts, 1);  // no retry
}

// format.txt cannot be read (here: it is a directory, EISDIR): the tier starts
// down, answers misses, fails jobs at once, and comes up once it is repaired.
TEST(RetryingTier, UnreadableNamespaceStartsDownAndComesUpWhenRepaired) {
  FsFixture f;
  fs::create_directories(f.ns_dir + "/format.txt");
  StatusOr<std::unique_ptr<SecondaryTier>> t = start_tier_or_retry("fs", f.factory(), fast_retry());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  SecondaryTier& tier = **t;
  EXPECT_EQ(tier.name(), "fs");
  EXPECT_FALSE(tier.stats().is_up);
  EXPECT_EQ(tier.lookup(kKey), LookupResult::kMiss);
  f.host.fill(0, 3);
  EXPECT_FALSE(testing::store_one(tier, kKey, 0));
  EXPECT_FALSE(testing::load_one(tier, kKey, 1));

  // Still down after several retries; each failed start is counted.
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  TierStats down = tier.stats();
  EXPECT_FALSE(down.is_up);
  EXPECT_GE(down.start_failures, 2);
  EXPECT_EQ(down.chunk_lookups, 1);
  EXPECT_EQ(down.stores_skipped, 1);
  EXPECT_EQ(down.load_failures, 1);

  fs::remove(f.ns_dir + "/format.txt");
  ASSERT_TRUE(wait_until_up(tier, std::chrono::seconds(5)));
  EXPECT_TRUE(testing::store_one(tier, kKey, 0));
  EXPECT_EQ(testing::settled_lookup(tier, kKey), LookupResult::kHit);
  EXPECT_TRUE(testing::load_one(tier, kKey, 1));
  EXPECT_TRUE(f.host.holds(1, 3));
  TierStats up = tier.stats();
  EXPECT_TRUE(up.is_up);
  EXPECT_GE(up.start_failures, 2);  // the down period stays in the counters
  EXPECT_GE(up.chunk_lookups, 2);
}

TEST(RetryingTier, DelaysDoubleUpToTheMaximum) {
  std::atomic<int> calls{0};
  TierFactory always_down = [&calls]() -> StatusOr<std::unique_ptr<SecondaryTier>> {
    ++calls;
    return unavailable("test: down");
  };
  StatusOr<std::unique_ptr<SecondaryTier>> t = start_tier_or_retry("obj", always_down, {10, 40});
  ASSERT_TRUE(t.ok());
  // Starts at 0, 10, 30, 70, 110, 150, ... ms: about 6-7 in 300 ms.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int n = calls.load();
  EXPECT_GE(n, 4);
  EXPECT_LE(n, 10);
  EXPECT_NEAR((*t)->stats().start_failures, n, 1);  // a start may be under way
  t->reset();  // the destructor stops the retry thread
  const int after = calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(calls.load(), after);
}

}  // namespace
}  // namespace strata::offload
