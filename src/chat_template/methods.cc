// str/dict/list methods and global functions (see builtins.h).
#include <ctime>
#include <set>

#include "chat_template/builtins.h"
#include "chat_template/error.h"
#include "chat_template/py_string.h"

namespace strata::chat_template {
namespace {

const std::set<std::string>& string_methods() {
  static const auto* s = new std::set<std::string>{
      "strip", "lstrip", "rstrip", "startswith", "endswith", "split", "rsplit", "replace",
      "upper", "lower", "title", "capitalize", "format", "join", "find", "rfind", "count",
      "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "splitlines",
      "removeprefix", "removesuffix", "index"};
  return *s;
}

const std::set<std::string>& dict_methods() {
  static const auto* s = new std::set<std::string>{"items", "keys", "values", "get", "copy"};
  return *s;
}

const Value* opt_arg(const CallArgs& a, size_t i, const char* name) {
  const Value* v = a.get(i, name);
  return (v == nullptr || v->is_none()) ? nullptr : v;
}

std::string need_str(const CallArgs& a, size_t i, const char* name, const std::string& method, int line) {
  const Value* v = a.get(i, name);
  if (v == nullptr || !v->is_string()) {
    throw_render_error(method + "() argument '" + name + "' must be a str", line);
  }
  return v->as_string();
}

bool all_chars(const std::string& s, int (*pred)(int)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

Value to_list(const std::vector<std::string>& parts) {
  ValueList out;
  for (const std::string& p : parts) out.push_back(Value::string(p));
  return Value::list(std::move(out));
}

bool affix_match(const std::string& s, const Value& affix, bool prefix, int line) {
  ValueList options = affix.is_list() ? affix.as_list() : ValueList{affix};
  for (const Value& o : options) {
    if (!o.is_string()) throw_render_error("startswith/endswith argument must be str or tuple of str", line);
    const std::string& p = o.as_string();
    if (p.size() > s.size()) continue;
    if (prefix ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0) return true;
  }
  return false;
}

// str.format with {}, {0} and {name} fields (no format specs).
std::string str_format(const std::string& fmt, const CallArgs& a, int line) {
  std::string out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw_render_error("Single '{' encountered in format string", line);
    std::string field = fmt.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string::npos) throw_render_error("format specs are not supported in str.format", line);
    const Value* v = nullptr;
    if (field.empty()) v = a.get(auto_idx++, "");
    else if (std::isdigit(static_cast<unsigned char>(field[0]))) v = a.get(std::stoul(field), "");
    else v = a.get(SIZE_MAX, field.c_str());
    if (v == nullptr) throw_render_error("format field '" + field + "' has no argument", line);
    out += v->to_str();
    i = close;
  }
  return out;
}

Value call_string_method(const std::string& s, const std::string& name, const CallArgs& a, int line) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = opt_arg(a, 0, "chars");
    std::string set = chars ? chars->to_str() : "";
    return Value::string(py_strip(s, chars ? &set : nullptr, name != "rstrip", name != "lstrip"));
  }
  if (name == "startswith" || name == "endswith") {
    const Value* affix = a.get(0, "prefix");
    if (affix == nullptr) throw_render_error(name + "() takes at least 1 argument", line);
    return Value::boolean(affix_match(s, *affix, name == "startswith", line));
  }
  if (name == "split" || name == "rsplit") {
    const Value* sep = opt_arg(a, 0, "sep");
    std::string sep_str = sep ? sep->to_str() : "";
    if (sep && sep_str.empty()) throw_render_error("empty separator", line);
    const Value* maxsplit = opt_arg(a, 1, "maxsplit");
    return to_list(py_split(s, sep ? &sep_str : nullptr, maxsplit ? maxsplit->as_int() : -1, name == "rsplit"));
  }
  if (name == "replace") {
    const Value* count = opt_arg(a, 2, "count");
    return Value::string(py_replace(s, need_str(a, 0, "old", name, line), need_str(a, 1, "new", name, line),
                                    count ? count->as_int() : -1));
  }
  if (name == "upper") return Value::string(py_upper(s));
  if (name == "lower") return Value::string(py_lower(s));
  if (name == "title") return Value::string(py_title(s));
  if (name == "capitalize") return Value::string(py_capitalize(s));
  if (name == "format") return Value::string(str_format(s, a, line));
  if (name == "splitlines") return to_list(py_splitlines(s));
  if (name == "join") {
    std::string out;
    const Value* items = a.get(0, "iterable");
    if (items == nullptr) throw_render_error("join() takes exactly one argument", line);
    bool first = true;
    for (const Value& v : iterate(*items, line)) {
      if (!v.is_string()) throw_render_error("sequence item: expected str instance, " + v.type_name() + " found", line);
      if (!first) out += s;
      first = false;
      out += v.as_string();
    }
    return Value::string(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "index") {
    std::string sub = need_str(a, 0, "sub", name, line);
    size_t pos = name == "rfind" ? s.rfind(sub) : s.find(sub);
    if (pos == std::string::npos) {
      if (name == "index") throw_render_error("substring not found", line);
      return Value::integer(-1);
    }
    return Value::integer(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, pos))));
  }
  if (name == "count") {
    std::string sub = need_str(a, 0, "sub", name, line);
    if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s) + 1));
    int64_t n = 0;
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return Value::integer(n);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    std::string affix = need_str(a, 0, "affix", name, line);
    Value av = Value::string(affix);
    if (!affix_match(s, av, name == "removeprefix", line)) return Value::string(s);
    return Value::string(name == "removeprefix" ? s.substr(affix.size()) : s.substr(0, s.size() - affix.size()));
  }
  if (name == "isdigit") return Value::boolean(all_chars(s, ::isdigit));
  if (name == "isalpha") return Value::boolean(all_chars(s, ::isalpha));
  if (name == "isalnum") return Value::boolean(all_chars(s, ::isalnum));
  if (name == "isspace") return Value::boolean(all_chars(s, ::isspace));
  if (name == "islower") return Value::boolean(py_lower(s) == s && py_upper(s) != s);
  return Value::boolean(py_upper(s) == s && py_lower(s) != s);  // isupper
}

