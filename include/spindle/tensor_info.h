// spindle/tensor_info.h — what a model's input or output is
// (InferenceSession::inputs() / outputs(), io::read_value_file).
#pragma once

#include <string>
#include <vector>

#include "spindle/tensor.h"

namespace spindle {

// A graph input or output: element type and shape (-1 = dynamic dimension,
// named in dim_names when the model names it). A sequence value (ONNX
// seq(tensor)) has is_sequence set, dtype its items' element type and no
// shape; it is fed and returned as a Tensor made by Tensor::sequence.
struct TensorInfo {
  std::string name;
  bool is_optional = false;  // fed and returned as Tensor::optional (empty or holding the value)
  bool is_sequence = false;
  DataType dtype = DataType::kUndefined;
  Shape shape;
  std::vector<std::string> dim_names;
  // Each dimension's denotation (TensorShapeProto's, e.g. "DATA_BATCH"); ""
  // when the model gives none.
  std::vector<std::string> dim_denotations;
};

}  // namespace spindle
