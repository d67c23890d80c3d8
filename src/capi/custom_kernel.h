// custom_kernel.h — the handles a custom operator's kernel is given by
// ONNX Runtime's C API over spindle (api_custom_ops.cpp builds them;
// api_op.cpp runs built-in operators from inside a kernel with them).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "capi/capi_internal.h"
#include "common/log.h"
#include "spindle/custom_op.h"

// The log of a session as its custom kernels see it: spindle's log at the
// session's severity (-1: the process default) with its log id.
struct OrtLogger {
  spindle::logging::Logger logger;
  int severity = -1;
};

// What a custom kernel is told about its node.
struct OrtKernelInfo {
  spindle::CustomKernelInfo info;
  std::shared_ptr<const OrtLogger> logger;
  // Input i as a value when it is constant (KernelInfoGetConstantInput_tensor);
  // the kernel keeps them, so a kernel may hold the pointers it was given.
  std::shared_ptr<const std::vector<OrtValue>> constants;
};

// One compute of a custom kernel: the node's inputs as values, its outputs
// once the kernel asked for them by shape.
struct OrtKernelContext {
  spindle::CustomKernelContext* ctx;
  const std::vector<spindle::DataType>* output_types;
  const OrtLogger* logger;
  std::vector<std::unique_ptr<OrtValue>> inputs, outputs;
};

// A node attribute read through ReadOpAttr.
struct OrtOpAttr {
  std::string name;
  spindle::CustomAttribute value;
};

// One call of an op's InferOutputShapeFn: the node's inputs' types (shapes
// unknown: spindle infers element types only), its attributes, and the
// output types the function sets.
struct OrtShapeInferContext {
  const spindle::CustomKernelInfo* node;
  std::vector<std::unique_ptr<OrtTensorTypeAndShapeInfo>> inputs;
  mutable std::map<std::string, OrtOpAttr> attrs;  // made as they are asked for
  mutable std::vector<spindle::DataType> outputs;
};
