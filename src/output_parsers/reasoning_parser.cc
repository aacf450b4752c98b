#include "output_parsers/reasoning_parser.h"

#include "output_parsers/parser_support.h"
#include "output_parsers/value_scanner.h"

namespace strata::output_parsers {
namespace {

class DeepSeekR1Parser final : public ReasoningParser {
 public:
  std::string_view name() const override { return "deepseek_r1"; }

 protected:
  bool untagged_is_reasoning() const override { return true; }
};

class Qwen3Parser final : public ReasoningParser {
 public:
  std::string_view name() const override { return "qwen3"; }

 protected:
  bool untagged_is_reasoning() const override { return false; }
};

void trim_partial_utf8(std::string& s) { s.resize(complete_utf8_length(s)); }

}  // namespace

ReasoningResult ReasoningParser::scan(std::string_view text, bool prompt_opened_think,
                                      bool at_end) const {
  ReasoningResult result;
  const std::string_view start = start_marker();
  const std::string_view end = end_marker();
  size_t pos = 0;
  const size_t first = skip_whitespace(text, 0);
  if (internal::starts_with_at(text, first, start)) {
    result.has_reasoning = true;
    pos = first + start.size();
  } else if (!at_end && (first >= text.size() || is_partial_prefix(text, first, start))) {
    return result;  // may still become a start marker
  } else {
    result.has_reasoning = prompt_opened_think || untagged_is_reasoning();
  }
  if (!result.has_reasoning) {
    result.content = std::string(text);
    if (!at_end) trim_partial_utf8(result.content);
    return result;
  }
  const size_t end_pos = text.find(end, pos);
  if (end_pos == std::string_view::npos) {
    size_t stop = text.size();
    if (!at_end) stop -= internal::held_marker_suffix(text, pos, {std::string(end)});
    result.reasoning = std::string(text.substr(pos, stop - pos));
    if (!at_end) trim_partial_utf8(result.reasoning);
    return result;
  }
  result.reasoning_ended = true;
  result.reasoning = std::string(text.substr(pos, end_pos - pos));
  result.content = std::string(text.substr(end_pos + end.size()));
  if (!at_end) trim_partial_utf8(result.content);
  return result;
}

std::vector<std::string> reasoning_parser_names() { return {"deepseek_r1", "qwen3"}; }

StatusOr<std::unique_ptr<ReasoningParser>> make_reasoning_parser(std::string_view name) {
  if (name == "deepseek_r1") return std::unique_ptr<ReasoningParser>(new DeepSeekR1Parser());
  if (name == "qwen3") return std::unique_ptr<ReasoningParser>(new Qwen3Parser());
  return invalid_argument("unknown reasoning parser '" + std::string(name) +
                          "'; known: deepseek_r1, qwen3");
}

}  // namespace strata::output_parsers
