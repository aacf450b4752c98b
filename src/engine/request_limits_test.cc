#include "engine/request_limits.h"

#include <gtest/gtest.h>

#include "engine/engine_core.h"

namespace strata::engine {
namespace {

using Kind = PromptLimitBreach::Kind;

RequestLimits limits() {
  RequestLimits l;
  l.max_model_len = 64;
  l.vocab_size = 100;
  l.kv_capacity_tokens = 80;
  return l;
}

TEST(RequestLimits, OfTakesTheEngineConfiguration) {
  EngineConfig config;
  config.block_size = 16;
  config.scheduler.max_model_len = 512;
  config.scheduler.max_num_batched_tokens = 256;
  RequestLimits l = RequestLimits::of(config, 1000, 10);
  EXPECT_EQ(l.max_model_len, 512);
  EXPECT_EQ(l.vocab_size, 1000);
  EXPECT_EQ(l.kv_capacity_tokens, 160);
  EXPECT_EQ(l.max_prefill_tokens, 0);  // chunked prefill: any prompt fits in steps
  config.scheduler.enable_chunked_prefill = false;
  EXPECT_EQ(RequestLimits::of(config, 1000, 10).max_prefill_tokens, 256);
}

TEST(RequestLimits, PromptLengthNamesTheFirstLimitBroken) {
  RequestLimits l = limits();
  EXPECT_FALSE(check_prompt_length(l, 64));
  EXPECT_EQ(check_prompt_length(l, 0).kind, Kind::kEmpty);
  EXPECT_EQ(check_prompt_length(l, 65).kind, Kind::kModelLen);
  // The API wants room for one generated token.
  EXPECT_EQ(check_prompt_length(l, 64, 1).kind, Kind::kModelLen);
  EXPECT_FALSE(check_prompt_length(l, 63, 1));
  l.kv_capacity_tokens = 32;
  PromptLimitBreach kv = check_prompt_length(l, 32);
  EXPECT_EQ(kv.kind, Kind::kKvCache);
  EXPECT_EQ(kv.limit, 32);
  l.kv_capacity_tokens = 0;
  l.max_prefill_tokens = 16;
  EXPECT_EQ(check_prompt_length(l, 17).kind, Kind::kStepBudget);
}

TEST(RequestLimits, EngineWordsCarryNoFlagNames) {
  RequestLimits l = limits();
  EXPECT_EQ(check_prompt_length(l, 65).to_status().message(),
            "prompt has 65 tokens; the maximum model length is 64");
  l.kv_capacity_tokens = 32;
  EXPECT_EQ(check_prompt_length(l, 40).to_status().message(),
            "prompt has 40 tokens; the KV cache holds 32 tokens");
  EngineRequest r;
  r.prompt_token_ids = {1, 2, 100};
  r.stop.max_tokens = 4;
  EXPECT_EQ(validate_request(limits(), r).message(),
            "prompt token 2 is 100; the vocabulary has 100 tokens");
  r.prompt_token_ids = {1};
  r.stop.max_tokens = 0;
  EXPECT_EQ(validate_request(limits(), r).message(), "max_tokens must be at least 1, got 0");
  r.stop.max_tokens = 1;
  EXPECT_TRUE(validate_request(limits(), r).ok());
}

}  // namespace
}  // namespace strata::engine
