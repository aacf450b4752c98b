// Fuzz target: tool-call and reasoning parsers (their input is model output,
// which a prompt can steer). Byte 0 picks the tool parser and the reasoning
// parser, byte 1 the streaming chunk size; the rest is the generated text.
// Beyond "no crash", checks the streaming contract: streaming the text in
// chunks never contradicts what was already sent and adds up to parse(), and
// every call's arguments are valid JSON.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "output_parsers/reasoning_parser.h"
#include "output_parsers/reasoning_streamer.h"
#include "output_parsers/tool_call_parser.h"
#include "output_parsers/tool_call_streamer.h"

namespace {

namespace op = strata::output_parsers;

constexpr size_t kMaxTextBytes = 4096;  // streaming re-parses every prefix: keep it cheap

void require(bool ok) {
  if (!ok) std::abort();
}

template <typename Streamer, typename Visit>
void stream_in_chunks(Streamer& streamer, std::string_view text, size_t chunk, Visit visit) {
  size_t pos = 0;
  while (pos < text.size()) {
    pos = std::min(text.size(), pos + chunk);
    visit(streamer.update(text.substr(0, pos)));
  }
  visit(streamer.finish(text));
}

void check_tool_parser(const op::ToolCallParser& parser, std::string_view text, size_t chunk) {
  const op::ToolParseResult whole = parser.parse(text);
  for (const op::ToolCall& call : whole.calls) {
    require(!call.name.empty());
    require(nlohmann::json::accept(call.arguments));
  }
  op::ToolCallStreamer streamer(parser, [] { return std::string("id"); });
  std::string content;
  std::vector<op::ToolCall> calls;
  stream_in_chunks(streamer, text, chunk, [&](const op::StreamDelta& d) {
    content += d.content;
    for (const op::ToolCallDelta& t : d.tool_calls) {
      if (static_cast<size_t>(t.index) == calls.size()) calls.push_back({t.name, ""});
      require(static_cast<size_t>(t.index) < calls.size());
      calls[static_cast<size_t>(t.index)].arguments += t.arguments_fragment;
    }
  });
  require(!streamer.diverged());
  require(content == whole.content);
  require(calls == whole.calls);
}

void check_reasoning_parser(const op::ReasoningParser& parser, std::string_view text, size_t chunk,
                            bool prompt_opened_think) {
  const op::ReasoningResult whole = parser.parse(text, prompt_opened_think);
  op::ReasoningStreamer streamer(parser, prompt_opened_think);
  std::string reasoning;
  std::string content;
  stream_in_chunks(streamer, text, chunk, [&](const op::ReasoningDelta& d) {
    reasoning += d.reasoning_fragment;
    content += d.content_fragment;
  });
  require(!streamer.diverged());
  require(reasoning == whole.reasoning && content == whole.content);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::vector<std::string> tool_names = op::tool_call_parser_names();
  const std::vector<std::string> reasoning_names = op::reasoning_parser_names();
  const uint8_t select = data[0];
  const size_t chunk = 1 + data[1] % 8;
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  if (text.size() > kMaxTextBytes) text = text.substr(0, kMaxTextBytes);

  auto tool_parser = op::make_tool_call_parser(tool_names[select % tool_names.size()]);
  require(tool_parser.ok());
  check_tool_parser(**tool_parser, text, chunk);

  auto reasoning_parser =
      op::make_reasoning_parser(reasoning_names[(select / 8) % reasoning_names.size()]);
  require(reasoning_parser.ok());
  check_reasoning_parser(**reasoning_parser, text, chunk, (select & 0x80) != 0);
  return 0;
}
