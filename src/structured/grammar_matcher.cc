#include "structured/grammar_matcher.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>

namespace strata::structured {
namespace detail {
namespace {

constexpr uint32_t kRootParent = 0xFFFFFFFFu;  // below the root rule: popping it = done
constexpr uint32_t kCtxParent = 0xFFFFFFFEu;   // cut-off context: popping it = "needs the rest"
constexpr uint32_t kDead = 0xFFFFFFFFu;        // step result: no stack survives
constexpr uint32_t kUnknown = 0xFFFFFFFEu;     // transition table: not computed yet

constexpr uint32_t kMinCodePoint[] = {0, 0, 0x80, 0x800, 0x10000};

int utf8_lead_length(uint8_t b) {
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 0;
}

bool is_valid_code_point(uint32_t cp, int len) {
  return cp >= kMinCodePoint[len] && cp <= kMaxCodePoint && !(cp >= 0xD800 && cp <= 0xDFFF);
}

}  // namespace

// Memoized (state, byte) -> state transitions: open addressing with linear probing. Memory
// grows with the transitions actually taken (a dense 256-entry row per state would cost 1 KiB
// for every state a vocabulary walk creates).
class TransitionTable {
 public:
  TransitionTable() : keys_(kInitialSlots, 0), values_(kInitialSlots, 0) {}

  // kUnknown if not stored.
  uint32_t find(uint32_t state, uint8_t byte) const {
    const uint64_t key = encode(state, byte);
    for (size_t i = slot(key);; i = (i + 1) & mask()) {
      if (keys_[i] == key) return values_[i];
      if (keys_[i] == 0) return kUnknown;
    }
  }
  void insert(uint32_t state, uint8_t byte, uint32_t next) {
    if ((size_ + 1) * 2 > keys_.size()) grow();
    place(encode(state, byte), next);
    ++size_;
  }

 private:
  static constexpr size_t kInitialSlots = 1024;
  static uint64_t encode(uint32_t state, uint8_t byte) {
    return ((uint64_t{state} << 8) | byte) + 1;
  }
  size_t mask() const { return keys_.size() - 1; }
  size_t slot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask();
  }
  void place(uint64_t key, uint32_t value) {
    size_t i = slot(key);
    while (keys_[i] != 0) i = (i + 1) & mask();
    keys_[i] = key;
    values_[i] = value;
  }
  void grow() {
    std::vector<uint64_t> old_keys(keys_.size() * 2, 0);
    std::vector<uint32_t> old_values(values_.size() * 2, 0);
    old_keys.swap(keys_);
    old_values.swap(values_);
    for (size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] != 0) place(old_keys[i], old_values[i]);
    }
  }

  std::vector<uint64_t> keys_;  // 0 = empty slot
  std::vector<uint32_t> values_;
  size_t size_ = 0;
};

// A set of stacks (as interned top nodes) plus the partial UTF-8 character.
struct PdaState {
  std::vector<uint32_t> tops;  // sorted node ids, each at a kCharSet position
  bool accepting = false;      // some stack popped the root rule: the grammar can end here
  bool ctx = false;            // some stack popped into kCtxParent (local walks only)
  uint8_t utf8_len = 0;        // byte length of the partial character (0: none)
  uint8_t utf8_need = 0;       // continuation bytes still missing
  uint32_t utf8_prefix = 0;    // value bits seen so far

  bool alive() const { return !tops.empty() || accepting || ctx; }
  std::string key() const {
    std::string k(tops.size() * 4 + 7, '\0');
    if (!tops.empty()) std::memcpy(k.data(), tops.data(), tops.size() * 4);
    char* tail = k.data() + tops.size() * 4;
    tail[0] = static_cast<char>(accepting | (ctx << 1));
    tail[1] = static_cast<char>(utf8_len);
    tail[2] = static_cast<char>(utf8_need);
    std::memcpy(tail + 3, &utf8_prefix, 4);
    return k;
  }
};

// Interned stack nodes and automaton states with memoized byte transitions.
// Single-threaded; one per matcher (and one per cache-entry computation).
class StackPool {
 public:
  explicit StackPool(const Grammar* grammar) : g_(grammar) {}

  uint32_t node(uint32_t pos, uint32_t parent) {
    const uint64_t key = (uint64_t{pos} << 32) | parent;
    auto [it, inserted] = node_ids_.emplace(key, static_cast<uint32_t>(nodes_.size()));
    if (inserted) nodes_.push_back({pos, parent});
    return it->second;
  }
  uint32_t pos(uint32_t n) const { return nodes_[n].first; }
  uint32_t parent(uint32_t n) const { return nodes_[n].second; }

