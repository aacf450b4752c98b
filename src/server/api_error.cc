#include "server/api_error.h"

#include "server/json_writer.h"

namespace strata::server {

ApiError ApiError::bad_request(std::string message, std::string param) {
  return {400, std::move(message), std::move(param), ""};
}

ApiError ApiError::not_found(std::string message, std::string param) {
  return {404, std::move(message), std::move(param), ""};
}

ApiError ApiError::unauthorized() { return {401, "Unauthorized", "", ""}; }

ApiError ApiError::internal(std::string message) { return {500, std::move(message), "", ""}; }

ApiError ApiError::unavailable(std::string message) { return {503, std::move(message), "", ""}; }

ApiError ApiError::not_implemented(std::string message) {
  return {501, std::move(message), "", ""};
}

ApiError ApiError::from_status(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return bad_request(status.message());
    case StatusCode::kNotFound:
      return not_found(status.message());
    case StatusCode::kUnimplemented:
      return not_implemented(status.message());
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
      return unavailable(status.message());
    default:
      return internal(status.message());
  }
}

std::string ApiError::type_name() const {
  if (!type.empty()) return type;
  switch (status) {
    case 400:
      return "BadRequestError";
    case 401:
      return "AuthenticationError";
    case 404:
      return "NotFoundError";
    case 405:
      return "MethodNotAllowedError";
    case 413:
      return "RequestEntityTooLargeError";
    case 501:
      return "NotImplementedError";
    case 503:
      return "ServiceUnavailableError";
    default:
      return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

std::string ApiError::to_json() const {
  JsonWriter w;
  w.begin_object().key("error").begin_object();
  w.key("message").value(message);
  w.key("type").value(type_name());
  w.key("param");
  if (param.empty()) {
    w.null();
  } else {
    w.value(param);
  }
  w.key("code").value(status);
  w.end_object().end_object();
  return w.take();
}

}  // namespace strata::server
