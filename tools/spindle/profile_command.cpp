// profile_command.cpp — spindle profile: where the threads went.
//
//   spindle profile MODEL [--input NAME=FILE]... [--shape NAME=DIMS]... [--runs N]
//                   [--warmup N] --trace FILE.json [threading flags]
//
// Runs the model --runs times with profiling and writes a Chrome trace event
// file (chrome://tracing, Perfetto): one track per thread, each node's span on
// the thread that ran it, each parallel_for block of its kernel on the thread
// that ran the block, and the waits of the node's thread between its own
// blocks. Nodes inside If / Loop / Scan subgraphs appear nested in their
// parent node's span. Then prints per-operator totals: time, share of the run
// and parallel efficiency (block time summed over threads / (intra threads x
// node time)); operators inside subgraphs have rows of their own marked with
// their path ("If/then_branch/Conv"), whose time is also in the parent's row.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "commands.h"
#include "model_common.h"

namespace spindle::cli {
namespace {

struct ProfileArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  int runs = 3;
  int warmup = 1;
  std::string trace;
  ThreadingFlags threading;
};

struct OpTotals {
  int nodes = 0;
  double node_us = 0;  // wall time inside the op's nodes
  double busy_us = 0;  // block time over all threads (node time when it ran no blocks)
};

void profile_command(const ProfileArgs& a) {
  if (a.runs < 1) throw Error(StatusCode::kInvalidArgument, fmt::format("--runs {}: expected at least 1", a.runs));
  if (a.warmup < 0) throw Error(StatusCode::kInvalidArgument, fmt::format("--warmup {}: expected 0 or more", a.warmup));
  // Fail on an unwritable trace path before any long work.
  std::ofstream out(a.trace);
  if (!out) throw Error(StatusCode::kInvalidArgument, fmt::format("--trace {}: cannot be written", a.trace));

  auto session = InferenceSession::create(a.model, session_options(a.threading));
  Feeds feeds = read_inputs(a.inputs);
  fill_random_inputs(*session, feeds, a.shapes);
  for (int i = 0; i < a.warmup; ++i) session->run(feeds);

  std::vector<ProfiledRun> runs;
  std::set<int> tids;
  std::map<std::string, OpTotals> totals;
  double total_node_us = 0;
  const int dop = session->intra_op_pool() ? session->intra_op_pool()->dop() : 1;
  const auto first = std::chrono::steady_clock::now();
  for (int r = 0; r < a.runs; ++r) {
    ProfiledRun run;
    run.offset_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - first).count();
    session->run_profiled(feeds, run.profile);
    std::map<int, double> block_us;
    for (const auto& b : run.profile.blocks) {
      block_us[b.node_index] += b.duration_us;
      tids.insert(b.thread_id);
    }
    for (const auto& n : run.profile.nodes) {
      tids.insert(n.thread_id);
      OpTotals& t = totals[n.scope.empty() ? n.op_type : n.scope + "/" + n.op_type];
      ++t.nodes;
      t.node_us += n.duration_us;
      if (n.parent_index < 0) total_node_us += n.duration_us;  // nested time is inside its parent's
      // A node that ran no parallel_for block kept its one thread busy.
      const auto it = block_us.find(n.node_index);
      t.busy_us += it == block_us.end() ? n.duration_us : it->second;
    }
    runs.push_back(std::move(run));
  }
  const std::string trace = session->chrome_trace(runs, "spindle " + a.model);
  out << trace;
  if (!out) throw Error(StatusCode::kRuntimeError, fmt::format("--trace {}: writing failed", a.trace));
  out.close();

  fmt::print("model      {}\n", a.model);
  fmt::print("threads    intra {} · {}\n", dop, session->optimization_summary());
  fmt::print("trace      {} ({} threads, {} runs)\n\n", a.trace, tids.size(), a.runs);
  std::vector<std::pair<std::string, OpTotals>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.second.node_us > y.second.node_us; });
  size_t width = 28;
  for (const auto& [op, t] : rows) width = std::max(width, op.size());
  fmt::print("{:<{}} {:>6} {:>11} {:>7} {:>11}\n", "operator", width, "nodes", "ms per run", "share", "parallel eff.");
  for (const auto& [op, t] : rows)
    fmt::print("{:<{}} {:>6.4g} {:>11.3f} {:>6.1f}% {:>10.0f}%\n", op, width, static_cast<double>(t.nodes) / a.runs, t.node_us / 1e3 / a.runs,
               total_node_us > 0 ? 100.0 * t.node_us / total_node_us : 0.0,
               t.node_us > 0 ? 100.0 * t.busy_us / (dop * t.node_us) : 0.0);
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand("profile", "Trace a model's nodes and parallel_for blocks per thread (Chrome trace)");
  cmd->add_option("model", args->model, "ONNX model file")->required();
  cmd->add_option("--input", args->inputs, "NAME=FILE (.npy or .pb), repeatable; other inputs are random");
  cmd->add_option("--shape", args->shapes, "NAME=1x3x224x224 for random inputs with dynamic dimensions");
  cmd->add_option("--runs", args->runs, "profiled runs");
  cmd->add_option("--warmup", args->warmup, "unprofiled runs first");
  cmd->add_option("--trace", args->trace, "Chrome trace event file to write (chrome://tracing, Perfetto)")->required();
  add_threading_flags(cmd, args->threading);
  cmd->callback([args] { profile_command(*args); });
}

}  // namespace spindle::cli
