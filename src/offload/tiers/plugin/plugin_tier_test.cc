// Tier plugins: the shipped in-memory example loaded through the C ABI does a
// real round trip; bad libraries are refused with a message naming them.
#include "offload/tiers/plugin/plugin_tier.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace strata::offload {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

ChunkFormat format() {
  ChunkFormat f;
  f.model_fingerprint = "plugin-test";
  f.num_layers = 2;
  f.num_kv_heads = 1;
  f.head_dim = 4;
  f.block_size = 2;
  return f;
}

class PluginTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (env("STRATA_MEMORY_TIER").empty()) GTEST_SKIP() << "run through ctest";
    bytes_.assign(format().payload_bytes() * 4, 0);
    region_ = HostRegion{bytes_.data(), 4, format().payload_bytes()};
  }
  std::vector<TierJobResult> wait(SecondaryTier& tier) {
    tier.drain();
    return tier.poll_finished();
  }
  std::vector<uint8_t> bytes_;
  HostRegion region_;
};

TEST_F(PluginTierTest, ExampleMemoryTierRoundTrip) {
  auto tier = make_plugin_tier("memory", env("STRATA_MEMORY_TIER"),
                               R"({"type":"memory","max_bytes":1000000})", format(), region_);
  ASSERT_TRUE(tier.ok()) << tier.status().message();
  SecondaryTier& t = **tier;
  EXPECT_EQ(t.name(), "memory");
  const ChunkKey a{1, 2}, b{3, 4};
  for (int64_t i = 0; i < region_.slot_bytes; ++i) region_.slot(0)[i] = static_cast<uint8_t>(i * 7);
  EXPECT_EQ(t.lookup(a), LookupResult::kMiss);
  t.submit_store({10, {a}, {0}});
  std::vector<TierJobResult> done = wait(t);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].job_id, 10);
  EXPECT_EQ(done[0].ok, std::vector<bool>{true});
  EXPECT_EQ(t.lookup(a), LookupResult::kHit);
  t.submit_load({11, {a, b}, {2, 3}});
  done = wait(t);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].ok, (std::vector<bool>{true, false})) << "b was never stored";
  EXPECT_EQ(std::memcmp(region_.slot(2), region_.slot(0), region_.slot_bytes), 0);
  const TierStats s = t.stats();
  EXPECT_EQ(s.tier, "memory");
  EXPECT_EQ(s.chunk_hits, 1);
  EXPECT_EQ(s.load_failures, 1);
  EXPECT_EQ(s.num_chunks, 1);
  EXPECT_EQ(s.capacity_bytes, 1000000);
}

TEST_F(PluginTierTest, RefusesBadLibraries) {
  auto missing = make_plugin_tier("x", "/nonexistent/libtier.so", "{}", format(), region_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot load tier plugin '/nonexistent/libtier.so'"),
            std::string::npos);
  auto wrong_abi = make_plugin_tier("x", env("STRATA_WRONG_ABI_TIER"), "{}", format(), region_);
  ASSERT_FALSE(wrong_abi.ok());
  EXPECT_NE(wrong_abi.status().message().find("ABI version 99"), std::string::npos)
      << wrong_abi.status().message();
  auto no_symbol = make_plugin_tier("x", "libm.so.6", "{}", format(), region_);
  ASSERT_FALSE(no_symbol.ok());
  EXPECT_NE(no_symbol.status().message().find("does not export strata_tier_plugin_v1"),
            std::string::npos);
  auto bad_config = make_plugin_tier("x", env("STRATA_MEMORY_TIER"), R"({"max_bytes":-5})",
                                     format(), region_);
  ASSERT_FALSE(bad_config.ok());
  EXPECT_NE(bad_config.status().message().find("max_bytes must be >= 0"), std::string::npos);
}

}  // namespace
}  // namespace strata::offload
