#include "offload/tiers/common/tier_bookkeeping.h"

#include <gtest/gtest.h>

#include <vector>

#include "offload/tiers/testing/tier_test_util.h"

namespace strata::offload {
namespace {

using testing::HostMemory;
using testing::small_format;

ChunkKey key_of(uint64_t i) { return ChunkKey{0x2000 + i, 0xdef0000 + i}; }

TEST(TierJobs, RunsOneTaskPerKeyAndReportsEachJobOnce) {
  HostMemory memory(small_format(), 4);
  TierJobs jobs(1, 1);
  auto load =
      make_job_state(TierJob{7, {key_of(0), key_of(1), key_of(2)}, {0, 1, 2}}, memory.region);
  jobs.run_load(load, [](TierJobState& state, size_t i) {
    state.ok[i] = i != 1;
    state.bytes += 10;
  });
  // Every key of a store job already settled: it finishes without a task.
  auto store = make_job_state(TierJob{8, {key_of(3)}, {3}}, memory.region);
  store->ok[0] = 1;
  jobs.run_store(store, {}, [](TierJobState&, size_t) { FAIL() << "no key to write"; });
  jobs.wait_idle();

  std::vector<TierJobResult> results = jobs.poll_finished();
  ASSERT_EQ(results.size(), 2u);
  const TierJobResult& loaded = results[0].job_id == 7 ? results[0] : results[1];
  const TierJobResult& stored = results[0].job_id == 7 ? results[1] : results[0];
  EXPECT_EQ(loaded.ok, std::vector<bool>({true, false, true}));
  EXPECT_EQ(loaded.bytes, 30);
  EXPECT_GE(loaded.seconds, 0.0);
  EXPECT_EQ(stored.job_id, 8);
  EXPECT_EQ(stored.ok, std::vector<bool>({true}));
  EXPECT_EQ(stored.seconds, 0.0);  // no task ran
  EXPECT_TRUE(jobs.poll_finished().empty());

  TierStats stats;
  jobs.fill_seconds(stats);
  EXPECT_EQ(stats.load_seconds, loaded.seconds);
  EXPECT_EQ(stats.store_seconds, 0.0);
}

TEST(ClaimStores, SkipsHeldKeysAndKeysAlreadyBeingStored) {
  HostMemory memory(small_format(), 4);
  ChunkKeySet storing = {key_of(1)};
  TierStats stats;
  auto state = make_job_state(
      TierJob{1, {key_of(0), key_of(1), key_of(2), key_of(2)}, {0, 1, 2, 3}}, memory.region);
  const std::vector<size_t> to_write =
      claim_stores(*state, storing, stats, [](const ChunkKey& key) { return key == key_of(0); });
  EXPECT_EQ(to_write, std::vector<size_t>({2}));  // the second key_of(2) is the same store
  EXPECT_EQ(state->ok, std::vector<uint8_t>({1, 1, 0, 1}));
  EXPECT_EQ(stats.stores_skipped, 3);
  EXPECT_EQ(storing.count(key_of(2)), 1u);
}

TEST(ProbedLookups, ProbesUnknownKeysAndDeliversEachMissOnce) {
  ProbedLookups lookups(/*miss_ttl_ms=*/0);
  TierStats stats;
  bool start_probe = false;
  EXPECT_EQ(lookups.answer(key_of(0), false, stats, &start_probe), LookupResult::kRetry);
  EXPECT_TRUE(start_probe);
  start_probe = false;
  EXPECT_EQ(lookups.answer(key_of(0), false, stats, &start_probe), LookupResult::kRetry);
  EXPECT_FALSE(start_probe);  // already being probed

  lookups.end_probe(key_of(0), /*is_present=*/false);
  EXPECT_EQ(lookups.answer(key_of(0), false, stats, &start_probe), LookupResult::kMiss);
  EXPECT_FALSE(start_probe);
  EXPECT_EQ(lookups.answer(key_of(0), false, stats, &start_probe), LookupResult::kRetry);
  EXPECT_TRUE(start_probe);  // ttl 0: delivered once, then asked again

  EXPECT_EQ(lookups.answer(key_of(1), true, stats, &start_probe), LookupResult::kHit);
  EXPECT_EQ(stats.chunk_lookups, 2);
  EXPECT_EQ(stats.chunk_hits, 1);

  HostMemory memory(small_format(), 1);
  auto state = make_job_state(TierJob{1, {key_of(2)}, {0}}, memory.region);
  EXPECT_EQ(lookups.claim_stores(*state, stats, [](const ChunkKey&) { return false; }).size(), 1u);
  start_probe = false;
  EXPECT_EQ(lookups.answer(key_of(2), false, stats, &start_probe), LookupResult::kRetry);
  EXPECT_FALSE(start_probe);  // its store is in flight
  lookups.end_store(key_of(2));
}

TEST(CheckFormatAndRegion, NamesTheTierAndTheSizes) {
  HostMemory memory(small_format(), 1);
  EXPECT_TRUE(check_format_and_region("fs", small_format(), memory.region).ok());
  HostRegion wrong = memory.region;
  wrong.slot_bytes = 10;
  const Status s = check_format_and_region("obj", small_format(), wrong);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "obj tier: host region slots are 10 bytes; the chunk payload is 1024");
}

}  // namespace
}  // namespace strata::offload
