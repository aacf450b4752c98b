// StopMatcher: matches OpenAI `stop` strings on streamed, detokenized text.
// Text that might be the start of a stop string is held back (never emitted
// until it is known not to be one); when a stop string completes, the text
// before it is released (plus the stop string itself only with
// include_stop_str_in_output) and generation should end.
//
// Invariant: concat(released text) + flush() is the input text, cut at the
// first stop string. Held-back suffixes start at UTF-8 character boundaries
// because they match the start of a (valid UTF-8) stop string.
//
// Thread-safety: one instance per generated sequence, one thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::server {

class StopMatcher {
 public:
  StopMatcher() = default;
  StopMatcher(std::vector<std::string> stops, bool include_stop_str);

  struct Result {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string completed
    std::string stop_str;  // which one
  };
  Result push(std::string_view delta);
  // End of generation without a stop: everything held back.
  std::string flush();
  bool empty() const { return stops_.empty(); }

 private:
  size_t held_suffix_length() const;

  std::vector<std::string> stops_;
  bool include_stop_str_ = false;
  std::string pending_;
};

}  // namespace strata::server
