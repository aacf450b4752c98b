// Operators, access and iteration with Python semantics (see builtins.h).
#include <cmath>
#include <limits>

#include "chat_template/builtins.h"
#include "chat_template/error.h"

namespace strata::chat_template {
namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b, int line) {
  throw_render_error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                         b.type_name() + "'",
                     line);
}

int64_t checked(bool overflow, int64_t value, int line) {
  if (overflow) throw_render_error("integer overflow in template arithmetic", line);
  return value;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int64_t int_pow(int64_t base, int64_t exp, int line) {
  int64_t result = 1;
  while (exp > 0) {
    if ((exp & 1) && __builtin_mul_overflow(result, base, &result)) checked(true, 0, line);
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) checked(true, 0, line);
  }
  return result;
}

Value repeat(const Value& seq, int64_t times, int line, size_t max_bytes) {
  if (times <= 0) return seq.is_string() ? Value::string("") : Value::list({});
  size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size();
  if (unit != 0 && static_cast<uint64_t>(times) > max_bytes / unit) {
    throw TemplateError(TemplateError::Kind::kLimit, "repetition result is too large", line);
  }
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.as_string();
    return Value::string(std::move(out));
  }
  ValueList out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return Value::list(std::move(out));
}

// "%s" formatting of `fmt % args` (str.__mod__), for %s %d %i %r %f and %%.
Value percent_format(const std::string& fmt, const Value& args, int line) {
  ValueList values = args.is_list() ? args.as_list() : ValueList{args};
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%' || i + 1 >= fmt.size()) {
      out += fmt[i];
      continue;
    }
    char spec = fmt[++i];
    if (spec == '%') {
      out += '%';
      continue;
    }
    if (next >= values.size()) throw_render_error("not enough arguments for format string", line);
    const Value& v = values[next++];
    if (spec == 's') out += v.to_str();
    else if (spec == 'r') out += v.to_repr();
    else if (spec == 'd' || spec == 'i') out += std::to_string(static_cast<int64_t>(v.as_double()));
    else if (spec == 'f') out += std::to_string(v.as_double());
    else throw_render_error(std::string("unsupported format character '") + spec + "'", line);
  }
  return Value::string(std::move(out));
}

Value arithmetic(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "/") {
    if (b.as_double() == 0.0) throw_render_error("division by zero", line);
    return Value::floating(a.as_double() / b.as_double());
  }
  bool use_float = a.is_float() || b.is_float();
  if (op == "**") {
    if (!use_float && b.as_int() >= 0) return Value::integer(int_pow(a.as_int(), b.as_int(), line));
    return Value::floating(std::pow(a.as_double(), b.as_double()));
  }
  if (use_float) {
    double x = a.as_double(), y = b.as_double();
    if (op == "+") return Value::floating(x + y);
    if (op == "-") return Value::floating(x - y);
    if (op == "*") return Value::floating(x * y);
    if (y == 0.0) throw_render_error("float division by zero", line);
    if (op == "//") return Value::floating(std::floor(x / y));
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value::floating(r);
  }
  int64_t x = a.as_int(), y = b.as_int(), r = 0;
  bool overflow = false;
  if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
  if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
  if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
  if (op == "+" || op == "-" || op == "*") return Value::integer(checked(overflow, r, line));
  if (y == 0) throw_render_error("integer division or modulo by zero", line);
  if (op == "//") return Value::integer(floor_div(x, y));
  return Value::integer(floor_mod(x, y));
}

}  // namespace

void require_defined(const Value& value, int line) {
  if (!value.is_undefined()) return;
  const std::string& hint = value.undefined_hint();
  throw_render_error(hint.empty() ? "value is undefined" : hint, line);
}

Value binary_op(const std::string& op, const Value& a, const Value& b, int line, size_t max_bytes) {
  if (op == "~") return Value::string(a.to_str() + b.to_str());
  require_defined(a, line);
  require_defined(b, line);
  if (op == "neg" || op == "pos") {
    if (!a.is_number()) throw_render_error("bad operand type for unary " + op + ": '" + a.type_name() + "'", line);
    if (op == "pos") return a.is_bool() ? Value::integer(a.as_int()) : a;
    if (a.is_float()) return Value::floating(-a.as_double());
    return arithmetic("-", Value::integer(0), a, line);
  }
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b, line);
  if (op == "+" && a.is_string() && b.is_string()) return Value::string(a.as_string() + b.as_string());
  if (op == "+" && a.is_list() && b.is_list()) {
    ValueList out = a.as_list();
    out.insert(out.end(), b.as_list().begin(), b.as_list().end());
    return Value::list(std::move(out));
  }
  if (op == "*" && (a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int(), line, max_bytes);
  if (op == "*" && (b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int(), line, max_bytes);
  if (op == "%" && a.is_string()) return percent_format(a.as_string(), b, line);
  if (op == "+" && a.is_string()) {
    throw_render_error("can only concatenate str (not \"" + b.type_name() + "\") to str", line);
  }
  unsupported(op, a, b, line);
}

bool less_than(const Value& a, const Value& b, int line) {
  require_defined(a, line);
  require_defined(b, line);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const ValueList& x = a.as_list();
    const ValueList& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less_than(x[i], y[i], line)) return true;
      if (less_than(y[i], x[i], line)) return false;
    }
    return x.size() < y.size();
  }
  throw_render_error("'<' not supported between instances of '" + a.type_name() + "' and '" +
                         b.type_name() + "'",
                     line);
}

