#include "base/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata {
namespace {
LogLevel level_from_env() {
  const char* env = std::getenv("STRATA_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kInfo;
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(env, "warning") == 0) return LogLevel::kWarning;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  return LogLevel::kInfo;
}
const char* level_tag(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "D";
    case LogLevel::kInfo: return "I";
    case LogLevel::kWarning: return "W";
    case LogLevel::kError: return "E";
  }
  return "?";
}
}  // namespace

bool log_enabled(LogLevel level) {
  static const LogLevel min_level = level_from_env();
  return level >= min_level;
}

internal::LogLine::~LogLine() {
  std::string line = std::string("[strata ") + level_tag(level_) + "] " + stream_.str() + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace strata
