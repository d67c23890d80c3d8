// spindle/status.h — error reporting for the whole runtime.
//
// Inside the runtime, code that can fail on user input returns a Status or a
// Result<T>. The public C++ API throws exactly one exception type,
// spindle::Error, which carries the same code and message. Bindings turn an
// Error into a Python exception or a rejected Promise.
//
// Thread-safety: Status, Result and Error are plain values; distinct objects
// may be used from distinct threads freely.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace spindle {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // a bad option, input, shape, dtype or file content
  kNotFound,           // a file, input name or key that does not exist
  kFailedPrecondition, // a valid request at the wrong time (e.g. after first use)
  kUnsupported,        // an operator, attribute or dtype spindle does not implement
  kCancelled,          // a run stopped by RunOptions::terminate
  kRuntimeError,       // a kernel failed while running
  kInternal,           // a broken invariant inside spindle
  kResourceExhausted,  // a size, memory or time budget was exceeded (the session stays usable)
};

// Short stable name of a code ("INVALID_ARGUMENT", ...).
const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message"
  std::string to_string() const;

  // Throws spindle::Error unless ok.
  void throw_if_error() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
inline Status not_found(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
inline Status failed_precondition(std::string msg) { return {StatusCode::kFailedPrecondition, std::move(msg)}; }
inline Status unsupported(std::string msg) { return {StatusCode::kUnsupported, std::move(msg)}; }
inline Status runtime_error(std::string msg) { return {StatusCode::kRuntimeError, std::move(msg)}; }
inline Status resource_exhausted(std::string msg) { return {StatusCode::kResourceExhausted, std::move(msg)}; }
inline Status internal_error(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

// The one exception type of the public API.
class Error : public std::runtime_error {
 public:
  explicit Error(Status status)
      : std::runtime_error(status.to_string()), status_(std::move(status)) {}
  Error(StatusCode code, std::string message) : Error(Status(code, std::move(message))) {}

  StatusCode code() const { return status_.code(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// A value or the Status that explains why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}                 // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {          // NOLINT: implicit by design
    if (status_.is_ok()) status_ = internal_error("Result constructed from an ok Status without a value");
  }

  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }

  T& value() & { ensure(); return *value_; }
  const T& value() const& { ensure(); return *value_; }
  T&& value() && { ensure(); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  void ensure() const {
    if (!value_) throw Error(status_);
  }
  std::optional<T> value_;
  Status status_;
};

}  // namespace spindle

// Propagate a non-ok Status from an expression returning Status.
#define SPINDLE_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::spindle::Status spindle_status_ = (expr);        \
    if (!spindle_status_.is_ok()) return spindle_status_; \
  } while (0)

#define SPINDLE_CONCAT_INNER_(a, b) a##b
#define SPINDLE_CONCAT_(a, b) SPINDLE_CONCAT_INNER_(a, b)
// `SPINDLE_ASSIGN_OR_RETURN(auto x, make_x());`
#define SPINDLE_ASSIGN_OR_RETURN(decl, expr)                                      \
  auto SPINDLE_CONCAT_(spindle_result_, __LINE__) = (expr);                       \
  if (!SPINDLE_CONCAT_(spindle_result_, __LINE__).is_ok())                        \
    return SPINDLE_CONCAT_(spindle_result_, __LINE__).status();                   \
  decl = std::move(SPINDLE_CONCAT_(spindle_result_, __LINE__)).value()
