// GrammarMatcher: the per-request state of constrained decoding. It tracks
// which outputs of a CompiledGrammar are still possible after the tokens
// accepted so far and, before each decoding step, fills the bitmask of the
// tokens that may come next.
//
// Model: a pushdown automaton over Unicode code points run as a set of
// stacks (like llama.cpp's grammar engine). A stack is a chain of grammar
// positions: the top is a character-set element waiting for the next code
// point, the frames below are return positions. Stacks are interned nodes
// (position, parent) shared between stacks, a set of stacks is an interned
// sorted list of top nodes, so ambiguity never duplicates identical stacks:
// the number of live stacks is bounded by the number of distinct (position,
// stack) pairs, not by the number of parses. Calls in tail position reuse
// the caller's frame, so x* loops keep a constant stack depth.
// Tokens are byte strings decoded as UTF-8 incrementally: a token that ends
// inside a multi-byte character is allowed when some stack can still match a
// character with that prefix; the partial character carries over to the next
// token. Invalid UTF-8 (overlong forms, surrogates, > U+10FFFF, stray
// continuation bytes) is never accepted.
//
// Masks: for each stack top the CompiledGrammar caches (computed on first
// use, one vocabulary trie walk) the tokens accepted by the top few frames
// of that stack alone (kContextFrames; "accepted whatever lies below") and
// the few tokens that run past those frames ("uncertain"). At run time the
// mask is the union of the accepted sets of the live tops plus the uncertain
// tokens re-checked against the full stacks; the matcher also memoizes the
// masks of its recent exact states. Stop tokens are allowed exactly when the
// grammar can end here; special tokens never. Byte transitions of each
// automaton state are memoized (a hash table sized by the transitions taken), so a full
// trie walk costs about one hash lookup per trie node visited.
// Costs (152K vocabulary): first use of a stack-top context ~ one trie walk
// (~1-3 ms); a cached step ~ 10-20 us plus the re-checked tokens; accept_token
// ~ the token's length in hash lookups. Measured on Qwen2.5 forcing JSON
// documents (bench/micro/structured_bench.cc, one core): ~150 us per token on the
// first request of a grammar, ~10-18 us per token on later ones.
// Assumptions: grammars whose stacks grow with every consumed character
// (non-tail recursion such as a ::= "x" a "y") or highly ambiguous nested
// bounded repetitions create many automaton states per vocabulary walk; they
// stay correct but cost memory and time proportional to those states.
//
// Thread-safety: a GrammarMatcher belongs to one request and is used from one
// thread (the engine thread); different matchers of the same CompiledGrammar
// may run on different threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "structured/grammar_compiler.h"
#include "structured/token_bitmask.h"

namespace strata::structured {

namespace detail {
class StackPool;
}  // namespace detail

class GrammarMatcher {
 public:
  // Frames (the top included) a cached mask entry looks at before a token's fate depends on
  // the rest of the stack. Measured on Qwen2.5 (bench/micro/structured_bench.cc): 3 keeps the
  // number of distinct entries (each one vocabulary walk) low while the re-checked tokens
  // stay few; 2 re-checks thousands of tokens per step inside nested JSON strings, 4-6 make
  // the first request 4x slower.
  static constexpr int kContextFrames = 3;

  // `context_frames` (>= 1) overrides kContextFrames: fewer frames share cache entries more
  // widely but re-check more tokens per step (tests use 1 to exercise the re-check path).
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                          int context_frames = kContextFrames);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;
  GrammarMatcher(const GrammarMatcher&) = delete;
  GrammarMatcher& operator=(const GrammarMatcher&) = delete;

  // A matcher in the same state (cheap: copies only the live stacks).
  GrammarMatcher clone() const;

  static int64_t bitmask_words(int64_t vocab_size) { return token_bitmask_words(vocab_size); }

  // Bit i of words[i / 32] (LSB first) = token i may come next. words.size() must be at least
  // bitmask_words(vocab().size()); every bit past the vocabulary is cleared. After termination
  // the mask is all zero.
  void fill_next_token_bitmask(std::span<uint32_t> words);
  // The same mask by walking the whole vocabulary against the full stacks, without any cache
  // (reference for tests; tens of milliseconds on a large vocabulary).
  void fill_next_token_bitmask_uncached(std::span<uint32_t> words);

  // Consumes one token. False (state unchanged) if the mask would not allow it: ids outside
  // the vocabulary, special tokens, stop tokens while the grammar cannot end, anything after
  // termination. A stop token that is allowed terminates the matcher.
  bool accept_token(int32_t token_id);
  // Consumes raw bytes (tests, forced text). False (state unchanged) if rejected.
  bool accept_string(std::string_view bytes);
  // The bytes consumed so far form a complete sentence of the grammar.
  bool can_terminate() const;
  // A stop token was accepted.
  bool is_terminated() const { return terminated_; }

  const TokenVocabulary& vocab() const { return grammar_->vocab(); }

 private:
  GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                 std::unique_ptr<detail::StackPool> pool, uint32_t state);
  // Walks `bytes` from the current state; kDead (see .cc) if rejected.
  uint32_t walk(std::string_view bytes);
  void maybe_compact();
  void set_stop_bits(std::span<uint32_t> words) const;

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::unique_ptr<detail::StackPool> pool_;
  int context_frames_ = kContextFrames;
  uint32_t state_ = 0;  // id in pool_
  bool terminated_ = false;
  // Recent exact-state masks: (state id, mask words).
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> recent_masks_;
  size_t next_recent_ = 0;
};

}  // namespace strata::structured
