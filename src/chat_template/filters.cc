// jinja2 filters (see builtins.h). Each mirrors jinja2/filters.py, with
// transformers' tojson override.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <unordered_map>

#include "chat_template/builtins.h"
#include "chat_template/error.h"
#include "chat_template/py_string.h"

namespace strata::chat_template {
namespace {

using FilterFn = std::function<Value(Evaluator&, const Value&, const CallArgs&, int)>;

const Value* arg(const CallArgs& a, size_t i, const char* name) { return a.get(i, name); }

std::string str_arg(const CallArgs& a, size_t i, const char* name, const std::string& dflt) {
  const Value* v = arg(a, i, name);
  return v == nullptr ? dflt : v->to_str();
}

int64_t int_arg(const CallArgs& a, size_t i, const char* name, int64_t dflt) {
  const Value* v = arg(a, i, name);
  return (v == nullptr || v->is_none()) ? dflt : v->as_int();
}

bool bool_arg(const CallArgs& a, size_t i, const char* name, bool dflt) {
  const Value* v = arg(a, i, name);
  return v == nullptr ? dflt : v->truthy();
}

// jinja2's make_attrgetter: "a.b.0" looks up item-then-attribute per part.
Value get_path(const Value& v, const std::string& path, int line) {
  Value cur = v;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = get_item(cur, numeric ? Value::integer(std::atoll(part.c_str())) : Value::string(part), line);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

Value filter_tojson(Evaluator&, const Value& v, const CallArgs& a, int line) {
  const Value* indent_v = arg(a, 1, "indent");
  int indent = (indent_v == nullptr || indent_v->is_none()) ? -1 : static_cast<int>(indent_v->as_int());
  std::string item_sep = indent >= 0 ? "," : ", ";
  std::string key_sep = ": ";
  if (const Value* seps = arg(a, 2, "separators"); seps != nullptr && !seps->is_none()) {
    ValueList parts = iterate(*seps, line);
    if (parts.size() != 2) throw_render_error("tojson: separators must be a pair", line);
    item_sep = parts[0].to_str();
    key_sep = parts[1].to_str();
  }
  return Value::string(to_python_json(v, indent, item_sep, key_sep, bool_arg(a, 3, "sort_keys", false), line));
}

Value filter_length(Evaluator&, const Value& v, const CallArgs&, int line) {
  if (v.is_string()) return Value::integer(static_cast<int64_t>(utf8_length(v.as_string())));
  if (v.is_list()) return Value::integer(static_cast<int64_t>(v.as_list().size()));
  if (v.is_dict() || v.is_namespace()) return Value::integer(static_cast<int64_t>(v.as_dict().size()));
  if (v.is_undefined()) return Value::integer(0);
  throw_render_error("object of type '" + v.type_name() + "' has no len()", line);
}

Value filter_first(Evaluator&, const Value& v, const CallArgs&, int line) {
  ValueList items = iterate(v, line);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value filter_last(Evaluator&, const Value& v, const CallArgs&, int line) {
  ValueList items = iterate(v, line);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value filter_join(Evaluator&, const Value& v, const CallArgs& a, int line) {
  std::string sep = str_arg(a, 0, "d", "");
  const Value* attribute = arg(a, 1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v, line)) {
    if (!first) out += sep;
    first = false;
    out += attribute != nullptr ? get_path(item, attribute->to_str(), line).to_str() : item.to_str();
  }
  return Value::string(std::move(out));
}

// select/reject/selectattr/rejectattr share this: keep items whose test (or
// truthiness) equals `keep`.
Value select_items(Evaluator& ev, const Value& v, const CallArgs& a, int line, bool by_attr, bool keep) {
  size_t next = 0;
  std::string attribute;
  if (by_attr) {
    if (a.positional.empty()) throw_render_error("selectattr/rejectattr need an attribute name", line);
    attribute = a.positional[next++].to_str();
  }
  std::string test;
  if (next < a.positional.size()) test = a.positional[next++].to_str();
  CallArgs test_args;
  test_args.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(next), a.positional.end());
  ValueList out;
  for (const Value& item : iterate(v, line)) {
    Value subject = by_attr ? get_path(item, attribute, line) : item;
    bool pass = test.empty() ? subject.truthy() : apply_test(ev, test, subject, test_args, line);
    if (pass == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filter_map(Evaluator& ev, const Value& v, const CallArgs& a, int line) {
  ValueList out;
  const Value* attribute = nullptr;
  for (const auto& [k, val] : a.keyword) {
    if (k == "attribute") attribute = &val;
  }
  if (attribute != nullptr) {
    const Value* dflt = nullptr;
    for (const auto& [k, val] : a.keyword) {
      if (k == "default") dflt = &val;
    }
    for (const Value& item : iterate(v, line)) {
      Value got = get_path(item, attribute->to_str(), line);
      out.push_back(got.is_undefined() && dflt != nullptr ? *dflt : got);
    }
    return Value::list(std::move(out));
  }
  if (a.positional.empty()) throw_render_error("map needs a filter name or attribute=", line);
  std::string filter = a.positional[0].to_str();
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : iterate(v, line)) out.push_back(apply_filter(ev, filter, item, rest, line));
  return Value::list(std::move(out));
}

Value filter_default(Evaluator&, const Value& v, const CallArgs& a, int) {
  const Value* dflt = arg(a, 0, "default_value");
  bool boolean = bool_arg(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return dflt != nullptr ? *dflt : Value::string("");
  return v;
}

Value filter_items(Evaluator&, const Value& v, const CallArgs&, int line) {
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) throw_render_error("Can only get item pairs from a mapping.", line);
  ValueList out;
  for (const auto& [k, val] : v.as_dict().entries()) out.push_back(Value::tuple({Value::string(k), val}));
  return Value::list(std::move(out));
}

Value filter_int(Evaluator&, const Value& v, const CallArgs& a, int) {
  int64_t dflt = int_arg(a, 0, "default", 0);
  if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
  if (v.is_float()) return std::isfinite(v.as_double()) ? Value::integer(static_cast<int64_t>(v.as_double())) : Value::integer(dflt);
  if (!v.is_string()) return Value::integer(dflt);
  std::string s = py_strip(v.as_string(), nullptr, true, true);
  char* end = nullptr;
  long long i = std::strtoll(s.c_str(), &end, static_cast<int>(int_arg(a, 1, "base", 10)));
  if (!s.empty() && *end == '\0') return Value::integer(i);
  double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0' && std::isfinite(d)) return Value::integer(static_cast<int64_t>(d));
  return Value::integer(dflt);
}

Value filter_float(Evaluator&, const Value& v, const CallArgs& a, int) {
  const Value* dflt = arg(a, 0, "default");
  Value fallback = dflt != nullptr ? Value::floating(dflt->as_double()) : Value::floating(0.0);
  if (v.is_number()) return Value::floating(v.as_double());
  if (!v.is_string()) return fallback;
  std::string s = py_strip(v.as_string(), nullptr, true, true);
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  return (!s.empty() && *end == '\0') ? Value::floating(d) : fallback;
}

Value filter_round(Evaluator&, const Value& v, const CallArgs& a, int line) {
  if (!v.is_number()) throw_render_error("round: value must be a number", line);
  int64_t precision = int_arg(a, 0, "precision", 0);
  std::string method = str_arg(a, 1, "method", "common");
  if (method == "common" && !v.is_float() && precision >= 0) return Value::integer(v.as_int());
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_double() * scale;
  double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
  return Value::floating(r / scale);
}

Value filter_indent(Evaluator&, const Value& v, const CallArgs& a, int) {
  const Value* width = arg(a, 0, "width");
  std::string pad = width == nullptr ? "    " : width->is_string() ? width->as_string() : std::string(static_cast<size_t>(std::max<int64_t>(0, width->as_int())), ' ');
  bool first = bool_arg(a, 1, "first", false), blank = bool_arg(a, 2, "blank", false);
  std::vector<std::string> lines = py_splitlines(v.to_str() + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    bool indent_it = i == 0 ? first : (blank || !lines[i].empty());
    if (indent_it) out += pad;
    out += lines[i];
  }
  return Value::string(std::move(out));
}

// Sort key for sort/unique/dictsort: lower-cases strings unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  return (v.is_string() && !case_sensitive) ? Value::string(py_lower(v.as_string())) : v;
}

Value filter_sort(Evaluator&, const Value& v, const CallArgs& a, int line) {
  bool reverse = bool_arg(a, 0, "reverse", false), cs = bool_arg(a, 1, "case_sensitive", false);
  const Value* attribute = arg(a, 2, "attribute");
  ValueList items = iterate(v, line);
  auto key = [&](const Value& x) { return sort_key(attribute ? get_path(x, attribute->to_str(), line) : x, cs); };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? less_than(key(y), key(x), line) : less_than(key(x), key(y), line);
  });
  return Value::list(std::move(items));
}

Value filter_unique(Evaluator&, const Value& v, const CallArgs& a, int line) {
  bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* attribute = arg(a, 1, "attribute");
  ValueList out, seen;
  for (const Value& item : iterate(v, line)) {
    Value key = sort_key(attribute ? get_path(item, attribute->to_str(), line) : item, cs);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(key); })) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filter_minmax(const Value& v, const CallArgs& a, int line, bool want_max) {
  bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* attribute = arg(a, 1, "attribute");
  ValueList items = iterate(v, line);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& x) { return sort_key(attribute ? get_path(x, attribute->to_str(), line) : x, cs); };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    bool better = want_max ? less_than(key(items[best]), key(items[i]), line) : less_than(key(items[i]), key(items[best]), line);
    if (better) best = i;
  }
  return items[best];
}