  uint32_t intern(PdaState s) {
    auto [it, inserted] = state_ids_.emplace(s.key(), static_cast<uint32_t>(states_.size()));
    if (inserted) {
      ctx_flags_.push_back(s.ctx);
      states_.push_back(std::move(s));
    }
    return it->second;
  }
  const PdaState& state(uint32_t id) const { return states_[id]; }
  bool has_ctx(uint32_t id) const { return ctx_flags_[id] != 0; }
  size_t num_states() const { return states_.size(); }
  size_t num_nodes() const { return nodes_.size(); }

  uint32_t step(uint32_t id, uint8_t byte) {
    uint32_t next = transitions_.find(id, byte);
    if (next != kUnknown) return next;
    next = compute_step(id, byte);
    transitions_.insert(id, byte, next);
    return next;
  }

  // The closure of the root rule's alternatives.
  uint32_t start_state() {
    begin_expansion();
    for (uint32_t alt : g_->rule_alts[g_->root_rule]) worklist_.push_back(node(alt, kRootParent));
    PdaState s;
    expand(&s);
    return intern(std::move(s));
  }

  // One stack from `positions` (top first); below the last frame lies the root (`rooted`) or
  // an unknown context.
  uint32_t chain_state(const std::vector<uint32_t>& positions, bool rooted) {
    uint32_t parent = rooted ? kRootParent : kCtxParent;
    for (size_t i = positions.size(); i-- > 1;) parent = node(positions[i], parent);
    PdaState s;
    s.tops = {node(positions[0], parent)};
    return intern(std::move(s));
  }

  // Positions of the top `frames` frames of the stack under top node `n`; *rooted = the stack
  // has no more frames.
  void context(uint32_t n, int frames, std::vector<uint32_t>* positions, bool* rooted) const {
    positions->clear();
    positions->push_back(pos(n));
    uint32_t p = parent(n);
    while (p != kRootParent && static_cast<int>(positions->size()) < frames) {
      positions->push_back(pos(p));
      p = parent(p);
    }
    *rooted = p == kRootParent;
  }

  // Copies state `id` of `from` (its stacks) into this pool.
  uint32_t import_state(const StackPool& from, uint32_t id) {
    const PdaState& src = from.state(id);
    PdaState s = src;
    std::vector<uint32_t> chain;
    for (size_t i = 0; i < src.tops.size(); ++i) {
      chain.clear();
      for (uint32_t n = src.tops[i]; n != kRootParent && n != kCtxParent; n = from.parent(n)) {
        chain.push_back(n);
      }
      uint32_t p = chain.empty() ? kRootParent : from.parent(chain.back());
      for (size_t j = chain.size(); j-- > 0;) p = node(from.pos(chain[j]), p);
      s.tops[i] = p;
    }
    std::sort(s.tops.begin(), s.tops.end());
    return intern(std::move(s));
  }

 private:
  const CharSet& char_set(uint32_t n) const { return g_->char_sets[g_->elements[pos(n)].value]; }

  void begin_expansion() {
    if (++epoch_ == 0) {  // wrapped: old marks would read as visited
      std::fill(visit_mark_.begin(), visit_mark_.end(), 0u);
      epoch_ = 1;
    }
    worklist_.clear();
  }

  // Expands the nodes on worklist_ down to character-set tops (or pops past the bottom).
  void expand(PdaState* out) {
    const std::vector<GrammarElement>& elements = g_->elements;
    while (!worklist_.empty()) {
      const uint32_t n = worklist_.back();
      worklist_.pop_back();
      if (n >= visit_mark_.size()) visit_mark_.resize(std::max<size_t>(n + 1, nodes_.size()), 0);
      if (visit_mark_[n] == epoch_) continue;
      visit_mark_[n] = epoch_;
      const uint32_t p = pos(n);
      const GrammarElement& e = elements[p];
      if (e.kind == ElementKind::kCharSet) {
        out->tops.push_back(n);
      } else if (e.kind == ElementKind::kEnd) {
        const uint32_t up = parent(n);
        if (up == kRootParent) {
          out->accepting = true;
        } else if (up == kCtxParent) {
          out->ctx = true;
        } else {
          worklist_.push_back(up);
        }
      } else {
        // A call in tail position returns straight to the caller's caller.
        const uint32_t ret =
            elements[p + 1].kind == ElementKind::kEnd ? parent(n) : node(p + 1, parent(n));
        for (uint32_t alt : g_->rule_alts[e.value]) worklist_.push_back(node(alt, ret));
      }
    }
    std::sort(out->tops.begin(), out->tops.end());
    out->tops.erase(std::unique(out->tops.begin(), out->tops.end()), out->tops.end());
  }

