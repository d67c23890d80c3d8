// log.h — spindle's internal log (the public side: spindle/logging.h).
//
//   SPINDLE_LOG(impl->logger, kInfo, "intra-op: {} thread(s)", n);
//
// The format arguments are evaluated only when the severity is enabled.
// Not for kernels' hot paths: log while a session is created.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "spindle/logging.h"
#include "spindle/status.h"

namespace spindle::logging {

// SPINDLE_LOG_LEVEL's severity: nullopt when unset, an error naming the
// variable and the accepted values when it holds anything else.
Result<std::optional<LogSeverity>> env_severity();

class Logger {
 public:
  // The process default, no log id.
  Logger() = default;
  // `severity` < 0: the process default, read at each message.
  Logger(int severity, std::string id);
  bool enabled(LogSeverity severity) const;
  void write(LogSeverity severity, std::string_view message, const char* file, int line) const;
  const std::string& id() const { return id_; }

 private:
  std::optional<LogSeverity> severity_;
  std::string id_;
};

// Messages outside a session (options checked before one exists).
const Logger& process_logger();

}  // namespace spindle::logging

#define SPINDLE_LOG(logger, severity, ...)                                                                        \
  do {                                                                                                            \
    const ::spindle::logging::Logger& spindle_log_ = (logger);                                                   \
    if (spindle_log_.enabled(::spindle::LogSeverity::severity))                                                  \
      spindle_log_.write(::spindle::LogSeverity::severity, ::fmt::format(__VA_ARGS__), __FILE__, __LINE__);      \
  } while (0)
