#include "structured/token_vocabulary.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace strata::structured {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes,
                                 std::vector<int32_t> stop_token_ids,
                                 std::vector<int32_t> special_token_ids)
    : token_bytes_(std::move(token_bytes)), kind_(token_bytes_.size(), kGrammar) {
  for (size_t id = 0; id < token_bytes_.size(); ++id) {
    const size_t n = token_bytes_[id].size();
    if (n == 0 || n > kMaxTokenBytes) kind_[id] = kExcluded;
  }
  for (int32_t id : special_token_ids) {
    STRATA_CHECK(id >= 0 && id < size()) << "special token id " << id << " outside vocabulary";
    kind_[id] = kExcluded;
  }
  for (int32_t id : stop_token_ids) {
    STRATA_CHECK(id >= 0 && id < size()) << "stop token id " << id << " outside vocabulary";
    kind_[id] = kStop;
  }
  for (int32_t id = 0; id < size(); ++id) {
    if (kind_[id] == kStop) stop_ids_.push_back(id);
  }
  build_trie();
}

void TokenVocabulary::build_trie() {
  for (int32_t id = 0; id < size(); ++id) {
    if (kind_[id] == kGrammar) sorted_ids_.push_back(id);
  }
  std::stable_sort(sorted_ids_.begin(), sorted_ids_.end(),
                   [this](int32_t a, int32_t b) { return token_bytes_[a] < token_bytes_[b]; });
  trie_.clear();
  trie_.push_back({});
  std::vector<uint32_t> path = {0};  // path[d] = node of the current prefix of length d
  std::string_view prev;
  const auto close_to = [&](size_t depth, uint32_t sorted_idx) {
    while (path.size() > depth + 1) {
      TrieNode& node = trie_[path.back()];
      node.subtree_end = static_cast<uint32_t>(trie_.size());
      node.tokens_end = sorted_idx;
      path.pop_back();
    }
  };
  for (uint32_t s = 0; s < sorted_ids_.size(); ++s) {
    const std::string_view bytes = token_bytes_[sorted_ids_[s]];
    size_t lcp = 0;
    while (lcp < bytes.size() && lcp < prev.size() && bytes[lcp] == prev[lcp]) ++lcp;
    close_to(lcp, s);
    for (size_t d = lcp + 1; d <= bytes.size(); ++d) {
      TrieNode node;
      node.tokens_begin = node.own_end = s;
      node.depth = static_cast<uint16_t>(d);
      node.byte = static_cast<uint8_t>(bytes[d - 1]);
      path.push_back(static_cast<uint32_t>(trie_.size()));
      trie_.push_back(node);
    }
    trie_[path.back()].own_end = s + 1;
    prev = bytes;
  }
  close_to(0, static_cast<uint32_t>(sorted_ids_.size()));
  trie_[0].subtree_end = static_cast<uint32_t>(trie_.size());
  trie_[0].tokens_end = static_cast<uint32_t>(sorted_ids_.size());
}

std::shared_ptr<const TokenVocabulary> make_token_vocabulary(
    std::vector<std::string> token_bytes, std::vector<int32_t> stop_token_ids,
    std::vector<int32_t> special_token_ids) {
  return std::make_shared<const TokenVocabulary>(std::move(token_bytes), std::move(stop_token_ids),
                                                 std::move(special_token_ids));
}

}  // namespace strata::structured
