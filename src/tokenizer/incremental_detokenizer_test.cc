// Invariants of the incremental detokenizer on hand-made tokenizers: deltas
// are valid UTF-8 and their concatenation equals decode() of all ids.
#include "tokenizer/incremental_detokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "tokenizer/test_tokenizers.h"
#include "tokenizer/utf8.h"

namespace strata::tokenizer {
namespace {

Tokenizer load(const nlohmann::json& j) {
  auto t = Tokenizer::from_json(j.dump(), "test");
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(t).value();
}

Tokenizer sentencepiece() {
  return load(testing::sentencepiece_json(
      {"\xE2\x96\x81", "a", "b", "\xC3\xA9", "\xE4\xBD\xA0"},
      {{"\xE2\x96\x81", "a"}, {"\xE2\x96\x81", "\xE2\x96\x81"}, {"a", "b"}}));
}

Tokenizer byte_level() {
  return load(testing::byte_level_json({{"\xE4", "\xBD"}, {"\xE4\xBD", "\xA0"}, {" ", "a"}}));
}

// Streams ids and returns the concatenated deltas; fails on invalid deltas.
std::string stream(const Tokenizer& t, const std::vector<int32_t>& ids, bool skip) {
  IncrementalDetokenizer detok(t, {skip, true});
  std::string text;
  for (int32_t id : ids) {
    const std::string delta = detok.add(id);
    EXPECT_TRUE(is_valid_utf8(delta)) << "delta splits a UTF-8 character";
    text += delta;
  }
  return text + detok.finish();
}

void check_random_sequences(const Tokenizer& t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> any_id(0, static_cast<int32_t>(t.vocab_size()) - 1);
  std::uniform_int_distribution<int> length(1, 40);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int32_t> ids(length(rng));
    for (int32_t& id : ids) id = any_id(rng);
    for (const bool skip : {false, true}) {
      ASSERT_EQ(stream(t, ids, skip), t.decode(ids, skip)) << "trial " << trial;
    }
  }
}

TEST(IncrementalDetokenizer, SentencePieceRandomSequencesMatchDecode) {
  check_random_sequences(sentencepiece(), 1);
}

TEST(IncrementalDetokenizer, ByteLevelRandomSequencesMatchDecode) {
  check_random_sequences(byte_level(), 2);
}

TEST(IncrementalDetokenizer, HoldsBackIncompleteCharacters) {
  Tokenizer t = byte_level();
  IncrementalDetokenizer detok(t, {});
  const auto ids = t.encode("a\xF0\x9F\x98\x80", false);  // 'a' then 4 byte tokens of 😀
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(detok.add(ids[0]), "a");
  EXPECT_EQ(detok.add(ids[1]), "");
  EXPECT_EQ(detok.add(ids[2]), "");
  EXPECT_EQ(detok.add(ids[3]), "");
  EXPECT_EQ(detok.add(ids[4]), "\xF0\x9F\x98\x80");
  EXPECT_EQ(detok.finish(), "");
}

TEST(IncrementalDetokenizer, ByteFallbackRunIsHeldUntilItEnds) {
  Tokenizer t = sentencepiece();
  const int32_t e4 = 3 + 0xE4, bd = 3 + 0xBD, a0 = 3 + 0xA0, ff = 3 + 0xFF;
  const int32_t a = *t.token_to_id("a");
  IncrementalDetokenizer detok(t, {});
  std::string text;
  for (int32_t id : {a, e4, bd, a0}) text += detok.add(id);
  EXPECT_EQ(text, "a");  // "你" is complete but the run may still grow
  text += detok.add(ff);
  text += detok.add(a);
  EXPECT_EQ(text + detok.finish(), t.decode({a, e4, bd, a0, ff, a}, true));
}

TEST(IncrementalDetokenizer, LeadingSpaceOfFirstTokenIsStrippedLikeDecode) {
  Tokenizer t = sentencepiece();
  const auto ids = t.encode("a a", true);  // <s> ▁a ▁a
  EXPECT_EQ(stream(t, ids, true), "a a");
  EXPECT_EQ(stream(t, ids, false), "<s> a a");
}

TEST(IncrementalDetokenizer, SkippedSpecialTokenNeverBecomesTheFirstToken) {
  Tokenizer t = sentencepiece();
  const int32_t sa = *t.token_to_id(
      "\xE2\x96\x81"
      "a");
  const std::vector<int32_t> ids = {sa, 2, sa, 1, 2, sa};
  EXPECT_EQ(stream(t, ids, true), t.decode(ids, true));
  EXPECT_EQ(stream(t, ids, true), "a a a");
}

TEST(IncrementalDetokenizer, ContextKeepsTheLeadingSpaceOfTheFirstGeneratedToken) {
  Tokenizer t = sentencepiece();
  const auto prompt = t.encode("ab", true);
  IncrementalDetokenizer detok(t, {}, prompt);
  EXPECT_EQ(detok.add(*t.token_to_id("\xE2\x96\x81"
                                     "a")),
            " a");
  EXPECT_EQ(detok.num_ids(), 1u);
}

TEST(IncrementalDetokenizer, SpacesBetweenSpecialTokensGivesSameTextAsDecode) {
  Tokenizer t = sentencepiece();
  const std::vector<int32_t> ids = {1, 2, *t.token_to_id("a"), 1};
  for (const bool spaces : {false, true}) {
    IncrementalDetokenizer detok(t, {false, spaces});
    std::string text;
    for (int32_t id : ids) text += detok.add(id);
    EXPECT_EQ(text + detok.finish(), t.decode(ids, false));
  }
}

}  // namespace
}  // namespace strata::tokenizer
