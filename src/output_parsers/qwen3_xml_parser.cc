// qwen3_xml: Qwen3-Coder's XML calls (vLLM's qwen3_coder / qwen3_xml parsers):
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>
// Values are converted with the declared parameter types (param_conversion.h).
#include "output_parsers/param_conversion.h"
#include "output_parsers/parser_support.h"

namespace strata::output_parsers::internal {
namespace {

constexpr std::string_view kCallStart = "<tool_call>";
constexpr std::string_view kCallEnd = "</tool_call>";
constexpr std::string_view kFunctionStart = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParameterStart = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";

// Earliest of `words` at or after `pos`: its position (npos when none) and index.
size_t find_first_of_words(std::string_view text, size_t pos,
                           std::initializer_list<std::string_view> words, size_t* which) {
  size_t best = std::string_view::npos;
  size_t idx = 0;
  for (std::string_view w : words) {
    const size_t at = text.find(w, pos);
    if (at < best) {
      best = at;
      *which = idx;
    }
    ++idx;
  }
  return best;
}

// "<name>" ends at '>'; a '<' or newline first means this is not a tag.
// Returns the position of '>' or npos (*incomplete when the text ran out).
size_t tag_name_end(std::string_view text, size_t pos, bool* incomplete) {
  *incomplete = false;
  for (size_t i = pos; i < text.size(); ++i) {
    if (text[i] == '>') return i;
    if (text[i] == '<' || text[i] == '\n') return std::string_view::npos;
  }
  *incomplete = true;
  return std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

class Qwen3XmlParser final : public MarkerParser {
 public:
  Qwen3XmlParser() : MarkerParser({std::string(kCallStart), std::string(kFunctionStart)}) {}
  std::string_view name() const override { return "qwen3_xml"; }

 protected:
  Step call_at(std::string_view text, size_t marker_pos, size_t marker_idx, bool at_end,
               const nlohmann::ordered_json* tools, ResultBuilder& out) const override {
    size_t function_pos = marker_pos;
    if (marker_idx == 0) {  // <tool_call> wrapper
      function_pos = skip_whitespace(text, marker_pos + kCallStart.size());
      if (!starts_with_at(text, function_pos, kFunctionStart)) {
        const bool may_follow =
            function_pos >= text.size() || is_partial_prefix(text, function_pos, kFunctionStart);
        return {may_follow && !at_end ? Step::kStop : Step::kNotCall};
      }
    }
    const size_t name_pos = function_pos + kFunctionStart.size();
    bool incomplete = false;
    const size_t name_end = tag_name_end(text, name_pos, &incomplete);
    if (name_end == std::string_view::npos) {
      return {incomplete && !at_end ? Step::kStop : Step::kNotCall};
    }
    const std::string name(trim(text.substr(name_pos, name_end - name_pos)));
    if (name.empty()) return {Step::kNotCall};

    const ParamTypes types = ParamTypes::for_function(tools, name);
    std::string args = "{";
    bool first = true;
    auto add_param = [&](std::string_view key, std::string_view raw) {
      if (!raw.empty() && raw.front() == '\n') raw.remove_prefix(1);
      if (!raw.empty() && raw.back() == '\n') raw.remove_suffix(1);
      if (!first) args += ", ";
      append_json_string(args, key);
      args += ": ";
      args += types.convert(key, raw);
      first = false;
    };
    size_t pos = name_end + 1;
    bool closed = false;
    bool stopped = false;  // ran into the end of the text inside the call
    while (true) {
      size_t which = 0;
      const size_t at =
          find_first_of_words(text, pos, {kParameterStart, kFunctionEnd, kCallEnd}, &which);
      if (at == std::string_view::npos) {
        stopped = true;
        break;
      }
      if (which == 1) {  // </function>
        closed = true;
        pos = at + kFunctionEnd.size();
        break;
      }
      if (which == 2) {  // </tool_call> without </function>
        closed = true;
        pos = at;
        break;
      }
      const size_t key_pos = at + kParameterStart.size();
      const size_t key_end = tag_name_end(text, key_pos, &incomplete);
      if (key_end == std::string_view::npos) {
        if (incomplete) {
          stopped = true;
          break;
        }
        pos = key_pos;  // not a parameter tag: skipped
        continue;
      }
      const std::string_view key = trim(text.substr(key_pos, key_end - key_pos));
      const size_t value_pos = key_end + 1;
      const size_t value_end = find_first_of_words(
          text, value_pos, {kParameterEnd, kParameterStart, kFunctionEnd, kCallEnd}, &which);
      if (value_end == std::string_view::npos) {
        // An unterminated last value counts once the text is complete.
        if (at_end) add_param(key, text.substr(value_pos));
        stopped = true;
        break;
      }
      add_param(key, text.substr(value_pos, value_end - value_pos));
      pos = which == 0 ? value_end + kParameterEnd.size() : value_end;
    }
    if (closed || at_end) args += '}';
    out.add_call(name, std::move(args));
    if (stopped) return {Step::kStop};
    const size_t after = skip_whitespace(text, pos);
    if (starts_with_at(text, after, kCallEnd)) return {Step::kContinue, after + kCallEnd.size()};
    if (!at_end && (after >= text.size() || is_partial_prefix(text, after, kCallEnd))) {
      return {Step::kStop};
    }
    return {Step::kContinue, pos};
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_qwen3_xml_parser() {
  return std::make_unique<Qwen3XmlParser>();
}

}  // namespace strata::output_parsers::internal
