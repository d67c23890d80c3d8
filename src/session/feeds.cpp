// feeds.cpp — checks a run's feeds against the model's inputs (see feeds.h).
#include "session/feeds.h"

#include <set>

#include <fmt/format.h>

namespace spindle {

namespace {

std::string dims_to_string(const TensorInfo& info) {
  std::vector<std::string> dims;
  for (size_t i = 0; i < info.shape.size(); ++i)
    dims.push_back(info.shape[i] >= 0 ? std::to_string(info.shape[i])
                                      : (info.dim_names[i].empty() ? std::string("?") : info.dim_names[i]));
  return "[" + fmt::format("{}", fmt::join(dims, ",")) + "]";
}

}  // namespace

void validate_feeds(const Feeds& feeds, const std::vector<TensorInfo>& inputs,
                    const std::map<std::string, int>& input_index, const std::string& origin) {
  std::set<std::string> given;
  for (const auto& [name, tensor] : feeds) {
    auto it = input_index.find(name);
    if (it == input_index.end()) {
      std::vector<std::string> names;
      for (const auto& in : inputs) names.push_back(in.name);
      throw Error(StatusCode::kNotFound, fmt::format("{}: unknown input name '{}'; the model's inputs are: {}", origin, name,
                                                     fmt::join(names, ", ")));
    }
    if (!given.insert(name).second)
      throw Error(StatusCode::kInvalidArgument, fmt::format("{}: input '{}' is fed twice", origin, name));
    const TensorInfo& info = inputs[static_cast<size_t>(it->second)];
    if (!tensor.defined())
      throw Error(StatusCode::kInvalidArgument, fmt::format("{}: input '{}' is an empty tensor", origin, name));
    if (tensor.is_optional() || info.is_optional) {
      // Optional values: the kind and element type must match (Tensor::optional
      // checked what it holds against them).
      if (!tensor.is_optional() || tensor.optional_of_sequence() != info.is_sequence ||
          (info.dtype != DataType::kUndefined && tensor.dtype() != info.dtype))
        throw Error(StatusCode::kInvalidArgument,
                    fmt::format("{}: input '{}' is the {}, expected {}", origin, name, tensor.describe(),
                                info.is_optional ? fmt::format("an optional {} of {}", info.is_sequence ? "sequence" : "tensor",
                                                               dtype_name(info.dtype))
                                                 : "a tensor or sequence, not an optional"));
      continue;
    }
    if (tensor.is_sequence() != info.is_sequence)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("{}: input '{}' is a {}, expected {}", origin, name, tensor.describe(),
                              info.is_sequence ? "a sequence of " + dtype_name(info.dtype) + " tensors"
                                               : "a tensor of " + dtype_name(info.dtype)));
    if (info.is_sequence) {
      if (info.dtype != DataType::kUndefined && tensor.dtype() != info.dtype)
        throw Error(StatusCode::kInvalidArgument, fmt::format("{}: input '{}' is a {}, expected {} tensors", origin,
                                                              name, tensor.describe(), dtype_name(info.dtype)));
      continue;
    }
    if (info.dtype != DataType::kUndefined && tensor.dtype() != info.dtype)
      throw Error(StatusCode::kInvalidArgument, fmt::format("{}: input '{}' is {}, expected element type {} with shape {}",
                                                            origin, name, tensor.describe(), dtype_name(info.dtype),
                                                            dims_to_string(info)));
    if (!info.shape.empty() || tensor.rank() == 0) {
      bool ok = tensor.rank() == static_cast<int64_t>(info.shape.size());
      for (size_t d = 0; ok && d < info.shape.size(); ++d)
        ok = info.shape[d] < 0 || info.shape[d] == tensor.shape()[d];
      if (!ok)
        throw Error(StatusCode::kInvalidArgument, fmt::format("{}: input '{}' has shape {}, expected {} (rank {})", origin,
                                                              name, shape_to_string(tensor.shape()), dims_to_string(info),
                                                              info.shape.size()));
    }
  }
  std::vector<std::string> missing;
  for (const auto& in : inputs)
    if (!given.count(in.name)) missing.push_back(in.name);
  if (!missing.empty())
    throw Error(StatusCode::kInvalidArgument, fmt::format("{}: missing input(s): {}", origin, fmt::join(missing, ", ")));
}

}  // namespace spindle
