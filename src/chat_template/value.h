// Value: the dynamic value of the chat-template interpreter, modelled on the
// Python objects jinja2 sees when transformers renders a chat template.
//
// Kinds: undefined (jinja2's default Undefined: prints empty, is falsy,
// iterates empty; attribute access on it is an error), none, bool, int
// (int64), float (double), string (UTF-8), list (a tuple is a list that
// prints with parentheses), dict
// (string keys, insertion-ordered), namespace (mutable attribute bag), macro
// and function (builtins and bound methods).
//
// Copies are cheap: strings, lists and dicts are shared and immutable once
// built (ImmutableSandboxedEnvironment forbids mutating them); namespaces are
// shared and mutable, as in Python. A Value is confined to one render call
// (one thread); nothing here is shared between renders.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::chat_template {

class Value;
struct MacroNode;  // ast.h

using ValueList = std::vector<Value>;

// Insertion-ordered string-keyed map (Python dict order).
class Dict {
 public:
  const Value* find(std::string_view key) const;
  // Inserts or overwrites, keeping the first insertion position.
  void set(std::string key, Value value);
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  // The value of the entry at `index` (insertion position), for in-place updates.
  Value& value_at(size_t index);
  size_t size() const;  // out of line: Value is incomplete here (clang)
  void clear();

 private:
  std::vector<std::pair<std::string, Value>> entries_;
};

// A builtin callable: a global function ("range") or a method bound to `self`
// ("split" on a string).
struct Function {
  std::string name;
  std::shared_ptr<const Value> self;  // null for globals
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace,
                    kMacro, kFunction };

  Value() = default;  // undefined
  static Value undefined(std::string hint = "");
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double d);
  static Value string(std::string s);
  static Value list(ValueList items);
  // A list that prints as a Python tuple: (a, b).
  static Value tuple(ValueList items);
  static Value dict(Dict d);
  static Value make_namespace(Dict d);
  static Value macro(const MacroNode* node);
  static Value function(std::string name, const Value* self = nullptr);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // Python numbers: int, float and bool (bool is an int subclass).
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return is_list() && b_; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_macro() const { return kind_ == Kind::kMacro; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return is_bool() ? (b_ ? 1 : 0) : i_; }
  double as_double() const { return is_float() ? d_ : static_cast<double>(as_int()); }
  const std::string& as_string() const { return *s_; }
  const ValueList& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }
  Dict& namespace_dict() const { return *dict_; }  // shared, mutable
  const MacroNode* as_macro() const { return macro_; }
  const Function& as_function() const { return *fn_; }
  // The name an undefined value was looked up by ("" when unknown).
  const std::string& undefined_hint() const { return *s_; }

  // Python truthiness.
  bool truthy() const;
  // Python str(): what {{ value }} prints.
  std::string to_str() const;
  // Python repr() (strings quoted), as used inside list/dict printing.
  std::string to_repr() const;
  // Python ==.
  bool equals(const Value& other) const;
  // "str", "int", "list", ... (Python type names, for error messages).
  std::string type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<Dict> dict_;
  const MacroNode* macro_ = nullptr;
  std::shared_ptr<const Function> fn_;
};

// Python repr() of a float: shortest round-trip digits, "1.0", "1e+16", "1e-05".
std::string format_python_float(double d);
// Python repr() of a string: single quotes unless it contains ' and no ".
std::string python_string_repr(std::string_view s);

// Number of Unicode code points in UTF-8 text (Python len()).
size_t utf8_length(std::string_view s);
// Splits UTF-8 text into code points (each a substring); invalid bytes are
// single-byte code points.
std::vector<std::string_view> utf8_chars(std::string_view s);

}  // namespace strata::chat_template
