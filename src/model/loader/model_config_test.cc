#include "model/model_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/loader/test_files.h"

namespace strata::model {
namespace {

using nlohmann::json;
using testing::has_error;
using testing::tiny_hf_config;

const char* kPath = "/models/x/config.json";

StatusOr<ModelConfig> parse(const json& j) { return parse_hf_config(j.dump(), kPath); }

json llama31_8b() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
    "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
    "max_position_embeddings": 131072, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": false, "vocab_size": 128256,
    "attention_bias": false, "mlp_bias": false, "torch_dtype": "bfloat16"})");
}

TEST(HfConfig, Llama31) {
  StatusOr<ModelConfig> c = parse(llama31_8b());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Architecture::kLlama);
  EXPECT_EQ(c->vocab_size, 128256);
  EXPECT_EQ(c->hidden_size, 4096);
  EXPECT_EQ(c->intermediate_size, 14336);
  EXPECT_EQ(c->num_hidden_layers, 32);
  EXPECT_EQ(c->num_attention_heads, 32);
  EXPECT_EQ(c->num_key_value_heads, 8);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->max_position_embeddings, 131072);
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c->rope_theta, 500000.0);
  EXPECT_EQ(c->rope_scaling.type, "llama3");
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 8.0);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c->rope_style, ops::RopeStyle::kNeox);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_EQ(c->sliding_window, 0);
  EXPECT_EQ(c->bos_token_id, 128000);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_STREQ(architecture_name(c->arch), "LlamaForCausalLM");
}

TEST(HfConfig, LlamaDefaults) {
  json j = tiny_hf_config("LlamaForCausalLM");
  for (const char* key : {"num_key_value_heads", "max_position_embeddings", "rms_norm_eps",
                          "rope_theta", "bos_token_id", "eos_token_id", "hidden_act"}) {
    j.erase(key);
  }
  j["rope_scaling"] = nullptr;
  StatusOr<ModelConfig> c = parse(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->num_key_value_heads, c->num_attention_heads);
  EXPECT_EQ(c->max_position_embeddings, 2048);
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c->rope_theta, 10000.0);
  EXPECT_EQ(c->rope_scaling.type, "");
  EXPECT_EQ(c->bos_token_id, 1);
  EXPECT_EQ(c->eos_token_ids, std::vector<int64_t>{2});
  EXPECT_FALSE(c->tie_word_embeddings);
}

TEST(HfConfig, Qwen2) {
  json j = tiny_hf_config("Qwen2ForCausalLM");
  j["tie_word_embeddings"] = true;
  j["use_sliding_window"] = false;
  j["sliding_window"] = 32768;
  j["max_window_layers"] = 21;
  j["eos_token_id"] = 151645;
  StatusOr<ModelConfig> c = parse(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Architecture::kQwen2);
  EXPECT_TRUE(c->attention_bias);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->sliding_window, 0);
  EXPECT_EQ(c->eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_EQ(c->head_dim, 16);
}

TEST(HfConfig, Qwen3HeadDimDiffersFromHiddenOverHeads) {
  json j = tiny_hf_config("Qwen3ForCausalLM");
  j["head_dim"] = 32;  // hidden 64 / 4 heads would be 16
  j["attention_bias"] = false;
  StatusOr<ModelConfig> c = parse(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Architecture::kQwen3);
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->attention_bias);
  j.erase("head_dim");
  EXPECT_EQ(parse(j)->head_dim, 128);  // Qwen3Config's default
}

TEST(HfConfig, MistralSlidingWindow) {
  json j = tiny_hf_config("MistralForCausalLM");
  j["sliding_window"] = 4096;
  EXPECT_EQ(parse(j)->sliding_window, 4096);
  j["sliding_window"] = nullptr;
  EXPECT_EQ(parse(j)->sliding_window, 0);
  j.erase("sliding_window");
  EXPECT_EQ(parse(j)->sliding_window, 4096);  // MistralConfig's default
  EXPECT_EQ(parse(j)->arch, Architecture::kMistral);
}