  uint32_t advance(const std::vector<uint32_t>& tops, uint32_t cp) {
    begin_expansion();
    for (uint32_t n : tops) {
      if (char_set(n).contains(cp)) worklist_.push_back(node(pos(n) + 1, parent(n)));
    }
    if (worklist_.empty()) return kDead;
    PdaState next;
    expand(&next);
    return next.alive() ? intern(std::move(next)) : kDead;
  }

  // Keeps the tops that can match some valid character starting with the partial bytes.
  uint32_t partial(const std::vector<uint32_t>& tops, uint32_t prefix, int need, int len) {
    uint32_t lo = prefix << (6 * need);
    uint32_t hi = lo | ((uint32_t{1} << (6 * need)) - 1);
    lo = std::max(lo, kMinCodePoint[len]);
    hi = std::min(hi, kMaxCodePoint);
    if (lo > hi) return kDead;
    PdaState next;
    for (uint32_t n : tops) {
      const CharSet& cs = char_set(n);
      const bool below = lo <= std::min(hi, 0xD7FFu) && cs.intersects(lo, std::min(hi, 0xD7FFu));
      const bool above = std::max(lo, 0xE000u) <= hi && cs.intersects(std::max(lo, 0xE000u), hi);
      if (below || above) next.tops.push_back(n);
    }
    if (next.tops.empty()) return kDead;
    next.utf8_len = static_cast<uint8_t>(len);
    next.utf8_need = static_cast<uint8_t>(need);
    next.utf8_prefix = prefix;
    return intern(std::move(next));
  }

  uint32_t compute_step(uint32_t id, uint8_t byte) {
    const std::vector<uint32_t> tops = states_[id].tops;  // copy: interning may reallocate
    const int need = states_[id].utf8_need;
    if (need > 0) {
      if ((byte & 0xC0) != 0x80) return kDead;
      const int len = states_[id].utf8_len;
      const uint32_t prefix = (states_[id].utf8_prefix << 6) | (byte & 0x3F);
      if (need > 1) return partial(tops, prefix, need - 1, len);
      return is_valid_code_point(prefix, len) ? advance(tops, prefix) : kDead;
    }
    if (byte < 0x80) return advance(tops, byte);
    const int len = utf8_lead_length(byte);
    if (len == 0) return kDead;
    return partial(tops, byte & (0x7Fu >> len), len - 1, len);
  }

  const Grammar* g_;
  std::vector<std::pair<uint32_t, uint32_t>> nodes_;  // (position, parent node or sentinel)
  std::unordered_map<uint64_t, uint32_t> node_ids_;
  std::vector<PdaState> states_;
  std::vector<uint8_t> ctx_flags_;  // [num_states] states_[i].ctx, dense for the trie walk
  std::unordered_map<std::string, uint32_t> state_ids_;
  TransitionTable transitions_;
  std::vector<uint32_t> visit_mark_;  // [num_nodes] epoch of the last visit
  uint32_t epoch_ = 0;
  std::vector<uint32_t> worklist_;
};

