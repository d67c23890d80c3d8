// onnx_convert.cpp — see onnx_convert.h.
#include "graph/onnx_convert.h"

#include <fmt/format.h>

#include "io/tensor_proto.h"

namespace spindle::graph {

using io::dtype_from_onnx;
using io::tensor_from_proto;

Result<Attributes> attributes_from_proto(
    const onnx::NodeProto& node, const std::filesystem::path& base_dir,
    const std::function<Result<AttrValue>(const onnx::GraphProto&)>* load_graph) {
  Attributes attrs;
  for (const onnx::AttributeProto& a : node.attribute()) {
    switch (a.type()) {
      case onnx::AttributeProto::INT: attrs.set(a.name(), static_cast<int64_t>(a.i())); break;
      case onnx::AttributeProto::FLOAT: attrs.set(a.name(), a.f()); break;
      case onnx::AttributeProto::STRING: attrs.set(a.name(), a.s()); break;
      case onnx::AttributeProto::INTS: attrs.set(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end())); break;
      case onnx::AttributeProto::FLOATS: attrs.set(a.name(), std::vector<float>(a.floats().begin(), a.floats().end())); break;
      case onnx::AttributeProto::STRINGS: attrs.set(a.name(), std::vector<std::string>(a.strings().begin(), a.strings().end())); break;
      case onnx::AttributeProto::TENSOR: {
        SPINDLE_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(a.t(), base_dir));
        attrs.set(a.name(), std::move(t));
        break;
      }
      case onnx::AttributeProto::TYPE_PROTO: {
        const onnx::TypeProto* tp = &a.tp();
        TypeAttr t;
        if (tp->has_sequence_type()) {
          t.sequence = true;
          tp = &tp->sequence_type().elem_type();
        }
        if (!tp->has_tensor_type())
          return unsupported(fmt::format("{} '{}': attribute '{}' names a type other than a tensor or a sequence of "
                                         "tensors",
                                         node.op_type(), node.name(), a.name()));
        SPINDLE_ASSIGN_OR_RETURN(t.dtype, dtype_from_onnx(tp->tensor_type().elem_type()));
        attrs.set(a.name(), t);
        break;
      }
      case onnx::AttributeProto::GRAPH:
        if (load_graph) {
          SPINDLE_ASSIGN_OR_RETURN(AttrValue v, (*load_graph)(a.g()));
          attrs.set(a.name(), std::move(v));
          break;
        }
        [[fallthrough]];
      default:
        return unsupported(fmt::format("{} '{}': attribute '{}' has type {}, which spindle does not support", node.op_type(),
                                       node.name(), a.name(), onnx::AttributeProto_AttributeType_Name(a.type())));
    }
  }
  return attrs;
}

}  // namespace spindle::graph
