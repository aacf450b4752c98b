#include "tokenizer/incremental_detokenizer.h"

#include <algorithm>

namespace strata::tokenizer {
namespace {

constexpr size_t kContextTokens = 6;

bool ends_with_replacement(const std::string& text) {
  return text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer,
                                               DetokenizerOptions options)
    : tokenizer_(&tokenizer),
      options_(options),
      byte_fallback_(tokenizer.has_byte_fallback_decoder()) {}

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer,
                                               DetokenizerOptions options,
                                               const std::vector<int32_t>& context_ids)
    : IncrementalDetokenizer(tokenizer, options) {
  const size_t take = std::min(context_ids.size(), kContextTokens);
  ids_.assign(context_ids.end() - static_cast<std::ptrdiff_t>(take), context_ids.end());
  read_offset_ = ids_.size();
}

bool IncrementalDetokenizer::renders_text(int32_t id) const {
  if (options_.skip_special_tokens && tokenizer_->is_special(id)) return false;
  return !tokenizer_->id_to_token(id).empty();
}

bool IncrementalDetokenizer::is_byte_token(int32_t id) const {
  if (!byte_fallback_ || tokenizer_->is_added(id)) return false;
  const std::string token = tokenizer_->id_to_token(id);
  return token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>';
}

std::string IncrementalDetokenizer::decode_range(size_t begin, size_t end) const {
  const std::vector<int32_t> window(ids_.begin() + static_cast<std::ptrdiff_t>(begin),
                                    ids_.begin() + static_cast<std::ptrdiff_t>(end));
  return tokenizer_->decode(window, options_.skip_special_tokens);
}

std::string IncrementalDetokenizer::add(int32_t id) {
  ++num_ids_;
  ids_.push_back(id);
  if (renders_text(id)) last_text_id_is_byte_ = is_byte_token(id);
  // A byte-fallback run renders as a whole (valid UTF-8, or one U+FFFD per
  // byte), so nothing after its start is final until a non-byte token ends it.
  if (last_text_id_is_byte_) return "";
  const std::string prefix_text = decode_range(prefix_offset_, read_offset_);
  const std::string new_text = decode_range(prefix_offset_, ids_.size());
  if (new_text.size() <= prefix_text.size() || ends_with_replacement(new_text) ||
      new_text.compare(0, prefix_text.size(), prefix_text) != 0) {
    return "";
  }
  advance();
  return new_text.substr(prefix_text.size());
}

std::string IncrementalDetokenizer::finish() {
  const std::string prefix_text = decode_range(prefix_offset_, read_offset_);
  const std::string new_text = decode_range(prefix_offset_, ids_.size());
  last_text_id_is_byte_ = false;
  advance();
  if (new_text.size() <= prefix_text.size()) return "";
  return new_text.substr(prefix_text.size());
}

// The ids up to the end are now emitted. The next window starts at the first
// text-rendering id of the newly emitted part (or stays put if it has none).
void IncrementalDetokenizer::advance() {
  size_t first_text = read_offset_;
  while (first_text < ids_.size() && !renders_text(ids_[first_text])) ++first_text;
  if (first_text < ids_.size()) prefix_offset_ = first_text;
  read_offset_ = ids_.size();
  compact();
}

void IncrementalDetokenizer::compact() {
  if (prefix_offset_ == 0) return;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_offset_));
  read_offset_ -= prefix_offset_;
  prefix_offset_ = 0;
}

}  // namespace strata::tokenizer