namespace {

// Walks the whole vocabulary trie from `start`. Tokens with a surviving stack get their bit
// in `accepted`; with `uncertain` given, tokens that died after some stack popped into the
// cut-off context are appended to it (sorted indices, ascending).
void walk_trie(StackPool& pool, const TokenVocabulary& vocab, uint32_t start,
               std::span<uint32_t> accepted, std::vector<uint32_t>* uncertain) {
  const std::vector<TokenVocabulary::TrieNode>& trie = vocab.trie();
  const std::vector<int32_t>& sorted = vocab.sorted_ids();
  std::vector<uint32_t> states(TokenVocabulary::kMaxTokenBytes + 1);
  std::vector<uint8_t> ctx_seen(TokenVocabulary::kMaxTokenBytes + 1);
  states[0] = start;
  ctx_seen[0] = 0;
  for (size_t n = 1; n < trie.size();) {
    const TokenVocabulary::TrieNode& node = trie[n];
    const uint32_t prev = states[node.depth - 1];
    const bool ctx_before = ctx_seen[node.depth - 1] || pool.has_ctx(prev);
    const uint32_t next = pool.step(prev, node.byte);
    if (next == kDead) {
      if (ctx_before && uncertain != nullptr) {
        for (uint32_t s = node.tokens_begin; s < node.tokens_end; ++s) uncertain->push_back(s);
      }
      n = node.subtree_end;
      continue;
    }
    states[node.depth] = next;
    ctx_seen[node.depth] = ctx_before;
    for (uint32_t s = node.tokens_begin; s < node.own_end; ++s) set_token_bit(accepted, sorted[s]);
    ++n;
  }
}

// Sets the bits of the tokens in `candidates` (sorted indices, ascending) that `start` accepts.
void check_tokens(StackPool& pool, const TokenVocabulary& vocab, uint32_t start,
                  const std::vector<uint32_t>& candidates, std::span<uint32_t> words) {
  std::vector<uint32_t> path = {start};  // path[d] = state after the first d bytes of prev
  std::string_view prev;
  for (uint32_t s : candidates) {
    const int32_t id = vocab.sorted_ids()[s];
    const std::string_view bytes = vocab.token_bytes(id);
    size_t lcp = 0;
    const size_t limit = std::min({prev.size(), bytes.size(), path.size() - 1});
    while (lcp < limit && prev[lcp] == bytes[lcp]) ++lcp;
    path.resize(lcp + 1);
    bool alive = true;
    for (size_t d = lcp; d < bytes.size(); ++d) {
      const uint32_t next = pool.step(path.back(), static_cast<uint8_t>(bytes[d]));
      if (next == kDead) {
        alive = false;
        break;
      }
      path.push_back(next);
    }
    if (alive) set_token_bit(words, id);
    prev = bytes;
  }
}

std::string context_key(const std::vector<uint32_t>& positions, bool rooted) {
  std::string key(positions.size() * 4 + 1, '\0');
  std::memcpy(key.data(), positions.data(), positions.size() * 4);
  key.back() = rooted ? 'R' : 'C';
  return key;
}

std::shared_ptr<const MaskCacheEntry> compute_mask_entry(const CompiledGrammar& grammar,
                                                         const std::vector<uint32_t>& positions,
                                                         bool rooted) {
  StackPool pool(&grammar.grammar());
  const uint32_t start = pool.chain_state(positions, rooted);
  auto entry = std::make_shared<MaskCacheEntry>();
  entry->accepted_words.assign(static_cast<size_t>(token_bitmask_words(grammar.vocab().size())), 0);
  walk_trie(pool, grammar.vocab(), start, entry->accepted_words, &entry->uncertain);
  return entry;
}

constexpr size_t kMaxPoolStates = 4096;
constexpr size_t kMaxPoolNodes = size_t{1} << 20;
constexpr size_t kNumRecentMasks = 8;

}  // namespace
}  // namespace detail

using detail::kDead;

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, int context_frames)
    : grammar_(std::move(grammar)), context_frames_(context_frames) {
  STRATA_CHECK(grammar_ != nullptr);
  STRATA_CHECK(context_frames_ >= 1) << "context_frames " << context_frames_;
  pool_ = std::make_unique<detail::StackPool>(&grammar_->grammar());
  state_ = pool_->start_state();
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                               std::unique_ptr<detail::StackPool> pool, uint32_t state)
    : grammar_(std::move(grammar)), pool_(std::move(pool)), state_(state) {}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

GrammarMatcher GrammarMatcher::clone() const {
  auto pool = std::make_unique<detail::StackPool>(&grammar_->grammar());
  const uint32_t state = pool->import_state(*pool_, state_);
  GrammarMatcher copy(grammar_, std::move(pool), state);
  copy.terminated_ = terminated_;
  copy.context_frames_ = context_frames_;
  return copy;
}

uint32_t GrammarMatcher::walk(std::string_view bytes) {
  uint32_t s = state_;
  for (char c : bytes) {
    s = pool_->step(s, static_cast<uint8_t>(c));
    if (s == kDead) return kDead;
  }
  return s;
}

bool GrammarMatcher::can_terminate() const { return pool_->state(state_).accepting; }

