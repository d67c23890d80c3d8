// run_model — load an ONNX model with spindle, set its threading options,
// run it once on generated inputs and print what came out.
//
//   run_model MODEL [NAME=DIMxDIMx... ...]
//
// Inputs are filled with a ramp (0, 0.01, 0.02, ...); a dynamic dimension
// without a NAME=... shape is 1. Only float32 and int64 inputs are generated.
#include <charconv>
#include <cstdio>
#include <cstdint>
#include <exception>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "spindle/environment.h"
#include "spindle/session.h"
#include "spindle/version.h"

namespace {

// "1x3x48x320" -> {1, 3, 48, 320}
spindle::Shape parse_dims(const std::string& text) {
  spindle::Shape dims;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x')) {
    int64_t d = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
    if (ec != std::errc() || end != part.data() + part.size() || d < 0)
      throw spindle::Error(spindle::StatusCode::kInvalidArgument,
                           "shape '" + text + "': expected dimensions like 1x3x48x320");
    dims.push_back(d);
  }
  return dims;
}

spindle::Tensor make_input(const spindle::TensorInfo& info, const std::map<std::string, spindle::Shape>& shapes) {
  spindle::Shape shape = info.shape;
  if (auto it = shapes.find(info.name); it != shapes.end()) shape = it->second;
  for (int64_t& d : shape) d = d < 0 ? 1 : d;
  spindle::Tensor t(info.dtype, shape);
  if (info.dtype == spindle::DataType::kFloat32) {
    float* p = t.mutable_data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(i % 100) * 0.01f;
  } else if (info.dtype != spindle::DataType::kInt64) {
    throw spindle::Error(spindle::StatusCode::kUnsupported,
                         "input '" + info.name + "' is " + spindle::dtype_name(info.dtype) +
                             "; this example generates float32 and int64 inputs only");
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [NAME=DIMxDIM...]\n", argv[0]);
    return 2;
  }
  std::printf("spindle %s (headers %s)\n", spindle::version(), SPINDLE_VERSION_STRING);
  try {
    std::map<std::string, spindle::Shape> shapes;
    for (int i = 2; i < argc; ++i) {
      std::string arg = argv[i];
      auto eq = arg.find('=');
      if (eq == std::string::npos)
        throw spindle::Error(spindle::StatusCode::kInvalidArgument, "expected NAME=DIMxDIM..., got '" + arg + "'");
      shapes[arg.substr(0, eq)] = parse_dims(arg.substr(eq + 1));
    }
    spindle::SessionOptions options;
    options.intra_op_num_threads = 2;  // counts the calling thread
    options.execution_mode = spindle::ExecutionMode::kSequential;
    options.add_config_entry(spindle::config_keys::kIntraOpAllowSpinning, "0");
    auto session = spindle::InferenceSession::create(argv[1], options);

    spindle::Feeds feeds;
    for (const auto& info : session->inputs()) feeds.emplace_back(info.name, make_input(info, shapes));
    std::vector<spindle::Tensor> outputs = session->run(feeds);
    for (size_t i = 0; i < outputs.size(); ++i)
      std::printf("output %s: %s\n", session->outputs()[i].name.c_str(), outputs[i].describe().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
