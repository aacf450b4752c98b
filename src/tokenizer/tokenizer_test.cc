// Unit tests for tokenizer components on hand-made tokenizer.json documents.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <thread>

#include "tokenizer/split.h"
#include "tokenizer/test_tokenizers.h"
#include "tokenizer/utf8.h"

namespace strata::tokenizer {
namespace {

using nlohmann::json;
using testing::byte_level_json;
using testing::sentencepiece_json;

Tokenizer load(const json& j) {
  auto t = Tokenizer::from_json(j.dump(), "test");
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(t).value();
}

std::vector<std::string> tokens_of(const Tokenizer& t, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(t.id_to_token(id));
  return out;
}

std::string fffd(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += "\xEF\xBF\xBD";
  return out;
}

std::string bl(const std::string& raw) {
  std::string out;
  byte_level_encode(raw, &out);
  return out;
}

const std::vector<std::pair<std::string, std::string>> kWordMerges = {
    {"h", "e"}, {"l", "l"},   {"he", "ll"},  {"hell", "o"}, {" ", "w"},
    {"o", "r"}, {" w", "or"}, {" wor", "l"}, {" worl", "d"}};

TEST(Utf8, LossyReplacesMaximalSubparts) {
  EXPECT_EQ(utf8_lossy("a\xFF"
                       "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(utf8_lossy("\xE4\xBD"), "\xEF\xBF\xBD");  // one subpart
  EXPECT_EQ(utf8_lossy("\xE0\x80"), fffd(2));
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), fffd(3));  // surrogates are invalid
  EXPECT_EQ(utf8_lossy("ok\xF0\x9F\x98\x80"), "ok\xF0\x9F\x98\x80");
  EXPECT_EQ(utf8_incomplete_tail("a\xE4\xBD"), 2u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE4\xBD\xA0"), 0u);
}

// Regression (fuzz_tokenizer_json): a vocab id of 1e76 reached
// json::get<int32_t>(), undefined behaviour (UBSan: "1e+76 is outside the
// range of representable values of type 'int'"); 2^31-1 overflowed max_id + 1
// and huge ids sized dense tables. Every id must be an integer in [0, 2^24).
TEST(TokenizerJson, RejectsTokenIdsThatAreNotSmallIntegers) {
  const std::vector<json> bad_ids = {json(1e76),       json(1.5),
                                     json(-1),         json(int64_t{1} << 40),
                                     json(2147483647), json(int64_t{1} << 24),
                                     json("3")};
  for (const json& bad_id : bad_ids) {
    json in_vocab = byte_level_json(kWordMerges);
    in_vocab["model"]["vocab"]["zz"] = bad_id;
    json in_added = byte_level_json(kWordMerges);
    in_added["added_tokens"][0]["id"] = bad_id;
    json in_post = byte_level_json(kWordMerges);
    in_post["post_processor"] = {
        {"type", "BertProcessing"}, {"cls", {"[CLS]", bad_id}}, {"sep", {"[SEP]", 1}}};
    for (const json& j : {in_vocab, in_added, in_post}) {
      auto t = Tokenizer::from_json(j.dump(), "test");
      ASSERT_FALSE(t.ok()) << bad_id.dump();
      EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << t.status().to_string();
      EXPECT_NE(t.status().message().find("token id " + bad_id.dump()), std::string::npos)
          << t.status().to_string();
    }
  }
}

TEST(ByteLevelBpe, MergesByRankAndRoundTrips) {
  Tokenizer t = load(byte_level_json(kWordMerges));
  const auto ids = t.encode("hello world", false);
  EXPECT_EQ(tokens_of(t, ids), (std::vector<std::string>{"hello", bl(" world")}));
  EXPECT_EQ(t.decode(ids, false), "hello world");
  EXPECT_EQ(t.decode(t.encode("héllo 你好 🙂\n\t x", false), false),
            "héllo 你好 🙂\n\t x");
}

TEST(ByteLevelBpe, LegacyStringMergesMatchPairMerges) {
  json pairs = byte_level_json(kWordMerges);
  json legacy = pairs;
  legacy["model"]["merges"] = json::array();
  for (const auto& m : pairs["model"]["merges"]) {
    legacy["model"]["merges"].push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
  }
  EXPECT_EQ(load(pairs).encode("hello world hell", false),
            load(legacy).encode("hello world hell", false));
}

TEST(ByteLevelBpe, IgnoreMergesUsesWholeWordFromVocab) {
  json j = byte_level_json({{"a", "b"}, {"c", "d"}});
  j["model"]["vocab"][bl("abcd")] = 1000;
  EXPECT_EQ(load(j).encode("abcd", false).size(), 2u);
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(load(j).encode("abcd", false), (std::vector<int32_t>{1000}));
}

TEST(ByteLevelBpe, SpecialTokensSplitFirstAndSkippedOnDecode) {
  Tokenizer t = load(byte_level_json(kWordMerges));
  const int32_t eot = *t.token_to_id("<|endoftext|>");
  const auto ids = t.encode("hello<|endoftext|> world", false);
  EXPECT_EQ(tokens_of(t, ids), (std::vector<std::string>{"hello", "<|endoftext|>", bl(" world")}));
  EXPECT_TRUE(t.is_special(eot));
  EXPECT_EQ(t.decode(ids, false), "hello<|endoftext|> world");
  EXPECT_EQ(t.decode(ids, true), "hello world");
}

TEST(ByteLevelBpe, InvalidUtf8IsReplacedBeforeEncoding) {
  Tokenizer t = load(byte_level_json(kWordMerges));
  EXPECT_EQ(t.encode("a\xFF", false), t.encode("a\xEF\xBF\xBD", false));
  EXPECT_EQ(t.decode(t.encode("a\xFF", false), false), "a\xEF\xBF\xBD");
}

TEST(AddedTokens, LstripRstripSingleWord) {
  json j = byte_level_json({});
  const auto add = [&](int id, const char* content, bool lstrip, bool rstrip, bool single) {
    j["added_tokens"].push_back({{"id", id},
                                 {"content", content},
                                 {"single_word", single},
                                 {"lstrip", lstrip},
                                 {"rstrip", rstrip},
                                 {"normalized", false},
                                 {"special", false}});
  };
  add(300, "<mask>", true, true, false);
  add(301, "cat", false, false, true);
  add(302, "<longer>", false, false, false);
  add(303, "<long", false, false, false);
  Tokenizer t = load(j);
  auto ids = t.encode("a  <mask>  b", false);
  EXPECT_EQ(tokens_of(t, ids), (std::vector<std::string>{"a", "<mask>", "b"}));
  EXPECT_EQ(
      tokens_of(t, t.encode("cat concat cat", false)),
      (std::vector<std::string>{"cat", bl(" "), "c", "o", "n", "c", "a", "t", bl(" "), "cat"}));
  EXPECT_EQ(tokens_of(t, t.encode("<longer><long", false)),
            (std::vector<std::string>{"<longer>", "<long"}));
  EXPECT_FALSE(t.is_special(300));
  EXPECT_EQ(t.decode({300, 301}, true), "<mask>cat");
}

TEST(SentencePieceBpe, PrependsSpaceMarkerAndFallsBackToBytes) {
  Tokenizer t = load(sentencepiece_json({"\xE2\x96\x81", "h", "i", "a"},
                                        {{"\xE2\x96\x81", "h"}, {"\xE2\x96\x81h", "i"}}));
  const auto ids = t.encode("hi é", true);
  EXPECT_EQ(tokens_of(t, ids), (std::vector<std::string>{"<s>", "\xE2\x96\x81hi", "\xE2\x96\x81",
                                                         "<0xC3>", "<0xA9>"}));
  EXPECT_EQ(t.bos_token_id(), 1);
  EXPECT_EQ(t.eos_token_id(), 2);
  EXPECT_EQ(t.decode(ids, true), "hi é");
  EXPECT_EQ(t.decode(ids, false), "<s> hi é");
  EXPECT_TRUE(t.has_byte_fallback_decoder());
}

TEST(TokenBytes, ByteLevelMapsBackThroughTheByteTable) {
  Tokenizer t = load(byte_level_json(kWordMerges));
  EXPECT_EQ(t.token_bytes(*t.token_to_id(bl(" world"))), " world");
  EXPECT_EQ(t.token_bytes(*t.token_to_id("hello")), "hello");
  // A lone byte of a multi-byte character is that raw byte, not U+FFFD.
  EXPECT_EQ(t.token_bytes(*t.token_to_id(bl("\xC3"))), "\xC3");
  EXPECT_EQ(t.token_bytes(*t.token_to_id(bl("\n"))), "\n");
  EXPECT_EQ(t.token_bytes(*t.token_to_id("<|endoftext|>")), "<|endoftext|>");
  EXPECT_EQ(t.token_bytes(99999), "");
}

TEST(TokenBytes, SentencePieceKeepsTheSpaceMidSequenceAndFallbackBytes) {
  Tokenizer t = load(sentencepiece_json({"\xE2\x96\x81", "h", "i", "\xC3\xA9"},
                                        {{"\xE2\x96\x81", "h"}, {"\xE2\x96\x81h", "i"}}));
  EXPECT_EQ(t.token_bytes(*t.token_to_id("\xE2\x96\x81hi")), " hi");
  EXPECT_EQ(t.token_bytes(*t.token_to_id("\xE2\x96\x81")), " ");
  EXPECT_EQ(t.token_bytes(*t.token_to_id("\xC3\xA9")), "\xC3\xA9");
  EXPECT_EQ(t.token_bytes(3 + 0xC3), "\xC3");
  EXPECT_EQ(t.token_bytes(3 + 0x41), "A");
  EXPECT_EQ(t.token_bytes(2), "</s>");
}

TEST(SentencePieceBpe, EverySegmentAfterASpecialTokenGetsThePrefix) {
  Tokenizer t = load(sentencepiece_json({"\xE2\x96\x81", "h", "i"}, {{"\xE2\x96\x81", "h"}}));
  EXPECT_EQ(tokens_of(t, t.encode("hi</s>hi", false)),
            (std::vector<std::string>{"\xE2\x96\x81h", "i", "</s>", "\xE2\x96\x81h", "i"}));
  EXPECT_TRUE(t.encode("", false).empty());
  EXPECT_EQ(t.encode("", true), (std::vector<int32_t>{1}));
}

TEST(SentencePieceBpe, UnknownCharactersFuseIntoOneUnk) {
  json j = sentencepiece_json({"\xE2\x96\x81", "a"}, {});
  j["model"]["byte_fallback"] = false;
  Tokenizer t = load(j);
  EXPECT_EQ(t.encode("a\xE4\xBD\xA0\xE5\xA5\xBD"
                     "a",
                     false),
            (std::vector<int32_t>{*t.token_to_id("\xE2\x96\x81"), *t.token_to_id("a"), 0,
                                  *t.token_to_id("a")}));
}

TEST(SentencePieceBpe, InvalidByteRunDecodesToOneReplacementPerByte) {
  Tokenizer t = load(sentencepiece_json({"a"}, {}));
  const int32_t e4 = 3 + 0xE4, bd = 3 + 0xBD, a0 = 3 + 0xA0, ff = 3 + 0xFF;
  EXPECT_EQ(t.decode({e4, bd, a0}, false), "\xE4\xBD\xA0");
  EXPECT_EQ(t.decode({e4, bd, a0, ff}, false), fffd(4));  // HF: all or nothing per run
}

json with_pre_tokenizer(json j, json pre) {
  j["pre_tokenizer"] = std::move(pre);
  return j;
}

std::vector<std::string> pieces_of(const json& pre, const std::string& text) {
  auto p = make_pre_tokenizer(pre);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  std::vector<Piece> pieces{{text, true}};
  (*p)->pre_tokenize(&pieces);
  std::vector<std::string> out;
  for (const auto& piece : pieces) out.push_back(piece.text);
  return out;
}

json split(const std::string& behavior, bool invert = false) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", "-+"}}},
          {"behavior", behavior},
          {"invert", invert}};
}

TEST(PreTokenizers, SplitBehaviors) {
  const std::string text = "a-b--c-";
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces_of(split("Isolated"), text), (V{"a", "-", "b", "--", "c", "-"}));
  EXPECT_EQ(pieces_of(split("Removed"), text), (V{"a", "b", "c"}));
  EXPECT_EQ(pieces_of(split("MergedWithPrevious"), text), (V{"a-", "b--", "c-"}));
  EXPECT_EQ(pieces_of(split("MergedWithNext"), text), (V{"a", "-b", "--c", "-"}));
  EXPECT_EQ(pieces_of(split("Contiguous"), text), (V{"a", "-", "b", "--", "c", "-"}));
  EXPECT_EQ(pieces_of(split("Removed", true), text), (V{"-", "--", "-"}));
}

