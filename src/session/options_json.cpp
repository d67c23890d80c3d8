// options_json.cpp — SessionOptions as a JSON options file (spindle tune
// --out, spindle run|bench --options). The "config" object goes through the
// config-key table (config_keys.cpp) like any other config entry.
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "session/config_keys.h"
#include "spindle/session.h"

namespace spindle {

SessionOptions SessionOptions::from_json(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(StatusCode::kInvalidArgument, fmt::format("{}: not valid JSON ({})", origin, e.what()));
  }
  if (!j.is_object()) throw Error(StatusCode::kInvalidArgument, fmt::format("{}: expected a JSON object", origin));
  SessionOptions o;
  auto bad = [&](const std::string& key, const std::string& expected) {
    return Error(StatusCode::kInvalidArgument,
                 fmt::format("{}: \"{}\" is {}, expected {}", origin, key, j[key].dump(), expected));
  };
  for (const auto& [key, v] : j.items()) {
    if (key == "intra_op_num_threads" || key == "inter_op_num_threads") {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 4096)
        throw bad(key, "an integer from 0 (default) to 4096");
      (key == "intra_op_num_threads" ? o.intra_op : o.inter_op).num_threads = v.get<int>();
    } else if (key == "execution_mode") {
      if (v == "sequential") o.execution_mode = ExecutionMode::kSequential;
      else if (v == "parallel") o.execution_mode = ExecutionMode::kParallel;
      else throw bad(key, "\"sequential\" or \"parallel\"");
    } else if (key == "graph_optimization_level") {
      if (v == "disable") o.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
      else if (v == "basic") o.graph_optimization_level = GraphOptimizationLevel::kBasic;
      else if (v == "extended") o.graph_optimization_level = GraphOptimizationLevel::kExtended;
      else if (v == "all") o.graph_optimization_level = GraphOptimizationLevel::kAll;
      else throw bad(key, "\"disable\", \"basic\", \"extended\" or \"all\"");
    } else if (key == "config") {
      if (!v.is_object()) throw bad(key, "an object of string values");
      for (const auto& [ck, cv] : v.items()) {
        if (!cv.is_string() && !cv.is_number())
          throw Error(StatusCode::kInvalidArgument,
                      fmt::format("{}: config \"{}\" is {}, expected a string", origin, ck, cv.dump()));
        if (Status st = parse_config_entry(o, ck, cv.is_string() ? cv.get<std::string>() : cv.dump()); !st.is_ok())
          throw Error(st.code(), fmt::format("{}: {}", origin, st.message()));
      }
    } else {
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("{}: unknown field \"{}\" (expected intra_op_num_threads, inter_op_num_threads, "
                              "execution_mode, graph_optimization_level, config)",
                              origin, key));
    }
  }
  return o;
}

SessionOptions SessionOptions::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(StatusCode::kNotFound, fmt::format("options file {} cannot be read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str(), path);
}

std::string SessionOptions::to_json() const {
  nlohmann::ordered_json j;
  j["intra_op_num_threads"] = intra_op.num_threads;
  j["inter_op_num_threads"] = inter_op.num_threads;
  j["execution_mode"] = execution_mode == ExecutionMode::kParallel ? "parallel" : "sequential";
  switch (graph_optimization_level) {
    case GraphOptimizationLevel::kDisableAll: j["graph_optimization_level"] = "disable"; break;
    case GraphOptimizationLevel::kBasic: j["graph_optimization_level"] = "basic"; break;
    case GraphOptimizationLevel::kExtended: j["graph_optimization_level"] = "extended"; break;
    case GraphOptimizationLevel::kAll: j["graph_optimization_level"] = "all"; break;
  }
  j["config"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : config_entries()) j["config"][k] = v;
  return j.dump(2) + "\n";
}

void SessionOptions::save(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw Error(StatusCode::kInvalidArgument, fmt::format("options file {} cannot be written", path));
  out << to_json();
  if (!out) throw Error(StatusCode::kRuntimeError, fmt::format("writing options file {} failed", path));
}

}  // namespace spindle
