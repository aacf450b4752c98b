// mistral: content[TOOL_CALLS][{"name": "f", "arguments": {...}}, ...] (tokenizers before
// v11) or content[TOOL_CALLS]f[ARGS]{...}[TOOL_CALLS]g{...} (v11+). See tool_call_parser.h.
#include "output_parsers/parser_support.h"

namespace strata::output_parsers::internal {
namespace {

constexpr std::string_view kCallStart = "[TOOL_CALLS]";
constexpr std::string_view kArgsStart = "[ARGS]";

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

class MistralParser final : public MarkerParser {
 public:
  MistralParser() : MarkerParser({std::string(kCallStart)}) {}
  std::string_view name() const override { return "mistral"; }
  std::string make_call_id() const override { return random_alphanumeric(9); }

 protected:
  Step call_at(std::string_view text, size_t marker_pos, size_t /*marker_idx*/, bool at_end,
               const nlohmann::ordered_json* /*tools*/, ResultBuilder& out) const override {
    const size_t start = skip_whitespace(text, marker_pos + kCallStart.size());
    if (start >= text.size()) return {at_end ? Step::kNotCall : Step::kStop};
    if (text[start] == '[') return array_calls(text, start, at_end, out);
    return named_call(text, start, at_end, out);
  }

 private:
  // [{"name": ..., "arguments": ...}, ...] at `open`.
  static Step array_calls(std::string_view text, size_t open, bool at_end, ResultBuilder& out) {
    bool any = false;
    auto fail = [&](size_t at) -> Step {
      if (any) return {Step::kContinue, at};
      return {Step::kNotCall};
    };
    size_t pos = open + 1;
    while (true) {
      pos = skip_whitespace(text, pos);
      if (pos >= text.size()) return any || !at_end ? Step{Step::kStop} : fail(pos);
      if (text[pos] == ']') return any ? Step{Step::kContinue, pos + 1} : fail(pos);
      if (text[pos] != '{') return fail(pos);
      const CallObjectScan call = scan_call_object(text, pos, at_end, {"arguments"});
      if (!call.has_name || call.name.empty()) {
        if (call.state == ScanState::kIncomplete && !at_end) return {Step::kStop};
        return fail(pos);
      }
      const bool broken = call.state == ScanState::kInvalid;
      out.add_call(call.name, call_object_arguments(call, at_end || broken));
      any = true;
      if (call.state == ScanState::kIncomplete) return {Step::kStop};
      if (broken) return {Step::kContinue, call.end};
      pos = skip_whitespace(text, call.end);
      if (pos >= text.size()) return {at_end ? Step::kContinue : Step::kStop, pos};
      if (text[pos] == ']') return {Step::kContinue, pos + 1};
      if (text[pos] != ',') return {Step::kContinue, call.end};
      ++pos;
    }
  }

  // name[ARGS]{...} or name{...} at `start`.
  static Step named_call(std::string_view text, size_t start, bool at_end, ResultBuilder& out) {
    size_t name_end = start;
    while (name_end < text.size() && is_name_char(text[name_end])) ++name_end;
    const size_t after = skip_whitespace(text, name_end);
    if (after >= text.size()) return {at_end ? Step::kNotCall : Step::kStop};
    if (name_end == start) return {Step::kNotCall};
    size_t args_pos = after;
    if (starts_with_at(text, after, kArgsStart)) {
      args_pos = skip_whitespace(text, after + kArgsStart.size());
    } else if (is_partial_prefix(text, after, kArgsStart)) {
      return {at_end ? Step::kNotCall : Step::kStop};
    } else if (text[after] != '{') {
      return {Step::kNotCall};
    }
    const std::string name(text.substr(start, name_end - start));
    if (args_pos >= text.size()) {
      out.add_call(name, at_end ? "{}" : "");
      return {Step::kStop};
    }
    if (text[args_pos] != '{') {
      out.add_call(name, "{}");
      return {Step::kContinue, args_pos};
    }
    const ValueScan args = scan_value(text, args_pos, Dialect::kJson, at_end);
    const bool final = at_end || args.state == ScanState::kInvalid;
    out.add_call(name, final ? args.repaired() : args.certain);
    if (args.state == ScanState::kIncomplete) return {Step::kStop};
    return {Step::kContinue, args.end};
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_mistral_parser() { return std::make_unique<MistralParser>(); }

}  // namespace strata::output_parsers::internal
