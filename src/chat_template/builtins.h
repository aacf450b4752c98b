// Builtins of the chat-template interpreter, each matching its jinja2 /
// Python counterpart:
//   operators.cc  arithmetic, concatenation, comparison, membership,
//                 attribute/subscript/slice access, iteration
//   filters.cc    filters (trim, tojson, length, join, selectattr, map, ...)
//   tests.cc      tests (defined, none, string, mapping, equalto, ...)
//   methods.cc    str/dict methods and global functions (range, namespace,
//                 raise_exception, strftime_now, dict)
//   json_value.cc conversion between nlohmann::json and Value; tojson text
//
// All functions throw TemplateError on failure and are safe to call from any
// thread on values owned by that thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "chat_template/evaluator.h"
#include "chat_template/limits.h"
#include "chat_template/value.h"

namespace strata::chat_template {

// ---- operators.cc ----
// `max_bytes` bounds the result of string/list repetition.
Value binary_op(const std::string& op, const Value& lhs, const Value& rhs, int line,
                size_t max_bytes = RenderLimits{}.max_output_bytes);
bool compare_op(const std::string& op, const Value& lhs, const Value& rhs, int line);
bool contains(const Value& container, const Value& item, int line);
Value get_attr(const Value& object, const std::string& name, int line);
Value get_item(const Value& object, const Value& key, int line);
Value slice(const Value& object, const Value* start, const Value* stop, const Value* step, int line);
// The items a for loop visits: list items, dict keys, string characters.
ValueList iterate(const Value& value, int line);
// Python-style < for sorting; throws on incomparable types.
bool less_than(const Value& lhs, const Value& rhs, int line);
// Throws "'name' is undefined" when `value` is undefined (strict uses).
void require_defined(const Value& value, int line);

// ---- filters.cc ----
bool is_known_filter(const std::string& name);
Value apply_filter(Evaluator& ev, const std::string& name, const Value& subject,
                   const CallArgs& args, int line);

// ---- tests.cc ----
bool is_known_test(const std::string& name);
bool apply_test(Evaluator& ev, const std::string& name, const Value& subject,
                const CallArgs& args, int line);

// ---- methods.cc ----
// dict.items(): a list of [key, value] pairs.
Value apply_filter_items(const Dict& d);
bool is_known_method(const Value& self, const std::string& name);
Value call_function(Evaluator& ev, const Function& fn, const CallArgs& args, int line);
Dict make_default_globals();

// ---- json_value.cc ----
Value value_from_json(const nlohmann::json& j);
Value value_from_ordered_json(const nlohmann::ordered_json& j);
// Python json.dumps(value, ensure_ascii=False, indent=indent, separators=...,
// sort_keys=...); indent < 0 means None.
std::string to_python_json(const Value& value, int indent, const std::string& item_sep,
                           const std::string& key_sep, bool sort_keys, int line);

}  // namespace strata::chat_template
