#include "output_parsers/parser_support.h"

#include <algorithm>

namespace strata::output_parsers::internal {

void ResultBuilder::add_content(std::string_view text) {
  if (after_call_) {
    const size_t first = skip_whitespace(text, 0);
    text.remove_prefix(first);
    if (text.empty()) return;
    after_call_ = false;
  }
  result_.content.append(text);
}

void ResultBuilder::add_call(std::string name, std::string arguments) {
  result_.calls.push_back(ToolCall{std::move(name), std::move(arguments)});
  after_call_ = true;
}

ToolParseResult ResultBuilder::take() {
  if (is_whitespace_only(result_.content)) {
    result_.content.clear();
  } else if (!at_end_) {
    result_.content.resize(complete_utf8_length(result_.content));
  }
  return std::move(result_);
}

size_t find_marker(std::string_view text, size_t pos, const std::vector<std::string>& markers,
                   size_t* marker_idx) {
  size_t best = std::string_view::npos;
  for (size_t i = 0; i < markers.size(); ++i) {
    const size_t at = text.find(markers[i], pos);
    if (at < best) {
      best = at;
      *marker_idx = i;
    }
  }
  return best;
}

size_t held_marker_suffix(std::string_view text, size_t pos,
                          const std::vector<std::string>& markers) {
  size_t held = 0;
  for (const std::string& marker : markers) {
    const size_t max_len = std::min(marker.size() - 1, text.size() - std::min(pos, text.size()));
    for (size_t len = max_len; len > held; --len) {
      if (text.substr(text.size() - len) == std::string_view(marker).substr(0, len)) {
        held = len;
        break;
      }
    }
  }
  return held;
}

bool starts_with_at(std::string_view text, size_t pos, std::string_view word) {
  return pos <= text.size() && text.substr(pos).starts_with(word);
}

CallObjectScan scan_call_object(std::string_view text, size_t pos, bool at_end,
                                std::initializer_list<std::string_view> argument_keys) {
  CallObjectScan call;
  auto stop = [&](ScanState state, size_t end) {
    call.state = state;
    call.end = state == ScanState::kIncomplete ? text.size() : end;
    return call;
  };
  size_t p = pos + 1;  // past '{'
  bool first = true;
  bool after_item = false;
  while (true) {
    p = skip_whitespace(text, p);
    if (p >= text.size()) return stop(ScanState::kIncomplete, p);
    const char c = text[p];
    if (c == '}' && (first || after_item)) return stop(ScanState::kComplete, p + 1);
    if (after_item) {
      if (c != ',') return stop(ScanState::kInvalid, p);
      ++p;
      after_item = false;
      continue;
    }
    if (c != '"') return stop(ScanState::kInvalid, p);
    std::string key;
    ScanState st = scan_string(text, p, Dialect::kJson, &key, &p);
    if (st != ScanState::kComplete) return stop(st, p);
    p = skip_whitespace(text, p);
    if (p >= text.size()) return stop(ScanState::kIncomplete, p);
    if (text[p] != ':') return stop(ScanState::kInvalid, p);
    p = skip_whitespace(text, p + 1);
    const bool is_argument_key =
        std::find(argument_keys.begin(), argument_keys.end(), key) != argument_keys.end();
    if (key == "name" && !call.has_name) {
      if (p >= text.size()) return stop(ScanState::kIncomplete, p);
      if (text[p] != '"') return stop(ScanState::kInvalid, p);
      std::string name;
      st = scan_string(text, p, Dialect::kJson, &name, &p);
      if (st != ScanState::kComplete) return stop(st, p);
      call.has_name = true;
      call.name = std::move(name);
    } else if (is_argument_key && !call.has_arguments) {
      if (p >= text.size()) return stop(ScanState::kIncomplete, p);
      call.has_arguments = true;
      call.arguments = scan_value(text, p, Dialect::kJson, at_end);
      if (call.arguments.state != ScanState::kComplete) {
        return stop(call.arguments.state, call.arguments.end);
      }
      p = call.arguments.end;
    } else {
      const ValueScan skipped = scan_value(text, p, Dialect::kJson, at_end);
      if (skipped.state != ScanState::kComplete) return stop(skipped.state, skipped.end);
      p = skipped.end;
    }
    first = false;
    after_item = true;
  }
}

namespace {

// Arguments given as a JSON string holding JSON ("{\"a\": 1}"), as some
// models write them: the decoded JSON, normalized. A string that does not hold
// JSON is kept as the string value itself, so arguments are always valid JSON.
std::string decode_string_arguments(const std::string& string_literal) {
  std::string decoded;
  size_t end = 0;
  (void)scan_string(string_literal, 0, Dialect::kJson, &decoded, &end);
  std::string normalized;
  if (normalize_json(decoded, &normalized)) return normalized;
  return string_literal;
}

}  // namespace

std::string call_object_arguments(const CallObjectScan& call, bool final) {
  if (!call.has_arguments) {
    return final || call.state == ScanState::kComplete ? "{}" : "";
  }
  const ValueScan& args = call.arguments;
  const bool is_string = !args.certain.empty() && args.certain[0] == '"';
  if (args.state == ScanState::kComplete) {
    return is_string ? decode_string_arguments(args.certain) : args.certain;
  }
  // A string's decoded form is known only once it is complete.
  if (is_string) return final ? "{}" : "";
  return final ? args.repaired() : args.certain;
}

ToolParseResult MarkerParser::scan(std::string_view text, bool at_end,
                                   const nlohmann::ordered_json* tools) const {
  ResultBuilder out(at_end);
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t marker_idx = 0;
    const size_t marker_pos = find_marker(text, pos, markers_, &marker_idx);
    if (marker_pos == std::string_view::npos) {
      size_t end = text.size();
      if (!at_end) end -= held_marker_suffix(text, pos, markers_);
      out.add_content(text.substr(pos, end - pos));
      break;
    }
    out.add_content(text.substr(pos, marker_pos - pos));
    const Step step = call_at(text, marker_pos, marker_idx, at_end, tools, out);
    if (step.kind == Step::kStop) break;
    if (step.kind == Step::kNotCall) {
      out.add_content(markers_[marker_idx]);
      pos = marker_pos + markers_[marker_idx].size();
    } else {
      STRATA_CHECK(step.next > marker_pos) << "a call must consume its marker";
      pos = step.next;
    }
  }
  return out.take();
}

}  // namespace strata::output_parsers::internal
