#include "server/chat_output.h"

namespace strata::server {

ChatOutputSplitter::ChatOutputSplitter(ChatOutputOptions options,
                                       std::function<std::string()> make_call_id)
    : options_(std::move(options)), make_call_id_(std::move(make_call_id)) {
  if (options_.reasoning != nullptr) {
    reasoning_.emplace(*options_.reasoning, options_.prompt_opened_think);
  }
  if (options_.tool_parser == nullptr) return;
  if (!make_call_id_) {
    const output_parsers::ToolCallParser* parser = options_.tool_parser.get();
    make_call_id_ = [parser] { return parser->make_call_id(); };
  }
  streamer_.emplace(*options_.tool_parser, make_call_id_, options_.tools.get());
}

void ChatOutputSplitter::content_step(std::string_view fresh, bool final, ChoiceOutput& delta) {
  if (!streamer_) {
    delta.text += fresh;
    return;
  }
  content_ += fresh;
  output_parsers::StreamDelta d = final ? streamer_->finish(content_) : streamer_->update(content_);
  delta.text += d.content;
  for (output_parsers::ToolCallDelta& t : d.tool_calls) {
    has_tool_calls_ = true;  // every call's first delta passes here
    if (t.id.empty() && !delta.tool_calls.empty() && delta.tool_calls.back().index == t.index) {
      delta.tool_calls.back().arguments += t.arguments_fragment;  // one fragment per call and chunk
      continue;
    }
    delta.tool_calls.push_back({t.index, std::move(t.id), std::move(t.name),
                                std::move(t.arguments_fragment)});
  }
}

void ChatOutputSplitter::add(std::string_view text, ChoiceOutput& delta) {
  if (!reasoning_) return content_step(text, false, delta);
  full_ += text;
  output_parsers::ReasoningDelta d = reasoning_->update(full_);
  delta.reasoning += d.reasoning_fragment;
  content_step(d.content_fragment, false, delta);
}

void ChatOutputSplitter::finish(ChoiceOutput& delta) {
  if (!reasoning_) return content_step("", true, delta);
  output_parsers::ReasoningDelta d = reasoning_->finish(full_);
  delta.reasoning += d.reasoning_fragment;
  content_step(d.content_fragment, true, delta);
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
