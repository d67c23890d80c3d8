// tune_profile_test.cpp — spindle tune and spindle profile on generated
// models whose best settings are known, the options file, and the trace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "spindle/io.h"
#include "session/model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

namespace fs = std::filesystem;
using testing::ModelBuilder;
using ::testing::HasSubstr;

// `branches` independent chains of `depth` single-row Softmax ops over 32768
// values, summed. A single row runs inline (intra-op threads cannot help it),
// so only running the chains side by side (parallel mode) can. Each chain
// starts from x times its own scale: identical chains would be one chain
// after common subexpression elimination.
fs::path softmax_chains(const std::string& name, int branches, int depth) {
  ModelBuilder b;
  b.input("x", {1, 32768}).output("y", {1, 32768});
  std::vector<std::string> ends;
  for (int c = 0; c < branches; ++c) {
    std::string prev = "x";
    if (branches > 1) {
      b.initializer(fmt::format("s{}", c), {}, {1.0f + 0.25f * static_cast<float>(c)});
      b.node("Mul", {"x", fmt::format("s{}", c)}, {fmt::format("x{}", c)});
      prev = fmt::format("x{}", c);
    }
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

fs::path write_model(const std::string& file, const std::vector<uint8_t>& bytes) {
  const fs::path path = temp_dir() / file;
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
  return path;
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
  const fs::path model = write_model("tanh.onnx", tanh_chain());
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

// If(c): then Tanh -> Relu over 256K floats (several parallel_for blocks),
// else Neg.
std::vector<uint8_t> if_model() {
  ModelBuilder then_b, else_b, m;
  then_b.output("y_then", {1 << 18});
  then_b.node("Tanh", {"x"}, {"t"}, "tanh_in_then");
  then_b.node("Relu", {"t"}, {"y_then"}, "relu_in_then");
  else_b.output("y_else", {1 << 18});
  else_b.node("Neg", {"x"}, {"y_else"}, "neg_in_else");
  m.input("x", {1 << 18}).input("c", {}, onnx::TensorProto::BOOL).output("y", {1 << 18});
  auto& n = m.node("If", {"c"}, {"y"}, "the_if");
  ModelBuilder::attr_graph(n, "then_branch", then_b);
  ModelBuilder::attr_graph(n, "else_branch", else_b);
  return m.bytes();
}

// Loop(M, true, acc): the body's If(cond) adds x to acc (then) or
// subtracts it (else): an If nested in a Loop body.
std::vector<uint8_t> loop_if_model() {
  constexpr int kBool = onnx::TensorProto::BOOL, kInt64 = onnx::TensorProto::INT64;
  ModelBuilder body, then_b, else_b, m;
  then_b.output("s_then", {4});
  then_b.node("Add", {"acc", "x"}, {"s_then"}, "add_in_then");
  else_b.output("s_else", {4});
  else_b.node("Sub", {"acc", "x"}, {"s_else"}, "sub_in_else");
  body.input("i", {}, kInt64).input("cond_in", {}, kBool).input("acc", {4});
  body.output("cond_out", {}, kBool).output("acc_out", {4});
  auto& inner = body.node("If", {"cond_in"}, {"acc_out"}, "if_in_body");
  ModelBuilder::attr_graph(inner, "then_branch", then_b);
  ModelBuilder::attr_graph(inner, "else_branch", else_b);
  body.node("Identity", {"cond_in"}, {"cond_out"}, "cond_in_body");
  m.input("x", {4}).input("M", {}, kInt64).input("cond", {}, kBool).input("acc0", {4}).output("acc", {4});
  auto& loop = m.node("Loop", {"M", "cond", "acc0"}, {"acc"}, "the_loop");
  ModelBuilder::attr_graph(loop, "body", body);
  return m.bytes();
}

const NodeEvent& event_of(const RunProfile& p, int index) {
  auto it = std::find_if(p.nodes.begin(), p.nodes.end(), [&](const NodeEvent& e) { return e.node_index == index; });
  if (it == p.nodes.end()) throw std::runtime_error(fmt::format("no node event {}", index));
  return *it;
}

// Each event inside a subgraph lies within its parent's span, on its thread.
void expect_nested_in_parent(const RunProfile& p) {
  for (const NodeEvent& e : p.nodes) {
    if (e.parent_index < 0) continue;
    const NodeEvent& parent = event_of(p, e.parent_index);
    EXPECT_EQ(e.thread_id, parent.thread_id) << e.scope << "/" << e.op_type;
    EXPECT_GE(e.start_us, parent.start_us) << e.scope << "/" << e.op_type;
    EXPECT_LE(e.start_us + e.duration_us, parent.start_us + parent.duration_us) << e.scope << "/" << e.op_type;
  }
}

TEST(Profile, NodesInsideIfBranchesHaveEventsNestedInTheIfNode) {
  for (ExecutionMode mode : {ExecutionMode::kSequential, ExecutionMode::kParallel}) {
    SessionOptions o;
    o.intra_op_num_threads = 2;
    o.execution_mode = mode;
    auto s = InferenceSession::create_from_bytes(if_model(), o);
    Tensor x(DataType::kFloat32, {1 << 18});
    RunProfile p;
    s->run_profiled({{"x", x}, {"c", Tensor::scalar<bool>(true)}}, p);
    ASSERT_EQ(p.nodes.size(), 3u) << "the If and the two nodes of its then branch";
    const NodeEvent& if_node = *std::find_if(p.nodes.begin(), p.nodes.end(), [](auto& e) { return e.op_type == "If"; });
    EXPECT_EQ(if_node.parent_index, -1);
    EXPECT_EQ(if_node.scope, "");
    std::set<std::string> inside;
    std::set<int> ids;
    for (const NodeEvent& e : p.nodes) {
      ids.insert(e.node_index);
      if (&e == &if_node) continue;
      EXPECT_EQ(e.parent_index, if_node.node_index);
      EXPECT_EQ(e.scope, "If/then_branch");
      inside.insert(e.node_name);
    }
    EXPECT_EQ(ids.size(), 3u) << "node indexes must be distinct";
    EXPECT_EQ(inside, (std::set<std::string>{"tanh_in_then", "relu_in_then"}));
    expect_nested_in_parent(p);
    // The Tanh's parallel_for blocks belong to the Tanh inside the branch.
    const NodeEvent& tanh = *std::find_if(p.nodes.begin(), p.nodes.end(), [](auto& e) { return e.op_type == "Tanh"; });
    int tanh_blocks = 0;
    for (const BlockEvent& b : p.blocks) {
      EXPECT_NE(b.node_index, if_node.node_index) << "blocks belong to the nodes inside the branch";
      if (b.node_index != tanh.node_index) continue;
      ++tanh_blocks;
      EXPECT_GE(b.start_us, tanh.start_us - 1.0);
      EXPECT_LE(b.start_us + b.duration_us, tanh.start_us + tanh.duration_us + 1.0);
    }
    EXPECT_GE(tanh_blocks, 2);
    // The other branch when the condition is false.
    p = {};
    s->run_profiled({{"x", x}, {"c", Tensor::scalar<bool>(false)}}, p);
    ASSERT_EQ(p.nodes.size(), 2u);
    EXPECT_TRUE(std::any_of(p.nodes.begin(), p.nodes.end(), [](auto& e) {
      return e.scope == "If/else_branch" && e.node_name == "neg_in_else";
    }));
  }
}

TEST(Profile, NodesInsideLoopBodiesHaveOneEventPerIteration) {
  auto s = InferenceSession::create_from_bytes(loop_if_model(), {});
  const Tensor x = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  RunProfile p;
  const auto out = s->run_profiled({{"x", x}, {"M", Tensor::scalar<int64_t>(3)}, {"cond", Tensor::scalar<bool>(true)},
                                    {"acc0", Tensor::from_vector<float>({4}, {0, 0, 0, 0})}},
                                   p);
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{3, 6, 9, 12}));
  std::map<std::string, std::vector<const NodeEvent*>> by_path;
  for (const NodeEvent& e : p.nodes) by_path[e.scope.empty() ? e.op_type : e.scope + "/" + e.op_type].push_back(&e);
  ASSERT_EQ(by_path["Loop"].size(), 1u);
  ASSERT_EQ(by_path["Loop/body/If"].size(), 3u) << "one If event per iteration";
  ASSERT_EQ(by_path["Loop/body/If/then_branch/Add"].size(), 3u);
  EXPECT_EQ(by_path.count("Loop/body/If/else_branch/Sub"), 0u);
  std::set<int> ifs;
  for (const NodeEvent* e : by_path["Loop/body/If"]) {
    EXPECT_EQ(e->parent_index, by_path["Loop"][0]->node_index);
    ifs.insert(e->node_index);
  }
  EXPECT_EQ(ifs.size(), 3u) << "each iteration's If is an event of its own";
  std::set<int> parents_of_adds;
  for (const NodeEvent* e : by_path["Loop/body/If/then_branch/Add"]) parents_of_adds.insert(e->parent_index);
  EXPECT_EQ(parents_of_adds, ifs) << "each Add sits in its own iteration's If";
  expect_nested_in_parent(p);
}

TEST(Profile, CommandShowsRowsAndTraceSpansInsideSubgraphs) {
  const fs::path model = write_model("if_model.onnx", if_model());
  const fs::path cond = temp_dir() / "cond_true.npy";
  ASSERT_TRUE(io::write_npy(cond, Tensor::scalar<bool>(true)).is_ok());
  const fs::path trace = temp_dir() / "if_trace.json";
  std::string out;
  ASSERT_EQ(run_cli(fmt::format("profile {} --input c={} --runs 2 --trace {}", model.string(), cond.string(),
                                trace.string()),
                    &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("If/then_branch/Tanh"));
  EXPECT_THAT(out, HasSubstr("If/then_branch/Relu"));
  std::ifstream in(trace);
  const auto j = nlohmann::json::parse(in);
  std::map<std::pair<int64_t, int>, nlohmann::json> by_id;  // (run, id) -> event
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "node") by_id[{e["args"]["run"].get<int64_t>(), e["args"]["id"].get<int>()}] = e;
  int nested = 0;
  for (const auto& [key, e] : by_id) {
    if (!e["args"].contains("parent")) continue;
    ++nested;
    EXPECT_EQ(e["args"]["scope"], "If/then_branch");
    const auto& parent = by_id.at({key.first, e["args"]["parent"].get<int>()});
    EXPECT_EQ(parent["name"], "If");
    EXPECT_EQ(e["tid"], parent["tid"]);
    EXPECT_GE(e["ts"].get<double>(), parent["ts"].get<double>());
    EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(), parent["ts"].get<double>() + parent["dur"].get<double>());
  }
  EXPECT_EQ(nested, 4) << "Tanh and Relu in each of 2 runs";
}

}  // namespace
}  // namespace spindle
