// pythonic: [f(a=1, b='x'), g()] (Llama 3.2/4 pythonic tool calling), the whole output
// being that list, optionally inside <|python_start|>...<|python_end|>. Keyword argument
// values are Python literals, converted to JSON. See tool_call_parser.h.
#include "output_parsers/parser_support.h"

namespace strata::output_parsers::internal {
namespace {

constexpr std::string_view kStartTag = "<|python_start|>";
constexpr std::string_view kEndTag = "<|python_end|>";

bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_identifier_char(char c) { return is_identifier_start(c) || (c >= '0' && c <= '9'); }

size_t identifier_end(std::string_view text, size_t pos, bool allow_dots) {
  if (pos >= text.size() || !is_identifier_start(text[pos])) return pos;
  while (pos < text.size() && (is_identifier_char(text[pos]) || (allow_dots && text[pos] == '.'))) {
    ++pos;
  }
  return pos;
}

struct ArgumentsScan {
  ScanState state = ScanState::kIncomplete;
  size_t end = 0;
  std::string certain = "{";
  std::string closers = "}";
};

// Keyword arguments after the '(' at `open`, up to and including ')'.
ArgumentsScan scan_keyword_arguments(std::string_view text, size_t open, bool at_end) {
  ArgumentsScan args;
  auto stop = [&](ScanState state, size_t end) {
    args.state = state;
    args.end = state == ScanState::kIncomplete ? text.size() : end;
    if (state == ScanState::kComplete) {
      args.certain += '}';
      args.closers.clear();
    }
    return args;
  };
  size_t pos = open + 1;
  bool first = true;
  bool after_item = false;
  while (true) {
    pos = skip_whitespace(text, pos);
    if (pos >= text.size()) return stop(ScanState::kIncomplete, pos);
    if (text[pos] == ')') return stop(ScanState::kComplete, pos + 1);
    if (after_item) {
      if (text[pos] != ',') return stop(ScanState::kInvalid, pos);
      ++pos;
      after_item = false;
      continue;
    }
    const size_t key_end = identifier_end(text, pos, /*allow_dots=*/false);
    if (key_end == pos) return stop(ScanState::kInvalid, pos);
    if (key_end >= text.size()) return stop(ScanState::kIncomplete, key_end);
    const std::string_view key = text.substr(pos, key_end - pos);
    const size_t eq = skip_whitespace(text, key_end);
    if (eq >= text.size()) return stop(ScanState::kIncomplete, eq);
    if (text[eq] != '=') return stop(ScanState::kInvalid, eq);
    const ValueScan value = scan_value(text, eq + 1, Dialect::kPython, at_end);
    if (!value.certain.empty()) {
      if (!first) args.certain += ", ";
      append_json_string(args.certain, key);
      args.certain += ": ";
      args.certain += value.certain;
      first = false;
    }
    if (value.state != ScanState::kComplete) {
      if (!value.certain.empty()) args.closers = value.closers + "}";
      return stop(value.state, value.end);
    }
    pos = value.end;
    after_item = true;
  }
}

class PythonicParser final : public ToolCallParser {
 public:
  std::string_view name() const override { return "pythonic"; }
  std::vector<std::string> call_markers() const override { return {std::string(kStartTag), "["}; }

 protected:
  ToolParseResult scan(std::string_view text, bool at_end,
                       const nlohmann::ordered_json* /*tools*/) const override {
    ResultBuilder out(at_end);
    auto all_content = [&]() {
      ResultBuilder all(at_end);
      all.add_content(text);
      return all.take();
    };
    size_t pos = skip_whitespace(text, 0);
    if (starts_with_at(text, pos, kStartTag)) {
      pos = skip_whitespace(text, pos + kStartTag.size());
    } else if (!at_end && is_partial_prefix(text, pos, kStartTag)) {
      return out.take();
    }
    if (pos >= text.size()) return at_end ? all_content() : out.take();
    if (text[pos] != '[') return all_content();
    bool any = false;
    pos = pos + 1;
    while (true) {
      // A call: dotted.name ( keyword=value, ... )
      const size_t name_pos = skip_whitespace(text, pos);
      const size_t name_end = identifier_end(text, name_pos, /*allow_dots=*/true);
      const size_t paren = skip_whitespace(text, name_end);
      if (paren >= text.size() && !at_end) return out.take();
      if (name_end == name_pos || paren >= text.size() || text[paren] != '(') {
        if (!any) return all_content();
        out.add_content(text.substr(pos));
        return out.take();
      }
      const ArgumentsScan args = scan_keyword_arguments(text, paren, at_end);
      const bool final = at_end || args.state == ScanState::kInvalid;
      out.add_call(std::string(text.substr(name_pos, name_end - name_pos)),
                   final ? args.certain + args.closers : args.certain);
      any = true;
      if (args.state == ScanState::kIncomplete) return out.take();
      if (args.state == ScanState::kInvalid) {
        out.add_content(text.substr(args.end));
        return out.take();
      }
      const size_t after = skip_whitespace(text, args.end);
      if (after >= text.size()) return out.take();
      if (text[after] == ',') {
        pos = after + 1;
        continue;
      }
      if (text[after] != ']') {
        out.add_content(text.substr(args.end));
        return out.take();
      }
      size_t rest = skip_whitespace(text, after + 1);
      if (starts_with_at(text, rest, kEndTag)) {
        rest += kEndTag.size();
      } else if (!at_end && is_partial_prefix(text, rest, kEndTag)) {
        return out.take();
      } else {
        rest = after + 1;
      }
      out.add_content(text.substr(rest));
      return out.take();
    }
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_pythonic_parser() {
  return std::make_unique<PythonicParser>();
}

}  // namespace strata::output_parsers::internal
