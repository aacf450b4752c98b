#include "server/chat_output.h"

#include <algorithm>

namespace strata::server {
namespace {

// The part of `now` not sent yet, when what was sent is still its prefix.
std::string fresh_suffix(const std::string& now, size_t sent) {
  return now.size() > sent ? now.substr(sent) : std::string();
}

}  // namespace

ChatOutputSplitter::ChatOutputSplitter(ChatOutputOptions options,
                                       std::function<std::string()> make_call_id)
    : options_(std::move(options)), make_call_id_(std::move(make_call_id)) {
  if (options_.tool_parser == nullptr) return;
  if (!make_call_id_) {
    const output_parsers::ToolCallParser* parser = options_.tool_parser.get();
    make_call_id_ = [parser] { return parser->make_call_id(); };
  }
  streamer_.emplace(*options_.tool_parser, make_call_id_, options_.tools.get());
}

std::string ChatOutputSplitter::reasoning_step(std::string_view text, bool final,
                                               ChoiceOutput& delta) {
  if (options_.reasoning == nullptr) return std::string(text);
  output_parsers::ReasoningResult r =
      final ? options_.reasoning->parse(text, options_.prompt_opened_think)
            : options_.reasoning->parse_partial(text, options_.prompt_opened_think);
  delta.reasoning += fresh_suffix(r.reasoning, sent_reasoning_);
  sent_reasoning_ = std::max(sent_reasoning_, r.reasoning.size());
  return std::move(r.content);
}

void ChatOutputSplitter::content_step(const std::string& content, bool final,
                                      ChoiceOutput& delta) {
  if (!streamer_) {
    delta.text += fresh_suffix(content, sent_content_);
    sent_content_ = std::max(sent_content_, content.size());
    return;
  }
  output_parsers::StreamDelta d = final ? streamer_->finish(content) : streamer_->update(content);
  delta.text += d.content;
  for (output_parsers::ToolCallDelta& t : d.tool_calls) {
    has_tool_calls_ = true;
    if (t.id.empty() && !delta.tool_calls.empty() && delta.tool_calls.back().index == t.index) {
      delta.tool_calls.back().arguments += t.arguments_fragment;  // one fragment per call and chunk
      continue;
    }
    delta.tool_calls.push_back({t.index, std::move(t.id), std::move(t.name),
                                std::move(t.arguments_fragment)});
  }
  if (final && !streamer_->result().calls.empty()) has_tool_calls_ = true;
}

void ChatOutputSplitter::add(std::string_view text, ChoiceOutput& delta) {
  full_ += text;
  content_step(reasoning_step(full_, false, delta), false, delta);
}

void ChatOutputSplitter::finish(ChoiceOutput& delta) {
  content_step(reasoning_step(full_, true, delta), true, delta);
}

void ChatOutputSplitter::split_whole(std::string_view full_text, ChoiceOutput& out) {
  std::string content = std::string(full_text);
  if (options_.reasoning != nullptr) {
    output_parsers::ReasoningResult r =
        options_.reasoning->parse(full_text, options_.prompt_opened_think);
    out.has_reasoning = r.has_reasoning;
    out.reasoning = std::move(r.reasoning);
    content = std::move(r.content);
    out.content_null = r.has_reasoning && content.empty();  // vLLM: content or None
  }
  out.text = content;
  if (options_.tool_parser == nullptr) return;
  output_parsers::ToolParseResult parsed =
      options_.tool_parser->parse(content, options_.tools.get());
  if (parsed.calls.empty()) return;
  has_tool_calls_ = true;
  out.text = std::move(parsed.content);
  out.content_null = out.text.empty() && (options_.null_content_with_calls || out.has_reasoning);
  for (size_t i = 0; i < parsed.calls.size(); ++i) {
    out.tool_calls.push_back({static_cast<int>(i), make_call_id_(), std::move(parsed.calls[i].name),
                              std::move(parsed.calls[i].arguments)});
  }
}

}  // namespace strata::server
