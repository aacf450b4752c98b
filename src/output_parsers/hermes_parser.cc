// hermes: <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
// (Qwen2.5/Qwen3 and Hermes chat templates). See tool_call_parser.h.
#include "output_parsers/parser_support.h"

namespace strata::output_parsers::internal {
namespace {

constexpr std::string_view kCallStart = "<tool_call>";
constexpr std::string_view kCallEnd = "</tool_call>";

class HermesParser final : public MarkerParser {
 public:
  HermesParser() : MarkerParser({std::string(kCallStart)}) {}
  std::string_view name() const override { return "hermes"; }

 protected:
  Step call_at(std::string_view text, size_t marker_pos, size_t /*marker_idx*/, bool at_end,
               const nlohmann::ordered_json* /*tools*/, ResultBuilder& out) const override {
    const size_t open = skip_whitespace(text, marker_pos + kCallStart.size());
    if (open >= text.size()) return {at_end ? Step::kNotCall : Step::kStop};
    if (text[open] != '{') return {Step::kNotCall};
    const CallObjectScan call = scan_call_object(text, open, at_end, {"arguments", "parameters"});
    if (!call.has_name || call.name.empty()) {
      const bool may_become_call = call.state == ScanState::kIncomplete && !at_end;
      return {may_become_call ? Step::kStop : Step::kNotCall};
    }
    const bool broken = call.state == ScanState::kInvalid;
    out.add_call(call.name, call_object_arguments(call, at_end || broken));
    if (call.state == ScanState::kIncomplete) return {Step::kStop};
    if (broken) {
      // The rest of a broken call, up to its end tag, is dropped.
      const size_t end_tag = text.find(kCallEnd, call.end);
      if (end_tag == std::string_view::npos) return {Step::kStop};
      return {Step::kContinue, end_tag + kCallEnd.size()};
    }
    const size_t after = skip_whitespace(text, call.end);
    if (starts_with_at(text, after, kCallEnd)) return {Step::kContinue, after + kCallEnd.size()};
    if (!at_end && (after >= text.size() || is_partial_prefix(text, after, kCallEnd))) {
      return {Step::kStop};
    }
    return {Step::kContinue, call.end};  // no end tag: what follows is content
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_hermes_parser() { return std::make_unique<HermesParser>(); }

}  // namespace strata::output_parsers::internal
