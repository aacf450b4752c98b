// A compiled PCRE2 regular expression (UTF + UCP, JIT when available) used by
// the pre-tokenizers, normalizers and decoders. Hugging Face tokenizers run
// their patterns with Oniguruma; the constructs real tokenizer.json files use
// (\p{L}, \p{N}, \s, (?i:...), look-ahead) mean the same in PCRE2 with UCP.
//
// Thread-safety: immutable after compile(); find_all() may be called from any
// number of threads at once (match data and JIT stacks are per thread).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace strata::tokenizer {

struct ByteRange {
  size_t begin = 0;
  size_t end = 0;
};

class Regex {
 public:
  // `pattern` is a regex, or a literal when `is_literal` (HF's {"String": ...}).
  static StatusOr<Regex> compile(std::string_view pattern, bool is_literal = false);

  // All non-overlapping matches, left to right. Empty matches are skipped.
  // `text` must be valid UTF-8.
  void find_all(std::string_view text, std::vector<ByteRange>* matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  Regex(std::string pattern, std::shared_ptr<const Code> code)
      : pattern_(std::move(pattern)), code_(std::move(code)) {}

  std::string pattern_;
  std::shared_ptr<const Code> code_;
};

}  // namespace strata::tokenizer
