// log.cpp — spindle's log over spdlog: one process-wide sink (stderr, or the
// user's LogSink), written to synchronously by the thread that logs.
#include "common/log.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>

#include <spdlog/details/log_msg.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace spindle {
namespace {

constexpr std::string_view kCategory = "spindle";
constexpr std::string_view kNames[] = {"verbose", "info", "warning", "error", "fatal"};

spdlog::level::level_enum to_spdlog(LogSeverity s) {
  switch (s) {
    case LogSeverity::kVerbose: return spdlog::level::trace;
    case LogSeverity::kInfo: return spdlog::level::info;
    case LogSeverity::kWarning: return spdlog::level::warn;
    case LogSeverity::kError: return spdlog::level::err;
    case LogSeverity::kFatal: return spdlog::level::critical;
  }
  return spdlog::level::warn;
}

LogSeverity from_spdlog(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace:
    case spdlog::level::debug: return LogSeverity::kVerbose;
    case spdlog::level::info: return LogSeverity::kInfo;
    case spdlog::level::warn: return LogSeverity::kWarning;
    case spdlog::level::err: return LogSeverity::kError;
    default: return LogSeverity::kFatal;
  }
}

// %* : ONNX Runtime's one-letter severity (V, I, W, E, F).
class SeverityLetter final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    static constexpr char kLetters[] = {'V', 'I', 'W', 'E', 'F'};
    dest.push_back(kLetters[static_cast<int>(from_spdlog(msg.level))]);
  }
  std::unique_ptr<spdlog::custom_flag_formatter> clone() const override { return std::make_unique<SeverityLetter>(); }
};

// The user's LogSink behind spdlog's sink interface (base_sink serializes calls).
class CallbackSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit CallbackSink(LogSink fn) : fn_(std::move(fn)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string location = fmt::format("{}:{}", msg.source.filename ? msg.source.filename : "", msg.source.line);
    fn_(LogMessage{from_spdlog(msg.level), kCategory, std::string_view(msg.logger_name.data(), msg.logger_name.size()),
                   location, std::string_view(msg.payload.data(), msg.payload.size())});
  }
  void flush_() override {}

 private:
  LogSink fn_;
};

std::shared_ptr<spdlog::sinks::sink> make_stderr_sink() {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<SeverityLetter>('*').set_pattern("%Y-%m-%d %H:%M:%S.%e [%*:spindle:%n] %v");
  sink->set_formatter(std::move(formatter));
  return sink;
}

struct ProcessLog {
  std::mutex mu;
  std::shared_ptr<spdlog::sinks::sink> sink = make_stderr_sink();
  std::optional<LogSeverity> default_severity;  // set in code
};
ProcessLog& process_log() {
  static ProcessLog* log = new ProcessLog;  // never destroyed: sessions may log during exit
  return *log;
}

const char* basename_of(const char* path) {
  const char* base = path;
  for (const char* p = path; *p; ++p)
    if (*p == '/') base = p + 1;
  return base;
}

}  // namespace

std::optional<LogSeverity> parse_log_severity(std::string_view text) {
  for (int i = 0; i < 5; ++i)
    if (text == kNames[i] || (text.size() == 1 && text[0] == '0' + i)) return static_cast<LogSeverity>(i);
  return std::nullopt;
}

std::string_view log_severity_name(LogSeverity severity) {
  const int i = static_cast<int>(severity);
  return i >= 0 && i < 5 ? kNames[i] : "unknown";
}

void set_default_log_severity(LogSeverity severity) {
  std::lock_guard<std::mutex> lock(process_log().mu);
  process_log().default_severity = severity;
}

LogSeverity default_log_severity() {
  std::lock_guard<std::mutex> lock(process_log().mu);
  return process_log().default_severity.value_or(LogSeverity::kWarning);
}

void set_log_sink(LogSink sink) {
  auto next = sink ? std::shared_ptr<spdlog::sinks::sink>(std::make_shared<CallbackSink>(std::move(sink)))
                   : make_stderr_sink();
  std::lock_guard<std::mutex> lock(process_log().mu);
  process_log().sink = std::move(next);
}

namespace logging {

Result<std::optional<LogSeverity>> env_severity() {
  const char* v = std::getenv("SPINDLE_LOG_LEVEL");
  if (!v || !*v) return std::optional<LogSeverity>();
  if (auto s = parse_log_severity(v)) return std::optional<LogSeverity>(*s);
  return Status(StatusCode::kInvalidArgument,
                fmt::format("SPINDLE_LOG_LEVEL='{}': expected verbose, info, warning, error, fatal or 0 to 4", v));
}

Logger::Logger(int severity, std::string id) : id_(std::move(id)) {
  if (severity >= 0) severity_ = static_cast<LogSeverity>(severity > 4 ? 4 : severity);
}

bool Logger::enabled(LogSeverity severity) const {
  auto env = env_severity();  // a bad value was refused when the session was created
  const LogSeverity min = env.is_ok() && env.value() ? *env.value() : severity_.value_or(default_log_severity());
  return severity >= min;
}

void Logger::write(LogSeverity severity, std::string_view message, const char* file, int line) const {
  std::shared_ptr<spdlog::sinks::sink> sink;
  {
    std::lock_guard<std::mutex> lock(process_log().mu);
    sink = process_log().sink;
  }
  spdlog::details::log_msg msg(spdlog::source_loc{basename_of(file), line, ""}, spdlog::string_view_t(id_.data(), id_.size()),
                               to_spdlog(severity), spdlog::string_view_t(message.data(), message.size()));
  sink->log(msg);
  sink->flush();
}

const Logger& process_logger() {
  static const Logger logger;
  return logger;
}

}  // namespace logging
}  // namespace spindle
