#include "bench_serve/datasets.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

namespace strata::bench {
namespace {

const PromptSource kIds(false, TokenRange{100, 4000}, 1.0);

TEST(DatasetsTest, RandomHasExactLengthsAndIdsInRange) {
  RandomDatasetConfig c;
  c.num_prompts = 20;
  c.input_len = 64;
  c.output_len = 16;
  const std::vector<DatasetPrompt> d = make_random_dataset(c, kIds);
  ASSERT_EQ(d.size(), 20u);
  for (const DatasetPrompt& p : d) {
    EXPECT_EQ(p.prompt.token_ids.size(), 64u);
    EXPECT_EQ(p.prompt.num_tokens, 64);
    EXPECT_EQ(p.output_len, 16);
    EXPECT_TRUE(p.prompt.text.empty());
    for (int32_t id : p.prompt.token_ids) {
      EXPECT_GE(id, 100);
      EXPECT_LT(id, 4000);
    }
  }
  EXPECT_NE(d[0].prompt.token_ids, d[1].prompt.token_ids);
}

TEST(DatasetsTest, DeterministicBySeed) {
  RandomDatasetConfig c;
  c.num_prompts = 5;
  c.input_len = 32;
  c.range_ratio = 0.5;
  c.seed = 42;
  const auto a = make_random_dataset(c, kIds), b = make_random_dataset(c, kIds);
  c.seed = 43;
  const auto other = make_random_dataset(c, kIds);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt.token_ids, b[i].prompt.token_ids);
    EXPECT_EQ(a[i].output_len, b[i].output_len);
  }
  EXPECT_NE(a[0].prompt.token_ids, other[0].prompt.token_ids);
}

TEST(DatasetsTest, RangeRatioAndSharedPrefix) {
  RandomDatasetConfig c;
  c.num_prompts = 200;
  c.input_len = 100;
  c.output_len = 10;
  c.range_ratio = 0.5;
  c.prefix_len = 8;
  const auto d = make_random_dataset(c, kIds);
  std::set<size_t> lengths;
  for (const DatasetPrompt& p : d) {
    const size_t n = p.prompt.token_ids.size();
    EXPECT_GE(n, 8u + 50u);
    EXPECT_LE(n, 8u + 150u);
    EXPECT_GE(p.output_len, 5);
    EXPECT_LE(p.output_len, 15);
    lengths.insert(n);
    EXPECT_TRUE(std::equal(d[0].prompt.token_ids.begin(), d[0].prompt.token_ids.begin() + 8,
                           p.prompt.token_ids.begin()));
  }
  EXPECT_GT(lengths.size(), 20u);  // lengths really vary
}

TEST(DatasetsTest, PrefixRepetitionSharesPrefixes) {
  PrefixRepetitionConfig c;
  c.num_prompts = 12;
  c.prefix_len = 16;
  c.suffix_len = 8;
  c.num_prefixes = 3;
  c.output_len = 4;
  const auto d = make_prefix_repetition_dataset(c, kIds);
  ASSERT_EQ(d.size(), 12u);
  std::map<std::vector<int32_t>, int> per_prefix;
  for (const DatasetPrompt& p : d) {
    ASSERT_EQ(p.prompt.token_ids.size(), 24u);
    per_prefix[std::vector<int32_t>(p.prompt.token_ids.begin(), p.prompt.token_ids.begin() + 16)]++;
  }
  ASSERT_EQ(per_prefix.size(), 3u);
  for (const auto& [prefix, n] : per_prefix) EXPECT_EQ(n, 4);
}

TEST(DatasetsTest, MultiTurnShape) {
  MultiTurnConfig c;
  c.num_conversations = 4;
  c.first_turn_len = 50;
  c.num_rounds = 3;
  c.round_len = 10;
  c.output_len = 7;
  c.shared_prefix_len = 5;
  const auto convs = make_multi_turn_dataset(c, kIds);
  ASSERT_EQ(convs.size(), 4u);
  for (const Conversation& conv : convs) {
    ASSERT_EQ(conv.user_turns.size(), 4u);
    EXPECT_EQ(conv.user_turns[0].token_ids.size(), 55u);
    for (size_t t = 1; t < 4; ++t) EXPECT_EQ(conv.user_turns[t].token_ids.size(), 10u);
    EXPECT_EQ(conv.output_lens, (std::vector<int64_t>{7, 7, 7, 7}));
    EXPECT_TRUE(std::equal(convs[0].user_turns[0].token_ids.begin(),
                           convs[0].user_turns[0].token_ids.begin() + 5,
                           conv.user_turns[0].token_ids.begin()));
  }
  EXPECT_NE(convs[0].user_turns[0].token_ids, convs[1].user_turns[0].token_ids);
}

TEST(DatasetsTest, TextPromptsUseCalibratedWordCounts) {
  const PromptSource text(true, TokenRange{}, 1.25);  // 1.25 tokens per word
  std::mt19937_64 rng(1);
  const PromptText p = text.make(100, rng);
  EXPECT_TRUE(p.token_ids.empty());
  EXPECT_EQ(p.num_tokens, 100);
  std::istringstream words(p.text);
  int n = 0;
  for (std::string w; words >> w;) ++n;
  EXPECT_EQ(n, 80);
  PromptText joined = p;
  joined.append(text.make(10, rng));
  EXPECT_EQ(joined.num_tokens, 110);
  EXPECT_EQ(joined.text.substr(0, p.text.size() + 1), p.text + " ");
}

}  // namespace
}  // namespace strata::bench