TEST(PreTokenizers, ByteLevelGpt2RegexAndPrefixSpace) {
  const json pre = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  EXPECT_EQ(
      pieces_of(pre, "Hi it's  42!"),
      (std::vector<std::string>{bl(" Hi"), bl(" it"), bl("'s"), bl(" "), bl(" 42"), bl("!")}));
}

TEST(PreTokenizers, MetaspaceDigitsAndSequence) {
  const json meta = {{"type", "Metaspace"},
                     {"replacement", "\xE2\x96\x81"},
                     {"prepend_scheme", "first"},
                     {"split", true}};
  EXPECT_EQ(pieces_of(meta, "a b  c"), (std::vector<std::string>{"\xE2\x96\x81"
                                                                 "a",
                                                                 "\xE2\x96\x81"
                                                                 "b",
                                                                 "\xE2\x96\x81",
                                                                 "\xE2\x96\x81"
                                                                 "c"}));
  const json digits = {{"type", "Digits"}, {"individual_digits", true}};
  EXPECT_EQ(pieces_of(digits, "a123"), (std::vector<std::string>{"a", "1", "2", "3"}));
  const json seq = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "WhitespaceSplit"}}, {{"type", "Digits"}, {"individual_digits", false}}}}};
  EXPECT_EQ(pieces_of(seq, "ab12 c"), (std::vector<std::string>{"ab", "12", "c"}));
}

