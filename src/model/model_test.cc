// Model::load: the head and the layers are prepared on several threads; what
// comes out (errors, progress) must not depend on which thread finished
// first. Run under ThreadSanitizer too (label "concurrency").
#include "model/model.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "model/loader/model_files.h"
#include "model/loader/test_files.h"

namespace strata::model {
namespace {

using testing::has_error;
using testing::StTensor;
using testing::TempDir;
using testing::TinyShape;

constexpr char kArch[] = "Qwen2ForCausalLM";

TinyShape eight_layers() {
  TinyShape s;
  s.layers = 8;
  return s;
}

// Writes a tiny HF checkpoint, with `edit` applied to its tensors first.
template <typename Edit>
std::string write_checkpoint(const TempDir& dir, const TinyShape& s, Edit edit) {
  std::vector<StTensor> tensors = testing::tiny_hf_tensors(kArch, s);
  edit(tensors);
  testing::write_file(dir.file("config.json"), testing::tiny_hf_config(kArch, s).dump());
  testing::write_file(dir.file("model.safetensors"), testing::build_safetensors(tensors));
  return dir.path();
}

// Gives tensor `name` one row fewer (the loader's shape check fails on it).
void cut_a_row(std::vector<StTensor>& tensors, const std::string& name) {
  for (StTensor& t : tensors) {
    if (t.name != name) continue;
    const size_t row_bytes = t.bytes.size() / static_cast<size_t>(t.shape[0]);
    t.shape[0] -= 1;
    t.bytes.resize(t.bytes.size() - row_bytes);
    return;
  }
  FAIL() << "no tensor " << name;
}

StatusOr<std::unique_ptr<Model>> load(const std::string& path,
                                      const Model::LoadProgress& progress = {}) {
  StatusOr<ModelFiles> files = open_model(path);
  if (!files.ok()) return files.status();
  return Model::load(std::move(*files), progress);
}

TEST(ModelLoad, ProgressCountsEveryLayerUpInOrder) {
  TempDir dir;
  const std::string path = write_checkpoint(dir, eight_layers(), [](auto&) {});
  std::vector<std::pair<int64_t, int64_t>> calls;
  StatusOr<std::unique_ptr<Model>> m =
      load(path, [&](int64_t done, int64_t total) { calls.emplace_back(done, total); });
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  std::vector<std::pair<int64_t, int64_t>> expected;
  for (int64_t i = 1; i <= 8; ++i) expected.emplace_back(i, 8);
  EXPECT_EQ(calls, expected);
  EXPECT_EQ((*m)->config().num_hidden_layers, 8);
}

TEST(ModelLoad, ErrorNamesTheFirstBrokenLayerWhateverFinishesFirst) {
  TempDir dir;
  const std::string path = write_checkpoint(dir, eight_layers(), [](std::vector<StTensor>& t) {
    cut_a_row(t, "model.layers.2.mlp.down_proj.weight");     // its last weight
    cut_a_row(t, "model.layers.3.self_attn.q_proj.weight");  // its first
  });
  // The same error on every load, though layer 3 usually fails before layer 2
  // does (a thread that takes it stops at its first weight).
  for (int round = 0; round < 5; ++round) {
    StatusOr<std::unique_ptr<Model>> m = load(path);
    ASSERT_FALSE(m.ok());
    EXPECT_TRUE(has_error(m.status(), StatusCode::kInvalidArgument,
                          {path, "'model.layers.2.mlp.down_proj.weight'"}))
        << m.status().to_string();
  }
}

TEST(ModelLoad, HeadErrorComesBeforeLayerErrors) {
  TempDir dir;
  const std::string path = write_checkpoint(dir, eight_layers(), [](std::vector<StTensor>& t) {
    cut_a_row(t, "model.layers.0.self_attn.q_proj.weight");
    cut_a_row(t, "lm_head.weight");
  });
  StatusOr<std::unique_ptr<Model>> m = load(path);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(has_error(m.status(), StatusCode::kInvalidArgument, {"'lm_head.weight'"}))
      << m.status().to_string();
}

// Q8_0 weights are repacked into panels at load on AVX512-VNNI hosts: the
// layers' packing runs concurrently with the tied head's (a race here is
// ThreadSanitizer's to find). Every layer and the head must be there.
TEST(ModelLoad, Q8GgufLoadsOnSeveralThreads) {
  TempDir dir;
  const std::string path = dir.file("tiny-q8_0.gguf");
  TinyShape s = eight_layers();
  testing::write_file(path,
                      testing::tiny_gguf("qwen2", kGgmlTypeQ8_0, /*with_output=*/false, s).build());
  StatusOr<std::unique_ptr<Model>> m = load(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const int64_t q8_row = s.hidden / 32 * 34;
  const int64_t kv = s.kv_heads * s.head_dim, q = s.heads * s.head_dim;
  const int64_t per_layer = (q + 2 * kv) * q8_row + s.hidden * (q / 32 * 34) +
                            2 * s.intermediate * q8_row + s.hidden * (s.intermediate / 32 * 34);
  EXPECT_EQ((*m)->decode_weight_bytes(), 8 * per_layer + s.vocab * q8_row + q8_row);
}

}  // namespace
}  // namespace strata::model
