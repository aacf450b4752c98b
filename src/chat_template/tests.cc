// jinja2 tests (see builtins.h), mirroring jinja2/tests.py.
#include <functional>
#include <unordered_map>

#include "chat_template/builtins.h"
#include "chat_template/error.h"
#include "chat_template/py_string.h"

namespace strata::chat_template {
namespace {

using TestFn = std::function<bool(const Value&, const CallArgs&, int)>;

const Value& need_arg(const CallArgs& a, const char* test, int line) {
  const Value* v = a.get(0, "other");
  if (v == nullptr) v = a.get(0, "value");
  if (v == nullptr) throw_render_error(std::string("test '") + test + "' needs an argument", line);
  return *v;
}

bool has_cased(const std::string& s, bool want_lower) {
  bool cased = false;
  for (char c : s) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (want_lower) return false;
      cased = true;
    } else if (std::islower(static_cast<unsigned char>(c))) {
      if (!want_lower) return false;
      cased = true;
    }
  }
  return cased;
}

TestFn compare_test(const char* op) {
  return [op](const Value& v, const CallArgs& a, int l) { return compare_op(op, v, need_arg(a, op, l), l); };
}

const std::unordered_map<std::string, TestFn>& test_table() {
  static const auto* table = new std::unordered_map<std::string, TestFn>{
      {"defined", [](const Value& v, const CallArgs&, int) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&, int) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&, int) { return v.is_none(); }},
      {"boolean", [](const Value& v, const CallArgs&, int) { return v.is_bool(); }},
      {"true", [](const Value& v, const CallArgs&, int) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const CallArgs&, int) { return v.is_bool() && !v.as_bool(); }},
      {"integer", [](const Value& v, const CallArgs&, int) { return v.is_int(); }},
      {"float", [](const Value& v, const CallArgs&, int) { return v.is_float(); }},
      {"number", [](const Value& v, const CallArgs&, int) { return v.is_number(); }},
      {"string", [](const Value& v, const CallArgs&, int) { return v.is_string(); }},
      {"mapping", [](const Value& v, const CallArgs&, int) { return v.is_dict(); }},
      {"iterable", [](const Value& v, const CallArgs&, int) {
         return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
       }},
      {"sequence", [](const Value& v, const CallArgs&, int) {
         return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
       }},
      {"callable", [](const Value& v, const CallArgs&, int) { return v.is_macro() || v.is_function(); }},
      {"odd", [](const Value& v, const CallArgs&, int) { return v.is_number() && v.as_int() % 2 != 0; }},
      {"even", [](const Value& v, const CallArgs&, int) { return v.is_number() && v.as_int() % 2 == 0; }},
      {"divisibleby", [](const Value& v, const CallArgs& a, int l) {
         int64_t n = need_arg(a, "divisibleby", l).as_int();
         if (n == 0) throw_render_error("integer division or modulo by zero", l);
         return v.as_int() % n == 0;
       }},
      {"lower", [](const Value& v, const CallArgs&, int) { return has_cased(v.to_str(), true); }},
      {"upper", [](const Value& v, const CallArgs&, int) { return has_cased(v.to_str(), false); }},
      {"sameas", [](const Value& v, const CallArgs& a, int l) {
         const Value& o = need_arg(a, "sameas", l);
         if (v.is_none() || v.is_bool() || v.is_undefined()) return v.kind() == o.kind() && v.equals(o);
         return v.kind() == o.kind() && v.equals(o);
       }},
      {"in", [](const Value& v, const CallArgs& a, int l) { return contains(need_arg(a, "in", l), v, l); }},
      {"eq", compare_test("==")}, {"equalto", compare_test("==")}, {"==", compare_test("==")},
      {"ne", compare_test("!=")}, {"!=", compare_test("!=")},
      {"lt", compare_test("<")}, {"lessthan", compare_test("<")}, {"<", compare_test("<")},
      {"le", compare_test("<=")}, {"<=", compare_test("<=")},
      {"gt", compare_test(">")}, {"greaterthan", compare_test(">")}, {">", compare_test(">")},
      {"ge", compare_test(">=")}, {">=", compare_test(">=")},
      {"filter", [](const Value& v, const CallArgs&, int) { return v.is_string() && is_known_filter(v.as_string()); }},
      {"test", [](const Value& v, const CallArgs&, int) { return v.is_string() && is_known_test(v.as_string()); }},
  };
  return *table;
}

}  // namespace

bool is_known_test(const std::string& name) { return test_table().count(name) != 0; }

bool apply_test(Evaluator& ev, const std::string& name, const Value& subject, const CallArgs& args,
                int line) {
  auto it = test_table().find(name);
  if (it == test_table().end()) throw_render_error("no test named '" + name + "'", line);
  ev.count_step(line);
  return it->second(subject, args, line);
}

}  // namespace strata::chat_template
