// spindle/logging.h — spindle's log, with ONNX Runtime's severities.
//
// Sessions log what they decided while being created: at info the resolved
// thread settings (and where each came from) and the optimizer's passes, at
// verbose each node's kernel; at warning the one-time notices (settings
// accepted without effect). Runs log nothing at warning and above in the
// normal case. Messages go to stderr as
//
//   2026-11-27 20:31:02.123 [I:spindle:my-session] intra-op: 4 thread(s) ...
//
// or to the sink set here. A message is written when its severity reaches
// the effective level: SPINDLE_LOG_LEVEL when set (verbose, info, warning,
// error, fatal or 0-4; it overrides every level set in code, so a program's
// log can be opened without changing it), else the session's
// log_severity_level when >= 0, else the process default set here (warning
// unless set).
#pragma once

#include <functional>
#include <optional>
#include <string_view>

namespace spindle {

enum class LogSeverity : int { kVerbose = 0, kInfo = 1, kWarning = 2, kError = 3, kFatal = 4 };

struct LogMessage {
  LogSeverity severity;
  std::string_view category;       // "spindle"
  std::string_view log_id;         // the session's log_id ("" outside a session)
  std::string_view code_location;  // "session.cpp:123"
  std::string_view message;
};
// Called once per message, from the thread that logs it, one call at a time
// (a sink must not log through spindle itself).
using LogSink = std::function<void(const LogMessage&)>;

// "verbose", "info", "warning", "error", "fatal" or "0".."4"; nullopt otherwise.
std::optional<LogSeverity> parse_log_severity(std::string_view text);
std::string_view log_severity_name(LogSeverity severity);

// The process default (ONNX Runtime's default logger severity): used by
// sessions whose log_severity_level is -1 and by messages outside sessions.
void set_default_log_severity(LogSeverity severity);
LogSeverity default_log_severity();

// Sends every message to `sink` instead of stderr; nullptr restores stderr.
void set_log_sink(LogSink sink);

}  // namespace spindle
