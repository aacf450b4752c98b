#include "output_parsers/reasoning_streamer.h"

namespace strata::output_parsers {
namespace {

// Appends to *sent the part of `now` past it into *fragment; false when `now`
// does not extend *sent.
bool extend(std::string* sent, const std::string& now, std::string* fragment) {
  if (now.size() < sent->size() || now.compare(0, sent->size(), *sent) != 0) return false;
  *fragment = now.substr(sent->size());
  *sent = now;
  return true;
}

}  // namespace

ReasoningDelta ReasoningStreamer::update(std::string_view text_so_far) {
  return advance(parser_.parse_partial(text_so_far, prompt_opened_think_));
}

ReasoningDelta ReasoningStreamer::finish(std::string_view full_text) {
  result_ = parser_.parse(full_text, prompt_opened_think_);
  return advance(result_);
}

ReasoningDelta ReasoningStreamer::advance(const ReasoningResult& now) {
  ReasoningDelta delta;
  if (!extend(&sent_.reasoning, now.reasoning, &delta.reasoning_fragment)) diverged_ = true;
  if (!extend(&sent_.content, now.content, &delta.content_fragment)) diverged_ = true;
  sent_.has_reasoning = sent_.has_reasoning || now.has_reasoning;
  sent_.reasoning_ended = sent_.reasoning_ended || now.reasoning_ended;
  return delta;
}

}  // namespace strata::output_parsers
