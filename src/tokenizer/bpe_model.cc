#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "tokenizer/utf8.h"

namespace strata::tokenizer {
namespace {

constexpr size_t kCacheCapacity = 1 << 15;       // words per thread
constexpr size_t kCacheMaxWordBytes = 256;       // longer words are not cached
constexpr char kSpaceMarker[] = "\xE2\x96\x81";  // U+2581, SentencePiece's space

struct WordCache {
  uint64_t owner_id = 0;
  std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> words;
};

WordCache& thread_cache(uint64_t owner_id) {
  thread_local WordCache cache;
  if (cache.owner_id != owner_id || cache.words.size() >= kCacheCapacity) {
    cache.words.clear();
    cache.owner_id = owner_id;
  }
  return cache;
}

uint64_t next_owner_id() {
  static std::atomic<uint64_t> counter{1};
  return counter.fetch_add(1);
}

uint64_t mix(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return key;
}

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  bool alive;
};

struct Candidate {
  uint32_t rank;
  int32_t pos;
  int32_t merged_id;
  // std::push_heap builds a max-heap; invert so the lowest (rank, pos) is on top.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

void MergeTable::reserve(size_t n) {
  size_t capacity = 16;
  while (capacity < n * 2) capacity <<= 1;
  slots_.assign(capacity, Entry{});
  size_ = 0;
}

size_t MergeTable::slot_of(uint64_t key) const {
  const size_t mask = slots_.size() - 1;
  size_t slot = mix(key) & mask;
  while (slots_[slot].key != kEmpty && slots_[slot].key != key) slot = (slot + 1) & mask;
  return slot;
}

void MergeTable::insert(int32_t left, int32_t right, uint32_t rank, int32_t merged_id) {
  if (slots_.empty() || (size_ + 1) * 2 > slots_.size()) {
    std::vector<Entry> old = std::move(slots_);
    reserve(std::max<size_t>(16, (size_ + 1) * 2));
    for (const Entry& e : old) {
      if (e.key != kEmpty) slots_[slot_of(e.key)] = e, ++size_;
    }
  }
  const uint64_t key = key_of(left, right);
  Entry& e = slots_[slot_of(key)];
  if (e.key == kEmpty) ++size_;
  e = Entry{key, rank, merged_id};
}

const MergeTable::Entry* MergeTable::find(int32_t left, int32_t right) const {
  if (slots_.empty()) return nullptr;
  const Entry& e = slots_[slot_of(key_of(left, right))];
  return e.key == kEmpty ? nullptr : &e;
}

StatusOr<BpeModel> BpeModel::create(Vocab vocab,
                                    const std::vector<std::pair<std::string, std::string>>& merges,
                                    BpeOptions options) {
  BpeModel model;
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab) {
    if (id < 0) return invalid_argument("BPE vocab: token '" + token + "' has negative id");
    max_id = std::max(max_id, id);
  }
  model.id_to_token_.resize(static_cast<size_t>(max_id + 1));
  for (const auto& [token, id] : vocab) model.id_to_token_[id] = token;
  const size_t prefix_len = options.continuing_subword_prefix.size();
  model.merges_.reserve(merges.size());
  std::string merged;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    auto l = vocab.find(left), r = vocab.find(right);
    if (l == vocab.end() || r == vocab.end()) {
      return invalid_argument("BPE merge " + std::to_string(rank) + " ('" + left + "', '" + right +
                              "') uses a token that is not in the vocab");
    }
    merged = left + right.substr(std::min(prefix_len, right.size()));
    auto m = vocab.find(merged);
    if (m == vocab.end()) {
      return invalid_argument("BPE merge " + std::to_string(rank) + " yields '" + merged +
                              "', which is not in the vocab");
    }
    model.merges_.insert(l->second, r->second, static_cast<uint32_t>(rank), m->second);
  }
  if (options.unk_token) {
    auto it = vocab.find(*options.unk_token);
    model.unk_id_ = it == vocab.end() ? -1 : it->second;
  }
  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = vocab.find(std::string_view(name));
    model.byte_ids_[b] = it == vocab.end() ? -1 : it->second;
  }
  model.vocab_ = std::move(vocab);
  model.options_ = std::move(options);
  model.cache_owner_id_ = next_owner_id();
  model.init_char_ids();
  model.init_space_chunking();
  return model;
}

const std::string& BpeModel::id_to_token(int32_t id) const {
  static const std::string kEmptyToken;
  if (id < 0 || id >= id_limit()) return kEmptyToken;
  return id_to_token_[id];
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (!chunk_at_space_marker_) {
    tokenize_cached(word, out);
    return;
  }
  // A chunk ends where a "▁" follows a character other than "▁".
  size_t chunk_begin = 0;
  for (size_t pos = word.find(kSpaceMarker, 1); pos != std::string_view::npos;
       pos = word.find(kSpaceMarker, pos + 3)) {
    const bool after_marker = pos >= 3 && word.compare(pos - 3, 3, kSpaceMarker) == 0;
    if (after_marker || pos == chunk_begin) continue;
    tokenize_cached(word.substr(chunk_begin, pos - chunk_begin), out);
    chunk_begin = pos;
  }
  tokenize_cached(word.substr(chunk_begin), out);
}

