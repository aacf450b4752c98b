// The tiered KV cache's invariant: greedy output with KV reloaded from the
// host tier, from the filesystem tier (host emptied), by a second engine
// after a "restart", after preemption, and after every kind of tier failure
// equals the output computed from scratch — and the tiers really served the
// tokens (checked through the engine's counters, as /metrics shows them).
// Runs on the random-weight test model and on the bundled model (ctest).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include "engine/engine_core.h"
#include "engine/test_model_fixture.h"
#include "offload/tiers/fs/fs_tier.h"
#include "offload/tiers/obj/obj_tier.h"
#include "offload/tiers/p2p/p2p_tier.h"
#include "offload/tiers/plugin/plugin_tier_config.h"
#include "offload/tiers/testing/s3_test_server.h"
#include "ops/ops.h"

namespace strata::engine {
namespace {

namespace fs = std::filesystem;

const offload::TierStats& tier(const EngineStats& s, const std::string& name) {
  for (const offload::TierStats& t : s.offload.tiers) {
    if (t.tier == name) return t;
  }
  static const offload::TierStats kNone;
  ADD_FAILURE() << "no tier " << name;
  return kNone;
}

std::vector<fs::path> chunk_files(const std::string& root) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file() && e.path().extension() == ".kv") out.push_back(e.path());
  }
  return out;
}

class TieredKvTest : public testing::TestModelFixture {
 protected:
  void SetUp() override {
    TestModelFixture::SetUp();
    if (IsSkipped()) return;
    char tmpl[] = "/tmp/strata-tiered-kv-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  // A KV pool of `num_blocks` blocks of `block_size` tokens (4: a pool tile
  // a block, read key by key; multiples of 16: 16-token tiles, the kernels'
  // vector path); host tier of `host_chunks` chunks; a filesystem tier under
  // root_ when `with_fs`.
  EngineConfig config(int64_t num_blocks, int64_t host_chunks, bool with_fs,
                      int64_t blocks_per_chunk = 1, int64_t block_size = 4) const {
    EngineConfig c;
    c.block_size = block_size;
    c.num_blocks = num_blocks;
    c.scheduler.max_model_len = std::min<int64_t>(512, num_blocks * c.block_size);
    c.scheduler.max_num_batched_tokens = 64;
    c.kv_cache_dtype = testing::kv_dtype_under_test();
    c.offload.enabled = true;
    c.offload.blocks_per_chunk = blocks_per_chunk;
    c.offload.cpu_bytes_to_use =
        host_chunks * model_->kv_bytes_per_block(c.block_size, c.kv_cache_dtype) * blocks_per_chunk;
    c.offload.max_load_wait_s = 30;
    if (with_fs) {
      offload::SecondaryTierConfig t;
      t.type = "fs";
      offload::FsTierConfig& fs_tier = t.emplace<offload::FsTierConfig>();
      fs_tier.root_dir = root_;
      fs_tier.n_read_threads = 2;
      fs_tier.n_write_threads = 2;
      c.offload.secondary_tiers.push_back(t);
    }
    return c;
  }

  static EngineConfig plain(int64_t num_blocks, int64_t block_size = 4) {
    EngineConfig c;
    c.block_size = block_size;
    c.num_blocks = num_blocks;
    c.scheduler.max_model_len = std::min<int64_t>(512, num_blocks * c.block_size);
    c.scheduler.max_num_batched_tokens = 64;
    c.kv_cache_dtype = testing::kv_dtype_under_test();
    return c;
  }

  // One engine kept across several batches (the "server" lifetime).
  struct Session {
    ThreadPool pool;
    std::unique_ptr<EngineCore> core;

    Session(const model::Model& model, const EngineConfig& cfg, int threads = 2) : pool(threads) {
      StatusOr<std::unique_ptr<EngineCore>> c = EngineCore::create(model, cfg, pool);
      EXPECT_TRUE(c.ok()) << c.status().to_string();
      if (c.ok()) core = std::move(c).value();
    }
    std::map<std::string, std::vector<int32_t>> run(const std::vector<EngineRequest>& batch) {
      std::map<std::string, std::vector<int32_t>> out;
      for (const EngineRequest& r : batch) EXPECT_TRUE(core->add_request(r).ok());
      for (int i = 0; i < 200000 && core->has_unfinished_requests(); ++i) {
        for (const RequestOutput& o : core->step()) {
          for (const auto& t : o.new_tokens) out[o.request_id].push_back(t.token_id);
        }
      }
      EXPECT_FALSE(core->has_unfinished_requests());
      core->wait_for_offload();
      return out;
    }
    std::vector<int32_t> run_one(const EngineRequest& r) { return run({r})[r.request_id]; }
  };

  // What a fresh engine without tiers computes.
  std::vector<int32_t> recomputed(const EngineRequest& r) {
    Session s(*model_, plain(256));
    return s.run_one(r);
  }

  // Requests whose blocks push `r`'s out of a small KV pool.
  std::vector<EngineRequest> fillers(int n, int len, uint32_t seed) {
    std::vector<EngineRequest> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(greedy("fill" + std::to_string(seed + i), random_prompt(len, seed + i), 2));
    }
    return out;
  }

