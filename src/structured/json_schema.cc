#include "structured/json_schema.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <unordered_set>
#include <utility>
#include <vector>

#include "structured/builtin_grammars.h"
#include "structured/regex_to_gbnf.h"

namespace strata::structured {
namespace {

using Json = nlohmann::ordered_json;

// Assertion keywords we cannot express: always an error.
const std::set<std::string, std::less<>> kUnsupportedKeywords = {"not",
                                                                 "if",
                                                                 "then",
                                                                 "else",
                                                                 "patternProperties",
                                                                 "propertyNames",
                                                                 "dependentRequired",
                                                                 "dependentSchemas",
                                                                 "dependencies",
                                                                 "unevaluatedProperties",
                                                                 "unevaluatedItems",
                                                                 "contains",
                                                                 "minContains",
                                                                 "maxContains",
                                                                 "multipleOf",
                                                                 "$dynamicRef",
                                                                 "$recursiveRef"};

// Keywords that change what is valid and that we handle.
const std::set<std::string, std::less<>> kSupportedKeywords = {"type",
                                                               "enum",
                                                               "const",
                                                               "anyOf",
                                                               "oneOf",
                                                               "allOf",
                                                               "$ref",
                                                               "nullable",
                                                               "properties",
                                                               "required",
                                                               "additionalProperties",
                                                               "minProperties",
                                                               "maxProperties",
                                                               "items",
                                                               "prefixItems",
                                                               "additionalItems",
                                                               "minItems",
                                                               "maxItems",
                                                               "uniqueItems",
                                                               "minLength",
                                                               "maxLength",
                                                               "pattern",
                                                               "format",
                                                               "minimum",
                                                               "maximum",
                                                               "exclusiveMinimum",
                                                               "exclusiveMaximum"};

const std::set<std::string, std::less<>> kObjectKeywords = {
    "properties", "required", "additionalProperties", "minProperties", "maxProperties"};
const std::set<std::string, std::less<>> kArrayKeywords = {
    "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"};
const std::set<std::string, std::less<>> kStringKeywords = {"minLength", "maxLength", "pattern"};
const std::set<std::string, std::less<>> kNumberKeywords = {"minimum", "maximum",
                                                            "exclusiveMinimum", "exclusiveMaximum"};
const std::set<std::string, std::less<>> kFormats = {"date", "time", "date-time", "uuid", "email"};

constexpr int kMaxIntegerDigits = 16;                            // unbounded integer parts
constexpr int64_t kMaxBoundMagnitude = 999'999'999'999'999'999;  // 18 digits

bool is_validation_keyword(const std::string& key) {
  return kSupportedKeywords.count(key) > 0 || kUnsupportedKeywords.count(key) > 0;
}

std::string at(const std::string& path) { return path.empty() ? "/" : path; }

// JSON pointer token escaping (~0 ~1).
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

bool is_identifier(const std::string& text) {
  if (text.empty()) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::string sanitize_name(const std::string& hint) {
  std::string out;
  for (char c : hint) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok) {
      out += c;
    } else if (out.empty() || out.back() != '-') {
      out += '-';
    }
    if (out.size() >= 40) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  return out.empty() ? "x" : out;
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

bool has_top_level_alternation(const std::string& expr) {
  int depth = 0;
  bool in_literal = false;
  bool in_class = false;
  for (size_t idx = 0; idx < expr.size(); ++idx) {
    const char c = expr[idx];
    if (in_literal || in_class) {
      if (c == '\\') {
        ++idx;
      } else if ((in_literal && c == '"') || (in_class && c == ']')) {
        in_literal = in_class = false;
      }
      continue;
    }
    if (c == '"') in_literal = true;
    if (c == '[') in_class = true;
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == '|' && depth == 0) return true;
  }
  return false;
}

std::string group(const std::string& expr) {
  return has_top_level_alternation(expr) ? "( " + expr + " )" : expr;
}

// `atom` repeated min..max times (max < 0: unbounded); "" when max == 0.
std::string repeat(const std::string& atom, int64_t min_count, int64_t max_count) {
  if (max_count == 0) return "";
  if (min_count == 1 && max_count == 1) return atom;
  if (min_count == 0 && max_count == 1) return atom + "?";
  if (min_count == 0 && max_count < 0) return atom + "*";
  if (min_count == 1 && max_count < 0) return atom + "+";
  if (max_count < 0) return atom + "{" + std::to_string(min_count) + ",}";
  if (min_count == max_count) return atom + "{" + std::to_string(min_count) + "}";
  return atom + "{" + std::to_string(min_count) + "," + std::to_string(max_count) + "}";
}

// ---- Integer ranges as digit patterns ----

int num_digits(uint64_t value) {
  int digits = 1;
  while (value >= 10) {
    value /= 10;
    ++digits;
  }
  return digits;
}

uint64_t pow10(int exponent) {
  uint64_t value = 1;
  for (int idx = 0; idx < exponent; ++idx) value *= 10;
  return value;
}

std::string digit_class(char first, char last) {
  if (first == last) return std::string("\"") + first + "\"";
  return std::string("[") + first + "-" + last + "]";
}

std::string any_digits(size_t count) { return repeat("[0-9]", count, count); }

// Alternatives (each a sequence) matching the decimal strings from `low` to
// `high`, both of the same length, leading zeros allowed.
std::vector<std::string> same_length_range(const std::string& low, const std::string& high) {
  const size_t length = low.size();
  size_t prefix = 0;
  while (prefix < length && low[prefix] == high[prefix]) ++prefix;
  const std::string prefix_literal = prefix > 0 ? "\"" + low.substr(0, prefix) + "\"" : "";
  if (prefix == length) return {prefix_literal};
  const std::string low_rest = low.substr(prefix + 1);
  const std::string high_rest = high.substr(prefix + 1);
  const size_t rest = low_rest.size();
  char low_digit = low[prefix];
  char high_digit = high[prefix];
  std::vector<std::string> alternatives;
  if (low_rest.find_first_not_of('0') != std::string::npos) {
    for (const std::string& tail : same_length_range(low_rest, std::string(rest, '9'))) {
      alternatives.push_back(digit_class(low_digit, low_digit) + " " + tail);
    }
    ++low_digit;
  }
  std::vector<std::string> high_alternatives;
  if (high_rest.find_first_not_of('9') != std::string::npos) {
    for (const std::string& tail : same_length_range(std::string(rest, '0'), high_rest)) {
      high_alternatives.push_back(digit_class(high_digit, high_digit) + " " + tail);
    }
    --high_digit;
  }
  if (low_digit <= high_digit) {
    alternatives.push_back(join({digit_class(low_digit, high_digit), any_digits(rest)}, " "));
  }
  alternatives.insert(alternatives.end(), high_alternatives.begin(), high_alternatives.end());
  if (prefix_literal.empty()) return alternatives;
  if (alternatives.size() == 1) return {prefix_literal + " " + alternatives[0]};
  return {prefix_literal + " ( " + join(alternatives, " | ") + " )"};
}

// Decimal integers low..high (0 <= low <= high), no leading zeros.
std::string unsigned_range(uint64_t low, uint64_t high) {
  const int low_digits = num_digits(low);
  const int high_digits = num_digits(high);
  std::vector<std::string> alternatives;
  const uint64_t low_top = low_digits == high_digits ? high : pow10(low_digits) - 1;
  for (std::string& alt : same_length_range(std::to_string(low), std::to_string(low_top))) {
    alternatives.push_back(std::move(alt));
  }
  if (high_digits - low_digits >= 2) {
    alternatives.push_back("[1-9] " + repeat("[0-9]", low_digits, high_digits - 2));
  }
  if (high_digits > low_digits) {
    for (std::string& alt :
         same_length_range(std::to_string(pow10(high_digits - 1)), std::to_string(high))) {
      alternatives.push_back(std::move(alt));
    }
  }
  return join(alternatives, " | ");
}

int bound_digits(std::optional<int64_t> bound) {
  if (!bound) return 0;
  return num_digits(static_cast<uint64_t>(*bound < 0 ? -*bound : *bound));
}

// Decimal integers in [low, high] (absent: unbounded, capped at 16 digits or
// the bound's digit count); "" when the range is empty.
std::string integer_range(std::optional<int64_t> low, std::optional<int64_t> high) {
  const int cap = std::max({kMaxIntegerDigits, bound_digits(low), bound_digits(high)});
  const auto max_magnitude = static_cast<int64_t>(pow10(cap) - 1);
  const int64_t lo = low.value_or(-max_magnitude);
  const int64_t hi = high.value_or(max_magnitude);
  if (lo > hi) return "";
  std::vector<std::string> alternatives;
  if (lo < 0) {
    const int64_t magnitude_low = hi < 0 ? -hi : 1;
    alternatives.push_back("\"-\" " + group(unsigned_range(magnitude_low, -lo)));
  }
  if (hi >= 0) alternatives.push_back(unsigned_range(std::max<int64_t>(lo, 0), hi));
  return join(alternatives, " | ");
}

const char kAnyFraction[] = "( \".\" [0-9]{1,16} )?";
const char kZeroFraction[] = "( \".\" \"0\"{1,16} )?";
const char kNonzeroFraction[] = "\".\" \"0\"{0,15} [1-9] [0-9]{0,15}";

struct Bound {
  int64_t value = 0;
  bool exclusive = false;
};

// Non-negative decimal numbers v (no sign, no exponent) with lower < v or
// lower <= v, and v < upper or v <= upper when upper is present.
std::vector<std::string> magnitude_alternatives(Bound lower, std::optional<Bound> upper) {
  const int cap = std::max(kMaxIntegerDigits, num_digits(lower.value));
  const int64_t any_low = lower.exclusive ? lower.value + 1 : lower.value;
  const int64_t any_high = upper ? upper->value - 1 : static_cast<int64_t>(pow10(cap) - 1);
  std::vector<std::string> alternatives;
  if (any_low <= any_high) {
    alternatives.push_back(group(unsigned_range(any_low, any_high)) + " " + kAnyFraction);
  }
  if (lower.exclusive && (!upper || upper->value > lower.value)) {
    alternatives.push_back("\"" + std::to_string(lower.value) + "\" " + kNonzeroFraction);
  }
  if (upper && !upper->exclusive &&
      (upper->value > lower.value || (upper->value == lower.value && !lower.exclusive))) {
    alternatives.push_back("\"" + std::to_string(upper->value) + "\" " + kZeroFraction);
  }
  return alternatives;
}

// ---- Shared rules ----

struct Builtin {
  const char* name;
  const char* compact_body;  // nullptr: same as spaced_body
  const char* spaced_body;
  std::vector<const char*> deps;
};

const std::vector<Builtin>& builtins() {
  static const std::vector<Builtin> kBuiltins = {
      {"value",
       nullptr,
       "object | array | string | number | boolean | null",
       {"object", "array", "string", "number", "boolean", "null"}},
      {"object",
       "\"{\" ( member ( \",\" member )* )? \"}\"",
       "\"{\" ws ( member ( ws \",\" ws member )* ws )? \"}\"",
       {"member", "ws"}},
      {"member", "string \":\" value", "string ws \":\" ws value", {"string", "value", "ws"}},
      {"array",
       "\"[\" ( value ( \",\" value )* )? \"]\"",
       "\"[\" ws ( value ( ws \",\" ws value )* ws )? \"]\"",
       {"value", "ws"}},
      {"string", nullptr, "\"\\\"\" char* \"\\\"\"", {"char"}},
      {"char",
       nullptr,
       "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )",
       {}},
      {"integer", nullptr, "\"-\"? ( \"0\" | [1-9] [0-9]{0,15} )", {}},
      {"number", nullptr, "integer ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?", {"integer"}},
      {"boolean", nullptr, "\"true\" | \"false\"", {}},
      {"null", nullptr, "\"null\"", {}},
      {"date-string", nullptr, "\"\\\"\" date \"\\\"\"", {"date"}},
      {"time-string", nullptr, "\"\\\"\" time \"\\\"\"", {"time"}},
      {"date-time-string", nullptr, "\"\\\"\" date-time \"\\\"\"", {"date-time"}},
      {"uuid-string", nullptr, "\"\\\"\" uuid \"\\\"\"", {"uuid"}},
      {"email-string", nullptr, "\"\\\"\" email \"\\\"\"", {"email"}},
      {"date-time", nullptr, "date \"T\" time", {"date", "time"}},
      {"date",
       nullptr,
       "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" "
       "[01] )",
       {}},
      {"time",
       nullptr,
       "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,9} )? "
       "( \"Z\" | [+\\x2D] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )",
       {}},
      {"uuid",
       nullptr,
       "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
       "[0-9a-fA-F]{12}",
       {}},
      {"email",
       nullptr,
       "[a-zA-Z0-9_%+\\x2D]+ ( \".\" [a-zA-Z0-9_%+\\x2D]+ )* \"@\" [a-zA-Z0-9]+ ( \"-\" "
       "[a-zA-Z0-9]+ )* ( \".\" [a-zA-Z0-9]+ ( \"-\" [a-zA-Z0-9]+ )* )+",
       {}},
      {"ws", "", "( \" \" | \"\\n\"{1,2} [ \\t]{0,20} )?", {}},
  };
  return kBuiltins;
}

// One JSON Schema document -> GBNF. Single use, one thread.
class Converter {
 public:
  Converter(const Json& root, const JsonSchemaOptions& options) : root_(root), options_(options) {
    for (const Builtin& builtin : builtins()) taken_names_.insert(builtin.name);
    taken_names_.insert("root");
  }

