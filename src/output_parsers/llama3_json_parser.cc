// llama3_json: [<|python_tag|>]{"name": "f", "parameters": {...}}[; {...}]... (Llama 3.1-3.3
// JSON tool calling). See tool_call_parser.h.
#include "output_parsers/parser_support.h"

namespace strata::output_parsers::internal {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

class Llama3JsonParser final : public ToolCallParser {
 public:
  std::string_view name() const override { return "llama3_json"; }
  std::vector<std::string> call_markers() const override { return {std::string(kPythonTag), "{"}; }

 protected:
  ToolParseResult scan(std::string_view text, bool at_end,
                       const nlohmann::ordered_json* /*tools*/) const override {
    ResultBuilder out(at_end);
    size_t pos = skip_whitespace(text, 0);
    if (starts_with_at(text, pos, kPythonTag)) {
      pos = skip_whitespace(text, pos + kPythonTag.size());
    } else if (!at_end && is_partial_prefix(text, pos, kPythonTag)) {
      return out.take();  // may still become the tag
    }
    if (pos >= text.size() && !at_end) return out.take();
    if (pos >= text.size() || text[pos] != '{') {
      out.add_content(text);  // not a tool call: all content
      return out.take();
    }
    size_t separator_pos = pos;  // where the text of the current candidate begins
    while (true) {
      const CallObjectScan call = scan_call_object(text, pos, at_end, {"arguments", "parameters"});
      if (!call.has_name || call.name.empty()) {
        if (call.state == ScanState::kIncomplete && !at_end) return out.take();
        // Not a call: with no call before it the whole output is content.
        ToolParseResult result = out.take();
        if (result.calls.empty()) {
          ResultBuilder all(at_end);
          all.add_content(text);
          return all.take();
        }
        ResultBuilder rest(at_end);
        for (ToolCall& c : result.calls) rest.add_call(std::move(c.name), std::move(c.arguments));
        rest.add_content(text.substr(separator_pos));
        return rest.take();
      }
      const bool broken = call.state == ScanState::kInvalid;
      out.add_call(call.name, call_object_arguments(call, at_end || broken));
      if (call.state == ScanState::kIncomplete) return out.take();
      if (broken) {
        out.add_content(text.substr(call.end));
        return out.take();
      }
      const size_t after = skip_whitespace(text, call.end);
      if (after < text.size() && text[after] == ';') {
        const size_t next = skip_whitespace(text, after + 1);
        if (next >= text.size() && !at_end) return out.take();
        if (next < text.size() && text[next] == '{') {
          separator_pos = call.end;
          pos = next;
          continue;
        }
      }
      if (after >= text.size() && !at_end) return out.take();
      out.add_content(text.substr(call.end));
      return out.take();
    }
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_llama3_json_parser() {
  return std::make_unique<Llama3JsonParser>();
}

}  // namespace strata::output_parsers::internal
