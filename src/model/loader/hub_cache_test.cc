#include "model/loader/hub_cache.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "model/loader/test_files.h"

namespace strata::model {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_file;

// A cache laid out as huggingface_hub leaves it: blobs, a snapshot whose
// files link to them, and refs/main naming the snapshot.
std::string make_cached_repo(const std::string& root, const std::string& folder,
                             const std::string& commit, const std::string& file) {
  const fs::path repo = fs::path(root) / folder;
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "snapshots" / commit);
  fs::create_directories(repo / "refs");
  write_file((repo / "blobs" / "b1").string(), "{}");
  fs::create_symlink("../../blobs/b1", repo / "snapshots" / commit / file);
  write_file((repo / "refs" / "main").string(), commit);  // no newline, as HF writes it
  return (repo / "snapshots" / commit).string();
}

TEST(HubCache, RootFollowsTheHuggingFaceLibraries) {
  HubEnvironment env;
  env.home = "/home/u";
  EXPECT_EQ(hub_cache_root(env, ""), "/home/u/.cache/huggingface/hub");
  env.xdg_cache_home = "/xdg";
  EXPECT_EQ(hub_cache_root(env, ""), "/xdg/huggingface/hub");
  env.hf_home = "/hf";
  EXPECT_EQ(hub_cache_root(env, ""), "/hf/hub");
  env.hf_hub_cache = "/hubcache";
  EXPECT_EQ(hub_cache_root(env, ""), "/hubcache");
  EXPECT_EQ(hub_cache_root(env, "/downloads"), "/downloads");
}

TEST(HubCache, IdsAreOrgSlashNameOrName) {
  EXPECT_TRUE(is_hub_model_id("Qwen/Qwen2.5-0.5B-Instruct"));
  EXPECT_TRUE(is_hub_model_id("gpt2"));
  EXPECT_FALSE(is_hub_model_id("/abs/path"));
  EXPECT_FALSE(is_hub_model_id("a/b/c"));
  EXPECT_FALSE(is_hub_model_id("../x"));
  EXPECT_FALSE(is_hub_model_id("org/.."));
  EXPECT_FALSE(is_hub_model_id(""));
}

TEST(HubCache, ResolvesRefsMainToItsSnapshot) {
  TempDir dir;
  const std::string snapshot =
      make_cached_repo(dir.path(), "models--Org--Name", "abc123", "config.json");
  HubEnvironment env;
  env.hf_hub_cache = dir.path();
  StatusOr<std::string> got = resolve_model_location({.model = "Org/Name"}, env);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, snapshot);
  // HF_HOME/hub when HF_HUB_CACHE is unset, --download-dir over both.
  TempDir home;
  fs::create_directories(home.path() + "/hub");
  make_cached_repo(home.path() + "/hub", "models--Org--Name", "def", "config.json");
  env.hf_hub_cache.clear();
  env.hf_home = home.path();
  got = resolve_model_location({.model = "Org/Name"}, env);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, home.path() + "/hub/models--Org--Name/snapshots/def");
  got = resolve_model_location({.model = "Org/Name", .download_dir = dir.path()}, env);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, snapshot);
}

TEST(HubCache, RevisionIsARefOrACommit) {
  TempDir dir;
  make_cached_repo(dir.path(), "models--Org--Name", "c1", "config.json");
  const fs::path repo = fs::path(dir.path()) / "models--Org--Name";
  fs::create_directories(repo / "snapshots" / "c2");
  write_file((repo / "snapshots" / "c2" / "config.json").string(), "{}");
  write_file((repo / "refs" / "v2").string(), "c2\n");
  HubEnvironment env;
  env.hf_hub_cache = dir.path();
  StatusOr<std::string> by_ref = resolve_model_location({.model = "Org/Name", .revision = "v2"}, env);
  ASSERT_TRUE(by_ref.ok()) << by_ref.status().message();
  EXPECT_EQ(*by_ref, (repo / "snapshots" / "c2").string());
  StatusOr<std::string> by_commit =
      resolve_model_location({.model = "Org/Name", .revision = "c1"}, env);
  ASSERT_TRUE(by_commit.ok()) << by_commit.status().message();
  EXPECT_EQ(*by_commit, (repo / "snapshots" / "c1").string());
  StatusOr<std::string> missing =
      resolve_model_location({.model = "Org/Name", .revision = "v3"}, env);
  EXPECT_TRUE(testing::has_error(missing.status(), StatusCode::kNotFound,
                                 {"no ref or snapshot 'v3'", "refs: main, v2", "c1, c2"}));
}

TEST(HubCache, GgufInsideASnapshot) {
  TempDir dir;
  const std::string snapshot =
      make_cached_repo(dir.path(), "models--Org--Name-GGUF", "c1", "model-q8_0.gguf");
  HubEnvironment env;
  env.hf_hub_cache = dir.path();
  StatusOr<std::string> got = resolve_model_location({.model = "Org/Name-GGUF"}, env);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, snapshot + "/model-q8_0.gguf");
  write_file(snapshot + "/model-f16.gguf", "x");
  got = resolve_model_location({.model = "Org/Name-GGUF"}, env);
  EXPECT_TRUE(testing::has_error(got.status(), StatusCode::kInvalidArgument,
                                 {"2 .gguf files", "model-f16.gguf", "model-q8_0.gguf"}));
}

TEST(HubCache, AbsentModelNamesWhereItLookedAndThatNothingIsDownloaded) {
  TempDir dir;
  HubEnvironment env;
  env.hf_hub_cache = dir.path();
  StatusOr<std::string> got = resolve_model_location({.model = "Qwen/Qwen2.5-0.5B-Instruct"}, env);
  EXPECT_TRUE(testing::has_error(
      got.status(), StatusCode::kNotFound,
      {dir.path() + "/models--Qwen--Qwen2.5-0.5B-Instruct", "does not download"}));
  got = resolve_model_location({.model = "/no/such/dir"}, env);
  EXPECT_TRUE(testing::has_error(got.status(), StatusCode::kNotFound, {"/no/such/dir"}));
}

TEST(HubCache, AnExistingPathWins) {
  TempDir dir;
  HubEnvironment env;
  env.hf_hub_cache = "/nonexistent";
  StatusOr<std::string> got = resolve_model_location({.model = dir.path()}, env);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, dir.path());
}

}  // namespace
}  // namespace strata::model