TEST(Normalizers, NfcAndRegexReplace) {
  json j = byte_level_json({});
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers",
                      {{{"type", "NFC"}},
                       {{"type", "Replace"}, {"pattern", {{"Regex", "x+"}}}, {"content", "y"}}}}};
  Tokenizer t = load(j);
  EXPECT_EQ(t.decode(t.encode("e\xCC\x81 xxx", false), false), "\xC3\xA9 y");
}

TEST(Decoders, MetaspaceStripsAllMarkersOfFirstTokenOnly) {
  json j = sentencepiece_json({"\xE2\x96\x81", "a"}, {{"\xE2\x96\x81", "\xE2\x96\x81"}});
  j["decoder"] = {
      {"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "always"}};
  Tokenizer t = load(j);
  const int32_t two = *t.token_to_id("\xE2\x96\x81\xE2\x96\x81");
  const int32_t a = *t.token_to_id("a");
  EXPECT_EQ(t.decode({two, a, two, a}, false), "a  a");
}

TEST(PostProcessors, RobertaAndSequence) {
  json j = byte_level_json({});
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       {{{"type", "ByteLevel"}},
        {{"type", "RobertaProcessing"}, {"cls", {"<s>", 7}}, {"sep", {"</s>", 8}}}}}};
  EXPECT_EQ(load(j).encode("a", true), (std::vector<int32_t>{7, 'a', 8}));
}

