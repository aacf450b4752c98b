// ReasoningStreamer: turns successive ReasoningParser results of a growing text
// into stream deltas {reasoning_fragment, content_fragment}; the fragments add up
// to parse() of the full text. Usage and threading as ToolCallStreamer: one per
// generated sequence, on the thread that owns the request; the parser must
// outlive it.
#pragma once

#include <string>
#include <string_view>

#include "output_parsers/reasoning_parser.h"

namespace strata::output_parsers {

struct ReasoningDelta {
  std::string reasoning_fragment;
  std::string content_fragment;
  bool empty() const { return reasoning_fragment.empty() && content_fragment.empty(); }
};

class ReasoningStreamer {
 public:
  ReasoningStreamer(const ReasoningParser& parser, bool prompt_opened_think)
      : parser_(parser), prompt_opened_think_(prompt_opened_think) {}

  ReasoningDelta update(std::string_view text_so_far);
  ReasoningDelta finish(std::string_view full_text);
  const ReasoningResult& result() const { return result_; }
  // True once </think> was seen: what follows is content (e.g. for the tool parser).
  bool reasoning_ended() const { return sent_.reasoning_ended; }
  // True when a result contradicted text already sent (a parser bug).
  bool diverged() const { return diverged_; }

 private:
  ReasoningDelta advance(const ReasoningResult& now);

  const ReasoningParser& parser_;
  bool prompt_opened_think_;
  ReasoningResult sent_;
  ReasoningResult result_;
  bool diverged_ = false;
};

}  // namespace strata::output_parsers
