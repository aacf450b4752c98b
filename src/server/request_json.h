// Request-body JSON on top of simdjson's DOM: parse once, then read typed
// fields with OpenAI/vLLM leniency (a field that is null counts as absent,
// unknown fields are ignored) and precise 400 messages for wrong types
// ("'temperature' must be a number, got a string").
//
// Thread-safety: a RequestJson and the FieldReaders over it belong to one
// thread; elements stay valid while the RequestJson lives.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat_template/value.h"
#include "server/api_error.h"

namespace strata::server {

class RequestJson {
 public:
  // Parses `body`, which must be a JSON object. Errors: malformed JSON (the
  // message names line, column and what was expected), non-object root.
  std::optional<ApiError> parse(std::string_view body);
  simdjson::dom::object root() const { return root_; }

 private:
  simdjson::dom::parser parser_;
  simdjson::padded_string padded_;
  simdjson::dom::object root_;
};

// Reads fields of one JSON object; the first failure is kept in error().
class FieldReader {
 public:
  explicit FieldReader(simdjson::dom::object obj) : obj_(obj) {}

  // Present and not null.
  bool has(std::string_view name) const;
  std::optional<simdjson::dom::element> element(std::string_view name) const;
  std::optional<double> number(std::string_view name);
  std::optional<int64_t> integer(std::string_view name);
  std::optional<bool> boolean(std::string_view name);
  std::optional<std::string> string(std::string_view name);
  // A string or a list of strings.
  std::optional<std::vector<std::string>> string_or_list(std::string_view name);
  std::optional<std::vector<int32_t>> int_list(std::string_view name);
  std::optional<simdjson::dom::object> object(std::string_view name);

  void fail(ApiError error);
  bool ok() const { return !error_.has_value(); }
  const std::optional<ApiError>& error() const { return error_; }

 private:
  void wrong_type(std::string_view name, std::string_view expected, simdjson::dom::element e);

  simdjson::dom::object obj_;
  std::optional<ApiError> error_;
};

// "a string", "a number", ... for messages.
const char* json_type_phrase(simdjson::dom::element e);
// Converts a DOM element to nlohmann::ordered_json, keeping key order, for
// consumers that take nlohmann (tool schemas and tool parameter types).
nlohmann::ordered_json to_ordered_json(simdjson::dom::element e);
// Converts a DOM element straight to the chat template's Value (what the
// template renders), keeping key order (a repeated key keeps its first place
// and its last value); integers above 2^63-1 become floats (Value's integers
// are int64).
chat_template::Value to_template_value(simdjson::dom::element e);
// Reads a token id list element ([1,2,3]); false if not a list of ints in int32.
bool read_token_ids(simdjson::dom::element e, std::vector<int32_t>* ids);

}  // namespace strata::server
