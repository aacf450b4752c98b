#include "server/tool_choice.h"

#include <optional>

#include "output_parsers/value_scanner.h"

namespace strata::server {
namespace {

using Json = nlohmann::ordered_json;

const Json* tool_function(const Json& tool) {
  if (!tool.is_object()) return nullptr;
  auto fn = tool.find("function");
  if (fn == tool.end() || !fn->is_object()) return nullptr;
  auto name = fn->find("name");
  if (name == fn->end() || !name->is_string()) return nullptr;
  return &*fn;
}

ApiError bad_tool(const std::string& what) { return ApiError::bad_request(what, "tools"); }

// The tool's parameters schema without its $defs (moved to the root, so
// "#/$defs/..." references resolve), or an empty object schema.
Json parameters_of(const Json& fn, Json& defs, std::optional<ApiError>& error) {
  auto p = fn.find("parameters");
  if (p == fn.end() || p->is_null()) return Json{{"type", "object"}, {"properties", Json::object()}};
  Json params = *p;
  if (!params.is_object()) {
    error = bad_tool("the parameters of tool '" + fn["name"].get<std::string>() +
                     "' must be a JSON schema object");
    return params;
  }
  for (const char* key : {"$defs", "definitions"}) {
    auto d = params.find(key);
    if (d == params.end()) continue;
    if (!d->is_object()) {
      error = bad_tool(std::string("'") + key + "' of a tool's parameters must be an object");
      return params;
    }
    Json& target = defs[key];
    for (auto& [name, schema] : d->items()) {
      if (target.contains(name) && target[name] != schema) {
        error = bad_tool("tools define different schemas under the same name '" + name +
                         "' in " + key);
        return params;
      }
      target[name] = schema;
    }
    params.erase(key);
  }
  return params;
}

using output_parsers::Dialect;
using output_parsers::ScanState;
using output_parsers::skip_whitespace;

// A complete JSON string at text[i]: its decoded value and the index past it.
std::optional<std::pair<std::string, size_t>> read_string(std::string_view text, size_t i) {
  std::string decoded;
  size_t end = 0;
  if (i >= text.size() || text[i] != '"' ||
      output_parsers::scan_string(text, i, Dialect::kJson, &decoded, &end) != ScanState::kComplete) {
    return std::nullopt;
  }
  return std::make_pair(std::move(decoded), end);
}

// [{"name": ..., "parameters": {...}}, ...] as far as it goes. A call appears
// once its name is complete; its arguments are the raw text of "parameters"
// so far.
class RequiredToolCallsParser : public output_parsers::ToolCallParser {
 public:
  std::vector<std::string> call_markers() const override { return {"["}; }
  std::string_view name() const override { return "tool_choice_required"; }

 protected:
  output_parsers::ToolParseResult scan(std::string_view text, bool at_end,
                                       const nlohmann::ordered_json*) const override {
    output_parsers::ToolParseResult r = scan_calls(text);
    // Cut off before any call began (max_tokens): the text is content. Calls
    // already begun stay calls, as they were streamed.
    if (at_end && r.calls.empty() && !Json::parse(text, nullptr, false).is_array()) {
      return {std::string(text), {}};
    }
    return r;
  }

 private:
  static output_parsers::ToolParseResult scan_calls(std::string_view text) {
    output_parsers::ToolParseResult r;
    size_t i = skip_whitespace(text, 0);
    if (i >= text.size() || text[i] != '[') return r;
    ++i;
    while (true) {
      i = skip_whitespace(text, i);
      if (i < text.size() && text[i] == ',') i = skip_whitespace(text, i + 1);
      if (i >= text.size() || text[i] != '{') return r;
      ++i;
      std::optional<std::string> name;
      std::string arguments;
      bool object_done = false;
      while (!object_done) {
        i = skip_whitespace(text, i);
        if (i < text.size() && text[i] == ',') i = skip_whitespace(text, i + 1);
        if (i < text.size() && text[i] == '}') {
          ++i;
          object_done = true;
          break;
        }
        auto key = read_string(text, i);
        if (!key) break;
        i = skip_whitespace(text, key->second);
        if (i >= text.size() || text[i] != ':') break;
        i = skip_whitespace(text, i + 1);
        if (i >= text.size()) break;
        if (key->first == "name") {
          auto value = read_string(text, i);
          if (!value) break;
          name = value->first;
          i = value->second;
        } else {
          // The value's raw text so far (what the grammar produced).
          const output_parsers::ValueScan value =
              output_parsers::scan_value(text, i, Dialect::kJson);
          const bool complete = value.state == ScanState::kComplete;
          if (key->first == "parameters") {
            arguments = std::string(text.substr(i, complete ? value.end - i : text.npos));
          }
          if (!complete) break;
          i = value.end;
        }
      }
      if (name) r.calls.push_back({*name, std::move(arguments)});
      if (!object_done) return r;
    }
  }
};

// The whole output is the named tool's arguments.
class NamedToolCallParser : public output_parsers::ToolCallParser {
 public:
  explicit NamedToolCallParser(std::string name) : name_(std::move(name)) {}
  std::vector<std::string> call_markers() const override { return {}; }
  std::string_view name() const override { return "tool_choice_named"; }

 protected:
  output_parsers::ToolParseResult scan(std::string_view text, bool,
                                       const nlohmann::ordered_json*) const override {
    return {"", {{name_, std::string(text)}}};
  }

 private:
  std::string name_;
};

}  // namespace

ApiOr<std::string> required_tools_schema(const Json& tools, bool parallel_tool_calls) {
  Json any_of = Json::array();
  Json defs = Json::object();
  std::optional<ApiError> error;
  for (const Json& tool : tools) {
    const Json* fn = tool_function(tool);
    if (fn == nullptr) return bad_tool("each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    Json params = parameters_of(*fn, defs, error);
    if (error) return *error;
    Json call = {{"type", "object"},
                 {"properties",
                  {{"name", {{"type", "string"}, {"enum", Json::array({(*fn)["name"]})}}},
                   {"parameters", std::move(params)}}},
                 {"required", Json::array({"name", "parameters"})}};
    any_of.push_back(std::move(call));
  }
  if (any_of.empty()) return bad_tool("tool_choice 'required' needs at least one tool");
  Json schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", std::move(any_of)}}}};
  if (!parallel_tool_calls) schema["maxItems"] = 1;
  for (auto& [key, value] : defs.items()) schema[key] = value;
  return schema.dump();
}

ApiOr<std::string> named_tool_schema(const Json& tools, const std::string& name) {
  for (const Json& tool : tools) {
    const Json* fn = tool_function(tool);
    if (fn == nullptr || (*fn)["name"] != name) continue;
    Json defs = Json::object();
    std::optional<ApiError> error;
    Json params = parameters_of(*fn, defs, error);
    if (error) return *error;
    for (auto& [key, value] : defs.items()) params[key] = value;
    return params.dump();
  }
  return ApiError::bad_request("Tool '" + name + "' has not been passed in `tools`.", "tool_choice");
}

std::unique_ptr<output_parsers::ToolCallParser> make_required_tool_calls_parser() {
  return std::make_unique<RequiredToolCallsParser>();
}

std::unique_ptr<output_parsers::ToolCallParser> make_named_tool_call_parser(std::string name) {
  return std::make_unique<NamedToolCallParser>(std::move(name));
}

}  // namespace strata::server