  StatusOr<std::string> convert() {
    ref_rules_["#"] = "root";
    STRATA_ASSIGN_OR_RETURN(std::string root_ref, visit(root_, "root", "", 0));
    if (root_ref != "root") STRATA_RETURN_IF_ERROR(define("root", root_ref));
    std::set<std::string> defined_names;
    for (const auto& rule : rules_) defined_names.insert(rule.first);
    for (const auto& [ref, name] : ref_rules_) {
      if (defined_names.count(name) == 0) {
        return invalid_argument("'$ref' \"" + ref +
                                "\" refers to itself without any other content");
      }
    }
    std::string out;
    for (const auto& [name, body] : rules_) {
      if (name == "root") out += name + " ::= " + body + "\n";
    }
    for (const auto& [name, body] : rules_) {
      if (name != "root") out += name + " ::= " + body + "\n";
    }
    for (const Builtin& builtin : builtins()) {
      if (used_builtins_.count(builtin.name) == 0) continue;
      const char* body = options_.any_whitespace || builtin.compact_body == nullptr
                             ? builtin.spaced_body
                             : builtin.compact_body;
      out += std::string(builtin.name) + " ::= " + body + "\n";
    }
    if (out.size() > kMaxGrammarBytes) return too_large();
    return out;
  }

 private:
  Status too_large() const {
    return invalid_argument("JSON Schema too large: the grammar exceeds " +
                            std::to_string(kMaxGrammarRules) + " rules or " +
                            std::to_string(kMaxGrammarBytes) + " bytes");
  }

