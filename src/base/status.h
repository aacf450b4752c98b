// Status and StatusOr<T>: how failures that come from outside (files, requests,
// tiers, the network) cross module boundaries. Invariant violations use
// STRATA_CHECK (check.h) instead; exceptions never cross a module boundary.
//
// Messages carry the values and what to do, e.g.
//   "model.safetensors: tensor 'lm_head.weight' has shape [10, 4]; expected [4096, 256]".
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "base/check.h"

namespace strata {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller's input is wrong (request, flag, file content)
  kNotFound,         // a named thing does not exist
  kOutOfRange,       // a size or index exceeds a limit
  kDataLoss,         // a file or chunk is truncated or corrupt
  kUnimplemented,    // valid input we do not support (architecture, dtype)
  kUnavailable,      // a dependency is down; retrying may help
  kResourceExhausted,
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message"
  std::string to_string() const;

  // Returns a copy whose message is "prefix: message" (adds context on the way up).
  Status with_prefix(const std::string& prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status out_of_range(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status data_loss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status resource_exhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}

// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    STRATA_CHECK(!status_.ok()) << "StatusOr built from an ok Status without a value";
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & {
    STRATA_CHECK(ok()) << status_.to_string();
    return *value_;
  }
  const T& value() const& {
    STRATA_CHECK(ok()) << status_.to_string();
    return *value_;
  }
  T&& value() && {
    STRATA_CHECK(ok()) << status_.to_string();
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace strata

#define STRATA_STATUS_CONCAT_INNER(a, b) a##b
#define STRATA_STATUS_CONCAT(a, b) STRATA_STATUS_CONCAT_INNER(a, b)

// Returns early from the enclosing function when `expr` (a Status) is not ok.
#define STRATA_RETURN_IF_ERROR(expr)              \
  do {                                            \
    ::strata::Status strata_status_ = (expr);     \
    if (!strata_status_.ok()) return strata_status_; \
  } while (0)

// `lhs = value of expr` (a StatusOr), or returns its Status early.
#define STRATA_ASSIGN_OR_RETURN(lhs, expr)                                          \
  auto STRATA_STATUS_CONCAT(strata_or_, __LINE__) = (expr);                          \
  if (!STRATA_STATUS_CONCAT(strata_or_, __LINE__).ok())                              \
    return STRATA_STATUS_CONCAT(strata_or_, __LINE__).status();                      \
  lhs = std::move(STRATA_STATUS_CONCAT(strata_or_, __LINE__)).value()
