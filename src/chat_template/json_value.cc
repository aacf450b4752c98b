// nlohmann::json <-> Value, and Python json.dumps formatting (see builtins.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "chat_template/builtins.h"
#include "chat_template/error.h"

namespace strata::chat_template {
namespace {

template <typename Json>
Value from_json_impl(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return Value::none();
    case Json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case Json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case Json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::floating(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case Json::value_t::number_float: return Value::floating(j.template get<double>());
    case Json::value_t::string: return Value::string(j.template get<std::string>());
    case Json::value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(from_json_impl(item));
      return Value::list(std::move(items));
    }
    case Json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.set(it.key(), from_json_impl(it.value()));
      return Value::dict(std::move(d));
    }
    default: return Value::none();  // binary and discarded values do not occur in requests
  }
}

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

struct JsonWriter {
  int indent;  // < 0: single line
  std::string item_sep;
  std::string key_sep;
  bool sort_keys;
  int line;
  std::string out;

  void newline(int depth) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(depth), ' ');
  }

  void write(const Value& v, int depth) {
    if (depth > kMaxParseDepth) throw_render_error("tojson: value nested too deeply", line);
    switch (v.kind()) {
      case Value::Kind::kNone: out += "null"; return;
      case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
      case Value::Kind::kFloat: write_float(v.as_double()); return;
      case Value::Kind::kString: append_json_string(out, v.as_string()); return;
      case Value::Kind::kList: write_list(v.as_list(), depth); return;
      case Value::Kind::kDict: write_dict(v.as_dict(), depth); return;
      default:
        throw_render_error("Object of type " + v.type_name() + " is not JSON serializable", line);
    }
  }

  void write_float(double d) {
    if (std::isnan(d)) out += "NaN";
    else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
    else out += format_python_float(d);
  }

  void write_list(const ValueList& items, int depth) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += item_sep;
      if (indent >= 0) newline(depth + 1);
      write(items[i], depth + 1);
    }
    if (indent >= 0) newline(depth);
    out += ']';
  }

  void write_dict(const Dict& d, int depth) {
    if (d.size() == 0) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value>*> entries;
    for (const auto& e : d.entries()) entries.push_back(&e);
    if (sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return a->first < b->first; });
    }
    out += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out += item_sep;
      if (indent >= 0) newline(depth + 1);
      append_json_string(out, entries[i]->first);
      out += key_sep;
      write(entries[i]->second, depth + 1);
    }
    if (indent >= 0) newline(depth);
    out += '}';
  }
};

}  // namespace

Value value_from_json(const nlohmann::json& j) { return from_json_impl(j); }
Value value_from_ordered_json(const nlohmann::ordered_json& j) { return from_json_impl(j); }

std::string to_python_json(const Value& value, int indent, const std::string& item_sep,
                           const std::string& key_sep, bool sort_keys, int line) {
  JsonWriter writer{indent, item_sep, key_sep, sort_keys, line, {}};
  writer.write(value, 0);
  return std::move(writer.out);
}

}  // namespace strata::chat_template