Value call_dict_method(const Value& self, const std::string& name, const CallArgs& a, int line) {
  const Dict& d = self.as_dict();
  if (name == "items") return apply_filter_items(d);
  if (name == "keys" || name == "values") {
    ValueList out;
    for (const auto& [k, v] : d.entries()) out.push_back(name == "keys" ? Value::string(k) : v);
    return Value::list(std::move(out));
  }
  if (name == "copy") return Value::dict(d);
  const Value* key = a.get(0, "key");
  if (key == nullptr) throw_render_error("get expected at least 1 argument", line);
  const Value* found = key->is_string() ? d.find(key->as_string()) : nullptr;
  if (found != nullptr) return *found;
  const Value* dflt = a.get(1, "default");
  return dflt != nullptr ? *dflt : Value::none();
}

Value call_list_method(const ValueList& items, const std::string& name, const CallArgs& a, int line) {
  const Value* x = a.get(0, "value");
  if (x == nullptr) throw_render_error(name + "() takes exactly one argument", line);
  int64_t count = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].equals(*x)) continue;
    if (name == "index") return Value::integer(static_cast<int64_t>(i));
    ++count;
  }
  if (name == "index") throw_render_error(x->to_repr() + " is not in list", line);
  return Value::integer(count);
}

Value fn_range(const CallArgs& a, int line, int64_t max_range) {
  std::vector<int64_t> n;
  for (const Value& v : a.positional) {
    if (!v.is_int() && !v.is_bool()) throw_render_error("range() arguments must be integers", line);
    n.push_back(v.as_int());
  }
  if (n.empty() || n.size() > 3) throw_render_error("range expected 1 to 3 arguments", line);
  int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1], step = n.size() == 3 ? n[2] : 1;
  if (step == 0) throw_render_error("range() arg 3 must not be zero", line);
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(out.size()) >= max_range) {
      throw TemplateError(TemplateError::Kind::kLimit,
                          "range() is limited to " + std::to_string(max_range) + " items", line);
    }
    out.push_back(Value::integer(i));
  }
  return Value::list(std::move(out));
}

Dict kwargs_dict(const CallArgs& a, int line) {
  Dict d;
  for (const Value& p : a.positional) {
    if (!p.is_dict()) throw_render_error("expected a dict as positional argument", line);
    for (const auto& [k, v] : p.as_dict().entries()) d.set(k, v);
  }
  for (const auto& [k, v] : a.keyword) d.set(k, v);
  return d;
}

Value fn_strftime_now(const CallArgs& a, int line) {
  const Value* fmt = a.get(0, "format");
  if (fmt == nullptr || !fmt->is_string()) throw_render_error("strftime_now() needs a format string", line);
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[512];
  size_t n = std::strftime(buf, sizeof(buf), fmt->as_string().c_str(), &local);
  return Value::string(std::string(buf, n));
}

}  // namespace

Value apply_filter_items(const Dict& d) {
  ValueList out;
  for (const auto& [k, v] : d.entries()) out.push_back(Value::tuple({Value::string(k), v}));
  return Value::list(std::move(out));
}

bool is_known_method(const Value& self, const std::string& name) {
  if (self.is_string()) return string_methods().count(name) != 0;
  if (self.is_dict()) return dict_methods().count(name) != 0;
  if (self.is_list()) return name == "index" || name == "count";
  return false;
}

Value call_function(Evaluator& ev, const Function& fn, const CallArgs& a, int line) {
  if (fn.self != nullptr) {
    const Value& self = *fn.self;
    if (fn.name == "loop.cycle") {
      if (a.positional.empty()) throw_render_error("no items for cycling given", line);
      return a.positional[static_cast<size_t>(self.as_int()) % a.positional.size()];
    }
    if (self.is_string()) return call_string_method(self.as_string(), fn.name, a, line);
    if (self.is_dict()) return call_dict_method(self, fn.name, a, line);
    return call_list_method(self.as_list(), fn.name, a, line);
  }
  if (fn.name == "range") return fn_range(a, line, ev.limits().max_range);
  if (fn.name == "namespace") return Value::make_namespace(kwargs_dict(a, line));
  if (fn.name == "dict") return Value::dict(kwargs_dict(a, line));
  if (fn.name == "strftime_now") return fn_strftime_now(a, line);
  // raise_exception
  const Value* message = a.get(0, "message");
  throw TemplateError(TemplateError::Kind::kRaised, message ? message->to_str() : "", line);
}

Dict make_default_globals() {
  Dict g;
  for (const char* name : {"range", "namespace", "dict", "strftime_now", "raise_exception"}) {
    g.set(name, Value::function(name));
  }
  return g;
}

}  // namespace strata::chat_template
