// serve_protocol.h — the Open Inference Protocol (KServe v2) REST bodies of
// spindle serve: JSON tensors and the binary tensor data extension, to and
// from spindle tensors. Every check of an untrusted request lives here.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
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
// protocol_datatype, or spindle's name of a type the protocol lacks (messages).
std::string datatype_text(DataType t);
// "[1,-1,3]" for messages (the first 16 dimensions of a longer shape).
std::string shape_text(const Shape& shape);

// The checks every transport makes of an infer request; each throws
// HttpError (400) naming what was wrong and what was expected.
//
// Input `name` with `datatype`: one of the model's inputs, a tensor, not in
// `seen` (then added), of the model's datatype. Returns the model's input.
const TensorInfo& check_input(const std::string& name, const std::string& datatype,
                              const std::vector<TensorInfo>& inputs, std::set<std::string>& seen);
// The shape matches the model's (rank; fixed dimensions) and its element count is representable.
void check_shape(const Shape& shape, const std::string& input, const TensorInfo& info);
// A tensor of a checked shape; refuses one that does not fit in memory.
Tensor new_input(const TensorInfo& info, const Shape& shape, const std::string& input);
// An input from its bytes: row-major, little-endian, BOOL one byte each,
// BYTES each element a 4-byte little-endian length then its bytes. The size
// must be the shape's exactly; `what` names it in messages ("binary_data_size").
Tensor tensor_from_bytes(const TensorInfo& info, const Shape& shape, std::string_view bytes, const std::string& input,
                         const std::string& what);
// Every required input of the model is in `seen`.
void check_all_inputs(const std::vector<TensorInfo>& inputs, const std::set<std::string>& seen);
// Appends output `name` to `chosen`: one of the model's, not chosen before.
void add_output(const std::string& name, const std::vector<TensorInfo>& outputs, std::vector<std::string>& chosen);

// The protocol datatype of output `name`; HttpError 500 when the protocol cannot carry it.
std::string output_datatype(const Tensor& t, const std::string& name);
// Appends a contiguous tensor's bytes, laid out as tensor_from_bytes reads them.
void append_bytes(std::string& out, const Tensor& t);

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

// The protocol extensions the server implements (server metadata).
std::vector<std::string> server_extensions();

// Model metadata per the protocol: name, versions, platform, inputs, outputs.
nlohmann::json tensor_metadata(const std::vector<TensorInfo>& infos);

}  // namespace spindle::cli::serve
