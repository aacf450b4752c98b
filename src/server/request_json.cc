#include "server/request_json.h"

#include <cmath>

#include <limits>
#include <type_traits>

namespace strata::server {
namespace {

// nlohmann's parser reports line and column; simdjson only a category. Used
// on the error path only.
std::string describe_parse_error(std::string_view body) {
  try {
    nlohmann::json ignored = nlohmann::json::parse(body.begin(), body.end());
    (void)ignored;
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (size_t pos = what.find("] ");
        what.rfind("[json.exception", 0) == 0 && pos != std::string::npos) {
      what = what.substr(pos + 2);
    }
    return what;
  }
  return "the body is not valid JSON";
}

std::string quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

}  // namespace

std::optional<ApiError> RequestJson::parse(std::string_view body) {
  if (body.empty()) return ApiError::bad_request("Invalid JSON body: the request body is empty");
  padded_ = simdjson::padded_string(body);
  simdjson::dom::element doc;
  if (parser_.parse(padded_).get(doc) != simdjson::SUCCESS) {
    return ApiError::bad_request("Invalid JSON body: " + describe_parse_error(body));
  }
  if (doc.get_object().get(root_) != simdjson::SUCCESS) {
    return ApiError::bad_request(std::string("Invalid JSON body: expected a JSON object, got ") +
                                 json_type_phrase(doc));
  }
  return std::nullopt;
}

const char* json_type_phrase(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::ARRAY:
      return "an array";
    case simdjson::dom::element_type::OBJECT:
      return "an object";
    case simdjson::dom::element_type::INT64:
      return "an integer";
    case simdjson::dom::element_type::UINT64:
      return "an integer above 2^63-1";
    case simdjson::dom::element_type::DOUBLE:
      return "a number";
    case simdjson::dom::element_type::STRING:
      return "a string";
    case simdjson::dom::element_type::BOOL:
      return "a boolean";
    case simdjson::dom::element_type::NULL_VALUE:
      return "null";
  }
  return "a value";
}