  std::string use(const std::string& name) {
    if (name == "ws" && !options_.any_whitespace) return name;  // compact rules never use it
    if (!used_builtins_.insert(name).second) return name;
    for (const Builtin& builtin : builtins()) {
      if (name != builtin.name) continue;
      for (const char* dep : builtin.deps) use(dep);
    }
    return name;
  }

  // Separators: between tokens the `ws` rule, or nothing in compact mode.
  std::string open(const char* token) {
    return options_.any_whitespace ? std::string("\"") + token + "\" " + use("ws")
                                   : std::string("\"") + token + "\"";
  }
  std::string close(const char* token) {
    return options_.any_whitespace ? use("ws") + " \"" + token + "\""
                                   : std::string("\"") + token + "\"";
  }
  std::string comma() {
    return options_.any_whitespace ? use("ws") + " \",\" " + use("ws") : "\",\"";
  }
  std::string colon() {
    return options_.any_whitespace ? use("ws") + " \":\" " + use("ws") : "\":\"";
  }

  std::string unique_name(const std::string& hint) {
    std::string name = hint;
    for (int suffix = 1; taken_names_.count(name) > 0; ++suffix) {
      name = hint + "-" + std::to_string(suffix);
    }
    taken_names_.insert(name);
    return name;
  }

  Status define(const std::string& name, std::string body) {
    total_bytes_ += name.size() + body.size() + 6;
    if (rules_.size() >= kMaxGrammarRules || total_bytes_ > kMaxGrammarBytes) return too_large();
    rules_.emplace_back(name, std::move(body));
    return Status::ok_status();
  }

  // A reference to `body`: itself when it is a rule name, else a new rule.
  StatusOr<std::string> finish(const std::string& name, std::string body) {
    if (is_identifier(body)) return body;
    STRATA_RETURN_IF_ERROR(define(name, std::move(body)));
    return name;
  }

  Status depth_error(const std::string& path) const {
    return invalid_argument("JSON Schema nested deeper than " + std::to_string(kMaxSchemaDepth) +
                            " levels (subschemas and $ref chains) at " + at(path));
  }

  // The rule name `name` is reserved by the caller; returns a reference.
  StatusOr<std::string> visit(const Json& schema, const std::string& name, const std::string& path,
                              int depth) {
    if (depth > kMaxSchemaDepth) return depth_error(path);
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return use("value");
      return invalid_argument("schema 'false' at " + at(path) + " admits no value");
    }
    if (!schema.is_object()) {
      return invalid_argument("JSON Schema at " + at(path) + " must be an object or a boolean");
    }
    STRATA_ASSIGN_OR_RETURN(std::string body, schema_body(schema, name, path, depth));
    return finish(name, std::move(body));
  }

  static Status check_keywords(const Json& schema, const std::string& path) {
    for (const auto& [key, value] : schema.items()) {
      if (kUnsupportedKeywords.count(key) > 0) {
        return invalid_argument("unsupported JSON Schema keyword '" + key + "' at " + at(path));
      }
      if (key == "uniqueItems" && value.is_boolean() && value.get<bool>()) {
        return invalid_argument("unsupported JSON Schema keyword 'uniqueItems' (true) at " +
                                at(path));
      }
    }
    return Status::ok_status();
  }

  static bool has_validation_besides(const Json& schema, const std::set<std::string>& except) {
    for (const auto& item : schema.items()) {
      if (is_validation_keyword(item.key()) && except.count(item.key()) == 0) return true;
    }
    return false;
  }

  StatusOr<std::string> schema_body(const Json& schema, const std::string& name,
                                    const std::string& path, int depth) {
    STRATA_RETURN_IF_ERROR(check_keywords(schema, path));
    if (schema.contains("$ref") && !has_validation_besides(schema, {"$ref"})) {
      if (!schema["$ref"].is_string()) {
        return invalid_argument("'$ref' at " + at(path) + " must be a string");
      }
      return visit_ref(schema["$ref"].get<std::string>(), path, depth);
    }
    if (schema.contains("$ref") || schema.contains("allOf")) {
      STRATA_ASSIGN_OR_RETURN(Json merged, merge_all_of(schema, path, depth));
      return schema_body(merged, name, path, depth + 1);
    }
    if (schema.contains("anyOf") || schema.contains("oneOf")) {
      return alternatives_body(schema, name, path, depth);
    }
    if (schema.contains("enum") || schema.contains("const")) return enum_body(schema, path);
    return typed_body(schema, name, path, depth);
  }

  StatusOr<const Json*> resolve_ref(const std::string& ref, const std::string& path) {
    if (ref.empty() || ref[0] != '#') {
      return invalid_argument("unsupported remote '$ref' \"" + ref + "\" at " + at(path) +
                              " (only local references starting with '#')");
    }
    const Json* node = &root_;
    size_t pos = 1;
    if (ref.size() > 1 && ref[1] != '/') {
      return invalid_argument("unsupported '$ref' \"" + ref + "\" at " + at(path) +
                              " (anchors are not supported; use a JSON pointer)");
    }
    while (pos < ref.size()) {
      const size_t next = ref.find('/', pos + 1);
      std::string token =
          ref.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
      pos = next == std::string::npos ? ref.size() : next;
      std::string key;
      for (size_t idx = 0; idx < token.size(); ++idx) {
        if (token[idx] == '~' && idx + 1 < token.size() && token[idx + 1] == '0') {
          key += '~';
          ++idx;
        } else if (token[idx] == '~' && idx + 1 < token.size() && token[idx + 1] == '1') {
          key += '/';
          ++idx;
        } else {
          key += token[idx];
        }
      }
      const Json* next_node = nullptr;
      if (node->is_object() && node->contains(key)) {
        next_node = &(*node)[key];
      } else if (node->is_array() && !key.empty() &&
                 key.find_first_not_of("0123456789") == std::string::npos && key.size() < 10 &&
                 std::stoul(key) < node->size()) {
        next_node = &(*node)[std::stoul(key)];
      }
      if (next_node == nullptr) {
        return invalid_argument("'$ref' \"" + ref + "\" at " + at(path) + " does not resolve");
      }
      node = next_node;
    }
    return node;
  }

  StatusOr<std::string> visit_ref(const std::string& ref, const std::string& path, int depth) {
    if (auto it = ref_rules_.find(ref); it != ref_rules_.end()) return it->second;
    STRATA_ASSIGN_OR_RETURN(const Json* target, resolve_ref(ref, path));
    std::string last_key = ref.substr(ref.rfind('/') + 1);
    for (size_t idx = 0; idx + 1 < last_key.size(); ++idx) {
      if (last_key[idx] == '~' && (last_key[idx + 1] == '0' || last_key[idx + 1] == '1')) {
        last_key.replace(idx, 2, last_key[idx + 1] == '0' ? "~" : "/");
      }
    }
    const std::string name = unique_name(sanitize_name(last_key));
    ref_rules_[ref] = name;
    STRATA_ASSIGN_OR_RETURN(std::string body, visit(*target, name, ref.substr(1), depth + 1));
    if (body != name) STRATA_RETURN_IF_ERROR(define(name, body));
    return name;
  }

