// onnx_convert.h — ONNX node attributes to spindle values (the tensors
// inside them are read by io/tensor_proto.h).
#pragma once

#include <filesystem>
#include <functional>

#include <onnx/onnx_pb.h>

#include "common/attributes.h"
#include "spindle/status.h"

namespace spindle::graph {

// Attributes of a node. Graph-valued attributes go through `load_graph`;
// without it they are refused as unsupported.
Result<Attributes> attributes_from_proto(
    const onnx::NodeProto& node, const std::filesystem::path& base_dir = {},
    const std::function<Result<AttrValue>(const onnx::GraphProto&)>* load_graph = nullptr);

}  // namespace spindle::graph