TEST(HfConfig, MixtureOfExpertsFields) {
  json j = tiny_hf_config("Qwen3MoeForCausalLM");
  j["num_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  j["moe_intermediate_size"] = 48;
  j["norm_topk_prob"] = true;
  j["mlp_only_layers"] = {0};
  StatusOr<ModelConfig> c = parse(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Architecture::kQwen3Moe);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_EQ(c->moe.num_experts, 8);
  EXPECT_EQ(c->moe.num_experts_per_tok, 2);
  EXPECT_EQ(c->moe.moe_intermediate_size, 48);
  EXPECT_TRUE(c->moe.norm_topk_prob);
  EXPECT_FALSE(c->moe.is_sparse_layer(0));  // mlp_only_layers
  EXPECT_TRUE(c->moe.is_sparse_layer(1));
  j["decoder_sparse_step"] = 2;
  EXPECT_FALSE(parse(j)->moe.is_sparse_layer(2));  // (2 + 1) % 2 != 0
  EXPECT_TRUE(parse(j)->moe.is_sparse_layer(3));
  j["num_experts_per_tok"] = 9;
  EXPECT_TRUE(has_error(parse(j).status(), StatusCode::kInvalidArgument,
                        {kPath, "num_experts_per_tok 9", "num_experts = 8"}));

  json mixtral = tiny_hf_config("MixtralForCausalLM");
  mixtral["num_local_experts"] = 8;
  mixtral["num_experts_per_tok"] = 2;
  c = parse(mixtral);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->moe.moe_intermediate_size, c->intermediate_size);  // experts are intermediate wide
  EXPECT_EQ(c->sliding_window, 0);  // MixtralConfig's default: none
  EXPECT_TRUE(c->moe.is_sparse_layer(0));
  mixtral.erase("num_local_experts");
  EXPECT_TRUE(has_error(parse(mixtral).status(), StatusCode::kInvalidArgument,
                        {kPath, "'num_local_experts'", "missing"}));

  json qwen2 = tiny_hf_config("Qwen2MoeForCausalLM");
  qwen2["num_experts"] = 4;
  qwen2["num_experts_per_tok"] = 4;
  qwen2["moe_intermediate_size"] = 16;
  qwen2["shared_expert_intermediate_size"] = 96;
  c = parse(qwen2);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c->attention_bias);
  EXPECT_EQ(c->moe.shared_expert_intermediate_size, 96);
  EXPECT_FALSE(c->moe.norm_topk_prob);
}

TEST(HfConfig, ModelTypeWhenNoArchitectures) {
  json j = tiny_hf_config("Qwen2ForCausalLM");
  j.erase("architectures");
  j["model_type"] = "qwen2";
  EXPECT_EQ(parse(j)->arch, Architecture::kQwen2);
}

TEST(HfConfig, UnknownArchitectureListsSupported) {
  json j = tiny_hf_config("GPT2LMHeadModel");
  EXPECT_TRUE(has_error(parse(j).status(), StatusCode::kUnimplemented,
                        {kPath, "GPT2LMHeadModel", "LlamaForCausalLM", "Qwen2ForCausalLM",
                         "Qwen3ForCausalLM", "MistralForCausalLM", "Qwen3MoeForCausalLM",
                         "Qwen2MoeForCausalLM", "MixtralForCausalLM"}));
}

TEST(HfConfig, MissingAndMistypedFields) {
  json j = tiny_hf_config("LlamaForCausalLM");
  j.erase("hidden_size");
  EXPECT_TRUE(has_error(parse(j).status(), StatusCode::kInvalidArgument,
                        {kPath, "'hidden_size'", "integer", "missing"}));
  j = tiny_hf_config("LlamaForCausalLM");
  j["num_attention_heads"] = "32";
  EXPECT_TRUE(has_error(parse(j).status(), StatusCode::kInvalidArgument,
                        {kPath, "'num_attention_heads'", "integer", "string"}));
  j = tiny_hf_config("LlamaForCausalLM");
  j["rms_norm_eps"] = true;
  EXPECT_TRUE(has_error(parse(j).status(), StatusCode::kInvalidArgument,
                        {kPath, "'rms_norm_eps'", "number"}));
  j = tiny_hf_config("LlamaForCausalLM");
  j["eos_token_id"] = {1, "x"};
  EXPECT_TRUE(
      has_error(parse(j).status(), StatusCode::kInvalidArgument, {kPath, "'eos_token_id'"}));
  j = llama31_8b();
  j["rope_scaling"].erase("low_freq_factor");
  EXPECT_TRUE(has_error(parse(j).status(), StatusCode::kInvalidArgument,
                        {kPath, "'rope_scaling.low_freq_factor'", "missing"}));
}

TEST(HfConfig, BadJson) {
  EXPECT_TRUE(has_error(parse_hf_config("{\"hidden_size\": 4", kPath).status(),
                        StatusCode::kInvalidArgument, {kPath, "invalid JSON"}));
  EXPECT_TRUE(has_error(parse_hf_config("[1, 2]", kPath).status(), StatusCode::kInvalidArgument,
                        {kPath, "object"}));
}

TEST(HfConfig, InconsistentShapes) {
  json j = tiny_hf_config("LlamaForCausalLM");
  j["num_key_value_heads"] = 3;  // 4 heads
  EXPECT_TRUE(has_error(parse(j).status(), StatusCode::kInvalidArgument,
                        {kPath, "num_attention_heads 4", "num_key_value_heads 3"}));
  j = tiny_hf_config("LlamaForCausalLM");
  j["num_attention_heads"] = 5;  // hidden 64
  j["num_key_value_heads"] = 5;
  EXPECT_TRUE(has_error(parse(j).status(), StatusCode::kInvalidArgument,
                        {kPath, "hidden_size 64", "num_attention_heads 5"}));
  j = tiny_hf_config("LlamaForCausalLM");
  j["num_hidden_layers"] = 0;
  EXPECT_TRUE(has_error(parse(j).status(), StatusCode::kInvalidArgument,
                        {kPath, "num_hidden_layers must be positive"}));
}

