// Splits one chat choice's generated text into what the OpenAI message
// carries: reasoning (--reasoning-parser), tool calls (tool_choice auto with
// --tool-call-parser, or required / named through the constrained decoder)
// and the remaining content — whole at the end, or as stream deltas while
// tokens arrive (reasoning fragments, content fragments, tool-call deltas:
// id, type and name first, then argument fragments).
//
// Thread-safety: one per choice, on the I/O thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "output_parsers/reasoning_parser.h"
#include "output_parsers/reasoning_streamer.h"
#include "output_parsers/tool_call_parser.h"
#include "output_parsers/tool_call_streamer.h"
#include "server/openai_format.h"

namespace strata::server {

struct ChatOutputOptions {
  const output_parsers::ReasoningParser* reasoning = nullptr;  // null = no reasoning split
  bool prompt_opened_think = false;  // the prompt ends inside a reasoning section
  // null = no tool calls. Owned by the job (required / named) or the server (auto).
  std::shared_ptr<const output_parsers::ToolCallParser> tool_parser;
  // The request's tools (qwen3_xml converts values by their declared types).
  std::shared_ptr<const nlohmann::ordered_json> tools;
  // finish_reason when the output holds tool calls: "tool_calls" (auto,
  // required) or "" = the engine's (named tool choice, as vLLM).
  std::string tool_calls_finish_reason = "tool_calls";
  // Whole message with tool calls and no other text: "content": null (auto,
  // as vLLM) rather than "" (required / named).
  bool null_content_with_calls = true;

  bool active() const { return reasoning != nullptr || tool_parser != nullptr; }
};

class ChatOutputSplitter {
 public:
  // `make_call_id`: tool call ids (null: the parser's, "call_" + 24
  // alphanumerics; 9 alphanumerics for mistral).
  explicit ChatOutputSplitter(ChatOutputOptions options,
                              std::function<std::string()> make_call_id = nullptr);

  // Streaming: `text` is the choice's next piece of generated text; fills
  // delta.text (content), delta.reasoning and delta.tool_calls.
  void add(std::string_view text, ChoiceOutput& delta);
  // End of generation: flushes what was held back into `delta` (streaming).
  void finish(ChoiceOutput& delta);
  // Non-streamed: the whole message from `full_text` into `out` (text,
  // reasoning, tool calls, content_null).
  void split_whole(std::string_view full_text, ChoiceOutput& out);
  // After finish() / split_whole(): the output held tool calls.
  bool has_tool_calls() const { return has_tool_calls_; }
  // As vLLM: "tool_calls" once calls were made (auto, required), whatever
  // ended the generation; otherwise (and for a named tool) `engine_reason`.
  const std::string& finish_reason(const std::string& engine_reason) const {
    return has_tool_calls_ && !options_.tool_calls_finish_reason.empty()
               ? options_.tool_calls_finish_reason
               : engine_reason;
  }
  const ChatOutputOptions& options() const { return options_; }

 private:
  // `fresh`: the next piece of content (after the reasoning split).
  void content_step(std::string_view fresh, bool final, ChoiceOutput& delta);

  ChatOutputOptions options_;
  std::function<std::string()> make_call_id_;
  std::string full_;     // generated text so far (with a reasoning parser)
  std::string content_;  // content so far (with a tool parser)
  std::optional<output_parsers::ReasoningStreamer> reasoning_;
  std::optional<output_parsers::ToolCallStreamer> streamer_;
  bool has_tool_calls_ = false;
};

}  // namespace strata::server
