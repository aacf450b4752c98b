#include "bench_serve/datasets.h"

#include <algorithm>
#include <cmath>

namespace strata::bench {
namespace {

// Plain lower-case English words: one token each in most BPE vocabularies.
constexpr const char* kWords[] = {
    "time",    "year",    "people",   "way",    "day",     "man",     "thing",   "woman",
    "life",    "child",   "world",    "school", "state",   "family",  "student", "group",
    "country", "problem", "hand",     "part",   "place",   "case",    "week",    "company",
    "system",  "program", "question", "work",   "number",  "night",   "point",   "home",
    "water",   "room",    "mother",   "area",   "money",   "story",   "fact",    "month",
    "lot",     "right",   "study",    "book",   "eye",     "job",     "word",    "issue",
    "side",    "kind",    "head",     "house",  "service", "friend",  "father",  "power",
    "hour",    "game",    "line",     "end",    "member",  "law",     "car",     "city",
    "name",    "team",    "minute",   "idea",   "kid",     "body",    "back",    "parent",
    "face",    "others",  "level",    "office", "door",    "health",  "person",  "art",
    "war",     "history", "party",    "result", "change",  "morning", "reason",  "research",
    "girl",    "guy",     "moment",   "air",    "teacher", "force",   "the",     "of",
    "and",     "to",      "in",       "is",     "that",    "for",     "it",      "as",
    "was",     "with",    "be",       "by",     "on",      "not",     "he",      "this",
    "are",     "or",      "his",      "from",   "at",      "which",   "but",     "have",
    "an",      "had",     "they",     "you",    "were",    "their",   "one",     "all",
    "we",      "can",     "her",      "has",    "there",   "been",    "if",      "more",
    "when",    "will",    "would",    "who",    "so",      "no",      "good",    "new",
    "first",   "last",    "long",     "great",  "little",  "own",     "other",   "old",
    "big",     "high",    "small",    "large",  "next",    "early",   "young",   "few",
    "public",  "bad",     "same",     "able",   "go",      "make",    "know",    "take",
    "see",     "come",    "think",    "look",   "want",    "give",    "use",     "find",
    "tell",    "ask",     "seem",     "feel",   "try",     "leave",   "call",    "keep",
    "let",     "begin",   "show",     "hear",   "play",    "run",     "move",    "live",
    "believe", "bring",   "happen",   "write",  "sit",     "stand",   "lose",    "pay",
    "meet",    "include", "learn",    "lead",   "read",    "grow",    "open",    "walk",
    "win",     "teach",   "offer",    "red",    "blue",    "green",   "light",   "river",
    "stone",   "tree",    "field",    "music",  "paper",   "window",  "table",   "garden",
    "train",
};
constexpr size_t kNumWords = sizeof(kWords) / sizeof(kWords[0]);

int64_t draw_len(int64_t len, double ratio, std::mt19937_64& rng) {
  const int64_t lo = static_cast<int64_t>(std::floor(static_cast<double>(len) * (1 - ratio)));
  const int64_t hi = static_cast<int64_t>(std::ceil(static_cast<double>(len) * (1 + ratio)));
  if (hi <= lo) return std::max<int64_t>(1, len);
  return std::max<int64_t>(1, std::uniform_int_distribution<int64_t>(lo, hi)(rng));
}

}  // namespace

void PromptText::append(const PromptText& other) {
  token_ids.insert(token_ids.end(), other.token_ids.begin(), other.token_ids.end());
  if (!text.empty() && !other.text.empty()) text.push_back(' ');
  text += other.text;
  num_tokens += other.num_tokens;
}

int64_t words_for_tokens(int64_t num_tokens, double tokens_per_word) {
  if (num_tokens <= 0) return 0;
  const double words = static_cast<double>(num_tokens) / std::max(tokens_per_word, 0.05);
  return std::max<int64_t>(1, std::llround(words));
}

std::string sample_words(int64_t num_words, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, kNumWords - 1);
  std::string out;
  for (int64_t i = 0; i < num_words; ++i) {
    if (i > 0) out.push_back(' ');
    out += kWords[pick(rng)];
  }
  return out;
}

PromptText PromptSource::make(int64_t num_tokens, std::mt19937_64& rng) const {
  PromptText p;
  p.num_tokens = std::max<int64_t>(0, num_tokens);
  if (use_text_) {
    p.text = sample_words(words_for_tokens(p.num_tokens, tokens_per_word_), rng);
    return p;
  }
  std::uniform_int_distribution<int32_t> pick(range_.min_token_id, range_.max_token_id - 1);
  p.token_ids.reserve(static_cast<size_t>(p.num_tokens));
  for (int64_t i = 0; i < p.num_tokens; ++i) p.token_ids.push_back(pick(rng));
  return p;
}

std::vector<DatasetPrompt> make_random_dataset(const RandomDatasetConfig& c,
                                               const PromptSource& source) {
  std::mt19937_64 rng(c.seed);
  const PromptText prefix = source.make(c.prefix_len, rng);
  std::vector<DatasetPrompt> out;
  for (int64_t i = 0; i < c.num_prompts; ++i) {
    DatasetPrompt d;
    d.prompt = prefix;
    d.prompt.append(source.make(draw_len(c.input_len, c.range_ratio, rng), rng));
    d.output_len = draw_len(c.output_len, c.range_ratio, rng);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<DatasetPrompt> make_prefix_repetition_dataset(const PrefixRepetitionConfig& c,
                                                          const PromptSource& source) {
  std::mt19937_64 rng(c.seed);
  std::vector<PromptText> prefixes;
  for (int64_t p = 0; p < std::max<int64_t>(1, c.num_prefixes); ++p) {
    prefixes.push_back(source.make(c.prefix_len, rng));
  }
  std::vector<DatasetPrompt> out;
  for (int64_t i = 0; i < c.num_prompts; ++i) {
    DatasetPrompt d;
    d.prompt = prefixes[static_cast<size_t>(i) % prefixes.size()];
    d.prompt.append(source.make(c.suffix_len, rng));
    d.output_len = c.output_len;
    out.push_back(std::move(d));
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

std::vector<Conversation> make_multi_turn_dataset(const MultiTurnConfig& c,
                                                  const PromptSource& source) {
  std::mt19937_64 rng(c.seed);
  const PromptText shared = source.make(c.shared_prefix_len, rng);
  std::vector<Conversation> out;
  for (int64_t i = 0; i < c.num_conversations; ++i) {
    Conversation conv;
    PromptText first = shared;
    first.append(source.make(c.first_turn_len, rng));
    conv.user_turns.push_back(std::move(first));
    for (int64_t r = 0; r < c.num_rounds; ++r)
      conv.user_turns.push_back(source.make(c.round_len, rng));
    conv.output_lens.assign(conv.user_turns.size(), c.output_len);
    out.push_back(std::move(conv));
  }
  return out;
}

}  // namespace strata::bench
