// Typed reads of the fields of one JSON object (nlohmann), for configuration
// flags (--kv-transfer-config and its tier entries, --kv-events-config) and
// files (config.json, generation_config.json, safetensors headers,
// tokenizer.json). Errors are Status values that name where the object is,
// the field, and the type expected. The one field reader of the tree.
//
// One set of rules, two message styles (FieldStyle):
//   kFlag  "kv_connector_extra_config.blocks_per_chunk must be an integer >= 1, got \"4\""
//          `where` is the object's key path ("" at the top level); JSON null
//          is a value like any other; a whole-number float is an integer.
//   kFile  "config.json: field 'rope_scaling.factor' must be a number; got string \"x\""
//          `where` names the file, `prefix` qualifies field names; JSON null
//          reads as absent; integers must be JSON integers.
//
// Operations: parse_json_object (text -> object, no exceptions escape),
// exact_int64 / bool_or / string_or (single values), JsonFields::check_keys,
// required_* / optional_* (optional reads leave *out unchanged when the field
// is absent), type_error / missing_error for checks of the caller's own.
// Threading: plain functions over caller-owned data.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::config {

using Json = nlohmann::json;

enum class FieldStyle { kFlag, kFile };

// Parses `text` as JSON whose top level must be an object. `path` names the
// file in errors; `code` is the StatusCode used for malformed input.
StatusOr<Json> parse_json_object(const std::string& text, const std::string& path,
                                 StatusCode code = StatusCode::kInvalidArgument);

// `value` as int64 when it is a JSON integer that fits (an unsigned value
// above INT64_MAX does not), or, with `allow_whole_floats`, a float holding a
// whole number in [-2^63, 2^63); nullopt otherwise. No undefined or
// implementation-defined conversion happens on the way.
std::optional<int64_t> exact_int64(const Json& value, bool allow_whole_floats);

// The value of `key` when present and of the requested type, else `fallback`
// (lenient reads, for formats whose fields have defaults).
bool bool_or(const Json& object, const char* key, bool fallback);
std::string string_or(const Json& object, const char* key, const std::string& fallback);

class JsonFields {
 public:
  JsonFields(const Json& object, std::string where, FieldStyle style = FieldStyle::kFile,
             std::string prefix = "")
      : object_(object), where_(std::move(where)), style_(style), prefix_(std::move(prefix)) {}

  // Present (kFile: and not null).
  bool has(const char* key) const;
  // Present with the value null.
  bool is_null(const char* key) const;
  const Json& at(const char* key) const { return object_.at(key); }
  const Json& object() const { return object_; }
  // The field as messages name it: kFlag "<where>.<key>", kFile "<prefix><key>".
  std::string name(const std::string& key) const;
  // A reader of the object at `key` (the caller checked it is one), named below this one.
  JsonFields nested(const char* key) const;

  // "unknown key <name> (known: a, b, ...)" for the first key not in `known`.
  Status check_keys(std::initializer_list<const char*> known) const;

  // `min`, when given, is part of the type: "an integer >= 1".
  Status required_int(const char* key, int64_t* out, std::optional<int64_t> min = {}) const;
  Status required_double(const char* key, double* out) const;
  Status optional_int(const char* key, int64_t* out, std::optional<int64_t> min = {}) const;
  Status optional_double(const char* key, double* out, std::optional<double> min = {}) const;
  Status optional_bool(const char* key, bool* out) const;
  Status optional_string(const char* key, std::string* out) const;
  // A string, or null (which leaves *out as it is: vLLM's None).
  Status optional_string_or_null(const char* key, std::string* out) const;
  // An integer or a list of integers (eos_token_id); replaces *out.
  Status optional_token_ids(const char* key, std::vector<int64_t>* out) const;

  // kFlag "<name> must be <expected>, got <json>";
  // kFile "<where>: field '<name>' must be <expected>; got <json type>[ <json>]".
  Status type_error(const char* key, const std::string& expected) const;
  // kFlag "<name> is required"; kFile "<where>: required field '<name>' (<expected>) is missing".
  Status missing_error(const char* key, const std::string& expected) const;

 private:
  std::optional<int64_t> as_int(const Json& value) const;

  const Json& object_;
  std::string where_;
  FieldStyle style_;
  std::string prefix_;
};

}  // namespace strata::config