  static EngineRequest greedy(const std::string& id, std::vector<int32_t> prompt, int max_tokens) {
    return TestModelFixture::greedy(id, std::move(prompt), max_tokens, /*ignore_eos=*/true);
  }

  std::string root_;
};

TEST_F(TieredKvTest, HostTierReloadEqualsRecompute) {
  EngineRequest r = greedy("long", random_prompt(150, 1), 12);
  const std::vector<int32_t> expected = recomputed(r);
  Session s(*model_, config(/*num_blocks=*/64, /*host_chunks=*/512, false));
  EXPECT_EQ(s.run_one(r), expected);
  s.run(fillers(3, 200, 100));  // the pool (256 tokens) forgets "long"
  const EngineStats before = s.core->stats();
  r.request_id = "long-again";
  EXPECT_EQ(s.run_one(r), expected);
  const EngineStats after = s.core->stats();
  const int64_t external = after.prompt_tokens_external - before.prompt_tokens_external;
  EXPECT_GE(external, 100) << "the host tier served the prefix";
  EXPECT_EQ(tier(after, "cpu").hit_tokens - tier(before, "cpu").hit_tokens, external);
  EXPECT_EQ(after.external_prefix_cache_hits - before.external_prefix_cache_hits, external);
  EXPECT_GT(tier(after, "cpu").store_bytes, 0);
  EXPECT_GT(tier(after, "cpu").load_bytes, 0);
}

TEST_F(TieredKvTest, FilesystemTierReloadEqualsRecompute) {
  EngineRequest r = greedy("long", random_prompt(150, 2), 12);
  const std::vector<int32_t> expected = recomputed(r);
  Session s(*model_, config(64, 512, true));
  EXPECT_EQ(s.run_one(r), expected);
  EXPECT_FALSE(chunk_files(root_).empty());
  ASSERT_TRUE(s.core->reset_prefix_cache());  // empties the pool and the host tier
  r.request_id = "long-again";
  EXPECT_EQ(s.run_one(r), expected);
  const EngineStats st = s.core->stats();
  EXPECT_GE(tier(st, "fs").hit_tokens, 140);
  EXPECT_EQ(tier(st, "cpu").hit_tokens, 0);
  EXPECT_EQ(st.prompt_tokens_external, tier(st, "fs").hit_tokens);
}

