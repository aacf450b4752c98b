// The BPE model: turns one pre-tokenized word into token ids by applying
// ranked merges (Hugging Face's models::bpe semantics: per-character vocab
// lookup with optional continuing_subword_prefix / end_of_word_suffix, byte
// fallback to <0xXX> tokens, unk with optional fusing, ignore_merges, and the
// lowest-rank-first, leftmost-first merge order).
//
// Thread-safety: immutable after construction. tokenize() is const and may be
// called concurrently; it uses a per-thread word cache (bounded, cleared when
// full or when another BpeModel is used on the same thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"

namespace strata::tokenizer {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

// Open-addressing map (left_id, right_id) -> (rank, merged_id).
class MergeTable {
 public:
  struct Entry {
    uint64_t key = kEmpty;
    uint32_t rank = 0;
    int32_t merged_id = 0;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  void reserve(size_t n);
  // A later insert of the same pair overwrites (HF collects merges into a map).
  void insert(int32_t left, int32_t right, uint32_t rank, int32_t merged_id);
  const Entry* find(int32_t left, int32_t right) const;
  size_t size() const { return size_; }

 private:
  static uint64_t key_of(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  size_t slot_of(uint64_t key) const;
  std::vector<Entry> slots_;
  size_t size_ = 0;
};

class BpeModel {
 public:
  // `merges` are (left, right) token strings in rank order.
  static StatusOr<BpeModel> create(Vocab vocab,
                                   const std::vector<std::pair<std::string, std::string>>& merges,
                                   BpeOptions options);

  // Appends the ids of `word` (a non-empty pre-tokenized word) to `out`.
  void tokenize(std::string_view word, std::vector<int32_t>* out) const;

  const Vocab& vocab() const { return vocab_; }
  // Empty string for ids with no vocabulary entry.
  const std::string& id_to_token(int32_t id) const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // One past the largest id in the vocabulary.
  int32_t id_limit() const { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  BpeModel() = default;
  void tokenize_cached(std::string_view word, std::vector<int32_t>* out) const;
  void merge_word(std::string_view word, std::vector<int32_t>* out) const;
  int32_t char_id(std::string_view ch) const;
  int32_t char_id_in_vocab(std::string_view ch) const;
  void init_char_ids();
  void init_space_chunking();
  void add_char_ids(std::string_view word, std::vector<int32_t>* ids) const;
  void apply_merges(std::vector<int32_t>* ids) const;

  Vocab vocab_;
  std::vector<std::string> id_to_token_;
  MergeTable merges_;
  BpeOptions options_;
  int32_t unk_id_ = -1;
  int32_t byte_ids_[256];
  // Ids of single-character tokens for code points below 0x10000 (-1: none);
  // most character lookups hit this table instead of the hash map.
  std::vector<int32_t> bmp_char_ids_;
  // SentencePiece vocabularies whose tokens never contain "▁" after another
  // character: no merge can cross the start of a "▁..." run, so long words are
  // split there and each chunk is merged (and cached) separately. Exact.
  bool chunk_at_space_marker_ = false;
  uint64_t cache_owner_id_ = 0;
};

}  // namespace strata::tokenizer
