#include "structured/grammar_compiler.h"

#include <utility>

#include "structured/gbnf_parser.h"

namespace strata::structured {

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)) {
  STRATA_CHECK(vocab_ != nullptr);
}

CompiledGrammar::~CompiledGrammar() { vocab_->release_mask_cache_bytes(cache_bytes_); }

std::shared_ptr<const MaskCacheEntry> CompiledGrammar::find_mask_entry(
    const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  return it == cache_.end() ? nullptr : it->second;
}

std::shared_ptr<const MaskCacheEntry> CompiledGrammar::insert_mask_entry(
    const std::string& key, std::shared_ptr<const MaskCacheEntry> entry) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  const size_t bytes = entry->memory_bytes() + key.size();
  if (vocab_->reserve_mask_cache_bytes(bytes)) {
    cache_bytes_ += bytes;
    cache_.emplace(key, entry);
  }
  return entry;
}

int64_t CompiledGrammar::num_cached_masks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(cache_.size());
}

StatusOr<std::shared_ptr<const CompiledGrammar>> compile_gbnf(
    std::string_view gbnf, std::shared_ptr<const TokenVocabulary> vocab) {
  STRATA_ASSIGN_OR_RETURN(Grammar grammar, parse_gbnf(gbnf, "root"));
  return std::shared_ptr<const CompiledGrammar>(
      std::make_shared<CompiledGrammar>(std::move(grammar), std::move(vocab)));
}

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, size_t capacity)
    : vocab_(std::move(vocab)), capacity_(capacity == 0 ? 1 : capacity) {
  STRATA_CHECK(vocab_ != nullptr);
}

StatusOr<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::compile_gbnf(
    std::string_view gbnf) {
  // The kind prefix keeps future kinds (JSON schema, regex) apart from GBNF of the same text.
  std::string key = "gbnf:";
  key.append(gbnf);
  return get_or_compile(std::move(key), gbnf);
}

StatusOr<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::get_or_compile(
    std::string key, std::string_view text) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      num_hits_.fetch_add(1);
      return it->second->second;
    }
  }
  num_compiles_.fetch_add(1);
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> compiled,
                          structured::compile_gbnf(text, vocab_));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second->second;  // another thread won the race
  lru_.emplace_front(key, compiled);
  index_.emplace(std::move(key), lru_.begin());
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

}  // namespace strata::structured