  // Flattens allOf (and $ref with sibling keywords) into the parts to merge.
  Status collect_parts(const Json& schema, const std::string& path, int depth,
                       std::vector<Json>& parts) {
    if (depth > kMaxSchemaDepth) return depth_error(path);
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return Status::ok_status();
      return invalid_argument("schema 'false' in 'allOf' at " + at(path) + " admits no value");
    }
    if (!schema.is_object()) {
      return invalid_argument("JSON Schema at " + at(path) + " must be an object or a boolean");
    }
    STRATA_RETURN_IF_ERROR(check_keywords(schema, path));
    Json rest = schema;
    rest.erase("allOf");
    rest.erase("$ref");
    parts.push_back(rest);
    if (schema.contains("$ref")) {
      if (!schema["$ref"].is_string()) {
        return invalid_argument("'$ref' at " + at(path) + " must be a string");
      }
      const std::string ref = schema["$ref"].get<std::string>();
      STRATA_ASSIGN_OR_RETURN(const Json* target, resolve_ref(ref, path));
      STRATA_RETURN_IF_ERROR(collect_parts(*target, ref.substr(1), depth + 1, parts));
    }
    if (schema.contains("allOf")) {
      const Json& all_of = schema["allOf"];
      if (!all_of.is_array() || all_of.empty()) {
        return invalid_argument("'allOf' at " + at(path) + " must be a non-empty array");
      }
      for (size_t idx = 0; idx < all_of.size(); ++idx) {
        STRATA_RETURN_IF_ERROR(
            collect_parts(all_of[idx], path + "/allOf/" + std::to_string(idx), depth + 1, parts));
      }
    }
    return Status::ok_status();
  }

  static StatusOr<std::vector<std::string>> type_list(const Json& schema, const std::string& path) {
    std::vector<std::string> types;
    if (!schema.contains("type")) return types;
    const Json& type = schema["type"];
    if (type.is_string()) {
      types.push_back(type.get<std::string>());
    } else if (type.is_array()) {
      for (const Json& item : type) {
        if (!item.is_string()) {
          return invalid_argument("'type' at " + at(path) + " must be a string or strings");
        }
        types.push_back(item.get<std::string>());
      }
    } else {
      return invalid_argument("'type' at " + at(path) + " must be a string or strings");
    }
    static const std::set<std::string> kTypes = {"string", "number", "integer", "boolean",
                                                 "null",   "object", "array"};
    for (const std::string& name : types) {
      if (kTypes.count(name) == 0) {
        return invalid_argument("unknown 'type' \"" + name + "\" at " + at(path));
      }
    }
    return types;
  }

  // Merges the parts of an allOf into one schema (simple cases only).
  StatusOr<Json> merge_all_of(const Json& schema, const std::string& path, int depth) {
    std::vector<Json> parts;
    STRATA_RETURN_IF_ERROR(collect_parts(schema, path, depth, parts));
    return merge_parts(parts, path);
  }

