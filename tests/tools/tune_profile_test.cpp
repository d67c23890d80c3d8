// tune_profile_test.cpp — spindle tune and spindle profile on generated
// models whose best settings are known, the options file, and the trace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "session/model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

namespace fs = std::filesystem;
using testing::ModelBuilder;
using ::testing::HasSubstr;

// `branches` independent chains of `depth` single-row Softmax ops over 32768
// values, summed. A single row runs inline (intra-op threads cannot help it),
// so only running the chains side by side (parallel mode) can.
fs::path softmax_chains(const std::string& name, int branches, int depth) {
  ModelBuilder b;
  b.input("x", {1, 32768}).output("y", {1, 32768});
  std::vector<std::string> ends;
  for (int c = 0; c < branches; ++c) {
    std::string prev = "x";
    for (int k = 0; k < depth; ++k) {
      const std::string out = fmt::format("b{}_{}", c, k);
      b.node("Softmax", {prev}, {out});
      prev = out;
    }
    ends.push_back(prev);
  }
  if (branches == 1) b.node("Identity", ends, {"y"});
  else b.node("Sum", ends, {"y"});
  const fs::path path = temp_dir() / (name + ".onnx");
  const auto bytes = b.bytes();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
  return path;
}

// CPUs of the machine left idle over 300 ms (from /proc/stat).
double idle_cpus() {
  auto sample = [] {
    std::ifstream in("/proc/stat");
    std::string cpu;
    double v, total = 0, idle = 0;
    in >> cpu;
    for (int i = 0; i < 8 && in >> v; ++i) {
      total += v;
      if (i == 3 || i == 4) idle += v;  // idle, iowait
    }
    return std::pair{total, idle};
  };
  const auto [t0, i0] = sample();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto [t1, i1] = sample();
  return t1 > t0 ? static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN)) * (i1 - i0) / (t1 - t0) : 0.0;
}

TEST(Tune, ParallelModeWinsOnIndependentBranches) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 2) GTEST_SKIP() << "needs 2 CPUs";
  // Running branches side by side only pays when a second CPU is free.
  if (const double idle = idle_cpus(); idle < 1.5)
    GTEST_SKIP() << "the machine is busy (" << idle << " of " << cpus << " CPUs idle): no free CPU for a second branch";
  const fs::path model = softmax_chains("wide", 4, 20);
  const fs::path opts = temp_dir() / "wide.json";
  std::string out;
  ASSERT_EQ(run_cli(fmt::format("tune {} --budget-s 30 --out {}", model.string(), opts.string()), &out), 0) << out;
  const SessionOptions o = SessionOptions::from_file(opts.string());
  EXPECT_EQ(o.execution_mode, ExecutionMode::kParallel) << out;
  EXPECT_THAT(out, HasSubstr("WINNER"));
}

TEST(Tune, SequentialModeOnASerialChain) {
  const fs::path model = softmax_chains("chain", 1, 60);
  const fs::path opts = temp_dir() / "chain.json";
  const fs::path plot = temp_dir() / "chain.svg";
  std::string out;
  ASSERT_EQ(run_cli(fmt::format("tune {} --budget-s 30 --out {} --plot {}", model.string(), opts.string(), plot.string()),
                    &out),
            0)
      << out;
  const SessionOptions o = SessionOptions::from_file(opts.string());
  EXPECT_EQ(o.execution_mode, ExecutionMode::kSequential) << out;
  std::ifstream svg(plot);
  const std::string text((std::istreambuf_iterator<char>(svg)), {});
  EXPECT_THAT(text, HasSubstr("<svg"));
  EXPECT_THAT(text, HasSubstr("<polyline"));
}

