// serve_protocol.h — the Open Inference Protocol (KServe v2) REST bodies of
// spindle serve: JSON tensors and the binary tensor data extension, to and
// from spindle tensors. Every check of an untrusted request lives here.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "spindle/session.h"

namespace spindle::cli::serve {

// A request the server refuses: the HTTP status, the message of the
// {"error": ...} body and the reason label of the failure metric.
struct HttpError : std::runtime_error {
  HttpError(int status, std::string reason, const std::string& message)
      : std::runtime_error(message), status(status), reason(std::move(reason)) {}
  int status;
  std::string reason;
};

// "FP32", "INT64", "BYTES", ...; nullopt for a type the protocol lacks.
std::optional<std::string> protocol_datatype(DataType t);
std::optional<DataType> datatype_from_protocol(std::string_view name);
// "[1,-1,3]" for messages.
std::string shape_text(const Shape& shape);

// An infer request, parsed and checked against the model's inputs/outputs.
struct InferRequest {
  std::string id;
  bool has_id = false;
  Feeds feeds;
  std::vector<std::string> outputs;  // names to return, in response order
  std::vector<bool> binary;          // per output: as binary data
  std::optional<int64_t> timeout_us;  // parameters.timeout
};

// body: the whole HTTP body; header_length: the Inference-Header-Content-Length
// value (nullopt = the whole body is JSON). Throws HttpError (400) naming
// what was wrong.
InferRequest parse_infer_request(std::string_view body, std::optional<int64_t> header_length,
                                 const std::vector<TensorInfo>& inputs, const std::vector<TensorInfo>& outputs);

// The response body; json_length is set to the JSON part's length when any
// output is binary (the Inference-Header-Content-Length header), else 0.
std::string build_infer_response(const std::string& model, const std::string& version, const InferRequest& request,
                                 const std::vector<Tensor>& values, size_t& json_length);

// Model metadata per the protocol: name, versions, platform, inputs, outputs.
nlohmann::json tensor_metadata(const std::vector<TensorInfo>& infos);

}  // namespace spindle::cli::serve