TEST(Errors, UnsupportedComponentsAndBadInput) {
  json j = byte_level_json({});
  const auto error = [](const json& doc) {
    auto t = Tokenizer::from_json(doc.dump(), "bad.json");
    return t.ok() ? std::string("ok") : t.status().to_string();
  };
  json wp = j;
  wp["model"]["type"] = "WordPiece";
  EXPECT_NE(error(wp).find("model type 'WordPiece'"), std::string::npos);
  EXPECT_NE(error(with_pre_tokenizer(j, {{"type", "BertPreTokenizer"}})).find("BertPreTokenizer"),
            std::string::npos);
  EXPECT_NE(
      error(with_pre_tokenizer(
                j, {{"type", "Split"}, {"pattern", {{"Regex", "("}}}, {"behavior", "Isolated"}}))
          .find("does not compile"),
      std::string::npos);
  json bad_merge = j;
  bad_merge["model"]["merges"] = {"zz qq"};
  EXPECT_NE(error(bad_merge).find("not in the vocab"), std::string::npos);
  auto malformed = Tokenizer::from_json("{not json", "x.json");
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("malformed"), std::string::npos);
  EXPECT_FALSE(Tokenizer::from_json_file("/nonexistent/tokenizer.json").ok());
}

TEST(SpecialIds, FromTokenizerConfigOrPostProcessor) {
  const std::string doc = sentencepiece_json({"a"}, {}).dump();
  auto from_config =
      Tokenizer::from_json(doc, "t", R"({"bos_token": null, "eos_token": {"content": "<s>"}})");
  ASSERT_TRUE(from_config.ok());
  EXPECT_EQ(from_config->bos_token_id(), -1);
  EXPECT_EQ(from_config->eos_token_id(), 1);
  Tokenizer no_config = load(byte_level_json({}));
  EXPECT_EQ(no_config.bos_token_id(), -1);  // no template, no special "<s>"
  EXPECT_EQ(no_config.eos_token_id(), *no_config.token_to_id("<|endoftext|>"));
}