TEST(HfConfig, UnsupportedFeatures) {
  json j = tiny_hf_config("LlamaForCausalLM");
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
  EXPECT_TRUE(has_error(parse(j).status(), StatusCode::kUnimplemented, {kPath, "yarn"}));
  j = tiny_hf_config("LlamaForCausalLM");
  j["hidden_act"] = "gelu";
  EXPECT_TRUE(has_error(parse(j).status(), StatusCode::kUnimplemented, {kPath, "gelu"}));
  j = tiny_hf_config("Qwen2ForCausalLM");
  j["use_sliding_window"] = true;
  EXPECT_TRUE(
      has_error(parse(j).status(), StatusCode::kUnimplemented, {kPath, "use_sliding_window"}));
  j = tiny_hf_config("LlamaForCausalLM");
  j["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_TRUE(parse(j).ok());
}

// Independent double-precision reference for the default frequencies.
double reference_inv_freq(double theta, int64_t head_dim, int64_t i) {
  return 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
}

TEST(RopeInvFreq, Default) {
  ModelConfig c;
  c.head_dim = 128;
  c.rope_theta = 10000.0;
  std::vector<float> f = c.rope_inv_freq();
  ASSERT_EQ(f.size(), 64u);
  EXPECT_EQ(f[0], 1.0f);
  for (int64_t i = 0; i < 64; ++i) {
    EXPECT_NEAR(f[i], reference_inv_freq(1e4, 128, i), 2e-7 * reference_inv_freq(1e4, 128, i)) << i;
  }
}

TEST(RopeInvFreq, Llama3Bands) {
  StatusOr<ModelConfig> c = parse(llama31_8b());
  ASSERT_TRUE(c.ok());
  std::vector<float> scaled = c->rope_inv_freq();
  ModelConfig plain = *c;
  plain.rope_scaling = RopeScaling();
  std::vector<float> base = plain.rope_inv_freq();
  ASSERT_EQ(scaled.size(), 64u);
  // wavelen 2*pi/f < 2048 (i <= 28): unchanged; > 8192 (i >= 35): divided by 8.
  for (int i = 0; i <= 28; ++i) EXPECT_EQ(scaled[i], base[i]) << i;
  for (int i = 35; i < 64; ++i) EXPECT_EQ(scaled[i], base[i] / 8.0f) << i;
  for (int i = 29; i <= 34; ++i) {
    double wavelen = 2 * M_PI / base[i];
    double smooth = (8192.0 / wavelen - 1.0) / 3.0;
    double expected = (1 - smooth) * base[i] / 8.0 + smooth * base[i];
    EXPECT_NEAR(scaled[i], expected, 1e-6 * expected) << i;
    EXPECT_LT(scaled[i], base[i]);
    EXPECT_GT(scaled[i], base[i] / 8.0f);
  }
}

TEST(RopeInvFreq, FreqFactorsDivide) {
  ModelConfig c;
  c.head_dim = 8;
  c.rope_theta = 10000.0;
  std::vector<float> base = c.rope_inv_freq();
  c.rope_freq_factors = {1.0f, 2.0f, 4.0f, 8.0f};
  std::vector<float> scaled = c.rope_inv_freq();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(scaled[i], base[i] / c.rope_freq_factors[i]);
}

TEST(GenerationConfig, ParsesAndDefaults) {
  const char* path = "/m/generation_config.json";
  StatusOr<GenerationConfig> g = parse_generation_config(
      R"({"bos_token_id": 128000, "do_sample": true, "eos_token_id": [128001, 128009],
          "temperature": 0.6, "top_p": 0.9, "transformers_version": "4.45.0"})",
      path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(g->present);
  EXPECT_DOUBLE_EQ(g->temperature, 0.6);
  EXPECT_DOUBLE_EQ(g->top_p, 0.9);
  EXPECT_EQ(g->top_k, 0);
  EXPECT_DOUBLE_EQ(g->repetition_penalty, 1.0);
  EXPECT_EQ(g->bos_token_id, 128000);
  EXPECT_EQ(g->eos_token_ids, (std::vector<int64_t>{128001, 128009}));
  g = parse_generation_config(R"({"top_k": 20, "repetition_penalty": 1.05, "eos_token_id": 7})",
                              path);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->top_k, 20);
  EXPECT_EQ(g->eos_token_ids, std::vector<int64_t>{7});
  EXPECT_TRUE(has_error(parse_generation_config(R"({"top_k": "a"})", path).status(),
                        StatusCode::kInvalidArgument, {path, "'top_k'"}));
  EXPECT_TRUE(has_error(parse_generation_config("nope", path).status(),
                        StatusCode::kInvalidArgument, {path, "invalid JSON"}));
}

}  // namespace
}  // namespace strata::model
