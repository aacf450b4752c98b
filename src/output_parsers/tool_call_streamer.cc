#include "output_parsers/tool_call_streamer.h"

namespace strata::output_parsers {
namespace {

// The part of `now` past `sent`, or false when `now` does not extend `sent`.
bool extension(const std::string& sent, const std::string& now, std::string* rest) {
  if (now.size() < sent.size() || now.compare(0, sent.size(), sent) != 0) return false;
  *rest = now.substr(sent.size());
  return true;
}

}  // namespace

ToolCallStreamer::ToolCallStreamer(const ToolCallParser& parser,
                                   std::function<std::string()> make_id,
                                   const nlohmann::ordered_json* tools)
    : parser_(parser), make_id_(std::move(make_id)), tools_(tools) {}

StreamDelta ToolCallStreamer::update(std::string_view text_so_far) {
  return advance(parser_.parse_partial(text_so_far, tools_));
}

StreamDelta ToolCallStreamer::finish(std::string_view full_text) {
  result_ = parser_.parse(full_text, tools_);
  return advance(result_);
}

StreamDelta ToolCallStreamer::advance(const ToolParseResult& now) {
  StreamDelta delta;
  std::string rest;
  if (extension(sent_.content, now.content, &rest)) {
    delta.content = rest;
    sent_.content = now.content;
  } else {
    diverged_ = true;
  }
  if (now.calls.size() < sent_.calls.size()) diverged_ = true;
  for (size_t i = 0; i < now.calls.size(); ++i) {
    const ToolCall& call = now.calls[i];
    const bool is_new = i >= sent_.calls.size();
    if (is_new) {
      ids_.push_back(make_id_ ? make_id_() : parser_.make_call_id());
      sent_.calls.push_back(ToolCall{call.name, ""});
    } else if (sent_.calls[i].name != call.name) {
      diverged_ = true;
      continue;
    }
    ToolCall& sent = sent_.calls[i];
    if (!extension(sent.arguments, call.arguments, &rest)) {
      diverged_ = true;
      rest.clear();
    }
    if (!is_new && rest.empty()) continue;
    sent.arguments += rest;
    ToolCallDelta d;
    d.index = static_cast<int>(i);
    if (is_new) {
      d.id = ids_[i];
      d.name = call.name;
    }
    d.arguments_fragment = std::move(rest);
    delta.tool_calls.push_back(std::move(d));
  }
  return delta;
}

}  // namespace strata::output_parsers
