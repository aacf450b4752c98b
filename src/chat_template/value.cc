#include "chat_template/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat_template/ast.h"

namespace strata::chat_template {

void Dict::clear() { entries_.clear(); }

size_t Dict::size() const { return entries_.size(); }

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

Value& Dict::value_at(size_t index) { return entries_[index].second; }

void Dict::set(std::string key, Value value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
  Value v;
  v.s_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}

Value Value::floating(double d) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.d_ = d;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.s_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}

Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.b_ = true;
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::make_namespace(Dict d) {
  Value v = dict(std::move(d));
  v.kind_ = Kind::kNamespace;
  return v;
}

Value Value::macro(const MacroNode* node) {
  Value v;
  v.kind_ = Kind::kMacro;
  v.macro_ = node;
  return v;
}

Value Value::function(std::string name, const Value* self) {
  Value v;
  v.kind_ = Kind::kFunction;
  auto fn = std::make_shared<Function>();
  fn->name = std::move(name);
  if (self != nullptr) fn->self = std::make_shared<const Value>(*self);
  v.fn_ = std::move(fn);
  return v;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return d_ != 0.0;
    case Kind::kString: return !s_->empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return dict_->size() != 0;
    default: return true;
  }
}

namespace {

std::string join_repr(const ValueList& items, const char* open, const char* close) {
  std::string out = open;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += items[i].to_repr();
  }
  return out + close;
}

std::string dict_repr(const Dict& d) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : d.entries()) {
    if (!first) out += ", ";
    first = false;
    out += python_string_repr(k) + ": " + v.to_repr();
  }
  return out + "}";
}

}  // namespace

std::string Value::to_str() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return b_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: return format_python_float(d_);
    case Kind::kString: return *s_;
    case Kind::kList:
      if (!b_) return join_repr(*list_, "[", "]");
      return join_repr(*list_, "(", list_->size() == 1 ? ",)" : ")");
    case Kind::kDict: return dict_repr(*dict_);
    case Kind::kNamespace: return "<Namespace " + dict_repr(*dict_) + ">";
    case Kind::kMacro: return "<Macro '" + macro_->name + "'>";
    case Kind::kFunction: return "<built-in method " + fn_->name + ">";
  }
  return "";
}

std::string Value::to_repr() const {
  if (is_string()) return python_string_repr(*s_);
  if (is_undefined()) return "Undefined";
  return to_str();
}

bool Value::equals(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (is_float() || other.is_float()) return as_double() == other.as_double();
    return as_int() == other.as_int();
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return *s_ == *other.s_;
    case Kind::kList: {
      if (list_->size() != other.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].equals((*other.list_)[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (dict_->size() != other.dict_->size()) return false;
      for (const auto& [k, v] : dict_->entries()) {
        const Value* o = other.dict_->find(k);
        if (o == nullptr || !v.equals(*o)) return false;
      }
      return true;
    }
    case Kind::kNamespace: return dict_ == other.dict_;
    case Kind::kMacro: return macro_ == other.macro_;
    default: return false;
  }
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kMacro: return "Macro";
    case Kind::kFunction: return "builtin_function_or_method";
  }
  return "object";
}

std::string format_python_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e_pos = sci.find('e');
  int exp10 = std::atoi(sci.c_str() + e_pos + 1);
  std::string mantissa = sci.substr(0, e_pos);
  bool negative = !mantissa.empty() && mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exp10 < -4 || exp10 >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    return out + exp_buf;
  }
  if (exp10 < 0) return out + "0." + std::string(-exp10 - 1, '0') + digits;
  size_t int_digits = static_cast<size_t>(exp10) + 1;
  if (digits.size() <= int_digits) {
    return out + digits + std::string(int_digits - digits.size(), '0') + ".0";
  }
  return out + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

std::string python_string_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += quote;
  return out;
}

namespace {

size_t utf8_char_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xe) return 3;
  if ((lead >> 3) == 0x1e) return 4;
  return 1;
}

}  // namespace

std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t n = utf8_char_len(static_cast<unsigned char>(s[i]));
    if (i + n > s.size()) n = 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

size_t utf8_length(std::string_view s) {
  size_t count = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) ++count;
  }
  return count;
}

}  // namespace strata::chat_template