TEST(Concurrency, EncodeFromManyThreadsMatchesSingleThread) {
  Tokenizer t = load(byte_level_json(kWordMerges));
  const std::string text = "hello world, hello again: world hello 123 \xF0\x9F\x99\x82";
  const auto want = t.encode(text, true);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < 2000; ++n) mismatches[i] += t.encode(text, true) != want;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0, 0}));
}

TEST(Gguf, Gpt2VocabMapsToByteLevelBpe) {
  GgufVocab v;
  v.model = "gpt2";
  v.pre = "llama-bpe";
  for (int b = 0; b < 256; ++b) v.tokens.push_back(bl(std::string(1, static_cast<char>(b))));
  v.tokens.push_back(bl("he"));
  v.tokens.push_back(bl("hel"));
  v.tokens.push_back("<|begin_of_text|>");
  for (const char* merged : {"34", "12", "123", "45"}) v.tokens.push_back(merged);
  v.token_types.assign(v.tokens.size(), 1);
  v.token_types[258] = 3;
  v.merges = {bl("h") + " " + bl("e"), bl("he") + " " + bl("l"), "3 4", "1 2", "12 3", "4 5"};
  v.bos_id = 258;
  v.add_bos = true;
  auto t = Tokenizer::from_gguf_vocab(v);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->encode("hello", true), (std::vector<int32_t>{258, 257, 'l', 'o'}));
  EXPECT_EQ(t->decode(t->encode("hello 123456", true), true), "hello 123456");
  // The Llama 3 regex splits digits in threes ("123", "45"); GPT-2's would not.
  EXPECT_EQ(tokens_of(*t, t->encode("12345", false)), (std::vector<std::string>{"123", "45"}));
  v.pre = "gpt2";
  auto gpt2 = Tokenizer::from_gguf_vocab(v);
  ASSERT_TRUE(gpt2.ok());
  EXPECT_EQ(tokens_of(*gpt2, gpt2->encode("12345", false)),
            (std::vector<std::string>{"12", "34", "5"}));
  EXPECT_TRUE(t->is_special(258));
}

TEST(Gguf, LlamaVocabUsesScoresAsMergePriority) {
  GgufVocab v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.token_types = {2, 3, 3};
  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    v.tokens.push_back(name);
    v.token_types.push_back(6);
  }
  for (const char* piece : {"\xE2\x96\x81", "a", "b", "ab",
                            "\xE2\x96\x81"
                            "a",
                            "\xE2\x96\x81"
                            "ab"}) {
    v.tokens.push_back(piece);
    v.token_types.push_back(1);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  v.scores[v.tokens.size() - 3] = -1.0f;  // "ab" beats "▁a"
  v.scores[v.tokens.size() - 2] = -2.0f;
  v.scores[v.tokens.size() - 1] = -3.0f;
  for (size_t i = 259; i < 262; ++i) v.scores[i] = -10.0f;
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  v.add_bos = true;
  auto t = Tokenizer::from_gguf_vocab(v);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const auto ids = t->encode("ab a\n", true);
  EXPECT_EQ(tokens_of(*t, ids), (std::vector<std::string>{"<s>",
                                                          "\xE2\x96\x81"
                                                          "ab",
                                                          "\xE2\x96\x81"
                                                          "a",
                                                          "<0x0A>"}));
  EXPECT_EQ(t->decode(ids, true), "ab a\n");
}

TEST(Gguf, RejectsUnknownModelAndMismatchedArrays) {
  GgufVocab v;
  v.model = "bert";
  v.tokens = {"a"};
  EXPECT_EQ(Tokenizer::from_gguf_vocab(v).status().code(), StatusCode::kUnimplemented);
  v.model = "llama";
  v.scores = {1.0f, 2.0f};
  EXPECT_EQ(Tokenizer::from_gguf_vocab(v).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::tokenizer
