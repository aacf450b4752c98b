#include "config/json_fields.h"

#include <cmath>
#include <limits>

namespace strata::config {

StatusOr<Json> parse_json_object(const std::string& text, const std::string& path,
                                 StatusCode code) {
  Json parsed;
  try {
    parsed = Json::parse(text);
  } catch (const Json::exception& e) {
    return Status(code, path + ": invalid JSON: " + e.what());
  }
  if (!parsed.is_object()) {
    return Status(code, path + ": expected a JSON object at top level; got " +
                            std::string(parsed.type_name()));
  }
  return parsed;
}

std::optional<int64_t> exact_int64(const Json& value, bool allow_whole_floats) {
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  if (!allow_whole_floats || !value.is_number_float()) return std::nullopt;
  // Range-checked before the conversion (fuzz_kv_transfer_config found both).
  const double d = value.get<double>();
  constexpr double kTwoPow63 = 9223372036854775808.0;
  if (!(d >= -kTwoPow63 && d < kTwoPow63) || std::floor(d) != d) return std::nullopt;
  return static_cast<int64_t>(d);
}

bool bool_or(const Json& object, const char* key, bool fallback) {
  auto it = object.find(key);
  return (it != object.end() && it->is_boolean()) ? it->get<bool>() : fallback;
}

std::string string_or(const Json& object, const char* key, const std::string& fallback) {
  auto it = object.find(key);
  return (it != object.end() && it->is_string()) ? it->get<std::string>() : fallback;
}

bool JsonFields::has(const char* key) const {
  auto it = object_.find(key);
  return it != object_.end() && (style_ == FieldStyle::kFlag || !it->is_null());
}

bool JsonFields::is_null(const char* key) const {
  auto it = object_.find(key);
  return it != object_.end() && it->is_null();
}

std::string JsonFields::name(const std::string& key) const {
  if (style_ == FieldStyle::kFile) return prefix_ + key;
  return where_.empty() ? key : where_ + "." + key;
}

JsonFields JsonFields::nested(const char* key) const {
  if (style_ == FieldStyle::kFlag) return JsonFields(at(key), name(key), style_);
  return JsonFields(at(key), where_, style_, name(key) + ".");
}

Status JsonFields::check_keys(std::initializer_list<const char*> known) const {
  for (const auto& item : object_.items()) {
    bool is_known = false;
    for (const char* k : known) is_known = is_known || item.key() == k;
    if (is_known) continue;
    std::string list;
    for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
    const std::string field = style_ == FieldStyle::kFlag
                                  ? name(item.key())
                                  : where_ + ": '" + name(item.key()) + "'";
    return invalid_argument("unknown key " + field + " (known: " + list + ")");
  }
  return Status();
}

Status JsonFields::type_error(const char* key, const std::string& expected) const {
  auto it = object_.find(key);
  if (style_ == FieldStyle::kFlag) {
    return invalid_argument(name(key) + " must be " + expected + ", got " +
                            (it == object_.end() ? "nothing" : it->dump()));
  }
  std::string message = where_ + ": field '" + name(key) + "' must be " + expected + "; got ";
  if (it == object_.end()) return invalid_argument(message + "nothing");
  message.append(it->type_name());
  if (it->is_primitive()) message.append(" ").append(it->dump());
  return invalid_argument(message);
}

Status JsonFields::missing_error(const char* key, const std::string& expected) const {
  if (style_ == FieldStyle::kFlag) return invalid_argument(name(key) + " is required");
  return invalid_argument(where_ + ": required field '" + name(key) + "' (" + expected +
                          ") is missing");
}

std::optional<int64_t> JsonFields::as_int(const Json& value) const {
  return exact_int64(value, /*allow_whole_floats=*/style_ == FieldStyle::kFlag);
}

Status JsonFields::required_int(const char* key, int64_t* out, std::optional<int64_t> min) const {
  if (!has(key)) return missing_error(key, "an integer");
  return optional_int(key, out, min);
}

Status JsonFields::required_double(const char* key, double* out) const {
  if (!has(key)) return missing_error(key, "a number");
  return optional_double(key, out);
}

Status JsonFields::optional_int(const char* key, int64_t* out, std::optional<int64_t> min) const {
  if (!has(key)) return Status();
  const std::optional<int64_t> v = as_int(at(key));
  if (!v || (min && *v < *min)) {
    return type_error(key, min ? "an integer >= " + std::to_string(*min) : "an integer");
  }
  *out = *v;
  return Status();
}

Status JsonFields::optional_double(const char* key, double* out, std::optional<double> min) const {
  if (!has(key)) return Status();
  const Json& value = at(key);
  if (!value.is_number() || (min && value.get<double>() < *min)) {
    return type_error(key, min ? "a number >= " + std::to_string(*min) : "a number");
  }
  *out = value.get<double>();
  return Status();
}

Status JsonFields::optional_bool(const char* key, bool* out) const {
  if (!has(key)) return Status();
  if (!at(key).is_boolean()) {
    return type_error(key, style_ == FieldStyle::kFlag ? "true or false" : "a boolean");
  }
  *out = at(key).get<bool>();
  return Status();
}

Status JsonFields::optional_string(const char* key, std::string* out) const {
  if (!has(key)) return Status();
  if (!at(key).is_string()) return type_error(key, "a string");
  *out = at(key).get<std::string>();
  return Status();
}

Status JsonFields::optional_string_or_null(const char* key, std::string* out) const {
  if (!has(key) || at(key).is_null()) return Status();
  if (!at(key).is_string()) return type_error(key, "a string or null");
  *out = at(key).get<std::string>();
  return Status();
}

Status JsonFields::optional_token_ids(const char* key, std::vector<int64_t>* out) const {
  if (!has(key)) return Status();
  const Json& value = at(key);
  if (const std::optional<int64_t> id = as_int(value)) {
    *out = {*id};
    return Status();
  }
  if (!value.is_array()) return type_error(key, "an integer or a list of integers");
  std::vector<int64_t> ids;
  for (const Json& item : value) {
    const std::optional<int64_t> id = as_int(item);
    if (!id) return type_error(key, "an integer or a list of integers");
    ids.push_back(*id);
  }
  *out = std::move(ids);
  return Status();
}

}  // namespace strata::config