// A second turn of a chat over 16-token pool tiles: its prompt is the first
// turn's prompt and answer plus new text, so the answer's KV, computed by
// decode steps, comes back from the filesystem tier; the second answer must
// equal a fresh engine's, which prefills all of it.
TEST_F(TieredKvTest, SecondTurnOverSixteenTokenTilesEqualsRecompute) {
  for (int64_t block_size : {16, 32}) {
    SCOPED_TRACE("block_size " + std::to_string(block_size));
    fs::remove_all(root_);
    fs::create_directories(root_);
    const std::vector<int32_t> prompt = random_prompt(150, 11);
    Session s(*model_, config(64, 512, true, 1, block_size));
    const std::vector<int32_t> answer = s.run_one(greedy("turn1", prompt, 24));
    ASSERT_EQ(answer.size(), 24u);
    std::vector<int32_t> next = prompt;
    next.insert(next.end(), answer.begin(), answer.end());
    const std::vector<int32_t> more = random_prompt(40, 12);
    next.insert(next.end(), more.begin(), more.end());
    ASSERT_TRUE(s.core->reset_prefix_cache());  // only the filesystem tier keeps turn 1
    const EngineRequest turn2 = greedy("turn2", next, 12);
    const std::vector<int32_t> got = s.run_one(turn2);
    Session fresh(*model_, plain(64, block_size));
    EXPECT_EQ(got, fresh.run_one(turn2));
    const int64_t hit = tier(s.core->stats(), "fs").hit_tokens;
    EXPECT_GE(hit, 160) << "the prompt and answer of turn 1 came from the tier";
    EXPECT_LE(hit, 174);
  }
}

TEST_F(TieredKvTest, SecondEngineLoadsFromSharedDirectory) {
  EngineRequest r = greedy("long", random_prompt(150, 3), 12);
  const std::vector<int32_t> expected = recomputed(r);
  {
    Session first(*model_, config(64, 512, true));
    EXPECT_EQ(first.run_one(r), expected);
  }
  Session second(*model_, config(64, 512, true));  // a restart: empty pool and host tier
  EXPECT_EQ(second.run_one(r), expected);
  EXPECT_GE(tier(second.core->stats(), "fs").hit_tokens, 140);
}