  static StatusOr<Json> merge_parts(const std::vector<Json>& parts, const std::string& path) {
    Json merged = Json::object();
    std::optional<std::set<std::string>> types;
    std::set<std::string> required;
    for (const Json& part : parts) {
      for (const auto& [key, value] : part.items()) {
        if (!is_validation_keyword(key)) continue;
        if (key == "type") {
          STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, type_list(part, path));
          std::set<std::string> part_types(names.begin(), names.end());
          if (part_types.count("number") > 0) part_types.insert("integer");
          if (!types) {
            types = part_types;
          } else {
            std::set<std::string> common;
            for (const std::string& name : *types) {
              if (part_types.count(name) > 0) common.insert(name);
            }
            if (types->count("integer") == 0 && types->count("number") > 0 &&
                part_types.count("integer") > 0) {
              common.insert("integer");
            }
            types = common;
          }
        } else if (key == "required") {
          if (!value.is_array()) {
            return invalid_argument("'required' at " + at(path) + " must be an array");
          }
          for (const Json& item : value) {
            if (!item.is_string()) {
              return invalid_argument("'required' at " + at(path) + " must hold strings");
            }
            required.insert(item.get<std::string>());
          }
        } else if (key == "properties") {
          if (!value.is_object()) {
            return invalid_argument("'properties' at " + at(path) + " must be an object");
          }
          Json& properties = merged["properties"];
          if (properties.is_null()) properties = Json::object();
          for (const auto& [prop, prop_schema] : value.items()) {
            if (properties.contains(prop) && properties[prop] != prop_schema) {
              return invalid_argument("unsupported 'allOf' at " + at(path) + ": property '" + prop +
                                      "' is defined differently in two parts");
            }
            properties[prop] = prop_schema;
          }
        } else if (merged.contains(key) && merged[key] != value) {
          return invalid_argument("unsupported 'allOf' at " + at(path) +
                                  ": conflicting values for '" + key + "'");
        } else {
          merged[key] = value;
        }
      }
    }
    // additionalProperties of one part also forbids the other parts' properties.
    const Json merged_properties =
        merged.contains("properties") ? merged["properties"] : Json::object();
    for (const Json& part : parts) {
      if (!part.contains("additionalProperties") || part["additionalProperties"] == Json(true)) {
        continue;
      }
      const Json own = part.contains("properties") ? part["properties"] : Json::object();
      for (const auto& item : merged_properties.items()) {
        if (!own.is_object() || !own.contains(item.key())) {
          return invalid_argument("unsupported 'allOf' at " + at(path) +
                                  ": 'additionalProperties' of one part " +
                                  "would apply to property '" + item.key() + "' of another");
        }
      }
    }
    if (types) {
      if (types->empty()) {
        return invalid_argument("'allOf' at " + at(path) + " has no type in common");
      }
      if (types->count("number") > 0) types->erase("integer");
      Json list = Json::array();
      for (const std::string& name : *types) list.push_back(name);
      merged["type"] = list;
    }
    if (!required.empty()) {
      Json list = Json::array();
      for (const std::string& name : required) list.push_back(name);
      merged["required"] = list;
    }
    return merged;
  }

  StatusOr<std::string> alternatives_body(const Json& schema, const std::string& name,
                                          const std::string& path, int depth) {
    if (schema.contains("anyOf") && schema.contains("oneOf")) {
      return invalid_argument("unsupported combination of 'anyOf' and 'oneOf' at " + at(path));
    }
    const std::string keyword = schema.contains("anyOf") ? "anyOf" : "oneOf";
    const Json& branches = schema[keyword];
    if (!branches.is_array() || branches.empty()) {
      return invalid_argument("'" + keyword + "' at " + at(path) + " must be a non-empty array");
    }
    Json siblings = schema;
    siblings.erase(keyword);
    const bool merge_siblings = has_validation_besides(siblings, {});
    std::vector<std::string> alternatives;
    for (size_t idx = 0; idx < branches.size(); ++idx) {
      if (branches[idx].is_boolean() && !branches[idx].get<bool>()) continue;  // admits nothing
      const std::string branch_path = path + "/" + keyword + "/" + std::to_string(idx);
      const std::string branch_name = unique_name(name + "-" + std::to_string(idx));
      std::string ref;
      if (merge_siblings) {
        Json combined = siblings;
        combined["allOf"] = Json::array({branches[idx]});
        STRATA_ASSIGN_OR_RETURN(ref, visit(combined, branch_name, branch_path, depth + 1));
      } else {
        STRATA_ASSIGN_OR_RETURN(ref, visit(branches[idx], branch_name, branch_path, depth + 1));
      }
      if (std::find(alternatives.begin(), alternatives.end(), ref) == alternatives.end()) {
        alternatives.push_back(ref);
      }
    }
    if (alternatives.empty()) {
      return invalid_argument("'" + keyword + "' at " + at(path) + " admits no value");
    }
    return join(alternatives, " | ");
  }

  static int value_depth(const Json& value, int limit) {
    if (limit <= 0) return 1;
    int deepest = 0;
    if (value.is_structured()) {
      for (const Json& item : value) deepest = std::max(deepest, value_depth(item, limit - 1));
      return deepest + 1;
    }
    return 0;
  }

  static bool value_has_type(const Json& value, const std::string& type) {
    if (type == "null") return value.is_null();
    if (type == "boolean") return value.is_boolean();
    if (type == "string") return value.is_string();
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    if (type == "number") return value.is_number();
    if (type == "integer") {
      if (value.is_number_integer()) return true;
      if (!value.is_number_float()) return false;
      const double number = value.get<double>();
      return std::isfinite(number) && number == std::floor(number);
    }
    return false;
  }

  StatusOr<std::string> enum_body(const Json& schema, const std::string& path) {
    for (const auto& item : schema.items()) {
      const std::string& key = item.key();
      if (is_validation_keyword(key) && key != "enum" && key != "const" && key != "type" &&
          key != "nullable" && key != "format") {
        return invalid_argument("unsupported combination of '" +
                                std::string(schema.contains("enum") ? "enum" : "const") +
                                "' with '" + key + "' at " + at(path));
      }
    }
    std::vector<Json> values;
    if (schema.contains("enum")) {
      if (!schema["enum"].is_array() || schema["enum"].empty()) {
        return invalid_argument("'enum' at " + at(path) + " must be a non-empty array");
      }
      for (const Json& value : schema["enum"]) {
        if (!schema.contains("const") || schema["const"] == value) values.push_back(value);
      }
    } else {
      values.push_back(schema["const"]);
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> types, type_list(schema, path));
    std::vector<std::string> alternatives;
    for (const Json& value : values) {
      const bool type_ok =
          types.empty() || std::any_of(types.begin(), types.end(), [&](const std::string& type) {
            return value_has_type(value, type);
          });
      if (!type_ok) continue;
      if (value_depth(value, kMaxSchemaDepth + 1) > kMaxSchemaDepth) {
        return invalid_argument("'enum'/'const' value at " + at(path) + " nested deeper than " +
                                std::to_string(kMaxSchemaDepth));
      }
      std::string literal = gbnf_literal(value.dump());
      if (std::find(alternatives.begin(), alternatives.end(), literal) == alternatives.end()) {
        alternatives.push_back(std::move(literal));
      }
    }
    if (schema.value("nullable", false) && !alternatives.empty() &&
        std::find(alternatives.begin(), alternatives.end(), "\"null\"") == alternatives.end()) {
      alternatives.push_back("\"null\"");
    }
    if (alternatives.empty()) {
      return invalid_argument("'enum'/'const' at " + at(path) +
                              " admits no value of the schema's 'type'");
    }
    return join(alternatives, " | ");
  }

  StatusOr<std::string> typed_body(const Json& schema, const std::string& name,
                                   const std::string& path, int depth) {
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> types, type_list(schema, path));
    if (!schema.contains("type")) {
      auto has_any = [&](const std::set<std::string, std::less<>>& keys) {
        return std::any_of(keys.begin(), keys.end(),
                           [&](const std::string& key) { return schema.contains(key); });
      };
      if (has_any(kObjectKeywords)) types.push_back("object");
      if (has_any(kArrayKeywords)) types.push_back("array");
      const bool known_format = schema.contains("format") && schema["format"].is_string() &&
                                kFormats.count(schema["format"].get<std::string>()) > 0;
      if (has_any(kStringKeywords) || known_format) types.push_back("string");
      if (has_any(kNumberKeywords)) types.push_back("number");
    }
    if (types.empty()) return use("value");
    if (std::find(types.begin(), types.end(), "number") != types.end()) {
      types.erase(std::remove(types.begin(), types.end(), "integer"), types.end());
    }
    if (schema.value("nullable", false) &&
        std::find(types.begin(), types.end(), "null") == types.end()) {
      types.push_back("null");
    }
    std::vector<std::string> alternatives;
    for (const std::string& type : types) {
      std::string body;
      if (type == "string") {
        STRATA_ASSIGN_OR_RETURN(body, string_body(schema, path));
      } else if (type == "integer") {
        STRATA_ASSIGN_OR_RETURN(body, integer_body(schema, path));
      } else if (type == "number") {
        STRATA_ASSIGN_OR_RETURN(body, number_body(schema, path));
      } else if (type == "boolean") {
        body = use("boolean");
      } else if (type == "null") {
        body = use("null");
      } else if (type == "object") {
        STRATA_ASSIGN_OR_RETURN(body, object_body(schema, name, path, depth));
      } else {
        STRATA_ASSIGN_OR_RETURN(body, array_body(schema, name, path, depth));
      }
      if (std::find(alternatives.begin(), alternatives.end(), body) == alternatives.end()) {
        alternatives.push_back(std::move(body));
      }
    }
    return join(alternatives, " | ");
  }

  // A non-negative integer keyword (minLength, maxItems, ...), at most kMaxSchemaRepeat.
  static StatusOr<std::optional<int64_t>> count_keyword(const Json& schema, const char* key,
                                                        const std::string& path) {
    if (!schema.contains(key)) return std::optional<int64_t>();
    const Json& value = schema[key];
    bool valid =
        value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
    if (value.is_number_float()) {
      const double number = value.get<double>();
      valid = std::isfinite(number) && number >= 0 && number == std::floor(number);
    }
    if (!valid) {
      return invalid_argument("'" + std::string(key) + "' at " + at(path) +
                              " must be a non-negative integer");
    }
    const double number = value.get<double>();
    if (number > kMaxSchemaRepeat) {
      return invalid_argument("'" + std::string(key) + "' " + value.dump() + " at " + at(path) +
                              " is above the supported limit " + std::to_string(kMaxSchemaRepeat));
    }
    return std::optional<int64_t>(static_cast<int64_t>(number));
  }

  StatusOr<std::string> string_body(const Json& schema, const std::string& path) {
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> min_length,
                            count_keyword(schema, "minLength", path));
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> max_length,
                            count_keyword(schema, "maxLength", path));
    const bool has_length = min_length || max_length;
    if (schema.contains("format") && schema["format"].is_string()) {
      const std::string format = schema["format"].get<std::string>();
      if (kFormats.count(format) > 0) {
        if (has_length || schema.contains("pattern")) {
          return invalid_argument("unsupported combination of 'format' \"" + format + "\" with " +
                                  (has_length ? "'minLength'/'maxLength'" : "'pattern'") + " at " +
                                  at(path));
        }
        return use(format + "-string");
      }
    }
    if (schema.contains("pattern")) {
      if (!schema["pattern"].is_string()) {
        return invalid_argument("'pattern' at " + at(path) + " must be a string");
      }
      if (has_length) {
        return invalid_argument("unsupported combination of 'pattern' with " +
                                std::string(min_length ? "'minLength'" : "'maxLength'") + " at " +
                                at(path));
      }
      StatusOr<std::string> expr = regex_to_gbnf_expression(schema["pattern"].get<std::string>(),
                                                            RegexTarget::kJsonStringContent);
      if (!expr.ok()) {
        return invalid_argument("unsupported 'pattern' at " + at(path) + ": " +
                                expr.status().message());
      }
      if (*expr == "\"\"") return std::string("\"\\\"\\\"\"");
      return "\"\\\"\" " + group(*expr) + " \"\\\"\"";
    }
    if (!has_length) return use("string");
    const int64_t min_count = min_length.value_or(0);
    const int64_t max_count = max_length ? *max_length : -1;
    if (max_length && min_count > max_count) {
      return invalid_argument("'minLength' " + std::to_string(min_count) + " > 'maxLength' " +
                              std::to_string(max_count) + " at " + at(path));
    }
    return join({"\"\\\"\"", repeat(use("char"), min_count, max_count), "\"\\\"\""}, " ");
  }

  struct NumericBounds {
    std::optional<Bound> lower;
    std::optional<Bound> upper;
  };

  // Reads minimum/maximum/exclusive* (number or draft-4 boolean form). For
  // integer types fractional bounds are rounded inward; for numbers they are
  // an error. The stricter of minimum and exclusiveMinimum wins.
  static StatusOr<NumericBounds> numeric_bounds(const Json& schema, const std::string& path,
                                                bool for_integer_type) {
    NumericBounds bounds;
    auto read = [&](const char* key, bool is_lower, bool exclusive) -> Status {
      const Json& value = schema[key];
      if (!value.is_number()) {
        return invalid_argument("'" + std::string(key) + "' at " + at(path) + " must be a number");
      }
      int64_t rounded = 0;
      bool is_integral = true;
      if (value.is_number_float()) {
        const double number = value.get<double>();
        if (!std::isfinite(number) || std::fabs(number) > 1e18) {
          return invalid_argument("unsupported '" + std::string(key) + "' " + value.dump() +
                                  " at " + at(path) + " (magnitude above 1e18)");
        }
        is_integral = number == std::floor(number);
        if (!is_integral && !for_integer_type) {
          return invalid_argument("unsupported '" + std::string(key) + "' " + value.dump() +
                                  " at " + at(path) +
                                  " (only integer bounds are supported for type number)");
        }
        rounded = static_cast<int64_t>(is_lower ? std::ceil(number) : std::floor(number));
      } else if (value.is_number_unsigned() &&
                 value.get<uint64_t>() > static_cast<uint64_t>(kMaxBoundMagnitude)) {
        rounded = kMaxBoundMagnitude + 1;
      } else {
        rounded = value.get<int64_t>();
      }
      if (rounded > kMaxBoundMagnitude || rounded < -kMaxBoundMagnitude) {
        return invalid_argument("unsupported '" + std::string(key) + "' " + value.dump() + " at " +
                                at(path) + " (magnitude above 1e18)");
      }
      // A non-integral exclusive bound rounded inward is an inclusive one.
      Bound bound{rounded, exclusive && is_integral};
      std::optional<Bound>& slot = is_lower ? bounds.lower : bounds.upper;
      const auto stricter = [&](const Bound& a, const Bound& b) {
        if (a.value != b.value) return is_lower ? a.value > b.value : a.value < b.value;
        return a.exclusive && !b.exclusive;
      };
      if (!slot || stricter(bound, *slot)) slot = bound;
      return Status::ok_status();
    };
    const bool draft4_min =
        schema.contains("exclusiveMinimum") && schema["exclusiveMinimum"].is_boolean();
    const bool draft4_max =
        schema.contains("exclusiveMaximum") && schema["exclusiveMaximum"].is_boolean();
    if (schema.contains("minimum")) {
      STRATA_RETURN_IF_ERROR(
          read("minimum", true, draft4_min && schema["exclusiveMinimum"].get<bool>()));
    }
    if (schema.contains("maximum")) {
      STRATA_RETURN_IF_ERROR(
          read("maximum", false, draft4_max && schema["exclusiveMaximum"].get<bool>()));
    }
    if (schema.contains("exclusiveMinimum") && !draft4_min) {
      STRATA_RETURN_IF_ERROR(read("exclusiveMinimum", true, true));
    }
    if (schema.contains("exclusiveMaximum") && !draft4_max) {
      STRATA_RETURN_IF_ERROR(read("exclusiveMaximum", false, true));
    }
    return bounds;
  }

  StatusOr<std::string> integer_body(const Json& schema, const std::string& path) {
    STRATA_ASSIGN_OR_RETURN(NumericBounds bounds, numeric_bounds(schema, path, true));
    if (!bounds.lower && !bounds.upper) return use("integer");
    std::optional<int64_t> low;
    std::optional<int64_t> high;
    if (bounds.lower) low = bounds.lower->value + (bounds.lower->exclusive ? 1 : 0);
    if (bounds.upper) high = bounds.upper->value - (bounds.upper->exclusive ? 1 : 0);
    std::string body = integer_range(low, high);
    if (body.empty()) {
      return invalid_argument("no integer satisfies the bounds at " + at(path) + " (minimum " +
                              std::to_string(*low) + " > maximum " + std::to_string(*high) + ")");
    }
    return body;
  }

  StatusOr<std::string> number_body(const Json& schema, const std::string& path) {
    STRATA_ASSIGN_OR_RETURN(NumericBounds bounds, numeric_bounds(schema, path, false));
    if (!bounds.lower && !bounds.upper) return use("number");
    std::vector<std::string> alternatives;
    // Non-negative numbers, written without a sign.
    const bool positive_possible = !bounds.upper || bounds.upper->value > 0 ||
                                   (bounds.upper->value == 0 && !bounds.upper->exclusive);
    if (positive_possible) {
      Bound lower{0, false};
      if (bounds.lower && bounds.lower->value >= 0) lower = *bounds.lower;
      for (std::string& alt : magnitude_alternatives(lower, bounds.upper)) {
        alternatives.push_back(std::move(alt));
      }
    }
    // Negative numbers: "-" and a magnitude m > 0 (never "-0").
    if (!bounds.lower || bounds.lower->value < 0) {
      Bound lower{0, true};
      if (bounds.upper && bounds.upper->value < 0) {
        lower = {-bounds.upper->value, bounds.upper->exclusive};
      }
      std::optional<Bound> upper;
      if (bounds.lower) upper = Bound{-bounds.lower->value, bounds.lower->exclusive};
      const std::vector<std::string> magnitudes = magnitude_alternatives(lower, upper);
      if (!magnitudes.empty()) {
        alternatives.push_back("\"-\" " + group(join(magnitudes, " | ")));
      }
    }
    if (alternatives.empty()) {
      return invalid_argument("no number satisfies the bounds at " + at(path));
    }
    return join(alternatives, " | ");
  }

  // "\"key\"" as a GBNF literal of its JSON encoding.
  static StatusOr<std::string> key_literal(const std::string& key, const std::string& path) {
    StatusOr<std::vector<uint32_t>> code_points = decode_utf8(key);
    if (!code_points.ok()) {
      return invalid_argument("property name at " + at(path) + " is not valid UTF-8");
    }
    std::string encoded = "\"";
    for (uint32_t code_point : *code_points) encoded += json_escape_code_point(code_point);
    encoded += '"';
    return gbnf_literal(encoded);
  }

  // A JSON string that is none of `keys` (so extra properties never reuse a
  // listed name): a trie over the names' code points.
  StatusOr<std::string> key_excluding(const std::set<std::string>& keys, const std::string& name,
                                      const std::string& path) {
    struct TrieNode {
      std::map<uint32_t, size_t> children;
      bool is_word = false;
    };
    std::vector<TrieNode> trie(1);
    for (const std::string& key : keys) {
      StatusOr<std::vector<uint32_t>> code_points = decode_utf8(key);
      if (!code_points.ok()) {
        return invalid_argument("property name at " + at(path) + " is not valid UTF-8");
      }
      size_t node = 0;
      for (uint32_t code_point : *code_points) {
        auto it = trie[node].children.find(code_point);
        if (it == trie[node].children.end()) {
          trie.push_back({});
          it = trie[node].children.emplace(code_point, trie.size() - 1).first;
        }
        node = it->second;
      }
      trie[node].is_word = true;
    }
    const std::string base = unique_name(name + "-additional-key");
    int num_node_rules = 0;
    // Expression for "the rest of the key" at trie node `node_idx`.
    std::function<StatusOr<std::string>(size_t, int)> node_expr =
        [&](size_t node_idx, int level) -> StatusOr<std::string> {
      const TrieNode& node = trie[node_idx];
      CodePointSet others = CodePointSet::all();
      std::vector<std::string> alternatives;
      CodePointSet children;
      for (const auto& [code_point, child] : node.children) children.add(code_point, code_point);
      others = children.complement();
      if (children.empty()) {
        alternatives.push_back(use("char") + "+");
      } else if (!others.empty()) {
        alternatives.push_back(group(json_char_set_gbnf(others)) + " " + use("char") + "*");
      }
      for (const auto& [code_point, child] : node.children) {
        STRATA_ASSIGN_OR_RETURN(std::string rest, node_expr(child, level + 1));
        std::string literal = gbnf_literal(json_escape_code_point(code_point));
        if (level > 0 && level % 32 == 0) {
          const std::string rule = unique_name(base + "-" + std::to_string(++num_node_rules));
          STRATA_RETURN_IF_ERROR(define(rule, rest));
          rest = rule;
        }
        alternatives.push_back(literal + " " + group(rest));
      }
      std::string body = join(alternatives, " | ");
      if (!node.is_word) body = "( " + body + " )?";
      return body;
    };
    STRATA_ASSIGN_OR_RETURN(std::string body, node_expr(0, 1));
    STRATA_RETURN_IF_ERROR(define(base, "\"\\\"\" " + group(body) + " \"\\\"\""));
    return base;
  }

  StatusOr<std::string> object_body(const Json& schema, const std::string& name,
                                    const std::string& path, int depth) {
    static const Json kTrue = true;
    struct Property {
      std::string key;
      const Json* schema;
      bool is_required;
      std::string path;
    };
    std::set<std::string> required;
    if (schema.contains("required")) {
      if (!schema["required"].is_array()) {
        return invalid_argument("'required' at " + at(path) + " must be an array");
      }
      for (const Json& item : schema["required"]) {
        if (!item.is_string()) {
          return invalid_argument("'required' at " + at(path) + " must hold strings");
        }
        required.insert(item.get<std::string>());
      }
    }
    const Json* additional = options_.strict ? nullptr : &kTrue;
    if (schema.contains("additionalProperties")) {
      const Json& value = schema["additionalProperties"];
      if (value.is_boolean()) {
        additional = value.get<bool>() ? &kTrue : nullptr;
      } else if (value.is_object()) {
        additional = &value;
      } else {
        return invalid_argument("'additionalProperties' at " + at(path) +
                                " must be a boolean or a schema");
      }
    }
    std::vector<Property> properties;
    std::set<std::string> known_keys;
    if (schema.contains("properties")) {
      if (!schema["properties"].is_object()) {
        return invalid_argument("'properties' at " + at(path) + " must be an object");
      }
      for (const auto& [key, sub] : schema["properties"].items()) {
        known_keys.insert(key);
        const bool is_required = required.count(key) > 0;
        if (sub.is_boolean() && !sub.get<bool>()) {
          if (is_required) {
            return invalid_argument("required property '" + key + "' at " + at(path) +
                                    " has schema false");
          }
          continue;
        }
        properties.push_back({key, &sub, is_required, path + "/properties/" + pointer_token(key)});
      }
    }
    for (const std::string& key : required) {
      if (known_keys.count(key) > 0) continue;
      if (additional == nullptr) {
        return invalid_argument("required property '" + key + "' at " + at(path) +
                                " is not in 'properties' and additionalProperties is false");
      }
      known_keys.insert(key);
      properties.push_back({key, additional, true, path + "/additionalProperties"});
    }
    const auto num_required = static_cast<int64_t>(
        std::count_if(properties.begin(), properties.end(),
                      [](const Property& property) { return property.is_required; }));
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> min_properties,
                            count_keyword(schema, "minProperties", path));
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> max_properties,
                            count_keyword(schema, "maxProperties", path));
    if (min_properties && *min_properties > num_required) {
      return invalid_argument("unsupported JSON Schema keyword 'minProperties' at " + at(path) +
                              " (only values up to the number of required properties, " +
                              std::to_string(num_required) + ")");
    }
    if (max_properties &&
        (additional != nullptr || *max_properties < static_cast<int64_t>(properties.size()))) {
      return invalid_argument(
          "unsupported JSON Schema keyword 'maxProperties' at " + at(path) +
          " (only values at least the number of properties, with additionalProperties false)");
    }

    std::vector<std::string> members;  // "key" : value
    for (const Property& property : properties) {
      const std::string value_name = unique_name(name + "-" + sanitize_name(property.key));
      STRATA_ASSIGN_OR_RETURN(std::string value,
                              visit(*property.schema, value_name, property.path, depth + 1));
      STRATA_ASSIGN_OR_RETURN(std::string key, key_literal(property.key, path));
      members.push_back(key + " " + colon() + " " + value);
    }
    std::string extra_member;
    if (additional != nullptr) {
      std::string key = use("string");
      if (!known_keys.empty()) {
        STRATA_ASSIGN_OR_RETURN(key, key_excluding(known_keys, name, path));
      }
      const std::string value_name = unique_name(name + "-additional-value");
      STRATA_ASSIGN_OR_RETURN(std::string value, visit(*additional, value_name,
                                                       path + "/additionalProperties", depth + 1));
      extra_member = key + " " + colon() + " " + value;
      if (!properties.empty()) {
        const std::string rule = unique_name(name + "-additional-member");
        STRATA_RETURN_IF_ERROR(define(rule, extra_member));
        extra_member = rule;
      }
    }

    const size_t num_properties = properties.size();
    size_t first_required = num_properties;
    for (size_t idx = 0; idx < num_properties; ++idx) {
      if (properties[idx].is_required) {
        first_required = idx;
        break;
      }
    }
    const std::string extra_tail =
        extra_member.empty() ? "" : "( " + comma() + " " + extra_member + " )*";
    // Members from `idx` on, after at least one member: listed ones in order
    // (optional ones may be skipped), then extra ones.
    auto tail = [&](size_t idx) {
      std::vector<std::string> parts;
      for (size_t prop_idx = idx; prop_idx < num_properties; ++prop_idx) {
        const std::string item = comma() + " " + members[prop_idx];
        parts.push_back(properties[prop_idx].is_required ? item : "( " + item + " )?");
      }
      parts.push_back(extra_tail);
      return join(parts, " ");
    };
    // Until the first required property each start position gets a rule for
    // its tail, so the grammar stays linear in the number of properties.
    std::map<size_t, std::string> rest_rules;
    std::function<StatusOr<std::string>(size_t)> rest = [&](size_t idx) -> StatusOr<std::string> {
      if (idx >= num_properties || idx > first_required) return tail(idx);
      if (auto it = rest_rules.find(idx); it != rest_rules.end()) return it->second;
      const std::string item = comma() + " " + members[idx];
      STRATA_ASSIGN_OR_RETURN(std::string after, rest(idx + 1));
      std::string body = join({idx < first_required ? "( " + item + " )?" : item, after}, " ");
      if (idx == 1) return body;  // used once
      const std::string rule = unique_name(name + "-rest-" + std::to_string(idx));
      STRATA_RETURN_IF_ERROR(define(rule, body));
      rest_rules[idx] = rule;
      return rule;
    };
    std::vector<std::string> starts;
    for (size_t idx = 0; idx < num_properties && idx <= first_required; ++idx) {
      STRATA_ASSIGN_OR_RETURN(std::string after, rest(idx + 1));
      starts.push_back(join({members[idx], after}, " "));
    }
    if (first_required == num_properties && !extra_member.empty()) {
      starts.push_back(join({extra_member, extra_tail}, " "));
    }
    if (starts.empty()) return options_.any_whitespace ? "\"{\" " + use("ws") + " \"}\"" : "\"{}\"";
    const std::string body = group(join(starts, " | "));
    if (first_required < num_properties) return open("{") + " " + body + " " + close("}");
    if (options_.any_whitespace) {
      return open("{") + " ( " + body + " " + use("ws") + " )? \"}\"";
    }
    return "\"{\" ( " + body + " )? \"}\"";
  }

  StatusOr<std::string> array_body(const Json& schema, const std::string& name,
                                   const std::string& path, int depth) {
    static const Json kTrue = true;
    std::vector<const Json*> prefix;
    std::string prefix_key;
    const Json* items = &kTrue;
    std::string items_path = path + "/items";
    if (schema.contains("prefixItems")) {
      prefix_key = "prefixItems";
      if (schema.contains("items")) items = &schema["items"];
    } else if (schema.contains("items") && schema["items"].is_array()) {
      prefix_key = "items";  // draft 4-7 tuple form
      if (schema.contains("additionalItems")) {
        items = &schema["additionalItems"];
        items_path = path + "/additionalItems";
      }
    } else if (schema.contains("items")) {
      items = &schema["items"];
    }
    if (!prefix_key.empty()) {
      if (!schema[prefix_key].is_array()) {
        return invalid_argument("'" + prefix_key + "' at " + at(path) + " must be an array");
      }
      for (const Json& item : schema[prefix_key]) prefix.push_back(&item);
      if (prefix.size() > kMaxPrefixItems) {
        return invalid_argument("'" + prefix_key + "' at " + at(path) + " has " +
                                std::to_string(prefix.size()) + " items; at most " +
                                std::to_string(kMaxPrefixItems) + " supported");
      }
    }
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> min_items,
                            count_keyword(schema, "minItems", path));
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> max_items,
                            count_keyword(schema, "maxItems", path));
    int64_t min_count = min_items.value_or(0);
    int64_t max_count = max_items ? *max_items : -1;
    // A `false` item at position i caps the length at i.
    for (size_t idx = 0; idx < prefix.size(); ++idx) {
      if (prefix[idx]->is_boolean() && !prefix[idx]->get<bool>()) {
        const auto cap = static_cast<int64_t>(idx);
        max_count = max_count < 0 ? cap : std::min(max_count, cap);
        prefix.resize(idx);
        break;
      }
    }
    const bool items_forbidden = items->is_boolean() && !items->get<bool>();
    if (items_forbidden) {
      const auto cap = static_cast<int64_t>(prefix.size());
      max_count = max_count < 0 ? cap : std::min(max_count, cap);
    }
    if (max_count >= 0 && min_count > max_count) {
      return invalid_argument("no array satisfies 'minItems' " + std::to_string(min_count) +
                              " with at most " + std::to_string(max_count) + " items at " +
                              at(path));
    }
    if (max_count == 0) {
      return options_.any_whitespace ? "\"[\" " + use("ws") + " \"]\"" : std::string("\"[]\"");
    }
    std::vector<std::string> prefix_refs;
    for (size_t idx = 0; idx < prefix.size() && static_cast<int64_t>(idx) != max_count; ++idx) {
      STRATA_ASSIGN_OR_RETURN(
          std::string ref, visit(*prefix[idx], unique_name(name + "-" + std::to_string(idx)),
                                 path + "/" + prefix_key + "/" + std::to_string(idx), depth + 1));
      prefix_refs.push_back(ref);
    }
    std::string item_ref;
    const auto num_prefix = static_cast<int64_t>(prefix_refs.size());
    if (!items_forbidden && (max_count < 0 || max_count > num_prefix)) {
      STRATA_ASSIGN_OR_RETURN(item_ref,
                              visit(*items, unique_name(name + "-item"), items_path, depth + 1));
    }
    const int64_t required_count = std::max<int64_t>(min_count, 1);  // non-empty variant
    // Elements from position idx on; idx > 0 means a separator comes first.
    std::function<std::string(int64_t)> elements = [&](int64_t idx) -> std::string {
      const std::string lead = idx == 0 ? "" : comma() + " ";
      if (idx < num_prefix) {
        const std::string item = join({lead + prefix_refs[idx], elements(idx + 1)}, " ");
        return idx < required_count ? item : "( " + item + " )?";
      }
      if (item_ref.empty()) return "";
      const int64_t low = std::max<int64_t>(required_count - idx, 0);
      const int64_t high = max_count < 0 ? -1 : max_count - idx;
      if (idx == 0) {
        return join({item_ref, repeat("( " + comma() + " " + item_ref + " )", low - 1,
                                      high < 0 ? -1 : high - 1)},
                    " ");
      }
      return repeat("( " + comma() + " " + item_ref + " )", low, high);
    };
    const std::string body = elements(0);
    if (min_count > 0) return open("[") + " " + body + " " + close("]");
    if (options_.any_whitespace) {
      return open("[") + " ( " + body + " " + use("ws") + " )? \"]\"";
    }
    return "\"[\" ( " + body + " )? \"]\"";
  }

  const Json& root_;
  const JsonSchemaOptions options_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::unordered_set<std::string> taken_names_;
  std::set<std::string> used_builtins_;
  std::map<std::string, std::string> ref_rules_;
  size_t total_bytes_ = 0;
};

// Nesting depth of a JSON document, without recursion (copies and
// comparisons of nlohmann values recurse, so deep documents are refused first).
size_t document_depth(const Json& document) {
  size_t deepest = 0;
  std::vector<std::pair<const Json*, size_t>> pending = {{&document, 1}};
  while (!pending.empty()) {
    const auto [value, depth] = pending.back();
    pending.pop_back();
    deepest = std::max(deepest, depth);
    if (!value->is_structured()) continue;
    for (const Json& item : *value) pending.emplace_back(&item, depth + 1);
  }
  return deepest;
}

}  // namespace

StatusOr<std::string> json_schema_to_gbnf(std::string_view schema_json,
                                          const JsonSchemaOptions& options) {
  Json schema = Json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return invalid_argument("JSON Schema is not valid JSON");
  if (document_depth(schema) > kMaxDocumentDepth) {
    return invalid_argument("JSON Schema document nested deeper than " +
                            std::to_string(kMaxDocumentDepth) + " levels");
  }
  try {
    Converter converter(schema, options);
    return converter.convert();
  } catch (const nlohmann::json::exception& error) {
    return invalid_argument(std::string("JSON Schema: ") + error.what());
  }
}

}  // namespace strata::structured
