// subgraph_bench.cpp — what running nodes inside a subgraph costs over
// running the same nodes at top level.
//
//   bench_subgraph [--nodes N] [--trips T] [--rounds R] [--runs K]
//
// Three models of the same N-node chain of element-wise ops on 8 floats
// (Sin and Cos alternating: no fusion touches them, each node's own work is
// a few ns, so what is measured is the per-node cost of dispatch):
//   top    the chain in the main graph;
//   if     the chain in an If's then_branch (the condition is true);
//   loop   the chain in a Loop body run T times (the carried value goes
//          through it), against top with N x T nodes ("top x T").
// One intra-op thread, sequential mode. Variants alternate round by round
// (A B C A B C ...), each round K runs; per variant the median over rounds
// of the caller thread's CPU time per run (CLOCK_THREAD_CPUTIME_ID: the
// whole run is on the caller, so other processes' load does not count) and
// of the wall time. Then "added per node" = (variant - top) / nodes run.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "session/model_builder.h"
#include "spindle/session.h"

namespace {

using spindle::InferenceSession;
using spindle::Tensor;
using spindle::testing::ModelBuilder;

constexpr int kBool = onnx::TensorProto::BOOL;
constexpr int kInt64 = onnx::TensorProto::INT64;

// nodes Sin / Cos alternating from `in` to `out` in `b`.
void chain(ModelBuilder& b, int nodes, const std::string& in, const std::string& out) {
  std::string prev = in;
  for (int k = 0; k < nodes; ++k) {
    const std::string next = k + 1 == nodes ? out : in + "_" + std::to_string(k);
    b.node(k % 2 ? "Cos" : "Sin", {prev}, {next});
    prev = next;
  }
}

std::vector<uint8_t> top_model(int nodes) {
  ModelBuilder m;
  m.input("x", {8}).output("y", {8});
  chain(m, nodes, "x", "y");
  return m.bytes();
}

std::vector<uint8_t> if_model(int nodes) {
  ModelBuilder then_b, else_b, m;
  then_b.output("y_then", {8});
  chain(then_b, nodes, "x", "y_then");
  else_b.output("y_else", {8});
  else_b.node("Identity", {"x"}, {"y_else"});
  m.input("x", {8}).input("c", {}, kBool).output("y", {8});
  auto& n = m.node("If", {"c"}, {"y"});
  ModelBuilder::attr_graph(n, "then_branch", then_b);
  ModelBuilder::attr_graph(n, "else_branch", else_b);
  return m.bytes();
}

std::vector<uint8_t> loop_model(int nodes) {
  ModelBuilder body, m;
  body.input("i", {}, kInt64).input("cond_in", {}, kBool).input("v", {8});
  body.output("cond_out", {}, kBool).output("v_out", {8});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  chain(body, nodes, "v", "v_out");
  m.input("x", {8}).input("M", {}, kInt64).input("c", {}, kBool).output("y", {8});
  auto& n = m.node("Loop", {"M", "c", "x"}, {"y"});
  ModelBuilder::attr_graph(n, "body", body);
  return m.bytes();
}

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Variant {
  std::string name;
  std::unique_ptr<InferenceSession> session;
  spindle::Feeds feeds;
  int nodes_run;  // chain nodes per run
  std::vector<double> cpu_us, wall_us;  // per run, one entry per round
};

int arg(int argc, char** argv, const char* name, int def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  const int nodes = arg(argc, argv, "--nodes", 64), trips = arg(argc, argv, "--trips", 16);
  const int rounds = arg(argc, argv, "--rounds", 15), runs = arg(argc, argv, "--runs", 200);
  if (nodes < 1 || trips < 1 || rounds < 1 || runs < 1) {
    std::fprintf(stderr, "bench_subgraph: --nodes, --trips, --rounds and --runs must be at least 1\n");
    return 2;
  }
  spindle::SessionOptions o;
  o.intra_op_num_threads = 1;
  const Tensor x = Tensor::from_vector<float>({8}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f});
  auto make = [&](const std::string& name, const std::vector<uint8_t>& bytes, spindle::Feeds feeds, int nodes_run) {
    Variant v{name, InferenceSession::create_from_bytes(bytes, o), std::move(feeds), nodes_run, {}, {}};
    return v;
  };
  std::vector<Variant> vs;
  vs.push_back(make("top", top_model(nodes), {{"x", x}}, nodes));
  vs.push_back(make("if", if_model(nodes), {{"x", x}, {"c", Tensor::scalar<bool>(true)}}, nodes));
  vs.push_back(make("top x T", top_model(nodes * trips), {{"x", x}}, nodes * trips));
  vs.push_back(make("loop", loop_model(nodes),
                    {{"x", x}, {"M", Tensor::scalar<int64_t>(trips)}, {"c", Tensor::scalar<bool>(true)}}, nodes * trips));
  // Same results at top level and in the subgraphs: the same nodes ran.
  const auto top = vs[0].session->run(vs[0].feeds)[0].to_vector<float>();
  const auto top_t = vs[2].session->run(vs[2].feeds)[0].to_vector<float>();
  if (vs[1].session->run(vs[1].feeds)[0].to_vector<float>() != top ||
      vs[3].session->run(vs[3].feeds)[0].to_vector<float>() != top_t) {
    std::fprintf(stderr, "bench_subgraph: the subgraph models computed something else than the top-level chains\n");
    return 1;
  }
  for (int r = 0; r < rounds; ++r)
    for (Variant& v : vs) {
      for (int w = 0; w < 5; ++w) v.session->run(v.feeds);
      const double c0 = thread_cpu_us();
      const auto w0 = std::chrono::steady_clock::now();
      for (int k = 0; k < runs; ++k) v.session->run(v.feeds);
      const double wall = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - w0).count();
      v.cpu_us.push_back((thread_cpu_us() - c0) / runs);
      v.wall_us.push_back(wall / runs);
    }
  std::printf("bench_subgraph: %d-node chain (Sin/Cos on 8 floats), Loop of %d trips, intra 1, %d rounds x %d runs\n",
              nodes, trips, rounds, runs);
  std::printf("%-10s %10s %12s %12s %14s\n", "variant", "nodes/run", "cpu us/run", "wall us/run", "cpu ns/node");
  for (const Variant& v : vs)
    std::printf("%-10s %10d %12.2f %12.2f %14.1f\n", v.name.c_str(), v.nodes_run, median(v.cpu_us), median(v.wall_us),
                1e3 * median(v.cpu_us) / v.nodes_run);
  auto added = [&](const Variant& sub, const Variant& ref) {
    return 1e3 * (median(sub.cpu_us) - median(ref.cpu_us)) / sub.nodes_run;
  };
  std::printf("added per node inside If:   %.1f ns (cpu, vs top)\n", added(vs[1], vs[0]));
  std::printf("added per node inside Loop: %.1f ns (cpu, vs top x T; includes the per-iteration cost spread over %d nodes)\n",
              added(vs[3], vs[2]), nodes);
  return 0;
}