std::optional<simdjson::dom::element> FieldReader::element(std::string_view name) const {
  simdjson::dom::element e;
  if (obj_.at_key(name).get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
  return e;
}

bool FieldReader::has(std::string_view name) const { return element(name).has_value(); }

void FieldReader::fail(ApiError error) {
  if (!error_) error_ = std::move(error);
}

void FieldReader::wrong_type(std::string_view name, std::string_view expected,
                             simdjson::dom::element e) {
  fail(ApiError::bad_request(
      quoted(name) + " must be " + std::string(expected) + ", got " + json_type_phrase(e),
      std::string(name)));
}

std::optional<double> FieldReader::number(std::string_view name) {
  auto e = element(name);
  if (!e) return std::nullopt;
  if (!e->is_number()) {
    wrong_type(name, "a number", *e);
    return std::nullopt;
  }
  double v = 0;
  if (e->get_double().get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}

std::optional<int64_t> FieldReader::integer(std::string_view name) {
  auto e = element(name);
  if (!e) return std::nullopt;
  int64_t v = 0;
  if (e->get_int64().get(v) == simdjson::SUCCESS) return v;
  double d = 0;
  // Python clients may send 5.0; accept integral doubles as vLLM's pydantic does.
  // The range check comes first: converting a double outside int64's range
  // (1e300, or a uint64 like 2^64-1) is undefined behaviour (found by fuzzing).
  if (e->type() == simdjson::dom::element_type::DOUBLE &&
      e->get_double().get(d) == simdjson::SUCCESS && d >= -9223372036854775808.0 &&
      d < 9223372036854775808.0 && d == std::floor(d)) {
    return static_cast<int64_t>(d);
  }
  wrong_type(name, "an integer", *e);
  return std::nullopt;
}

std::optional<bool> FieldReader::boolean(std::string_view name) {
  auto e = element(name);
  if (!e) return std::nullopt;
  bool v = false;
  if (e->get_bool().get(v) != simdjson::SUCCESS) {
    wrong_type(name, "a boolean", *e);
    return std::nullopt;
  }
  return v;
}

std::optional<std::string> FieldReader::string(std::string_view name) {
  auto e = element(name);
  if (!e) return std::nullopt;
  std::string_view v;
  if (e->get_string().get(v) != simdjson::SUCCESS) {
    wrong_type(name, "a string", *e);
    return std::nullopt;
  }
  return std::string(v);
}

std::optional<std::vector<std::string>> FieldReader::string_or_list(std::string_view name) {
  auto e = element(name);
  if (!e) return std::nullopt;
  std::vector<std::string> out;
  std::string_view s;
  if (e->get_string().get(s) == simdjson::SUCCESS) {
    out.emplace_back(s);
    return out;
  }
  simdjson::dom::array arr;
  if (e->get_array().get(arr) != simdjson::SUCCESS) {
    wrong_type(name, "a string or a list of strings", *e);
    return std::nullopt;
  }
  for (simdjson::dom::element item : arr) {
    if (item.get_string().get(s) != simdjson::SUCCESS) {
      wrong_type(name, "a string or a list of strings", item);
      return std::nullopt;
    }
    out.emplace_back(s);
  }
  return out;
}

bool read_token_ids(simdjson::dom::element e, std::vector<int32_t>* ids) {
  simdjson::dom::array arr;
  if (e.get_array().get(arr) != simdjson::SUCCESS) return false;
  ids->clear();
  for (simdjson::dom::element item : arr) {
    int64_t v = 0;
    if (item.get_int64().get(v) != simdjson::SUCCESS) return false;
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      return false;
    }
    ids->push_back(static_cast<int32_t>(v));
  }
  return true;
}

std::optional<std::vector<int32_t>> FieldReader::int_list(std::string_view name) {
  auto e = element(name);
  if (!e) return std::nullopt;
  std::vector<int32_t> ids;
  if (!read_token_ids(*e, &ids)) {
    wrong_type(name, "a list of integers", *e);
    return std::nullopt;
  }
  return ids;
}

std::optional<simdjson::dom::object> FieldReader::object(std::string_view name) {
  auto e = element(name);
  if (!e) return std::nullopt;
  simdjson::dom::object obj;
  if (e->get_object().get(obj) != simdjson::SUCCESS) {
    wrong_type(name, "an object", *e);
    return std::nullopt;
  }
  return obj;
}

namespace {

// One walk of the DOM for both targets, so the two agree on key order (a
// repeated key keeps its first place and its last value) and on numbers.
template <typename Out>
Out convert_element(simdjson::dom::element e) {
  constexpr bool kToValue = std::is_same_v<Out, chat_template::Value>;
  simdjson::dom::array arr;
  simdjson::dom::object obj;
  std::string_view str;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  bool b = false;
  if (e.get_array().get(arr) == simdjson::SUCCESS) {
    std::vector<Out> items;
    items.reserve(arr.size());
    for (simdjson::dom::element item : arr) items.push_back(convert_element<Out>(item));
    if constexpr (kToValue) {
      return Out::list(std::move(items));
    } else {
      return Out(std::move(items));
    }
  }
  if (e.get_object().get(obj) == simdjson::SUCCESS) {
    if constexpr (kToValue) {
      chat_template::Dict dict;
      for (auto kv : obj) dict.set(std::string(kv.key), convert_element<Out>(kv.value));
      return Out::dict(std::move(dict));
    } else {
      Out out = Out::object();
      for (auto kv : obj) out[std::string(kv.key)] = convert_element<Out>(kv.value);
      return out;
    }
  }
  if constexpr (kToValue) {
    // Value's integers are int64; larger ones become floats.
    if (e.get_string().get(str) == simdjson::SUCCESS) return Out::string(std::string(str));
    if (e.get_int64().get(i) == simdjson::SUCCESS) return Out::integer(i);
    if (e.get_uint64().get(u) == simdjson::SUCCESS) return Out::floating(static_cast<double>(u));
    if (e.get_double().get(d) == simdjson::SUCCESS) return Out::floating(d);
    if (e.get_bool().get(b) == simdjson::SUCCESS) return Out::boolean(b);
    return Out::none();
  } else {
    if (e.get_string().get(str) == simdjson::SUCCESS) return Out(std::string(str));
    if (e.get_int64().get(i) == simdjson::SUCCESS) return Out(i);
    if (e.get_uint64().get(u) == simdjson::SUCCESS) return Out(u);
    if (e.get_double().get(d) == simdjson::SUCCESS) return Out(d);
    if (e.get_bool().get(b) == simdjson::SUCCESS) return Out(b);
    return Out(nullptr);
  }
}

}  // namespace

nlohmann::ordered_json to_ordered_json(simdjson::dom::element e) {
  return convert_element<nlohmann::ordered_json>(e);
}

chat_template::Value to_template_value(simdjson::dom::element e) {
  return convert_element<chat_template::Value>(e);
}

}  // namespace strata::server
