// model_writer.h — a Graph written back as an ONNX model file: the graph
// the optimizer produced (SessionOptions::optimized_model_filepath), which
// the loader reads back.
//
// Nodes keep their domain where ONNX (or ONNX Runtime's com.microsoft
// domain) has their form: a graph optimized at the basic level is a plain
// ONNX model. spindle's own operators keep the "spindle" domain (version
// 1); an ONNX operator the optimizer extended (a fused activation, an input
// folded in, a version other than the model's import) goes in
// kExtendedDomain (node_check.h), which the loader checks as it checks any
// node. Initializers are written as the graph holds them: the optimizer
// rewrites weights (folded BatchNormalization, the blocked layout's
// reordered filters) but never packs them; kernels pack at creation, after
// the graph is written. The passes that ran are listed in the metadata
// entry kAppliedPassesKey, so a session loading the file skips them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "spindle/status.h"

namespace spindle::graph {

// Metadata entry of an optimized model: the optimizer passes already
// applied, comma-separated.
inline constexpr const char* kAppliedPassesKey = "spindle.optimizer.applied_passes";

struct WriteOptions {
  // Non-empty: initializers of the main graph of at least external_min_bytes
  // bytes go into this file (a name, written beside the model) as ONNX
  // external data, in graph order.
  std::string external_file;
  int64_t external_min_bytes = 1024;
  std::vector<std::string> applied_passes;  // written as kAppliedPassesKey
};

// Writes g to `path`. Errors name the path (a directory that does not exist,
// no permission, a full disk) or what cannot be written (a constant
// sequence, a model over protobuf's 2 GiB without external data).
Status write_model(const Graph& g, const std::filesystem::path& path, const WriteOptions& options = {});

// The passes a loaded model says were applied (kAppliedPassesKey), removed
// from its metadata; names that are no pass are dropped.
std::vector<std::string> take_applied_passes(ModelMetadata& metadata);

}  // namespace spindle::graph
