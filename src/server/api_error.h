// ApiError: an HTTP error answer in the OpenAI envelope that vLLM (>= 0.10.1)
// and the OpenAI SDKs agree on:
//   {"error":{"message":"...","type":"BadRequestError","param":null,"code":400}}
// `type` follows vLLM's class names (BadRequestError, NotFoundError, ...).
//
// Thread-safety: plain values.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "base/status.h"

namespace strata::server {

struct ApiError {
  int status = 400;
  std::string message;
  std::string param;  // "" -> null
  std::string type;   // "" -> derived from status

  static ApiError bad_request(std::string message, std::string param = "");
  static ApiError not_found(std::string message, std::string param = "");
  static ApiError unauthorized();
  static ApiError internal(std::string message);
  static ApiError unavailable(std::string message);
  static ApiError not_implemented(std::string message);
  // Maps a Status from a lower module: invalid argument / out of range -> 400,
  // not found -> 404, unimplemented -> 501, unavailable/exhausted -> 503, else 500.
  static ApiError from_status(const Status& status);

  std::string type_name() const;
  // The envelope as compact JSON.
  std::string to_json() const;
};

// A value or the ApiError to answer with.
template <typename T>
class ApiOr {
 public:
  ApiOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  ApiOr(ApiError error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  const ApiError& error() const { return std::get<1>(v_); }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace strata::server