bool compare_op(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "==") return a.equals(b);
  if (op == "!=") return !a.equals(b);
  if (op == "<") return less_than(a, b, line);
  if (op == ">") return less_than(b, a, line);
  if (op == "<=") return !less_than(b, a, line);
  if (op == ">=") return !less_than(a, b, line);
  if (op == "in") return contains(b, a, line);
  return !contains(b, a, line);  // "not in"
}

bool contains(const Value& container, const Value& item, int line) {
  if (container.is_string()) {
    if (!item.is_string()) {
      throw_render_error("'in <string>' requires string as left operand, not " + item.type_name(), line);
    }
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const Value& v : container.as_list()) {
      if (v.equals(item)) return true;
    }
    return false;
  }
  if (container.is_dict() || container.is_namespace()) {
    return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
  }
  if (container.is_undefined()) return false;
  throw_render_error("argument of type '" + container.type_name() + "' is not iterable", line);
}

namespace {

// "'dict object'" as jinja2 names the owner of a missing attribute.
std::string owner_name(const Value& object) {
  if (object.is_none()) return "None";
  std::string out = "'";
  out += object.type_name();
  out += " object'";
  return out;
}

}  // namespace

Value get_attr(const Value& object, const std::string& name, int line) {
  require_defined(object, line);
  if (is_known_method(object, name)) return Value::function(name, &object);
  if (object.is_dict() || object.is_namespace()) {
    if (const Value* v = object.as_dict().find(name)) return *v;
  }
  return Value::undefined(owner_name(object) + " has no attribute '" + name + "'");
}

namespace {

// Python index normalisation; returns false when out of range.
bool normalize_index(int64_t index, size_t size, size_t* out) {
  int64_t n = static_cast<int64_t>(size);
  if (index < 0) index += n;
  if (index < 0 || index >= n) return false;
  *out = static_cast<size_t>(index);
  return true;
}

}  // namespace

Value get_item(const Value& object, const Value& key, int line) {
  require_defined(object, line);
  if ((object.is_dict() || object.is_namespace()) && key.is_string()) {
    if (const Value* v = object.as_dict().find(key.as_string())) return *v;
    if (is_known_method(object, key.as_string())) return Value::function(key.as_string(), &object);
  } else if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
    size_t idx = 0;
    if (object.is_list()) {
      if (normalize_index(key.as_int(), object.as_list().size(), &idx)) return object.as_list()[idx];
    } else {
      std::vector<std::string_view> chars = utf8_chars(object.as_string());
      if (normalize_index(key.as_int(), chars.size(), &idx)) return Value::string(std::string(chars[idx]));
    }
  } else if (key.is_string()) {
    return get_attr(object, key.as_string(), line);
  }
  return Value::undefined(owner_name(object) + " has no element " + key.to_repr());
}

namespace {

int64_t slice_bound(const Value* v, int64_t dflt, int line) {
  if (v == nullptr || v->is_none()) return dflt;
  if (!v->is_int() && !v->is_bool()) throw_render_error("slice indices must be integers or None", line);
  return v->as_int();
}

// Python slice.indices() followed by the index walk.
std::vector<size_t> slice_indices(size_t size, const Value* start_v, const Value* stop_v,
                                  const Value* step_v, int line) {
  int64_t n = static_cast<int64_t>(size);
  int64_t step = slice_bound(step_v, 1, line);
  if (step == 0) throw_render_error("slice step cannot be zero", line);
  int64_t lower = step < 0 ? -1 : 0;
  int64_t upper = step < 0 ? n - 1 : n;
  auto clamp = [&](const Value* v, int64_t dflt) {
    if (v == nullptr || v->is_none()) return dflt;
    int64_t i = slice_bound(v, dflt, line);
    if (i < 0) {
      i += n;
      if (i < lower) i = lower;
    } else if (i > upper) {
      i = upper;
    }
    return i;
  };
  int64_t start = clamp(start_v, step < 0 ? upper : lower);
  int64_t stop = clamp(stop_v, step < 0 ? lower : upper);
  std::vector<size_t> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(static_cast<size_t>(i));
  return out;
}

}  // namespace

Value slice(const Value& object, const Value* start, const Value* stop, const Value* step, int line) {
  require_defined(object, line);
  if (object.is_list()) {
    ValueList out;
    for (size_t i : slice_indices(object.as_list().size(), start, stop, step, line)) out.push_back(object.as_list()[i]);
    return Value::list(std::move(out));
  }
  if (object.is_string()) {
    std::vector<std::string_view> chars = utf8_chars(object.as_string());
    std::string out;
    for (size_t i : slice_indices(chars.size(), start, stop, step, line)) out += chars[i];
    return Value::string(std::move(out));
  }
  throw_render_error("'" + object.type_name() + "' object is not subscriptable", line);
}

ValueList iterate(const Value& value, int line) {
  if (value.is_list()) return value.as_list();
  if (value.is_undefined()) return {};
  if (value.is_dict()) {
    ValueList keys;
    for (const auto& [k, v] : value.as_dict().entries()) keys.push_back(Value::string(k));
    return keys;
  }
  if (value.is_string()) {
    ValueList chars;
    for (std::string_view c : utf8_chars(value.as_string())) chars.push_back(Value::string(std::string(c)));
    return chars;
  }
  throw_render_error("'" + value.type_name() + "' object is not iterable", line);
}

}  // namespace strata::chat_template
