#include "model/loader/gguf_mapping.h"

#include <gtest/gtest.h>

#include "model/loader/test_files.h"

namespace strata::model {
namespace {

using T = GgufValueType;
using testing::GgufWriter;
using testing::has_error;

StatusOr<GgufFile> write_and_open(const testing::TempDir& dir, const GgufWriter& w) {
  const std::string path = dir.file("m.gguf");
  testing::write_file(path, w.build());
  return GgufFile::open(path);
}

TEST(GgufNames, MapToHuggingFaceNames) {
  const std::pair<const char*, const char*> cases[] = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
      {"blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight"},
      {"blk.12.attn_q.weight", "model.layers.12.self_attn.q_proj.weight"},
      {"blk.1.attn_k.bias", "model.layers.1.self_attn.k_proj.bias"},
      {"blk.1.attn_v.weight", "model.layers.1.self_attn.v_proj.weight"},
      {"blk.3.attn_output.weight", "model.layers.3.self_attn.o_proj.weight"},
      {"blk.3.attn_q_norm.weight", "model.layers.3.self_attn.q_norm.weight"},
      {"blk.3.attn_k_norm.weight", "model.layers.3.self_attn.k_norm.weight"},
      {"blk.7.ffn_norm.weight", "model.layers.7.post_attention_layernorm.weight"},
      {"blk.7.ffn_gate.weight", "model.layers.7.mlp.gate_proj.weight"},
      {"blk.7.ffn_up.weight", "model.layers.7.mlp.up_proj.weight"},
      {"blk.7.ffn_down.weight", "model.layers.7.mlp.down_proj.weight"},
  };
  for (const auto& [gguf, hf] : cases) {
    std::optional<std::string> mapped = gguf_to_hf_name(gguf);
    ASSERT_TRUE(mapped.has_value()) << gguf;
    EXPECT_EQ(*mapped, hf) << gguf;
  }
  for (const char* unknown : {"rope_freqs.weight", "blk.x.attn_q.weight", "blk..attn_q.weight",
                              "blk.0.attn_q", "blk.0.ffn_gate_exps.weight", "output.scale"}) {
    EXPECT_FALSE(gguf_to_hf_name(unknown).has_value()) << unknown;
  }
}

TEST(GgufConfig, Llama) {
  testing::TempDir dir;
  StatusOr<GgufFile> f = write_and_open(dir, testing::tiny_gguf("llama"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  StatusOr<ModelConfig> c = gguf_model_config(*f);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Architecture::kLlama);
  EXPECT_EQ(c->rope_style, ops::RopeStyle::kInterleaved);
  EXPECT_EQ(c->vocab_size, 32);
  EXPECT_EQ(c->hidden_size, 64);
  EXPECT_EQ(c->intermediate_size, 96);
  EXPECT_EQ(c->num_hidden_layers, 2);
  EXPECT_EQ(c->num_attention_heads, 4);
  EXPECT_EQ(c->num_key_value_heads, 2);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->max_position_embeddings, 128);
  EXPECT_FLOAT_EQ(static_cast<float>(c->rms_norm_eps), 1e-5f);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_EQ(c->bos_token_id, 1);
  EXPECT_EQ(c->eos_token_ids, std::vector<int64_t>{2});
  EXPECT_TRUE(c->rope_freq_factors.empty());
}

TEST(GgufConfig, Qwen2HasBiasesAndTiesWithoutOutput) {
  testing::TempDir dir;
  StatusOr<GgufFile> f = write_and_open(dir, testing::tiny_gguf("qwen2", kGgmlTypeQ8_0, false));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  StatusOr<ModelConfig> c = gguf_model_config(*f);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Architecture::kQwen2);
  EXPECT_EQ(c->rope_style, ops::RopeStyle::kNeox);
  EXPECT_TRUE(c->attention_bias);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_FALSE(c->qk_norm);
}

TEST(GgufConfig, Qwen3HeadDimFromKeyLength) {
  testing::TinyShape s;
  s.head_dim = 32;  // hidden 64 / 4 heads would be 16
  testing::TempDir dir;
  StatusOr<GgufFile> f = write_and_open(dir, testing::tiny_gguf("qwen3", kGgmlTypeBF16, true, s));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  StatusOr<ModelConfig> c = gguf_model_config(*f);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Architecture::kQwen3);
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_EQ(c->rope_style, ops::RopeStyle::kNeox);
}