TEST(Tune, BadArgumentsFailBeforeAnyWork) {
  const fs::path model = softmax_chains("small", 1, 2);
  std::string out;
  EXPECT_NE(run_cli(fmt::format("tune {} --budget-s 0.1", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("too small to measure anything"));
  EXPECT_NE(run_cli(fmt::format("tune {} --out /nonexistent-dir/x.json", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("--out /nonexistent-dir/x.json: cannot be written"));
  EXPECT_NE(run_cli("tune /nonexistent/model.onnx", &out), 0);
  EXPECT_THAT(out, HasSubstr("/nonexistent/model.onnx"));
  EXPECT_NE(run_cli(fmt::format("profile {} --trace /nonexistent-dir/t.json", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("cannot be written"));
}

TEST(OptionsFile, RoundTripsAndNamesBadFields) {
  SessionOptions o;
  o.intra_op_num_threads = 3;
  o.inter_op_num_threads = 2;
  o.execution_mode = ExecutionMode::kParallel;
  o.graph_optimization_level = GraphOptimizationLevel::kBasic;
  o.add_config_entry("session.intra_op.allow_spinning", "0");
  const fs::path path = temp_dir() / "opts.json";
  o.save(path.string());
  const SessionOptions r = SessionOptions::from_file(path.string());
  EXPECT_EQ(r.intra_op_num_threads, 3);
  EXPECT_EQ(r.inter_op_num_threads, 2);
  EXPECT_EQ(r.execution_mode, ExecutionMode::kParallel);
  EXPECT_EQ(r.graph_optimization_level, GraphOptimizationLevel::kBasic);
  EXPECT_EQ(r.config_entries(), o.config_entries());
  EXPECT_FALSE(r.intra_op.allow_spinning);
  EXPECT_EQ(r.to_json(), o.to_json());
  auto error_of = [](const std::string& json) {
    try {
      SessionOptions::from_json(json, "t.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_THAT(error_of("{\"intra_op_num_threads\": -1}"), HasSubstr("\"intra_op_num_threads\" is -1, expected an integer"));
  EXPECT_THAT(error_of("{\"execution_mode\": \"fast\"}"), HasSubstr("expected \"sequential\" or \"parallel\""));
  EXPECT_THAT(error_of("{\"intra\": 2}"), HasSubstr("unknown field \"intra\""));
  EXPECT_THAT(error_of("{\"config\": {\"session.intra_op.allow_spining\": \"0\"}}"),
              HasSubstr("did you mean 'session.intra_op.allow_spinning'"));
  EXPECT_THAT(error_of("not json"), HasSubstr("t.json: not valid JSON"));
}

// Tanh over 256K floats: its parallel_for has several blocks.
std::vector<uint8_t> tanh_chain() {
  ModelBuilder b;
  b.input("x", {1 << 18}).output("y", {1 << 18});
  b.node("Tanh", {"x"}, {"t0"});
  b.node("Tanh", {"t0"}, {"t1"});
  b.node("Tanh", {"t1"}, {"y"});
  return b.bytes();
}

TEST(Profile, BlocksRunOnThePoolsThreadsInsideTheirNodes) {
  SessionOptions o;
  o.intra_op_num_threads = 2;
  auto s = InferenceSession::create_from_bytes(tanh_chain(), o);
  Tensor x(DataType::kFloat32, {1 << 18});
  RunProfile p;
  s->run_profiled({{"x", x}}, p);
  ASSERT_EQ(p.nodes.size(), 3u);
  ASSERT_GE(p.blocks.size(), 6u) << "each Tanh should run as several parallel_for blocks";
  std::set<int> allowed = {static_cast<int>(syscall(SYS_gettid))};
  for (int t : s->intra_op_pool()->worker_tids()) allowed.insert(t);
  for (const BlockEvent& b : p.blocks) {
    EXPECT_TRUE(allowed.count(b.thread_id)) << "block on thread " << b.thread_id << ", not a pool thread";
    const NodeEvent& n = *std::find_if(p.nodes.begin(), p.nodes.end(),
                                       [&](const NodeEvent& e) { return e.node_index == b.node_index; });
    EXPECT_GE(b.start_us, n.start_us - 1.0);
    EXPECT_LE(b.start_us + b.duration_us, n.start_us + n.duration_us + 1.0) << "a block outlives its node";
  }
}

TEST(Profile, TraceIsChromeTraceJsonWithNestedSpans) {
  const fs::path model = temp_dir() / "tanh.onnx";
  const auto bytes = tanh_chain();
  std::ofstream(model, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                               static_cast<std::streamsize>(bytes.size()));
  const fs::path trace = temp_dir() / "trace.json";
  std::string out;
  ASSERT_EQ(run_cli(fmt::format("profile {} --intra 2 --runs 2 --trace {}", model.string(), trace.string()), &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("parallel eff."));
  std::ifstream in(trace);
  const auto j = nlohmann::json::parse(in);
  int nodes = 0, blocks = 0;
  std::set<int> named;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") named.insert(e["tid"].get<int>());
    if (e["ph"] != "X") continue;
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    if (e["cat"] == "node") ++nodes;
    if (e["cat"] == "parallel_for") ++blocks;
  }
  EXPECT_EQ(nodes, 6);  // 3 nodes x 2 runs
  EXPECT_GE(blocks, 12);
  // Every thread with events has a name (caller / intra-op worker).
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      EXPECT_TRUE(named.count(e["tid"].get<int>())) << e.dump();
    }
  }
}

TEST(Profile, EnableProfilingWritesTheRunsOnEndProfiling) {
  SessionOptions o;
  o.intra_op_num_threads = 2;
  o.enable_profiling = true;
  o.profile_file_prefix = (temp_dir() / "session").string();
  auto s = InferenceSession::create_from_bytes(tanh_chain(), o);
  Tensor x(DataType::kFloat32, {1 << 18});
  s->run({{"x", x}});
  s->run({{"x", x}});
  const std::string path = s->end_profiling();
  EXPECT_THAT(path, ::testing::StartsWith(o.profile_file_prefix + "_"));
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  int nodes = 0;
  for (const auto& e : j["traceEvents"]) nodes += e["ph"] == "X" && e["cat"] == "node";
  EXPECT_EQ(nodes, 6);
  SessionOptions plain;
  auto p = InferenceSession::create_from_bytes(tanh_chain(), plain);
  EXPECT_THROW(p->end_profiling(), Error);
}

}  // namespace
}  // namespace spindle
