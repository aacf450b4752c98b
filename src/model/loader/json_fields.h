// Typed reads of fields from one JSON object (config.json, generation_config.json,
// safetensors headers), with errors that name the file, the field and the
// expected type. Internal to the loader: JSON never leaves this directory.
//
// Operations: parse_json_object (text -> object, no exceptions escape),
// JsonFields::required_* / optional_* (optional reads leave *out unchanged when
// the field is absent or null).
// Threading: plain functions over caller-owned data.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::model::internal {

// Parses `text` as JSON whose top level must be an object. `path` names the
// file in errors; `code` is the StatusCode used for malformed input.
StatusOr<nlohmann::json> parse_json_object(const std::string& text, const std::string& path,
                                           StatusCode code = StatusCode::kInvalidArgument);

class JsonFields {
 public:
  // `prefix` qualifies field names in messages, e.g. "rope_scaling.".
  JsonFields(const nlohmann::json& object, std::string path, std::string prefix = "")
      : object_(object), path_(std::move(path)), prefix_(std::move(prefix)) {}

  // Present and not null.
  bool has(const char* key) const;
  // Present with the value null.
  bool is_null(const char* key) const;
  const nlohmann::json& at(const char* key) const { return object_.at(key); }

  Status required_int(const char* key, int64_t* out) const;
  Status required_double(const char* key, double* out) const;
  Status optional_int(const char* key, int64_t* out) const;
  Status optional_double(const char* key, double* out) const;
  Status optional_bool(const char* key, bool* out) const;
  Status optional_string(const char* key, std::string* out) const;
  // An integer or a list of integers (eos_token_id); replaces *out.
  Status optional_token_ids(const char* key, std::vector<int64_t>* out) const;

  // "<path>: field '<prefix><key>' must be <expected>; got <json type>".
  Status type_error(const char* key, const char* expected) const;
  // "<path>: required field '<prefix><key>' (<expected>) is missing".
  Status missing_error(const char* key, const char* expected) const;

 private:
  const nlohmann::json& object_;
  std::string path_;
  std::string prefix_;
};

}  // namespace strata::model::internal
