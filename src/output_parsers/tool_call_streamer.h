// ToolCallStreamer: turns the successive parse results of a growing generated
// text into OpenAI chat-completion stream deltas, the way vLLM emits them:
//   - content fragments;
//   - per call, a first delta {index, id, name} (type "function" is implied) that may
//     already carry the first arguments fragment, then arguments fragments.
// The concatenation of all content fragments is the final content, and the
// concatenation of a call's fragments its final arguments (parse() of the full text),
// because every partial result is a prefix of the final one (tool_call_parser.h).
//
// Usage, per generated sequence, on the thread that owns the request:
//   ToolCallStreamer s(parser);            // ids from parser.make_call_id()
//   for each new piece: send(s.update(text_so_far));
//   at the end:         send(s.finish(full_text)); s.result() is the final parse.
// Not thread-safe; the parser must outlive the streamer.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "output_parsers/tool_call_parser.h"

namespace strata::output_parsers {

struct ToolCallDelta {
  int index = 0;                   // position of the call in the response
  std::string id;                  // non-empty only in the call's first delta
  std::string name;                // non-empty only in the call's first delta
  std::string arguments_fragment;  // may be empty
};

struct StreamDelta {
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && tool_calls.empty(); }
};

class ToolCallStreamer {
 public:
  // `make_id`: call ids (null: parser.make_call_id()). `tools`: see ToolCallParser::parse;
  // must outlive the streamer.
  explicit ToolCallStreamer(const ToolCallParser& parser,
                            std::function<std::string()> make_id = nullptr,
                            const nlohmann::ordered_json* tools = nullptr);

  // Called after each new piece of text; `text_so_far` extends the previous one.
  StreamDelta update(std::string_view text_so_far);
  // End of generation: flushes held-back content and the rest of each call's arguments.
  StreamDelta finish(std::string_view full_text);
  // The final parse, after finish().
  const ToolParseResult& result() const { return result_; }
  // Ids given to the calls so far, by index.
  const std::vector<std::string>& call_ids() const { return ids_; }
  // True when a parse result contradicted text already sent (a parser bug; the
  // contradicting part was not sent).
  bool diverged() const { return diverged_; }

 private:
  StreamDelta advance(const ToolParseResult& now);

  const ToolCallParser& parser_;
  std::function<std::string()> make_id_;
  const nlohmann::ordered_json* tools_;
  ToolParseResult sent_;  // what the deltas so far add up to
  std::vector<std::string> ids_;
  ToolParseResult result_;
  bool diverged_ = false;
};

}  // namespace strata::output_parsers