TEST(GgufConfig, RopeFreqsAndEndOfTurnTokens) {
  GgufWriter w = testing::tiny_gguf("llama");
  w.add_scalar("tokenizer.ggml.eot_token_id", T::kUint32, uint32_t{5});
  w.add_scalar("tokenizer.ggml.eom_token_id", T::kUint32, uint32_t{2});  // same as eos
  std::vector<float> factors = {1, 1, 2, 4, 8, 8, 8, 8};                 // head_dim 16 / 2
  w.add_tensor("rope_freqs.weight", kGgmlTypeF32, {8}, testing::f32_bytes(factors));
  testing::TempDir dir;
  StatusOr<GgufFile> f = write_and_open(dir, w);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  StatusOr<ModelConfig> c = gguf_model_config(*f);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->rope_freq_factors, factors);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{2, 5}));
  ModelConfig plain = *c;
  plain.rope_freq_factors.clear();
  EXPECT_EQ(c->rope_inv_freq()[3], plain.rope_inv_freq()[3] / 4.0f);
}

TEST(GgufConfig, Errors) {
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  GgufWriter gpt2;
  gpt2.add_string("general.architecture", "gpt2");
  EXPECT_TRUE(has_error(gguf_model_config(*write_and_open(dir, gpt2)).status(),
                        StatusCode::kUnimplemented, {path, "'gpt2'", "llama, qwen2, qwen3"}));
  GgufWriter none;
  EXPECT_TRUE(has_error(gguf_model_config(*write_and_open(dir, none)).status(),
                        StatusCode::kNotFound, {path, "'general.architecture'"}));
  GgufWriter no_blocks;  // tiny llama minus block_count
  no_blocks.add_string("general.architecture", "llama");
  no_blocks.add_scalar("llama.context_length", T::kUint32, uint32_t{128});
  no_blocks.add_scalar("llama.embedding_length", T::kUint32, uint32_t{64});
  EXPECT_TRUE(has_error(gguf_model_config(*write_and_open(dir, no_blocks)).status(),
                        StatusCode::kNotFound, {path, "'llama.block_count'"}));
  testing::TinyShape s;
  s.kv_heads = 3;
  EXPECT_TRUE(has_error(
      gguf_model_config(*write_and_open(dir, testing::tiny_gguf("llama", 0, true, s))).status(),
      StatusCode::kInvalidArgument, {path, "num_key_value_heads 3"}));
  GgufWriter yarn = testing::tiny_gguf("qwen2");
  yarn.add_string("qwen2.rope.scaling.type", "yarn");
  EXPECT_TRUE(has_error(gguf_model_config(*write_and_open(dir, yarn)).status(),
                        StatusCode::kUnimplemented, {path, "yarn"}));
  GgufWriter bad_freqs = testing::tiny_gguf("llama");
  bad_freqs.add_tensor("rope_freqs.weight", kGgmlTypeF32, {3}, testing::f32_bytes({1, 1, 1}));
  EXPECT_TRUE(has_error(gguf_model_config(*write_and_open(dir, bad_freqs)).status(),
                        StatusCode::kInvalidArgument, {path, "'rope_freqs.weight'", "[3]"}));
}

TEST(GgufWeights, HuggingFaceNamesRowMajorShapes) {
  testing::TempDir dir;
  StatusOr<GgufFile> f = write_and_open(dir, testing::tiny_gguf("qwen3", kGgmlTypeQ8_0));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  StatusOr<WeightSource> w = gguf_weight_source(*f);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->num_tensors(), f->tensors().size());
  StatusOr<tensor::TensorView> q = w->get("model.layers.1.self_attn.q_proj.weight", {64, 64});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->dtype, tensor::DType::kQ8_0);
  EXPECT_EQ(q->data, f->find_tensor("blk.1.attn_q.weight")->view.data);  // shared mapping
  EXPECT_TRUE(w->get("model.layers.0.mlp.down_proj.weight", {64, 96}).ok());
  EXPECT_TRUE(w->get("model.layers.0.self_attn.k_norm.weight", {16}).ok());
  EXPECT_TRUE(w->get("model.embed_tokens.weight", {32, 64}).ok());
  EXPECT_TRUE(w->has("lm_head.weight"));
  EXPECT_TRUE(has_error(
      w->get("model.layers.0.mlp.down_proj.weight", {96, 64}).status(),
      StatusCode::kInvalidArgument,
      {dir.file("m.gguf"), "'model.layers.0.mlp.down_proj.weight'", "[64, 96]", "[96, 64]"}));
}

}  // namespace
}  // namespace strata::model
