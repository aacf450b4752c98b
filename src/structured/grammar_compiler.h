// Compiling grammars for constrained decoding, and a cache of compiled
// grammars shared by all requests.
//
//   compile_gbnf(text, vocab)  GBNF text (root rule "root") -> CompiledGrammar
//   GrammarCompiler            the same, memoized: an LRU of compiled grammars
//                              keyed by (kind, text), so a schema sent by many
//                              requests compiles once
//
// A CompiledGrammar is the parsed grammar plus the vocabulary plus a lazily
// filled cache of per-stack-top token masks (see grammar_matcher.h for what
// the entries mean). Compiling itself is cheap (parse + validate, linear in
// the grammar); the expensive part, one vocabulary walk per distinct
// stack-top context, happens on first use by a matcher and is then shared by
// every later matcher of the same CompiledGrammar.
//
// Thread-safety: CompiledGrammar is immutable except for its mask cache,
// which is guarded by a mutex; share it freely across threads. GrammarCompiler
// is thread-safe; compiles of different texts run concurrently (outside its
// lock), two concurrent compiles of the same text may both run once.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "structured/grammar.h"
#include "structured/token_vocabulary.h"

namespace strata::structured {

// Tokens classified for one stack-top context (internal to the matcher).
struct MaskCacheEntry {
  std::vector<uint32_t> accepted_words;  // [token_bitmask_words(vocab)] accepted whatever lies
                                         // below the context
  std::vector<uint32_t> uncertain;       // sorted indices (TokenVocabulary::sorted_ids) of
                                         // tokens that must be checked against the full stack
  size_t memory_bytes() const {
    return (accepted_words.size() + uncertain.size()) * sizeof(uint32_t);
  }
};

class CompiledGrammar {
 public:
  // Mask cache entries are no longer stored once the vocabulary's shared
  // budget (TokenVocabulary::kMaxMaskCacheBytes, all grammars together) is
  // spent: they are still computed and used, just not kept.
  CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab);
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const Grammar& grammar() const { return grammar_; }
  const TokenVocabulary& vocab() const { return *vocab_; }

  // Any thread. Null when `key` has no entry yet.
  std::shared_ptr<const MaskCacheEntry> find_mask_entry(const std::string& key) const;
  // Any thread. Stores `entry` unless another thread stored one first (returns the stored one).
  std::shared_ptr<const MaskCacheEntry> insert_mask_entry(
      const std::string& key, std::shared_ptr<const MaskCacheEntry> entry) const;
  int64_t num_cached_masks() const;

 private:
  Grammar grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, std::shared_ptr<const MaskCacheEntry>> cache_;
  mutable size_t cache_bytes_ = 0;
};

// Parses and validates `gbnf` (gbnf_parser.h) with root rule "root".
// invalid_argument on any syntax or grammar error.
StatusOr<std::shared_ptr<const CompiledGrammar>> compile_gbnf(
    std::string_view gbnf, std::shared_ptr<const TokenVocabulary> vocab);

class GrammarCompiler {
 public:
  explicit GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, size_t capacity = 256);

  // Any thread. A hit returns the same CompiledGrammar object (with its warm mask cache).
  // Errors are not cached.
  StatusOr<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view gbnf);

  const TokenVocabulary& vocab() const { return *vocab_; }
  int64_t num_hits() const { return num_hits_.load(); }
  int64_t num_compiles() const { return num_compiles_.load(); }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CompiledGrammar>>;
  StatusOr<std::shared_ptr<const CompiledGrammar>> get_or_compile(std::string key,
                                                                  std::string_view text);

  std::shared_ptr<const TokenVocabulary> vocab_;
  size_t capacity_;
  std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  std::atomic<int64_t> num_hits_{0};
  std::atomic<int64_t> num_compiles_{0};
};

}  // namespace strata::structured
