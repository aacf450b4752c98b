// Whole numbers from nlohmann::json values of configuration flags
// (--kv-transfer-config, --kv-events-config), without undefined or
// implementation-defined conversions: a double is range-checked before it is
// converted, and an unsigned value above INT64_MAX is not wrapped to a
// negative one (both found by fuzz_kv_transfer_config).
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

namespace strata::server {

// The value as int64 when it is an integer, or a double holding a whole
// number, inside [-2^63, 2^63); nullopt for anything else.
inline std::optional<int64_t> json_exact_int64(const nlohmann::json& value) {
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  if (!value.is_number_float()) return std::nullopt;
  const double d = value.get<double>();
  constexpr double kTwoPow63 = 9223372036854775808.0;
  if (!(d >= -kTwoPow63 && d < kTwoPow63) || std::floor(d) != d) return std::nullopt;
  return static_cast<int64_t>(d);
}

}  // namespace strata::server