Value filter_sum(Evaluator&, const Value& v, const CallArgs& a, int line) {
  const Value* attribute = arg(a, 0, "attribute");
  const Value* start = arg(a, 1, "start");
  Value total = start != nullptr ? *start : Value::integer(0);
  for (const Value& item : iterate(v, line)) {
    total = binary_op("+", total, attribute ? get_path(item, attribute->to_str(), line) : item, line);
  }
  return total;
}

Value filter_reverse(Evaluator&, const Value& v, const CallArgs&, int line) {
  if (v.is_string()) {
    Value step = Value::integer(-1);
    return slice(v, nullptr, nullptr, &step, line);
  }
  ValueList items = iterate(v, line);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value filter_dictsort(Evaluator& ev, const Value& v, const CallArgs& a, int line) {
  bool cs = bool_arg(a, 0, "case_sensitive", false);
  bool by_value = str_arg(a, 1, "by", "key") == "value";
  bool reverse = bool_arg(a, 2, "reverse", false);
  ValueList items = filter_items(ev, v, {}, line).as_list();
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key(x.as_list()[by_value ? 1 : 0], cs), ky = sort_key(y.as_list()[by_value ? 1 : 0], cs);
    return reverse ? less_than(ky, kx, line) : less_than(kx, ky, line);
  });
  return Value::list(std::move(items));
}

