#include "tokenizer/split.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace strata::tokenizer {
namespace {

struct Span {
  size_t begin;
  size_t end;
  bool is_match;
};

// Turns the matches into spans covering the whole text (gaps are non-matches).
void cover(size_t size, const std::vector<ByteRange>& matches, std::vector<Span>* spans) {
  size_t prev = 0;
  for (const ByteRange& m : matches) {
    if (prev != m.begin) spans->push_back({prev, m.begin, false});
    spans->push_back({m.begin, m.end, true});
    prev = m.end;
  }
  if (prev != size) spans->push_back({prev, size, false});
}

// Span list after applying the behavior; `keep[i]` is false for removed spans.
void apply_behavior(SplitBehavior behavior, std::vector<Span>* spans, std::vector<bool>* keep) {
  std::vector<Span> out;
  keep->clear();
  bool previous_match = false;
  const auto merge_or_push = [&](const Span& s, bool merge) {
    if (merge && !out.empty()) {
      out.back().end = s.end;
    } else {
      out.push_back(s);
      keep->push_back(true);
    }
  };
  switch (behavior) {
    case SplitBehavior::kIsolated:
      keep->assign(spans->size(), true);
      return;
    case SplitBehavior::kRemoved:
      for (const Span& s : *spans) keep->push_back(!s.is_match);
      return;
    case SplitBehavior::kContiguous:
      for (const Span& s : *spans) {
        merge_or_push(s, s.is_match == previous_match && !out.empty());
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : *spans) {
        merge_or_push(s, s.is_match && !previous_match);
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = spans->rbegin(); it != spans->rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) {
          out.back().begin = it->begin;
        } else {
          out.push_back(*it);
          keep->push_back(true);
        }
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
  }
  *spans = std::move(out);
}

void emit(const Piece& piece, std::vector<Span>* spans, SplitBehavior behavior,
          std::vector<Piece>* out) {
  std::vector<bool> keep;
  apply_behavior(behavior, spans, &keep);
  for (size_t i = 0; i < spans->size(); ++i) {
    const Span& s = (*spans)[i];
    if (!keep[i] || s.end == s.begin) continue;
    out->push_back(
        {piece.text.substr(s.begin, s.end - s.begin), piece.at_input_start && s.begin == 0});
  }
}

}  // namespace

StatusOr<SplitBehavior> parse_split_behavior(const std::string& name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return invalid_argument("pre_tokenizer Split: unknown behavior '" + name + "'");
}

void split_by_regex(const Piece& piece, const Regex& regex, SplitBehavior behavior, bool invert,
                    std::vector<Piece>* out) {
  thread_local std::vector<ByteRange> matches;
  regex.find_all(piece.text, &matches);
  if (behavior == SplitBehavior::kIsolated && !invert) {
    // Fast path (every byte-level tokenizer): spans are the matches plus gaps.
    size_t prev = 0;
    const auto push = [&](size_t b, size_t e) {
      out->push_back({piece.text.substr(b, e - b), piece.at_input_start && b == 0});
    };
    for (const ByteRange& m : matches) {
      if (prev != m.begin) push(prev, m.begin);
      push(m.begin, m.end);
      prev = m.end;
    }
    if (prev != piece.text.size()) push(prev, piece.text.size());
    return;
  }
  std::vector<Span> spans;
  cover(piece.text.size(), matches, &spans);
  if (invert) {
    for (Span& s : spans) s.is_match = !s.is_match;
  }
  emit(piece, &spans, behavior, out);
}

void split_by_char(const Piece& piece, const std::function<bool(char32_t)>& is_delimiter,
                   SplitBehavior behavior, std::vector<Piece>* out) {
  std::vector<ByteRange> matches;
  char32_t c = 0;
  for (size_t pos = 0; pos < piece.text.size();) {
    int n = utf8_decode(piece.text, pos, &c);
    if (n == 0) n = 1;
    if (is_delimiter(c)) matches.push_back({pos, pos + n});
    pos += n;
  }
  std::vector<Span> spans;
  cover(piece.text.size(), matches, &spans);
  emit(piece, &spans, behavior, out);
}

}  // namespace strata::tokenizer
