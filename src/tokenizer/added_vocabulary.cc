#include "tokenizer/added_vocabulary.h"

#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace strata::tokenizer {
namespace {

// Last / first character of a string (0 when empty or invalid).
char32_t last_char(std::string_view s) {
  if (s.empty()) return 0;
  size_t start = s.size() - 1;
  while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
  char32_t c = 0;
  return utf8_decode(s, start, &c) > 0 ? c : 0;
}
char32_t first_char(std::string_view s) {
  char32_t c = 0;
  return (!s.empty() && utf8_decode(s, 0, &c) > 0) ? c : 0;
}

// Start of the whitespace run that ends `s` (regex \s*$).
size_t whitespace_run_start(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    char32_t c = 0;
    if (utf8_decode(s, start, &c) == 0 || !is_unicode_whitespace(c)) break;
    end = start;
  }
  return end;
}

// Length of the whitespace run that starts `s` (regex ^\s*).
size_t whitespace_run_length(std::string_view s) {
  size_t pos = 0;
  char32_t c = 0;
  while (pos < s.size()) {
    const int n = utf8_decode(s, pos, &c);
    if (n == 0 || !is_unicode_whitespace(c)) break;
    pos += n;
  }
  return pos;
}

}  // namespace

void AddedVocabulary::Trie::insert(std::string_view key, int32_t token_idx) {
  if (key.empty()) return;
  first_byte[static_cast<uint8_t>(key[0])] = true;
  int32_t node = 0;
  for (char ch : key) {
    const auto b = static_cast<uint8_t>(ch);
    int32_t child = -1;
    for (const auto& [byte, idx] : nodes[node].children) {
      if (byte == b) child = idx;
    }
    if (child < 0) {
      child = static_cast<int32_t>(nodes.size());
      nodes[node].children.emplace_back(b, child);
      nodes.emplace_back();
    }
    node = child;
  }
  nodes[node].token_idx = token_idx;
}

int32_t AddedVocabulary::Trie::longest_at(std::string_view text, size_t pos, size_t* length) const {
  if (!first_byte[static_cast<uint8_t>(text[pos])]) return -1;
  int32_t node = 0, best = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto b = static_cast<uint8_t>(text[i]);
    int32_t child = -1;
    for (const auto& [byte, idx] : nodes[node].children) {
      if (byte == b) child = idx;
    }
    if (child < 0) break;
    node = child;
    if (nodes[node].token_idx >= 0) {
      best = nodes[node].token_idx;
      *length = i + 1 - pos;
    }
  }
  return best;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    std::string form = t.content;
    if (t.normalized && normalizer != nullptr) normalizer->normalize(&form);
    match_forms_.push_back(form);
    index_by_id_[t.id] = i;
    index_by_content_[t.content] = i;
    if (t.special && !t.content.empty()) special_contents_.insert(t.content);
    (t.normalized ? normalized_trie_ : raw_trie_).insert(form, static_cast<int32_t>(i));
  }
}

void AddedVocabulary::find_matches(std::string_view text, bool normalized_set,
                                   std::vector<Segment>* out) const {
  const Trie& trie = normalized_set ? normalized_trie_ : raw_trie_;
  size_t start_offset = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    const int32_t idx = trie.longest_at(text, pos, &length);
    if (idx < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[idx];
    size_t start = pos, stop = pos + length;
    pos = stop;  // the scan resumes after this match even if it is discarded
    if (token.single_word) {
      const bool start_ok = start == 0 || !is_word_char(last_char(text.substr(0, start)));
      const bool stop_ok = stop == text.size() || !is_word_char(first_char(text.substr(stop)));
      if (!start_ok || !stop_ok) continue;
    }
    if (token.lstrip) start = std::max(whitespace_run_start(text.substr(0, start)), start_offset);
    if (token.rstrip) stop += whitespace_run_length(text.substr(stop));
    if (start_offset < start) out->push_back({start_offset, start, -1});
    out->push_back({start, stop, token.id});
    start_offset = stop;
    pos = std::max(pos, stop);
  }
  if (start_offset < text.size() || out->empty()) out->push_back({start_offset, text.size(), -1});
}

const AddedToken* AddedVocabulary::find_by_id(int32_t id) const {
  auto it = index_by_id_.find(id);
  return it == index_by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocabulary::find_by_content(std::string_view content) const {
  auto it = index_by_content_.find(content);
  return it == index_by_content_.end() ? nullptr : &tokens_[it->second];
}

const std::string* AddedVocabulary::decode_form(int32_t id) const {
  auto it = index_by_id_.find(id);
  return it == index_by_id_.end() ? nullptr : &match_forms_[it->second];
}

bool AddedVocabulary::is_special_content(std::string_view content) const {
  return special_contents_.find(content) != special_contents_.end();
}

}  // namespace strata::tokenizer
