// Prompt-lookup (n-gram) drafting, vLLM's "ngram" method: the request's own
// tokens (prompt + output) predict their continuation. For n from
// prompt_lookup_max down to prompt_lookup_min, the last n tokens are looked
// up in the earlier tokens; at the first n with a match, the tokens that
// followed its most recent earlier occurrence (up to k of them) are the
// drafts. When that occurrence is less than k tokens back (a loop of period
// p < k), the continuation runs into the drafts themselves and repeats with
// period p, so a loop still yields k drafts (vLLM stops at the end of the
// sequence and prefers the earliest occurrence instead).
//
// Cost: one backwards scan of at most `max_window` positions per n, comparing
// n tokens per candidate: O(window * max_n) worst case, O(window) typical
// (the first token mismatches). Plain token vectors, no tensors, no state:
// any thread (the engine thread calls it once per decoding request per step).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata::spec_decode {

struct NgramParams {
  int64_t min_n = 1;
  int64_t max_n = 1;
  int64_t k = 1;                       // drafts wanted, at most
  int64_t max_window = int64_t{1} << 20;  // positions searched back from the end
};

// The drafts for `tokens` (empty when no n-gram of the last min_n..max_n
// tokens occurs earlier, or when it is followed by nothing).
std::vector<int32_t> propose_ngram(std::span<const int32_t> tokens, const NgramParams& params);

}  // namespace strata::spec_decode
