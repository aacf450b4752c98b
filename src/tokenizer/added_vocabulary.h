// Added tokens (special and user-defined): matched in the input before
// normalization and pre-tokenization, with Hugging Face's AddedVocabulary
// semantics: leftmost-longest matching, single_word / lstrip / rstrip
// constraints, tokens with normalized=true matched against the normalized text
// (by their normalized form), the rest against the raw text.
//
// Thread-safety: immutable after construction; find_matches() is const.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizer/bpe_model.h"

namespace strata::tokenizer {

class Normalizer;

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// One piece of a split input: an added token (id >= 0) or plain text (id < 0).
struct Segment {
  size_t begin = 0;
  size_t end = 0;
  int32_t id = -1;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // `normalizer` (may be null) gives the match form of normalized tokens.
  AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  // Splits `text` into segments covering it (matching raw or normalized
  // tokens). Text segments may be empty.
  void find_matches(std::string_view text, bool normalized_set, std::vector<Segment>* out) const;

  const AddedToken* find_by_id(int32_t id) const;
  const AddedToken* find_by_content(std::string_view content) const;
  // The string the decoder sees for an added token (normalized form if any).
  const std::string* decode_form(int32_t id) const;
  bool is_special_content(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // Byte trie over token match forms; node 0 is the root.
  struct Trie {
    struct Node {
      std::vector<std::pair<uint8_t, int32_t>> children;
      int32_t token_idx = -1;
    };
    std::vector<Node> nodes{Node{}};
    bool first_byte[256] = {};
    void insert(std::string_view key, int32_t token_idx);
    // Longest token index matching at text[pos], and its length.
    int32_t longest_at(std::string_view text, size_t pos, size_t* length) const;
  };

  std::vector<AddedToken> tokens_;
  std::vector<std::string> match_forms_;
  std::unordered_map<int32_t, size_t> index_by_id_;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> index_by_content_;
  std::unordered_set<std::string, StringHash, std::equal_to<>> special_contents_;
  Trie raw_trie_;
  Trie normalized_trie_;
};

}  // namespace strata::tokenizer
