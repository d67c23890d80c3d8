// onnx_convert.h — ONNX protobuf messages to spindle values.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include <onnx/onnx_pb.h>

#include "kernels/kernel.h"
#include "spindle/status.h"
#include "spindle/tensor.h"

namespace spindle::graph {

// A TensorProto's value: raw_data, the typed *_data fields, or external data
// (`location` relative to base_dir, with optional offset and length).
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::filesystem::path& base_dir = {});
// A serialized TensorProto file (.pb), as in the ONNX backend test data.
Result<Tensor> read_tensor_pb(const std::filesystem::path& path);
// A test-data file of a graph input or output of type `type`: a
// SequenceProto for sequence types, an OptionalProto for optional types,
// else a TensorProto.
Result<Tensor> read_value_pb(const std::filesystem::path& path, const onnx::TypeProto& type);
// Attributes of a node. Graph-valued attributes go through `load_graph`;
// without it they are refused as unsupported.
Result<kernels::Attributes> attributes_from_proto(
    const onnx::NodeProto& node, const std::filesystem::path& base_dir = {},
    const std::function<Result<kernels::AttrValue>(const onnx::GraphProto&)>* load_graph = nullptr);
// Element type of an onnx elem_type; kUnsupported for types spindle lacks.
Result<DataType> dtype_from_onnx(int32_t elem_type);

}  // namespace spindle::graph