// A chunk's bytes are a function of the model, the dtype and the tokens: an
// engine on 1 thread and one on 2 write identical chunk files (every matmul
// kernel, oneDNN's included, reduces each output the same way whatever the
// thread count).
TEST_F(TieredKvTest, ChunkFilesDoNotDependOnThreadCount) {
  EngineRequest r = greedy("long", random_prompt(150, 4), 4);
  std::map<std::string, std::string> files[2];
  for (int threads : {1, 2}) {
    EngineConfig c = config(64, 512, true);
    c.offload.secondary_tiers[0].as<offload::FsTierConfig>().root_dir =
        root_ + "/threads" + std::to_string(threads);
    {
      Session s(*model_, c, threads);
      s.run_one(r);
    }
    for (const fs::path& f :
         chunk_files(c.offload.secondary_tiers[0].as<offload::FsTierConfig>().root_dir)) {
      std::ifstream in(f, std::ios::binary);
      files[threads - 1][f.filename().string()] =
          std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  EXPECT_GE(files[0].size(), 30u);
  ASSERT_EQ(files[0].size(), files[1].size());
  int differing = 0;
  for (const auto& [name, bytes] : files[0]) {
    auto other = files[1].find(name);
    differing += other == files[1].end() || other->second != bytes;
  }
  EXPECT_EQ(differing, 0) << "of " << files[0].size() << " chunk files";
}

TEST_F(TieredKvTest, ChunksOfSeveralBlocksAndPartialPoolHits) {
  // Chunks of 3 blocks (12 tokens); the second request's KV-pool hit ends
  // inside a chunk, so the first loaded chunk is copied only in part.
  std::vector<int32_t> base = random_prompt(150, 4);
  EngineRequest a = greedy("a", base, 8);
  std::vector<int32_t> longer = base;
  std::vector<int32_t> tail = random_prompt(40, 5);
  longer.insert(longer.end(), tail.begin(), tail.end());
  EngineRequest b = greedy("b", longer, 8);
  const std::vector<int32_t> expected_b = recomputed(b);
  Session s(*model_, config(64, 512, true, /*blocks_per_chunk=*/3));
  s.run_one(a);
  ASSERT_TRUE(s.core->reset_prefix_cache());
  EngineRequest head = greedy("head", std::vector<int32_t>(base.begin(), base.begin() + 22), 1);
  s.run_one(head);  // 5 blocks of the prefix back in the pool (20 tokens, not a chunk multiple)
  EXPECT_EQ(s.run_one(b), expected_b);
  EXPECT_GT(s.core->stats().prompt_tokens_external, 100);
}

TEST_F(TieredKvTest, PreemptedRequestsResumeFromTiers) {
  // A preempted request resumes with what the tiers hold of it by then: the
  // rest, decode-written tokens included, is recomputed in one chunk, so this
  // equality needs rows whose bits do not depend on the step's size (it
  // failed 1 run in 40 on the bundled bf16 model on oneDNN, when a block's
  // store had not finished before the preemption).
  if (!rows_independent_of_step_size()) {
    GTEST_SKIP() << "bf16 weights on oneDNN: see tiered_kv_test_bundled_model_exact";
  }
  std::vector<EngineRequest> batch;
  for (int i = 0; i < 8; ++i)
    batch.push_back(greedy("p" + std::to_string(i), random_prompt(60, 10 + i), 24));
  std::map<std::string, std::vector<int32_t>> expected;
  {
    Session big(*model_, plain(512));
    expected = big.run(batch);
  }
  Session tight(*model_, config(/*num_blocks=*/48, 1024, false));
  EXPECT_EQ(tight.run(batch), expected);
  const EngineStats st = tight.core->stats();
  EXPECT_GT(st.num_preemptions, 0);
  EXPECT_GT(st.prompt_tokens_external + tier(st, "cpu").hit_tokens, 0);
}

// Speculative decoding with the tiers (vLLM #52735): blocks written while
// drafts are verified reach the tiers only with accepted tokens' KV, under
// keys of accepted tokens, and are served back with speculation on.
TEST_F(TieredKvTest, SpeculationStoresOnlyAcceptedTokensAndIsServedFromTiers) {
  auto speculative = [](EngineConfig c) {
    c.speculative = {.method = spec_decode::SpeculativeMethod::kNgram,
                     .num_speculative_tokens = 4,
                     .prompt_lookup_max = 3,
                     .prompt_lookup_min = 1};
    return c;
  };
  // A prompt quoting the model's own continuation of `seed`, then `seed`
  // again: the output repeats the quote (accepted drafts), then goes on.
  const std::vector<int32_t> seed = random_prompt(12, 21);
  const std::vector<int32_t> quote = recomputed(greedy("seed", seed, 24));
  std::vector<int32_t> prompt = random_prompt(30, 22);
  for (const auto* part : {&seed, &quote, &seed, &quote, &seed})
    prompt.insert(prompt.end(), part->begin(), part->end());
  EngineRequest r = greedy("quote", prompt, 60);
  const std::vector<int32_t> expected = recomputed(r);
  Session s(*model_, speculative(config(/*num_blocks=*/96, /*host_chunks=*/512, /*with_fs=*/true)));
  EXPECT_EQ(s.run_one(r), expected);
  const EngineStats first = s.core->stats();
  EXPECT_GT(first.spec_decode.num_accepted_tokens, 0);
  EXPECT_GT(first.spec_decode.num_draft_tokens, first.spec_decode.num_accepted_tokens);
  // The whole sequence (prompt + output) again, from the tiers only: every
  // full block of it, output blocks included, is served, and the KV they
  // hold is that of the accepted tokens (the continuation equals recompute).
  ASSERT_TRUE(s.core->reset_prefix_cache());
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), expected.begin(), expected.end());
  EngineRequest again = greedy("again", all, 16);
  const std::vector<int32_t> expected_again = recomputed(again);
  EXPECT_EQ(s.run_one(again), expected_again);
  const EngineStats st = s.core->stats();
  const int64_t full_blocks_before_last = (static_cast<int64_t>(all.size()) - 1) / 4 * 4;
  EXPECT_EQ(st.prompt_tokens_external, full_blocks_before_last);
  EXPECT_EQ(tier(st, "fs").hit_tokens, full_blocks_before_last);
  EXPECT_GT(st.spec_decode.num_drafts, first.spec_decode.num_drafts);
}

