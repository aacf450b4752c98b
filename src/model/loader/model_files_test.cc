#include "model/loader/model_files.h"

#include <gtest/gtest.h>

#include "model/loader/test_files.h"

namespace strata::model {
namespace {

using nlohmann::json;
using testing::has_error;
using testing::StTensor;

void write_hf_dir(const testing::TempDir& dir, const std::string& arch) {
  testing::write_file(dir.file("config.json"), testing::tiny_hf_config(arch).dump());
  testing::write_file(dir.file("model.safetensors"),
                      testing::build_safetensors(testing::tiny_hf_tensors(arch)));
}

TEST(OpenModel, HuggingFaceDirectory) {
  testing::TempDir dir;
  write_hf_dir(dir, "Qwen3ForCausalLM");
  testing::write_file(dir.file("tokenizer.json"), "{}");
  testing::write_file(dir.file("generation_config.json"), R"({"temperature": 0.7})");
  StatusOr<ModelFiles> m = open_model(dir.path() + "/");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->format, ModelFiles::Format::kHuggingFace);
  EXPECT_EQ(m->path, dir.path());
  EXPECT_EQ(m->config.arch, Architecture::kQwen3);
  EXPECT_TRUE(m->generation.present);
  EXPECT_DOUBLE_EQ(m->generation.temperature, 0.7);
  EXPECT_EQ(m->tokenizer_json_path, dir.file("tokenizer.json"));
  EXPECT_EQ(m->tokenizer_config_path, "");
  EXPECT_EQ(m->gguf, nullptr);
  EXPECT_TRUE(m->weights.get("model.layers.1.self_attn.q_norm.weight", {16}).ok());
  EXPECT_TRUE(m->weights.get("model.embed_tokens.weight", {32, 64}).ok());
}

TEST(OpenModel, ShardedDirectory) {
  testing::TempDir dir;
  const std::string arch = "Qwen2ForCausalLM";
  testing::write_file(dir.file("config.json"), testing::tiny_hf_config(arch).dump());
  std::vector<StTensor> tensors = testing::tiny_hf_tensors(arch);
  std::vector<StTensor> first(tensors.begin(), tensors.begin() + 5);
  std::vector<StTensor> second(tensors.begin() + 5, tensors.end());
  testing::write_file(dir.file("model-1.safetensors"), testing::build_safetensors(first));
  testing::write_file(dir.file("model-2.safetensors"), testing::build_safetensors(second));
  json map = json::object();
  for (const StTensor& t : first) map[t.name] = "model-1.safetensors";
  for (const StTensor& t : second) map[t.name] = "model-2.safetensors";
  testing::write_file(dir.file("model.safetensors.index.json"), json({{"weight_map", map}}).dump());
  StatusOr<ModelFiles> m = open_model(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->weights.num_tensors(), tensors.size());
  EXPECT_TRUE(m->config.attention_bias);
  EXPECT_FALSE(m->generation.present);
  EXPECT_TRUE(m->weights.get("model.layers.1.self_attn.v_proj.bias", {32}).ok());
}

TEST(OpenModel, GgufFile) {
  testing::TempDir dir;
  const std::string path = dir.file("tiny-q8_0.gguf");
  testing::write_file(path, testing::tiny_gguf("llama", kGgmlTypeQ8_0).build());
  StatusOr<ModelFiles> m = open_model(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->format, ModelFiles::Format::kGguf);
  EXPECT_EQ(m->config.rope_style, ops::RopeStyle::kInterleaved);
  ASSERT_NE(m->gguf, nullptr);
  EXPECT_EQ(*m->gguf->get_array_length("tokenizer.ggml.tokens"), 32u);
  StatusOr<tensor::TensorView> v = m->weights.get("model.layers.0.mlp.up_proj.weight", {96, 64});
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->dtype, tensor::DType::kQ8_0);
  EXPECT_TRUE(m->tokenizer_json_path.empty());
}

TEST(OpenModel, Errors) {
  testing::TempDir dir;
  EXPECT_TRUE(
      has_error(open_model(dir.file("nope")).status(), StatusCode::kNotFound, {dir.file("nope")}));
  EXPECT_TRUE(has_error(open_model(dir.path()).status(), StatusCode::kNotFound,
                        {dir.path(), "config.json"}));
  testing::write_file(dir.file("config.json"), testing::tiny_hf_config("LlamaForCausalLM").dump());
  EXPECT_TRUE(has_error(open_model(dir.path()).status(), StatusCode::kNotFound,
                        {dir.path(), "model.safetensors"}));
  testing::write_file(dir.file("config.json"), testing::tiny_hf_config("FalconForCausalLM").dump());
  EXPECT_TRUE(has_error(open_model(dir.path()).status(), StatusCode::kUnimplemented,
                        {dir.file("config.json"), "FalconForCausalLM"}));
  testing::write_file(dir.file("config.json"), "{");
  EXPECT_TRUE(has_error(open_model(dir.path()).status(), StatusCode::kInvalidArgument,
                        {dir.file("config.json"), "invalid JSON"}));
  testing::write_file(dir.file("weights.bin"), "x");
  EXPECT_TRUE(has_error(open_model(dir.file("weights.bin")).status(), StatusCode::kInvalidArgument,
                        {dir.file("weights.bin"), ".gguf"}));
  testing::write_file(dir.file("bad.gguf"), "GGUF");
  EXPECT_TRUE(has_error(open_model(dir.file("bad.gguf")).status(), StatusCode::kDataLoss,
                        {dir.file("bad.gguf")}));
}

TEST(OpenModel, MissingAndMisshapenTensorsReachTheCaller) {
  testing::TempDir dir;
  write_hf_dir(dir, "LlamaForCausalLM");
  StatusOr<ModelFiles> m = open_model(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE(has_error(m->weights.get("model.layers.2.mlp.up_proj.weight", {96, 64}).status(),
                        StatusCode::kNotFound,
                        {"'model.layers.2.mlp.up_proj.weight'", dir.file("model.safetensors")}));
  EXPECT_TRUE(has_error(m->weights.get("model.norm.weight", {65}).status(),
                        StatusCode::kInvalidArgument,
                        {dir.file("model.safetensors"), "'model.norm.weight'", "[64]", "[65]"}));
}

}  // namespace
}  // namespace strata::model
