#include "runner/token_constraints.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/log.h"
#include "structured/token_bitmask.h"

namespace strata::runner {
namespace {

bool ends_with(std::span<const int32_t> seq, std::span<const int32_t> suffix) {
  return seq.size() >= suffix.size() &&
         std::equal(suffix.begin(), suffix.end(), seq.end() - suffix.size());
}

bool any_allowed(const float* logits, int64_t vocab) {
  for (int64_t i = 0; i < vocab; ++i) {
    if (logits[i] != -std::numeric_limits<float>::infinity()) return true;
  }
  return false;
}

}  // namespace

TokenConstraints::TokenConstraints(TokenConstraintSpec spec) : spec_(std::move(spec)) {
  if (spec_.grammar != nullptr) {
    matcher_ = std::make_unique<structured::GrammarMatcher>(spec_.grammar);
    grammar_active_ = spec_.grammar_starts_after.empty();
  }
}

void TokenConstraints::mask_grammar(float* logits, int64_t vocab) {
  if (matcher_->is_terminated()) {
    // Complete (ignore_eos or min_tokens keep the request going): only stop tokens.
    mask_to_stop_tokens(logits, vocab);
    return;
  }
  // The grammar's vocabulary may be larger than the model's (added tokens).
  const int64_t words = std::max(structured::GrammarMatcher::bitmask_words(vocab),
                                 structured::GrammarMatcher::bitmask_words(matcher_->vocab().size()));
  words_.resize(static_cast<size_t>(words));
  matcher_->fill_next_token_bitmask(words_);
  structured::apply_token_bitmask(words_, logits, vocab);
}

void TokenConstraints::mask_to_stop_tokens(float* logits, int64_t vocab) const {
  std::vector<float> kept;
  for (int32_t id : spec_.stop_token_ids) {
    kept.push_back(id >= 0 && id < vocab ? logits[id] : 0.0f);
  }
  std::fill(logits, logits + vocab, -std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < spec_.stop_token_ids.size(); ++i) {
    const int32_t id = spec_.stop_token_ids[i];
    if (id >= 0 && id < vocab) logits[id] = std::isinf(kept[i]) ? 0.0f : kept[i];
  }
}

void TokenConstraints::apply(const float* raw, float* logits, int64_t vocab,
                             std::span<const int32_t> generated) {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  std::copy(raw, raw + vocab, logits);
  if (!spec_.allowed_token_ids.empty()) {
    if (allowed_words_.empty()) {
      allowed_words_.assign(static_cast<size_t>(structured::token_bitmask_words(vocab)), 0);
      for (int32_t id : spec_.allowed_token_ids) {
        if (id >= 0 && id < vocab) structured::set_token_bit(allowed_words_, id);
      }
    }
    structured::apply_token_bitmask(allowed_words_, logits, vocab);
  }
  for (const std::vector<int32_t>& word : spec_.bad_words) {
    if (word.empty() || word.back() < 0 || word.back() >= vocab) continue;
    std::span<const int32_t> prefix(word.data(), word.size() - 1);
    if (ends_with(generated, prefix)) logits[word.back()] = kMasked;
  }
  if (grammar_active_) mask_grammar(logits, vocab);
  if (any_allowed(logits, vocab)) return;
  // Nothing left: the grammar alone, else the stop tokens (end the request),
  // else unconstrained.
  if (num_fallbacks_++ == 0) {
    STRATA_LOG(kWarning) << "token constraints allow no token at some step (allowed_token_ids / "
                            "bad_words against the grammar); falling back to the grammar alone";
  }
  if (grammar_active_) {
    std::copy(raw, raw + vocab, logits);
    mask_grammar(logits, vocab);
    if (any_allowed(logits, vocab)) return;
  }
  std::copy(raw, raw + vocab, logits);
  mask_to_stop_tokens(logits, vocab);
  if (!any_allowed(logits, vocab)) std::copy(raw, raw + vocab, logits);
}

void TokenConstraints::accept(int32_t token, std::span<const int32_t> generated) {
  if (matcher_ == nullptr) return;
  if (!grammar_active_) {
    const std::vector<int32_t>& marker = spec_.grammar_starts_after;
    grammar_active_ = marker.back() == token &&
                      ends_with(generated, std::span<const int32_t>(marker.data(), marker.size() - 1));
    return;
  }
  if (matcher_->is_terminated()) return;
  if (!matcher_->accept_token(token)) {
    if (num_rejected_++ == 0) {
      STRATA_LOG(kWarning) << "structured output: sampled token " << token
                           << " is outside the grammar (every allowed token had -inf logits)";
    }
  }
}

}  // namespace strata::runner
