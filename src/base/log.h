// Minimal leveled logging to stderr, safe to call from any thread (one line is
// written with a single fwrite). The level comes from STRATA_LOG_LEVEL
// (debug|info|warning|error; default info).
//
//   STRATA_LOG(kInfo) << "loaded " << n << " tensors";
#pragma once

#include <sstream>

namespace strata {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

bool log_enabled(LogLevel level);

namespace internal {
class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace internal

}  // namespace strata

#define STRATA_LOG(level)                                    \
  if (!::strata::log_enabled(::strata::LogLevel::level)) {   \
  } else                                                     \
    ::strata::internal::LogLine(::strata::LogLevel::level).stream()