TEST_F(TieredKvTest, ArcPolicyKeepsOutputsEqual) {
  EngineRequest r = greedy("long", random_prompt(120, 6), 10);
  const std::vector<int32_t> expected = recomputed(r);
  EngineConfig c = config(64, 40, true);  // host tier smaller than the prompt: evictions
  c.offload.eviction_policy = "arc";
  Session s(*model_, c);
  EXPECT_EQ(s.run_one(r), expected);
  s.run(fillers(2, 150, 200));
  r.request_id = "again";
  EXPECT_EQ(s.run_one(r), expected);
  EXPECT_GT(tier(s.core->stats(), "cpu").evictions, 0);
}

// Each fault is applied to every chunk file after the first run; the second
// run (pool and host tier emptied) must recompute and still be right.
void corrupt_payload(const fs::path& p) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-7, std::ios::end);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(-7, std::ios::end);
  f.write(&c, 1);
}
void corrupt_header(const fs::path& p) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(20);
  f.write("garbage!", 8);
}
void truncate_file(const fs::path& p) { fs::resize_file(p, fs::file_size(p) / 2); }
void delete_file(const fs::path& p) { fs::remove(p); }

class TieredKvFaultTest
    : public TieredKvTest,
      public ::testing::WithParamInterface<std::pair<const char*, void (*)(const fs::path&)>> {};

TEST_P(TieredKvFaultTest, FaultyChunkFilesAreMissesAndOutputStaysRight) {
  EngineRequest r = greedy("long", random_prompt(150, 7), 12);
  const std::vector<int32_t> expected = recomputed(r);
  Session s(*model_, config(64, 512, true));
  EXPECT_EQ(s.run_one(r), expected);
  std::vector<fs::path> files = chunk_files(root_);
  ASSERT_FALSE(files.empty());
  ASSERT_TRUE(s.core->reset_prefix_cache());
  // A second engine sees the damage too: the first one's lookups are cached.
  Session fresh(*model_, config(64, 512, true));
  for (const fs::path& p : files) GetParam().second(p);
  r.request_id = "again";
  EXPECT_EQ(fresh.run_one(r), expected);
  const EngineStats st = fresh.core->stats();
  EXPECT_EQ(tier(st, "fs").hit_tokens, 0);
  EXPECT_EQ(st.prompt_tokens_external, 0);
  if (std::string(GetParam().first) != "deleted") {
    EXPECT_GT(tier(st, "fs").load_failures, 0);
    EXPECT_GT(st.offload.promotion_failures, 0);
  }
  // The damaged files were removed or rewritten; a third run hits again.
  ASSERT_TRUE(fresh.core->reset_prefix_cache());
  r.request_id = "third";
  EXPECT_EQ(fresh.run_one(r), expected);
}

INSTANTIATE_TEST_SUITE_P(Faults, TieredKvFaultTest,
                         ::testing::Values(std::make_pair("corrupt_payload", &corrupt_payload),
                                           std::make_pair("corrupt_header", &corrupt_header),
                                           std::make_pair("truncated", &truncate_file),
                                           std::make_pair("deleted", &delete_file)),
                         [](const auto& info) { return std::string(info.param.first); });

TEST_F(TieredKvTest, ForeignChunkFileIsAMiss) {
  // Every file replaced by a valid file of another chunk: right format, wrong key.
  EngineRequest r = greedy("long", random_prompt(150, 8), 12);
  const std::vector<int32_t> expected = recomputed(r);
  {
    Session s(*model_, config(64, 512, true));
    EXPECT_EQ(s.run_one(r), expected);
  }
  std::vector<fs::path> files = chunk_files(root_);
  ASSERT_GE(files.size(), 2u);
  for (size_t i = 0; i + 1 < files.size(); ++i) {
    fs::copy_file(files[i + 1], files[i], fs::copy_options::overwrite_existing);
  }
  Session s(*model_, config(64, 512, true));
  r.request_id = "again";
  EXPECT_EQ(s.run_one(r), expected);
  EXPECT_GT(tier(s.core->stats(), "fs").load_failures, 0);
}

