#include "model/loader/json_fields.h"

#include <limits>

namespace strata::model::internal {
namespace {

using nlohmann::json;

// Integer JSON value that fits int64 (unsigned values above INT64_MAX do not).
bool as_int64(const json& value, int64_t* out) {
  if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (value.is_number_integer()) {
    *out = value.get<int64_t>();
    return true;
  }
  return false;
}

}  // namespace

StatusOr<json> parse_json_object(const std::string& text, const std::string& path,
                                 StatusCode code) {
  json parsed;
  try {
    parsed = json::parse(text);
  } catch (const json::exception& e) {
    return Status(code, path + ": invalid JSON: " + e.what());
  }
  if (!parsed.is_object()) {
    return Status(code, path + ": expected a JSON object at top level; got " +
                            std::string(parsed.type_name()));
  }
  return parsed;
}

bool JsonFields::has(const char* key) const {
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

bool JsonFields::is_null(const char* key) const {
  auto it = object_.find(key);
  return it != object_.end() && it->is_null();
}

Status JsonFields::type_error(const char* key, const char* expected) const {
  auto it = object_.find(key);
  std::string message = path_ + ": field '" + prefix_ + key + "' must be " + expected + "; got ";
  if (it == object_.end()) return invalid_argument(message + "nothing");
  message.append(it->type_name());
  if (it->is_primitive()) message.append(" ").append(it->dump());
  return invalid_argument(message);
}

Status JsonFields::missing_error(const char* key, const char* expected) const {
  return invalid_argument(path_ + ": required field '" + prefix_ + key + "' (" + expected +
                          ") is missing");
}

Status JsonFields::required_int(const char* key, int64_t* out) const {
  if (!has(key)) return missing_error(key, "an integer");
  return optional_int(key, out);
}

Status JsonFields::required_double(const char* key, double* out) const {
  if (!has(key)) return missing_error(key, "a number");
  return optional_double(key, out);
}

Status JsonFields::optional_int(const char* key, int64_t* out) const {
  if (!has(key)) return Status();
  if (!as_int64(object_.at(key), out)) return type_error(key, "an integer");
  return Status();
}

Status JsonFields::optional_double(const char* key, double* out) const {
  if (!has(key)) return Status();
  const json& value = object_.at(key);
  if (!value.is_number()) return type_error(key, "a number");
  *out = value.get<double>();
  return Status();
}

Status JsonFields::optional_bool(const char* key, bool* out) const {
  if (!has(key)) return Status();
  const json& value = object_.at(key);
  if (!value.is_boolean()) return type_error(key, "a boolean");
  *out = value.get<bool>();
  return Status();
}

Status JsonFields::optional_string(const char* key, std::string* out) const {
  if (!has(key)) return Status();
  const json& value = object_.at(key);
  if (!value.is_string()) return type_error(key, "a string");
  *out = value.get<std::string>();
  return Status();
}

Status JsonFields::optional_token_ids(const char* key, std::vector<int64_t>* out) const {
  if (!has(key)) return Status();
  const json& value = object_.at(key);
  int64_t id = 0;
  if (as_int64(value, &id)) {
    *out = {id};
    return Status();
  }
  if (!value.is_array()) return type_error(key, "an integer or a list of integers");
  std::vector<int64_t> ids;
  for (const json& item : value) {
    if (!as_int64(item, &id)) return type_error(key, "an integer or a list of integers");
    ids.push_back(id);
  }
  *out = std::move(ids);
  return Status();
}

}  // namespace strata::model::internal