void BpeModel::tokenize_cached(std::string_view word, std::vector<int32_t>* out) const {
  if (word.size() > kCacheMaxWordBytes) {
    merge_word(word, out);
    return;
  }
  WordCache& cache = thread_cache(cache_owner_id_);
  auto it = cache.words.find(word);
  if (it != cache.words.end()) {
    out->insert(out->end(), it->second.begin(), it->second.end());
    return;
  }
  const size_t first = out->size();
  merge_word(word, out);
  cache.words.emplace(std::string(word), std::vector<int32_t>(out->begin() + first, out->end()));
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>* out) const {
  if (options_.ignore_merges) {
    auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      out->push_back(it->second);
      return;
    }
  }
  thread_local std::vector<int32_t> ids;
  ids.clear();
  add_char_ids(word, &ids);
  apply_merges(&ids);
  out->insert(out->end(), ids.begin(), ids.end());
}

int32_t BpeModel::char_id_in_vocab(std::string_view ch) const {
  auto it = vocab_.find(ch);
  return it == vocab_.end() ? -1 : it->second;
}

int32_t BpeModel::char_id(std::string_view ch) const {
  char32_t c = 0;
  if (ch.size() <= 3 && utf8_decode(ch, 0, &c) == static_cast<int>(ch.size()) && c < 0x10000) {
    return bmp_char_ids_[c];
  }
  return char_id_in_vocab(ch);
}

void BpeModel::init_char_ids() {
  bmp_char_ids_.assign(0x10000, -1);
  char32_t c = 0;
  for (const auto& [token, id] : vocab_) {
    if (token.size() <= 3 && utf8_decode(token, 0, &c) == static_cast<int>(token.size()) &&
        c < 0x10000) {
      bmp_char_ids_[c] = id;
    }
  }
}

void BpeModel::init_space_chunking() {
  if (options_.ignore_merges || vocab_.find(std::string_view(kSpaceMarker)) == vocab_.end()) return;
  for (const auto& [token, id] : vocab_) {
    for (size_t pos = token.find(kSpaceMarker, 1); pos != std::string::npos;
         pos = token.find(kSpaceMarker, pos + 1)) {
      if (pos < 3 || token.compare(pos - 3, 3, kSpaceMarker) != 0) return;  // "x▁" exists
    }
  }
  chunk_at_space_marker_ = true;
}

// Maps each character to its id (with byte fallback and unk), as HF merge_word.
void BpeModel::add_char_ids(std::string_view word, std::vector<int32_t>* ids) const {
  const bool affixes =
      !options_.continuing_subword_prefix.empty() || !options_.end_of_word_suffix.empty();
  bool pending_unk = false;
  std::string key;
  for (size_t pos = 0; pos < word.size();) {
    const size_t len = utf8_lead_length(static_cast<uint8_t>(word[pos]));
    const std::string_view ch = word.substr(pos, len);
    std::string_view lookup = ch;
    if (affixes) {
      key.assign(pos == 0 ? "" : options_.continuing_subword_prefix);
      key.append(ch);
      if (pos + len >= word.size()) key.append(options_.end_of_word_suffix);
      lookup = key;
    }
    pos += len;
    const int32_t id = affixes ? char_id_in_vocab(lookup) : char_id(lookup);
    if (id >= 0) {
      if (pending_unk) ids->push_back(unk_id_), pending_unk = false;
      ids->push_back(id);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (char b : lookup) all = all && byte_ids_[static_cast<uint8_t>(b)] >= 0;
      if (all) {
        for (char b : lookup) ids->push_back(byte_ids_[static_cast<uint8_t>(b)]);
        continue;
      }
    }
    if (unk_id_ < 0) continue;  // no unk token: the character is dropped, as HF does
    if (pending_unk && !options_.fuse_unk) ids->push_back(unk_id_);
    pending_unk = true;
  }
  if (pending_unk) ids->push_back(unk_id_);
}

void BpeModel::apply_merges(std::vector<int32_t>* ids) const {
  const int32_t n = static_cast<int32_t>(ids->size());
  if (n < 2) return;
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  symbols.resize(n);
  heap.clear();
  for (int32_t i = 0; i < n; ++i) symbols[i] = {(*ids)[i], i - 1, i + 1 < n ? i + 1 : -1, true};
  const auto push_pair = [&](int32_t pos) {
    const int32_t next = symbols[pos].next;
    if (next < 0) return;
    if (const auto* e = merges_.find(symbols[pos].id, symbols[next].id)) {
      heap.push_back({e->rank, pos, e->merged_id});
      std::push_heap(heap.begin(), heap.end());
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_pair(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    const Symbol& right = symbols[left.next];
    const auto* e = merges_.find(left.id, right.id);
    if (e == nullptr || e->merged_id != top.merged_id) continue;  // stale candidate
    left.id = top.merged_id;
    const int32_t right_pos = left.next;
    symbols[right_pos].alive = false;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  ids->clear();
  for (int32_t i = 0; i >= 0; i = symbols[i].next) ids->push_back(symbols[i].id);
}

}  // namespace strata::tokenizer
