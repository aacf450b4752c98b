// Splitting a piece of text at pattern matches with Hugging Face's
// SplitDelimiterBehavior semantics (NormalizedString::split). Internal to the
// pre-tokenizers; pure functions, thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/regex.h"

namespace strata::tokenizer {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

StatusOr<SplitBehavior> parse_split_behavior(const std::string& name);

// Appends the non-empty sub-pieces of `piece` to `out`.
void split_by_regex(const Piece& piece, const Regex& regex, SplitBehavior behavior, bool invert,
                    std::vector<Piece>* out);

// Every character for which `is_delimiter` holds is its own match.
void split_by_char(const Piece& piece, const std::function<bool(char32_t)>& is_delimiter,
                   SplitBehavior behavior, std::vector<Piece>* out);

}  // namespace strata::tokenizer
