#include "spec_decode/ngram_proposer.h"

#include <algorithm>

namespace strata::spec_decode {
namespace {

// Start of the most recent earlier occurrence of the last n tokens, or -1.
// Candidates end before the last token, so the suffix never matches itself.
int64_t find_latest(std::span<const int32_t> tokens, int64_t n, int64_t max_window) {
  const int64_t len = static_cast<int64_t>(tokens.size());
  const int64_t suffix = len - n;
  const int64_t lowest = std::max<int64_t>(0, len - max_window);
  const int32_t last = tokens[len - 1];
  // A candidate starting at s ends at s + n - 1 < len - 1.
  for (int64_t s = suffix - 1; s >= lowest; --s) {
    if (tokens[s + n - 1] != last) continue;
    if (std::equal(tokens.begin() + s, tokens.begin() + s + n - 1, tokens.begin() + suffix)) {
      return s;
    }
  }
  return -1;
}

}  // namespace

std::vector<int32_t> propose_ngram(std::span<const int32_t> tokens, const NgramParams& params) {
  const int64_t len = static_cast<int64_t>(tokens.size());
  for (int64_t n = std::min(params.max_n, len - 1); n >= params.min_n; --n) {
    const int64_t start = find_latest(tokens, n, params.max_window);
    if (start < 0) continue;
    // Token len + j is predicted as the one `period` earlier, which is a
    // draft itself once len + j - period >= len.
    const int64_t period = len - n - start;
    std::vector<int32_t> drafts;
    drafts.reserve(static_cast<size_t>(params.k));
    for (int64_t j = 0; j < params.k; ++j) {
      const int64_t src = len + j - period;
      drafts.push_back(src < len ? tokens[src] : drafts[src - len]);
    }
    return drafts;
  }
  return {};
}

}  // namespace strata::spec_decode
