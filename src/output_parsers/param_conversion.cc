#include "output_parsers/param_conversion.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "output_parsers/value_scanner.h"

namespace strata::output_parsers::internal {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view strip(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

bool starts_with_any(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (s.starts_with(p)) return true;
  }
  return false;
}

// Python int(): optional sign, digits with single '_' between them.
bool parse_python_int(std::string_view raw, std::string* out) {
  std::string_view s = strip(raw);
  std::string digits;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    if (s.front() == '-') digits += '-';
    s.remove_prefix(1);
  }
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      digits += s[i];
    } else if (s[i] != '_' || i + 1 >= s.size() ||
               !std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      return false;
    }
  }
  const size_t first = digits[0] == '-' ? 1 : 0;
  size_t nonzero = first;
  while (nonzero + 1 < digits.size() && digits[nonzero] == '0') ++nonzero;
  *out = digits.substr(0, first) + digits.substr(nonzero);
  if (*out == "-0") *out = "0";
  return true;
}

// Python float() then vLLM's "integer when whole"; NaN/inf (not JSON) fail.
bool parse_python_float(std::string_view raw, std::string* out) {
  const std::string s(strip(raw));
  if (s.empty()) return false;
  std::string cleaned;
  for (char c : s) {
    if (c != '_') cleaned += c;
  }
  char* end = nullptr;
  const double v = std::strtod(cleaned.c_str(), &end);
  if (end != cleaned.c_str() + cleaned.size() || !std::isfinite(v)) return false;
  if (lower(cleaned).find('x') != std::string::npos) return false;  // strtod reads hex; Python not
  // Python writes int(v) exactly and repr(v) as the shortest round-trip digits,
  // scientific only below 1e-4 (a non-integral value cannot be >= 1e16), which is
  // what the general format gives for non-integral values.
  char buf[512];
  const bool whole = v == std::trunc(v);
  const auto res = whole ? std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed)
                         : std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general);
  if (res.ec != std::errc()) return false;
  *out = std::string(buf, res.ptr);
  if (*out == "-0") *out = "0";
  return true;
}

bool parse_python_literal(std::string_view raw, std::string* out) {
  const ValueScan scan = scan_value(raw, 0, Dialect::kPython, /*at_end=*/true);
  if (scan.state != ScanState::kComplete || skip_whitespace(raw, scan.end) != raw.size()) {
    return false;
  }
  *out = scan.certain;
  return true;
}

}  // namespace

ParamTypes ParamTypes::for_function(const nlohmann::ordered_json* tools,
                                    std::string_view function) {
  ParamTypes types;
  if (tools == nullptr || !tools->is_array()) return types;
  types.has_tools_ = true;
  for (const auto& tool : *tools) {
    if (!tool.is_object()) continue;
    const auto fn = tool.find("function");
    if (fn == tool.end() || !fn->is_object()) continue;
    const auto name = fn->find("name");
    if (name == fn->end() || !name->is_string() || name->get<std::string>() != function) continue;
    const auto params = fn->find("parameters");
    if (params == fn->end() || !params->is_object()) return types;
    const auto props = params->find("properties");
    types.properties_ = (props != params->end() && props->is_object()) ? &*props : &*params;
    return types;
  }
  return types;
}

std::string ParamTypes::convert(std::string_view key, std::string_view raw) const {
  if (lower(raw) == "null") return "null";
  std::string out;
  if (!has_tools_) {
    if (normalize_json(raw, &out) && out[0] != '"') return out;
    return json_string(raw);
  }
  if (properties_ == nullptr) return json_string(raw);
  const auto prop = properties_->find(std::string(key));
  if (prop == properties_->end()) return json_string(raw);
  std::string type = "string";
  if (prop->is_object()) {
    const auto t = prop->find("type");
    if (t != prop->end()) type = t->is_string() ? lower(t->get<std::string>()) : "(other)";
  }
  type = std::string(strip(type));
  if (type == "string" || type == "str" || type == "text" || type == "varchar" || type == "char" ||
      type == "enum") {
    return json_string(raw);
  }
  if (starts_with_any(type, {"int", "uint", "long", "short", "unsigned"})) {
    return parse_python_int(raw, &out) ? out : json_string(raw);
  }
  if (starts_with_any(type, {"num", "float"})) {
    return parse_python_float(raw, &out) ? out : json_string(raw);
  }
  if (type == "boolean" || type == "bool" || type == "binary") {
    return lower(raw) == "true" ? "true" : "false";
  }
  if ((type == "object" || type == "array" || type == "arr" ||
       starts_with_any(type, {"dict", "list"})) &&
      normalize_json(raw, &out)) {
    return out;
  }
  if (parse_python_literal(raw, &out)) return out;
  return json_string(raw);
}

}  // namespace strata::output_parsers::internal
