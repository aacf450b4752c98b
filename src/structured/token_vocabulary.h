// TokenVocabulary: what constrained decoding needs to know about a
// tokenizer's tokens, built once per tokenizer and shared by every grammar.
//
// Input: the bytes each token id contributes to the output text
// (Tokenizer::token_bytes), the stop token ids (EOS and friends: allowed
// exactly when the grammar can end) and the other special/control token ids
// (never allowed by a grammar).
//
// It precomputes a byte trie over the "grammar tokens" (every id that is not
// a stop or special token, has non-empty bytes of at most kMaxTokenBytes) in
// depth-first preorder, so a walk over the whole vocabulary shares the work
// of common prefixes and can skip a dead prefix's whole subtree in O(1).
// Grammar tokens sorted by bytes ("sorted index") are exactly the preorder of
// the trie, so every subtree is a contiguous range of sorted indices.
//
// Thread-safety: immutable after construction; share it across threads.
// Memory: about 20 bytes per trie node (a 152K vocabulary has ~0.5M nodes).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strata::structured {

class TokenVocabulary {
 public:
  static constexpr size_t kMaxTokenBytes = 1024;

  // Trie node in preorder; node 0 is the root (the empty prefix, depth 0).
  struct TrieNode {
    uint32_t subtree_end = 0;   // one past the last node of this subtree
    uint32_t tokens_begin = 0;  // sorted index of the first token in the subtree
    uint32_t own_end = 0;       // [tokens_begin, own_end): tokens whose bytes end here
    uint32_t tokens_end = 0;    // one past the last sorted index in the subtree
    uint16_t depth = 0;         // prefix length in bytes
    uint8_t byte = 0;           // the last byte of the prefix (unused for the root)
  };

  // Ids must lie in [0, token_bytes.size()) (STRATA_CHECK).
  TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> stop_token_ids,
                  std::vector<int32_t> special_token_ids);

  int64_t size() const { return static_cast<int64_t>(token_bytes_.size()); }
  std::string_view token_bytes(int32_t id) const { return token_bytes_[id]; }
  const std::vector<int32_t>& stop_token_ids() const { return stop_ids_; }
  bool is_stop_token(int32_t id) const { return id >= 0 && id < size() && kind_[id] == kStop; }
  // True if a grammar may allow the token (not stop, not special, sane bytes).
  bool is_grammar_token(int32_t id) const {
    return id >= 0 && id < size() && kind_[id] == kGrammar;
  }

  // The mask caches of every grammar compiled over this vocabulary share one
  // memory budget (a server has one vocabulary), so many distinct grammars
  // cannot grow the caches without bound. Any thread.
  static constexpr size_t kMaxMaskCacheBytes = size_t{512} << 20;
  bool reserve_mask_cache_bytes(size_t bytes) const {
    size_t used = mask_cache_bytes_.load();
    do {
      if (used + bytes > kMaxMaskCacheBytes) return false;
    } while (!mask_cache_bytes_.compare_exchange_weak(used, used + bytes));
    return true;
  }
  void release_mask_cache_bytes(size_t bytes) const { mask_cache_bytes_.fetch_sub(bytes); }
  size_t mask_cache_bytes() const { return mask_cache_bytes_.load(); }

  const std::vector<TrieNode>& trie() const { return trie_; }
  // [num_grammar_tokens]: token ids in byte-lexicographic order.
  const std::vector<int32_t>& sorted_ids() const { return sorted_ids_; }

 private:
  enum Kind : uint8_t { kGrammar, kStop, kExcluded };
  void build_trie();

  std::vector<std::string> token_bytes_;
  std::vector<uint8_t> kind_;  // [size()] Kind
  std::vector<int32_t> stop_ids_;
  std::vector<int32_t> sorted_ids_;
  std::vector<TrieNode> trie_;
  mutable std::atomic<size_t> mask_cache_bytes_{0};
};

std::shared_ptr<const TokenVocabulary> make_token_vocabulary(
    std::vector<std::string> token_bytes, std::vector<int32_t> stop_token_ids,
    std::vector<int32_t> special_token_ids);

}  // namespace strata::structured
