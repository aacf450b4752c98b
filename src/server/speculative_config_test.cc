#include "server/speculative_config.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

using spec_decode::SpeculativeMethod;

std::string error_of(const std::string& json) {
  auto c = parse_speculative_config(json);
  EXPECT_FALSE(c.ok()) << json;
  return c.ok() ? "" : c.status().message();
}

TEST(SpeculativeConfigTest, NgramWithVllmDefaults) {
  auto c = parse_speculative_config(R"({"method":"ngram","num_speculative_tokens":3})");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->method, SpeculativeMethod::kNgram);
  EXPECT_EQ(c->num_speculative_tokens, 3);
  EXPECT_EQ(c->prompt_lookup_max, 5);
  EXPECT_EQ(c->prompt_lookup_min, 5);
  EXPECT_EQ(c->disable_by_batch_size, 0);
}

TEST(SpeculativeConfigTest, LookupBoundsAndTheirDefaults) {
  auto c = parse_speculative_config(
      R"({"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4,"prompt_lookup_min":2})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->prompt_lookup_max, 4);
  EXPECT_EQ(c->prompt_lookup_min, 2);
  // One bound given: the other equals it (vLLM).
  c = parse_speculative_config(R"({"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":3})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->prompt_lookup_min, 3);
  c = parse_speculative_config(R"({"method":"ngram","num_speculative_tokens":4,"prompt_lookup_min":2})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->prompt_lookup_max, 2);
}

TEST(SpeculativeConfigTest, LegacyNgramSpellings) {
  auto c = parse_speculative_config(R"({"model":"[ngram]","num_speculative_tokens":2})");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->method, SpeculativeMethod::kNgram);
  c = parse_speculative_config(R"({"method":"[ngram]","num_speculative_tokens":2,"model":null,
                                   "draft_tensor_parallel_size":1,"disable_by_batch_size":8})");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->disable_by_batch_size, 8);
}

TEST(SpeculativeConfigTest, ErrorsNameTheKey) {
  EXPECT_NE(error_of(R"({"method":"ngram"})").find("num_speculative_tokens is required"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"ngram","num_speculative_tokens":0})")
                .find("num_speculative_tokens must be an integer >= 1"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"ngram","num_speculative_tokens":2,"lookahead":3})")
                .find("unknown key lookahead"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"ngram","num_speculative_tokens":2,"prompt_lookup_max":2,
                         "prompt_lookup_min":3})")
                .find("prompt_lookup_min (3) must be <= prompt_lookup_max (2)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"ngram","num_speculative_tokens":2,"model":"/m/draft"})")
                .find("model must not be set with method \"ngram\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"ngram","num_speculative_tokens":2,"draft_tensor_parallel_size":2})")
                .find("draft_tensor_parallel_size must be 1"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"num_speculative_tokens":2})").find("method is required"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"ngram","num_speculative_tokens":"2"})")
                .find("num_speculative_tokens"),
            std::string::npos);
  EXPECT_NE(error_of("[1]").find("expects a JSON object"), std::string::npos);
  EXPECT_EQ(error_of(R"({"method":"ngram"})").rfind("--speculative-config", 0), 0u);
}

TEST(SpeculativeConfigTest, DraftModelNeedsAModel) {
  auto c = parse_speculative_config(
      R"({"method":"draft_model","model":"/m/small","num_speculative_tokens":4,
          "draft_tensor_parallel_size":1})");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->method, SpeculativeMethod::kDraftModel);
  EXPECT_EQ(c->model, "/m/small");
  EXPECT_EQ(c->num_speculative_tokens, 4);
  // A model that is not "[ngram]" means a draft model (vLLM's inference).
  c = parse_speculative_config(R"({"model":"/m/small.gguf","num_speculative_tokens":2})");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->method, SpeculativeMethod::kDraftModel);
  EXPECT_EQ(c->model, "/m/small.gguf");
  EXPECT_NE(error_of(R"({"method":"draft_model","num_speculative_tokens":4})")
                .find("model is required with method \"draft_model\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"draft_model","model":null,"num_speculative_tokens":4})")
                .find("model is required"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"draft_model","model":"[ngram]","num_speculative_tokens":4})")
                .find("model is required"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"draft_model","model":"/m/small"})")
                .find("num_speculative_tokens is required"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"draft_model","model":"/m/small","num_speculative_tokens":4,
                         "prompt_lookup_max":3})")
                .find("prompt_lookup_max applies to method \"ngram\" only"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"draft_model","model":"/m/small","num_speculative_tokens":4,
                         "draft_tensor_parallel_size":2})")
                .find("draft_tensor_parallel_size must be 1"),
            std::string::npos);
}

TEST(SpeculativeConfigTest, RefusedMethodsSayWhy) {
  EXPECT_NE(error_of(R"({"method":"eagle3","model":"/m/head","num_speculative_tokens":4})")
                .find("EAGLE draft head"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"medusa","num_speculative_tokens":4})").find("not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::server