TEST_F(TieredKvTest, SlowDiskFallsBackToRecompute) {
  EngineRequest r = greedy("long", random_prompt(150, 9), 12);
  const std::vector<int32_t> expected = recomputed(r);
  {
    Session s(*model_, config(64, 512, true));
    s.run_one(r);
  }
  EngineConfig slow = config(64, 512, true);
  slow.offload.secondary_tiers[0].as<offload::FsTierConfig>().debug_read_delay =
      std::chrono::milliseconds(150);
  slow.offload.max_load_wait_s = 0.05;
  Session s(*model_, slow);
  r.request_id = "again";
  EXPECT_EQ(s.run_one(r), expected);
  EXPECT_GT(s.core->stats().offload.load_wait_timeouts, 0);
}

TEST_F(TieredKvTest, PluginTierReloadEqualsRecompute) {
  const char* plugin = std::getenv("STRATA_MEMORY_TIER");
  if (plugin == nullptr) GTEST_SKIP() << "run through ctest (needs the example plugin's path)";
  EngineRequest r = greedy("long", random_prompt(150, 11), 12);
  const std::vector<int32_t> expected = recomputed(r);
  EngineConfig c = config(64, 512, false);
  offload::SecondaryTierConfig t;
  t.type = "memory";
  t.emplace<offload::PluginTierConfig>() = {
      plugin, R"({"type":"memory","module_path":"x","max_bytes":100000000})"};
  c.offload.secondary_tiers.push_back(t);
  Session s(*model_, c);
  EXPECT_EQ(s.run_one(r), expected);
  ASSERT_TRUE(s.core->reset_prefix_cache());  // only the plugin tier still has the prefix
  r.request_id = "again";
  EXPECT_EQ(s.run_one(r), expected);
  EXPECT_GE(tier(s.core->stats(), "memory").hit_tokens, 140);
}

// A second engine warm-starts from the bucket the first one filled (s3rver on
// loopback, SigV4-signed), with the first engine's output.
TEST_F(TieredKvTest, ObjectStoreTierWarmStartEqualsRecompute) {
  if (std::string missing = offload::testing::s3_server_missing(); !missing.empty()) {
    GTEST_SKIP() << missing;
  }
  StatusOr<std::unique_ptr<offload::testing::ChildProcess>> s3 =
      offload::testing::start_s3_server(root_ + "/s3", {"kv"});
  ASSERT_TRUE(s3.ok()) << s3.status().to_string();
  EngineConfig c = config(64, 512, false);
  offload::SecondaryTierConfig t;
  t.type = "obj";
  offload::ObjTierConfig& obj = t.emplace<offload::ObjTierConfig>();
  obj.bucket = "kv";
  obj.endpoint = (*s3)->endpoint();
  obj.access_key = offload::testing::kTestAccessKey;
  obj.secret_key = offload::testing::kTestSecretKey;
  obj.io_threads = 2;
  c.offload.secondary_tiers.push_back(t);
  EngineRequest r = greedy("long", random_prompt(150, 12), 12);
  const std::vector<int32_t> expected = recomputed(r);
  {
    Session first(*model_, c);
    EXPECT_EQ(first.run_one(r), expected);
    EXPECT_GT(tier(first.core->stats(), "obj").store_bytes, 0);
  }
  Session second(*model_, c);  // empty pool and host tier: only the bucket has it
  r.request_id = "again";
  EXPECT_EQ(second.run_one(r), expected);
  EXPECT_GE(tier(second.core->stats(), "obj").hit_tokens, 140);
}