Value filter_escape(Evaluator&, const Value& v, const CallArgs&, int) {
  std::string out;
  for (char c : v.to_str()) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value::string(std::move(out));
}

Value filter_title(Evaluator&, const Value& v, const CallArgs&, int) {
  // jinja2's do_title: capitalize each piece split on runs of [-\s({[<].
  std::string s = v.to_str(), out;
  bool at_word_start = true;
  for (std::string_view c : utf8_chars(s)) {
    bool sep = is_py_space(c) || c == "-" || c == "(" || c == "{" || c == "[" || c == "<";
    if (sep) {
      out += c;
      at_word_start = true;
    } else {
      out += at_word_start ? py_upper(c) : py_lower(c);
      at_word_start = false;
    }
  }
  return Value::string(std::move(out));
}

Value string_filter(std::string (*fn)(std::string_view), const Value& v) { return Value::string(fn(v.to_str())); }

const std::unordered_map<std::string, FilterFn>& filter_table() {
  static const auto* table = new std::unordered_map<std::string, FilterFn>{
      {"tojson", filter_tojson},
      {"length", filter_length},
      {"count", filter_length},
      {"first", filter_first},
      {"last", filter_last},
      {"join", filter_join},
      {"select", [](Evaluator& e, const Value& v, const CallArgs& a, int l) { return select_items(e, v, a, l, false, true); }},
      {"reject", [](Evaluator& e, const Value& v, const CallArgs& a, int l) { return select_items(e, v, a, l, false, false); }},
      {"selectattr", [](Evaluator& e, const Value& v, const CallArgs& a, int l) { return select_items(e, v, a, l, true, true); }},
      {"rejectattr", [](Evaluator& e, const Value& v, const CallArgs& a, int l) { return select_items(e, v, a, l, true, false); }},
      {"map", filter_map},
      {"default", filter_default},
      {"d", filter_default},
      {"items", filter_items},
      {"int", filter_int},
      {"float", filter_float},
      {"round", filter_round},
      {"indent", filter_indent},
      {"sort", filter_sort},
      {"unique", filter_unique},
      {"min", [](Evaluator&, const Value& v, const CallArgs& a, int l) { return filter_minmax(v, a, l, false); }},
      {"max", [](Evaluator&, const Value& v, const CallArgs& a, int l) { return filter_minmax(v, a, l, true); }},
      {"sum", filter_sum},
      {"reverse", filter_reverse},
      {"dictsort", filter_dictsort},
      {"escape", filter_escape},
      {"e", filter_escape},
      {"title", filter_title},
      {"trim", [](Evaluator&, const Value& v, const CallArgs& a, int) {
         const Value* chars = a.get(0, "chars");
         std::string set = chars && !chars->is_none() ? chars->to_str() : "";
         return Value::string(py_strip(v.to_str(), chars && !chars->is_none() ? &set : nullptr, true, true));
       }},
      {"lower", [](Evaluator&, const Value& v, const CallArgs&, int) { return string_filter(py_lower, v); }},
      {"upper", [](Evaluator&, const Value& v, const CallArgs&, int) { return string_filter(py_upper, v); }},
      {"capitalize", [](Evaluator&, const Value& v, const CallArgs&, int) { return string_filter(py_capitalize, v); }},
      {"string", [](Evaluator&, const Value& v, const CallArgs&, int) { return Value::string(v.to_str()); }},
      {"safe", [](Evaluator&, const Value& v, const CallArgs&, int) { return v; }},
      {"list", [](Evaluator&, const Value& v, const CallArgs&, int l) { return Value::list(iterate(v, l)); }},
      {"abs", [](Evaluator&, const Value& v, const CallArgs&, int l) {
         if (!v.is_number()) throw_render_error("bad operand type for abs(): '" + v.type_name() + "'", l);
         return v.is_float() ? Value::floating(std::fabs(v.as_double())) : Value::integer(std::llabs(v.as_int()));
       }},
      {"replace", [](Evaluator&, const Value& v, const CallArgs& a, int) {
         return Value::string(py_replace(v.to_str(), str_arg(a, 0, "old", ""), str_arg(a, 1, "new", ""), int_arg(a, 2, "count", -1)));
       }},
      {"attr", [](Evaluator&, const Value& v, const CallArgs& a, int l) { return get_attr(v, str_arg(a, 0, "name", ""), l); }},
      {"format", [](Evaluator&, const Value& v, const CallArgs& a, int l) { return binary_op("%", v, Value::list(a.positional), l); }},
      {"center", [](Evaluator&, const Value& v, const CallArgs& a, int) {
         // Python str.center: the odd pad character goes left when width is odd.
         std::string s = v.to_str();
         int64_t width = int_arg(a, 0, "width", 80), len = static_cast<int64_t>(utf8_length(s));
         if (width <= len) return Value::string(s);
         int64_t pad = width - len, left = pad / 2 + (pad & width & 1);
         return Value::string(std::string(static_cast<size_t>(left), ' ') + s +
                              std::string(static_cast<size_t>(pad - left), ' '));
       }},
      {"wordcount", [](Evaluator&, const Value& v, const CallArgs&, int) {
         return Value::integer(static_cast<int64_t>(py_split(v.to_str(), nullptr, -1, false).size()));
       }},
  };
  return *table;
}

}  // namespace

bool is_known_filter(const std::string& name) { return filter_table().count(name) != 0; }

Value apply_filter(Evaluator& ev, const std::string& name, const Value& subject, const CallArgs& args,
                   int line) {
  auto it = filter_table().find(name);
  if (it == filter_table().end()) throw_render_error("no filter named '" + name + "'", line);
  ev.count_step(line);
  return it->second(ev, subject, args, line);
}

}  // namespace strata::chat_template
