// Status and Error: names of codes and formatting.
#include "spindle/status.h"

namespace spindle {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kUnsupported: return "UNSUPPORTED";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kRuntimeError: return "RUNTIME_ERROR";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
  }
  return "UNKNOWN";
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

void Status::throw_if_error() const {
  if (!is_ok()) throw Error(*this);
}

}  // namespace spindle