bool GrammarMatcher::accept_token(int32_t token_id) {
  const TokenVocabulary& v = vocab();
  if (terminated_ || token_id < 0 || token_id >= v.size()) return false;
  if (v.is_stop_token(token_id)) {
    if (!can_terminate()) return false;
    terminated_ = true;
    return true;
  }
  if (!v.is_grammar_token(token_id)) return false;
  return accept_string(v.token_bytes(token_id));
}

bool GrammarMatcher::accept_string(std::string_view bytes) {
  if (terminated_) return false;
  const uint32_t next = walk(bytes);
  if (next == kDead) return false;
  state_ = next;
  maybe_compact();
  return true;
}

void GrammarMatcher::maybe_compact() {
  if (pool_->num_states() <= detail::kMaxPoolStates &&
      pool_->num_nodes() <= detail::kMaxPoolNodes) {
    return;
  }
  auto fresh = std::make_unique<detail::StackPool>(&grammar_->grammar());
  state_ = fresh->import_state(*pool_, state_);
  pool_ = std::move(fresh);
  recent_masks_.clear();
  next_recent_ = 0;
}

void GrammarMatcher::set_stop_bits(std::span<uint32_t> words) const {
  if (!can_terminate()) return;
  for (int32_t id : vocab().stop_token_ids()) set_token_bit(words, id);
}

void GrammarMatcher::fill_next_token_bitmask_uncached(std::span<uint32_t> words) {
  const size_t num_words = static_cast<size_t>(bitmask_words(vocab().size()));
  STRATA_CHECK(words.size() >= num_words)
      << "bitmask has " << words.size() << " words; need " << num_words;
  std::fill(words.begin(), words.end(), 0u);
  if (terminated_) return;
  detail::walk_trie(*pool_, vocab(), state_, words, nullptr);
  set_stop_bits(words);
  maybe_compact();
}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> words) {
  const TokenVocabulary& v = vocab();
  const size_t num_words = static_cast<size_t>(bitmask_words(v.size()));
  STRATA_CHECK(words.size() >= num_words)
      << "bitmask has " << words.size() << " words; need " << num_words;
  std::fill(words.begin(), words.end(), 0u);
  if (terminated_) return;
  for (const auto& [id, mask] : recent_masks_) {
    if (id == state_) {
      std::copy(mask.begin(), mask.end(), words.begin());
      return;
    }
  }
  // Copied: the pool's states may move while the re-check below interns new ones.
  const std::vector<uint32_t> tops = pool_->state(state_).tops;
  if (pool_->state(state_).utf8_need > 0) {
    // Inside a character: only continuation bytes survive, so the walk prunes at once.
    detail::walk_trie(*pool_, v, state_, words, nullptr);
  } else {
    std::vector<std::string> keys;
    std::vector<std::pair<std::vector<uint32_t>, bool>> contexts;
    std::vector<uint32_t> positions;
    for (uint32_t top : tops) {
      bool rooted = false;
      pool_->context(top, context_frames_, &positions, &rooted);
      std::string key = detail::context_key(positions, rooted);
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      keys.push_back(std::move(key));
      contexts.emplace_back(positions, rooted);
    }
    std::vector<uint32_t> uncertain;
    for (size_t k = 0; k < keys.size(); ++k) {
      std::shared_ptr<const MaskCacheEntry> entry = grammar_->find_mask_entry(keys[k]);
      if (!entry) {
        entry = grammar_->insert_mask_entry(
            keys[k], detail::compute_mask_entry(*grammar_, contexts[k].first, contexts[k].second));
      }
      for (size_t w = 0; w < num_words; ++w) words[w] |= entry->accepted_words[w];
      uncertain.insert(uncertain.end(), entry->uncertain.begin(), entry->uncertain.end());
    }
    if (keys.size() > 1) {
      std::sort(uncertain.begin(), uncertain.end());
      uncertain.erase(std::unique(uncertain.begin(), uncertain.end()), uncertain.end());
    }
    detail::check_tokens(*pool_, v, state_, uncertain, words);
  }
  set_stop_bits(words);
  std::vector<uint32_t> copy(words.begin(), words.begin() + static_cast<ptrdiff_t>(num_words));
  if (recent_masks_.size() < detail::kNumRecentMasks) {
    recent_masks_.emplace_back(state_, std::move(copy));
  } else {
    recent_masks_[next_recent_] = {state_, std::move(copy)};
    next_recent_ = (next_recent_ + 1) % detail::kNumRecentMasks;
  }
  maybe_compact();
}

}  // namespace strata::structured