int free_tcp_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// A peer tier listening on 127.0.0.1:port (HMAC-authenticated, two threads).
offload::SecondaryTierConfig p2p_tier(int port) {
  offload::SecondaryTierConfig t;
  t.type = "p2p";
  offload::P2pTierConfig& p2p = t.emplace<offload::P2pTierConfig>();
  p2p.host = "127.0.0.1";
  p2p.port = port;
  p2p.secret = "a-test-secret-of-enough-bytes";
  p2p.num_threads = 2;
  return t;
}

// Engine B loads a prefix engine A computed, over the peer tier (loopback TCP,
// HMAC-authenticated), and its output equals recomputation.
TEST_F(TieredKvTest, PeerTierLoadEqualsRecompute) {
  const int port_a = free_tcp_port(), port_b = free_tcp_port();
  auto peer_config = [&](int port, int peer_port) {
    EngineConfig c = config(64, 512, false);
    offload::SecondaryTierConfig t = p2p_tier(port);
    t.as<offload::P2pTierConfig>().peers = {"127.0.0.1:" + std::to_string(peer_port)};
    c.offload.secondary_tiers.push_back(t);
    return c;
  };
  EngineRequest r = greedy("long", random_prompt(150, 13), 12);
  const std::vector<int32_t> expected = recomputed(r);
  Session a(*model_, peer_config(port_a, port_b));
  Session b(*model_, peer_config(port_b, port_a));
  EXPECT_EQ(a.run_one(r), expected);
  r.request_id = "on-b";
  EXPECT_EQ(b.run_one(r), expected);
  EXPECT_GE(tier(b.core->stats(), "p2p").hit_tokens, 140);
}

// P/D: a do_remote_decode prefill's final output carries what the connector
// returned when the request finished (vLLM's request_finished): the peer
// tier's advertised address. Other requests carry nothing.
TEST_F(TieredKvTest, RemoteDecodePrefillGetsTransferParamsFromTheConnector) {
  const int port = free_tcp_port();
  EngineConfig c = config(64, 512, false);
  offload::SecondaryTierConfig t = p2p_tier(port);
  t.as<offload::P2pTierConfig>().advertise_host = "10.0.0.7";
  c.offload.secondary_tiers.push_back(t);
  Session s(*model_, c);
  EngineRequest prefill = greedy("prefill", random_prompt(20, 14), 1);
  prefill.kv_transfer.do_remote_decode = true;
  ASSERT_TRUE(s.core->add_request(prefill).ok());
  ASSERT_TRUE(s.core->add_request(greedy("plain", random_prompt(20, 15), 2)).ok());
  std::map<std::string, RequestOutput> last;
  while (s.core->has_unfinished_requests()) {
    for (RequestOutput& o : s.core->step()) {
      const bool expect_params = o.request_id == "prefill" && o.finished;
      EXPECT_EQ(o.kv_transfer_params.has_value(), expect_params) << o.request_id;
      last[o.request_id] = std::move(o);
    }
  }
  ASSERT_TRUE(last["prefill"].kv_transfer_params.has_value());
  const KvTransferParams& p = *last["prefill"].kv_transfer_params;
  EXPECT_TRUE(p.do_remote_prefill);
  EXPECT_FALSE(p.do_remote_decode);
  EXPECT_EQ(p.remote_host, "10.0.0.7");
  EXPECT_EQ(p.remote_port, port);
  EXPECT_EQ(last["prefill"].finish_reason, FinishReason::kLength);
  EXPECT_FALSE(last["plain"].kv_transfer_params.has_value());
}

TEST_F(TieredKvTest, UnusableDirectoryFailsAtStartup) {
  const std::string file = root_ + "/not-a-dir";
  std::ofstream(file) << "x";
  EngineConfig c = config(64, 512, true);
  c.offload.secondary_tiers[0].as<offload::FsTierConfig>().root_dir = file + "/kv";
  ThreadPool pool(1);
  StatusOr<std::unique_ptr<EngineCore>> core = EngineCore::create(*model_, c, pool);
  ASSERT_FALSE(core.ok());
  EXPECT_NE(core.status().message().find("not-a-dir"), std::string::npos)
      << core.status().message();
}

}  // namespace
}  // namespace strata::engine
