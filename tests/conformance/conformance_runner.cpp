// conformance_runner.cpp — the ONNX backend test suite (Debian
// libonnx-testdata: node/, simple/, pytorch-operator/, pytorch-converted/)
// through the whole runtime: loader, checker, optimizer, executor, kernels.
//
// Each test runs in its own child process (fork), both execution modes, and
// ends as one of:
//   passed       every output of every test_data_set matches (rtol 1e-3,
//                atol 1e-7, 1e-5 for opsets/, NaN == NaN, exact for integers and bool, same
//                shape and dtype); outputs that are random draws (Bernoulli,
//                training Dropout) are checked for shape, dtype and values the
//                operator can produce (check_random_output);
//   failed       a mismatch, an error other than "unsupported", a crash (the
//                signal is named), a sanitizer report (its SUMMARY line is
//                the reason; leaks are checked when the child ends) or a
//                timeout;
//   unsupported  spindle refused the model with StatusCode::kUnsupported, at
//                load (the rule) or, counted separately, at run time;
//   known        listed in known_failures.txt with a reason.
// The report gives counts per suite directory, a per-operator table, the
// failures with their reasons (and what their process wrote to stderr), the
// known failures, and ends with the line "N passed, M failed".
// The exit status is non-zero when anything failed.
//
//   conformance_runner [--filter SUBSTRING] [--jobs N] [--timeout-s S]
//                      [--write-docs FILE] [--data DIR]... [--list]
//
// --list prints every test's outcome and reason (e.g. why it is unsupported).
//
// --data DIR/ with an opsets/ folder runs the cases tests/opsets/gen_cases.py
// wrote, with ONNX Runtime's outputs as the expected ones (tests/opsets/run.sh).
//
// --write-docs writes docs/operators.md: every operator of spindle's kernel
// registry with its opset range, the input dtypes of the passing tests that
// use it, and its test counts.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "../kernels/onnx_node_runner.h"
#include "io/tensor_proto.h"
#include "kernels/kernel.h"
#include "spindle/session.h"

namespace spindle {
namespace {

namespace fs = std::filesystem;

enum class Outcome { kPassed, kFailed, kUnsupportedAtLoad, kUnsupportedAtRun, kKnown };

struct TestCase {
  std::string name;  // "node/test_abs"
  fs::path dir;
  std::vector<std::string> ops;     // distinct op types of the model's graph
  std::vector<std::string> dtypes;  // element types of its graph inputs
  Outcome outcome = Outcome::kFailed;
  std::string reason;
  std::string stderr_text;  // what a failed test's process wrote to stderr
};

struct Options {
  // Data directories (--data, repeatable): the backend suite by default.
  std::vector<fs::path> data = {"/usr/share/libonnx-testdata/data"};
  bool data_given = false;
  std::string filter;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int timeout_s = 120;
  fs::path write_docs;
  bool list = false;
};

std::map<std::string, std::string> known_failures() {
  std::map<std::string, std::string> out;
  std::ifstream in(fs::path(SPINDLE_TESTS_DIR) / "conformance" / "known_failures.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto hash = line.find('#');
    std::string name = line.substr(0, line.find_first_of(" \t#"));
    if (name.empty()) continue;
    const size_t from = hash == std::string::npos ? line.size() : line.find_first_not_of(" \t", hash + 1);
    out[name] = from == std::string::npos ? "" : line.substr(from);
  }
  return out;
}

bool read_model(const fs::path& path, onnx::ModelProto& model) {
  std::ifstream in(path, std::ios::binary);
  return in && model.ParseFromIstream(&in);
}

std::vector<TestCase> discover(const Options& opt) {
  std::vector<TestCase> tests;
  for (const char* suite : {"node", "simple", "pytorch-operator", "pytorch-converted", "opsets"}) {
    for (const fs::path& root : opt.data) {
      if (!fs::exists(root / suite)) continue;
      for (const auto& e : fs::directory_iterator(root / suite)) {
        if (!fs::exists(e.path() / "model.onnx")) continue;
        TestCase t;
        t.name = std::string(suite) + "/" + e.path().filename().string();
        if (!opt.filter.empty() && t.name.find(opt.filter) == std::string::npos) continue;
        t.dir = e.path();
        onnx::ModelProto model;
        if (read_model(t.dir / "model.onnx", model)) {
          std::set<std::string> ops, dtypes;
          for (const auto& n : model.graph().node())
            ops.insert(n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "." + n.op_type());
          for (const auto& in : model.graph().input())
            if (in.type().has_tensor_type())
              dtypes.insert(onnx::TensorProto_DataType_Name(in.type().tensor_type().elem_type()));
          t.ops.assign(ops.begin(), ops.end());
          t.dtypes.assign(dtypes.begin(), dtypes.end());
        }
        tests.push_back(std::move(t));
      }
    }
  }
  std::sort(tests.begin(), tests.end(), [](const TestCase& a, const TestCase& b) { return a.name < b.name; });
  return tests;
}

// Outputs that are random draws: a graph with Bernoulli or a random
// generator, or a Dropout given training_mode. The backend suite's expected
// values of these are numpy's draws, which no other generator reproduces, so
// the output's dtype and shape are compared and each value must be one the
// graph can produce: 0 or 1 where the expected draws are 0 / 1 (Bernoulli and
// its expansion), and for
// Dropout 0 or x / (1 - ratio), with the mask true exactly where x was kept.
bool random_graph(const onnx::ModelProto& model) {
  for (const auto& n : model.graph().node()) {
    const std::string& op = n.op_type();
    if (op == "Bernoulli" || op == "RandomUniformLike" || op == "RandomNormalLike" || op == "RandomUniform" ||
        op == "RandomNormal" || op == "Multinomial" || (op == "Dropout" && n.input_size() >= 3))
      return true;
  }
  return false;
}

// Checks output o of a random graph: an empty string, or why it fails.
std::string check_random_output(const onnx::ModelProto& model, const Feeds& feeds, const std::vector<Tensor>& outputs,
                                int o, const Tensor& want) {
  const Tensor& got = outputs[static_cast<size_t>(o)];
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return fmt::format("got {}, expected {}", got.describe(), want.describe());
  auto value = [](const Tensor& t, int64_t i) {
    return t.dtype() == DataType::kFloat64 ? t.data<double>()[i]
           : t.dtype() == DataType::kBool  ? static_cast<double>(t.data<bool>()[i])
                                           : static_cast<double>(t.data<float>()[i]);
  };
  // Class indices (Multinomial): shape and dtype only.
  if (got.dtype() != DataType::kFloat32 && got.dtype() != DataType::kFloat64 && got.dtype() != DataType::kBool)
    return "";
  const onnx::NodeProto* dropout = nullptr;
  for (const auto& n : model.graph().node())
    if (n.op_type() == "Dropout") dropout = &n;
  if (!dropout) {
    // Draws of 0 / 1 (Bernoulli) stay 0 / 1; other draws are compared by
    // shape and dtype only.
    for (int64_t i = 0; i < want.numel(); ++i)
      if (value(want, i) != 0.0 && value(want, i) != 1.0) return "";
    for (int64_t i = 0; i < got.numel(); ++i)
      if (value(got, i) != 0.0 && value(got, i) != 1.0)
        return fmt::format("element {} is {}, expected 0 or 1", i, value(got, i));
    return "";
  }
  auto feed = [&](const std::string& name) -> const Tensor* {
    for (const auto& [n, v] : feeds)
      if (n == name) return &v;
    return nullptr;
  };
  const Tensor* x = feed(dropout->input(0));
  const Tensor* r = feed(dropout->input(1));
  if (!x || !r || outputs.empty()) return "the Dropout's data and ratio are not graph inputs";
  const double scale = 1.0 / (1.0 - value(*r, 0));
  const Tensor& y = outputs[0];
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double v = value(y, i), kept = value(*x, i) * scale;
    const bool is_kept = std::fabs(v - kept) <= 1e-6 * std::fabs(kept);
    if (v != 0.0 && !is_kept) return fmt::format("output element {} is {}, expected 0 or {}", i, v, kept);
    if (o == 1 && kept != 0.0 && (value(got, i) != 0.0) != (v != 0.0))
      return fmt::format("mask element {} is {} but the output is {}", i, value(got, i), v);
  }
  return "";
}

// Runs one test in this (child) process; returns the outcome and a reason.
std::pair<Outcome, std::string> run_test(const TestCase& t) {
  onnx::ModelProto model;
  if (!read_model(t.dir / "model.onnx", model)) return {Outcome::kFailed, "model.onnx does not parse"};
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  const bool random = random_graph(model);
  for (ExecutionMode mode : {ExecutionMode::kSequential, ExecutionMode::kParallel}) {
    const char* mode_name = mode == ExecutionMode::kParallel ? "parallel" : "sequential";
    SessionOptions opts;
    opts.execution_mode = mode;
    opts.intra_op_num_threads = 2;
    opts.inter_op_num_threads = 2;
    std::unique_ptr<InferenceSession> session;
    try {
      session = InferenceSession::create((t.dir / "model.onnx").string(), opts);
    } catch (const Error& e) {
      if (e.code() == StatusCode::kUnsupported) return {Outcome::kUnsupportedAtLoad, e.what()};
      return {Outcome::kFailed, fmt::format("load: {}", e.what())};
    }
    for (int s = 0; fs::exists(t.dir / fmt::format("test_data_set_{}", s)); ++s) {
      const fs::path set = t.dir / fmt::format("test_data_set_{}", s);
      Feeds feeds;
      int k = 0;
      for (int i = 0; fs::exists(set / fmt::format("input_{}.pb", i)); ++i) {
        // input_i belongs to the i-th graph input that is not an initializer.
        while (k < model.graph().input_size() && initializers.count(model.graph().input(k).name())) ++k;
        if (k >= model.graph().input_size()) return {Outcome::kFailed, fmt::format("set {}: more inputs than the graph has", s)};
        auto v = io::read_value_pb(set / fmt::format("input_{}.pb", i), model.graph().input(k).type());
        if (!v.is_ok()) {
          if (v.status().code() == StatusCode::kUnsupported) return {Outcome::kUnsupportedAtLoad, v.status().to_string()};
          return {Outcome::kFailed, v.status().to_string()};
        }
        feeds.emplace_back(model.graph().input(k++).name(), std::move(v).value());
      }
      std::vector<Tensor> outputs;
      try {
        outputs = session->run(feeds);
      } catch (const Error& e) {
        if (e.code() == StatusCode::kUnsupported) return {Outcome::kUnsupportedAtRun, e.what()};
        return {Outcome::kFailed, fmt::format("set {} ({}): {}", s, mode_name, e.what())};
      }
      for (int o = 0; fs::exists(set / fmt::format("output_{}.pb", o)); ++o) {
        if (o >= model.graph().output_size())
          return {Outcome::kFailed, fmt::format("set {}: more outputs than the graph has", s)};
        auto want = io::read_value_pb(set / fmt::format("output_{}.pb", o), model.graph().output(o).type());
        if (!want.is_ok()) {
          if (want.status().code() == StatusCode::kUnsupported) return {Outcome::kUnsupportedAtLoad, want.status().to_string()};
          return {Outcome::kFailed, want.status().to_string()};
        }
        if (static_cast<size_t>(o) >= outputs.size())
          return {Outcome::kFailed, fmt::format("set {} ({}): output {} was not produced", s, mode_name, o)};
        // The opsets/ cases' expected outputs are ONNX Runtime's float32
        // results, not a float64 reference: their rounding error allows 1e-5
        // absolute (values that cancel to about 0, as in a DFT).
        const double atol = t.name.rfind("opsets/", 0) == 0 ? 1e-5 : 1e-7;
        if (random) {
          const std::string why = check_random_output(model, feeds, outputs, o, want.value());
          if (!why.empty()) return {Outcome::kFailed, fmt::format("set {} ({}) random output {}: {}", s, mode_name, o, why)};
          continue;
        }
        auto r = testing::tensors_close(outputs[static_cast<size_t>(o)], want.value(), 1e-3, atol);
        if (!r) return {Outcome::kFailed, fmt::format("set {} ({}) output {}: {}", s, mode_name, o, r.message())};
      }
    }
  }
  return {Outcome::kPassed, ""};
}

// Exit status of a child whose leak check found leaks (it prints the report).
constexpr int kLeakExit = 23;

void write_all(int fd, const std::string& msg) {
  for (size_t off = 0; off < msg.size();) {
    const ssize_t n = write(fd, msg.data() + off, msg.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

// A child in flight: its pid, the read ends of its result pipe and of its
// stderr, what was read from them.
struct Child {
  size_t test = 0;
  pid_t pid = -1;
  int fd = -1, err_fd = -1;
  bool out_open = true, err_open = true;  // until EOF (the child ended)
  std::string out, err;
  std::chrono::steady_clock::time_point start;
};

void start_child(std::vector<TestCase>& tests, size_t i, std::vector<Child>& running) {
  int fds[2], err[2];
  if (pipe(fds) != 0) {
    tests[i].reason = fmt::format("pipe failed: {}", std::strerror(errno));
    return;
  }
  if (pipe(err) != 0) {
    close(fds[0]);
    close(fds[1]);
    tests[i].reason = fmt::format("pipe failed: {}", std::strerror(errno));
    return;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    close(fds[0]);
    close(err[0]);
    dup2(err[1], STDERR_FILENO);
    close(err[1]);
    std::pair<Outcome, std::string> r;
    try {
      r = run_test(tests[i]);
    } catch (const std::exception& e) {
      r = {Outcome::kFailed, fmt::format("exception: {}", e.what())};
    }
#if defined(__SANITIZE_ADDRESS__)
    // _exit skips the leak check at exit: run it here, the session is gone.
    if (__lsan_do_recoverable_leak_check() != 0) _exit(kLeakExit);
#endif
    write_all(fds[1], fmt::format("{}\n{}", static_cast<int>(r.first), r.second));
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  close(err[1]);
  if (pid < 0) {
    close(fds[0]);
    close(err[0]);
    tests[i].reason = fmt::format("fork failed: {}", std::strerror(errno));
    return;
  }
  Child c;
  c.test = i;
  c.pid = pid;
  c.fd = fds[0];
  c.err_fd = err[0];
  c.start = std::chrono::steady_clock::now();
  running.push_back(std::move(c));
}

// The line of a sanitizer report that says what it found (ASan's and LSan's
// SUMMARY, UBSan's "runtime error"), or the last line the child wrote to
// stderr.
std::string stderr_summary(const std::string& err) {
  std::string last, ubsan;
  size_t pos = 0;
  while (pos < err.size()) {
    size_t end = err.find('\n', pos);
    if (end == std::string::npos) end = err.size();
    const std::string line = err.substr(pos, end - pos);
    if (line.rfind("SUMMARY: ", 0) == 0) return line.substr(9);
    if (ubsan.empty() && line.find(": runtime error: ") != std::string::npos) ubsan = line;
    if (!line.empty()) last = line;
    pos = end + 1;
  }
  return ubsan.empty() ? last : ubsan;
}

void finish_child(std::vector<TestCase>& tests, Child& c, bool timed_out, int timeout_s) {
  int status = 0;
  if (timed_out) kill(c.pid, SIGKILL);
  waitpid(c.pid, &status, 0);
  close(c.fd);
  close(c.err_fd);
  TestCase& t = tests[c.test];
  const size_t nl = c.out.find('\n');
  const std::string said = stderr_summary(c.err);
  const std::string tail = said.empty() ? "" : ": " + said;
  if (timed_out) {
    t.outcome = Outcome::kFailed;
    t.reason = fmt::format("timed out after {} s", timeout_s);
  } else if (WIFSIGNALED(status)) {
    t.outcome = Outcome::kFailed;
    t.reason = fmt::format("crashed: signal {} ({}){}", WTERMSIG(status), strsignal(WTERMSIG(status)), tail);
  } else if (WEXITSTATUS(status) == kLeakExit) {
    t.outcome = Outcome::kFailed;
    t.reason = fmt::format("leak check failed{}", tail);
  } else if (nl == std::string::npos || WEXITSTATUS(status) != 0) {
    t.outcome = Outcome::kFailed;
    t.reason = fmt::format("the test process exited with status {} without a result{}", WEXITSTATUS(status), tail);
  } else {
    t.outcome = static_cast<Outcome>(std::stoi(c.out.substr(0, nl)));
    t.reason = c.out.substr(nl + 1);
  }
  if (t.outcome == Outcome::kFailed) t.stderr_text = std::move(c.err);
}

void run_all(std::vector<TestCase>& tests, const Options& opt, const std::map<std::string, std::string>& known) {
  std::vector<Child> running;
  size_t next = 0;
  while (next < tests.size() || !running.empty()) {
    while (next < tests.size() && static_cast<int>(running.size()) < opt.jobs) {
      const size_t i = next++;
      if (auto it = known.find(tests[i].name); it != known.end()) {
        tests[i].outcome = Outcome::kKnown;
        tests[i].reason = it->second;
        continue;
      }
      start_child(tests, i, running);
    }
    if (running.empty()) continue;
    // Two descriptors per child: its result pipe and its stderr (drained so
    // that a long sanitizer report cannot block it; the first 64 KiB kept).
    std::vector<pollfd> fds;
    for (const Child& c : running) {
      fds.push_back({c.out_open ? c.fd : -1, POLLIN, 0});
      fds.push_back({c.err_open ? c.err_fd : -1, POLLIN, 0});
    }
    poll(fds.data(), fds.size(), 200);
    const auto now = std::chrono::steady_clock::now();
    auto drain = [](const pollfd& p, bool& open, std::string& into, size_t cap) {
      if (!open || !(p.revents & (POLLIN | POLLHUP | POLLERR))) return;
      char buf[4096];
      const ssize_t n = read(p.fd, buf, sizeof buf);
      if (n > 0) into.append(buf, std::min(static_cast<size_t>(n), cap - std::min(cap, into.size())));
      else open = false;  // EOF: the child finished or died
    };
    for (size_t k = running.size(); k-- > 0;) {
      Child& c = running[k];
      drain(fds[2 * k], c.out_open, c.out, SIZE_MAX);
      drain(fds[2 * k + 1], c.err_open, c.err, 64 * 1024);
      const bool done = !c.out_open && !c.err_open;
      const bool timed_out = !done && now - c.start > std::chrono::seconds(opt.timeout_s);
      if (done || timed_out) {
        finish_child(tests, c, timed_out, opt.timeout_s);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
  }
}

struct Counts {
  int passed = 0, failed = 0, unsupported = 0, unsupported_run = 0, known = 0;
  void add(Outcome o) {
    switch (o) {
      case Outcome::kPassed: ++passed; break;
      case Outcome::kFailed: ++failed; break;
      case Outcome::kUnsupportedAtLoad: ++unsupported; break;
      case Outcome::kUnsupportedAtRun: ++unsupported_run; break;
      case Outcome::kKnown: ++known; break;
    }
  }
  int total() const { return passed + failed + unsupported + unsupported_run + known; }
};

std::string suite_of(const std::string& name) { return name.substr(0, name.find('/')); }

void report(const std::vector<TestCase>& tests) {
  std::map<std::string, Counts> by_suite, by_op;
  Counts total;
  for (const TestCase& t : tests) {
    by_suite[suite_of(t.name)].add(t.outcome);
    total.add(t.outcome);
    for (const auto& op : t.ops) by_op[op].add(t.outcome);
  }
  fmt::print("\nper operator (tests using it: passed / failed / unsupported, known failures counted as failed):\n");
  for (const auto& [op, c] : by_op)
    fmt::print("  {:<36} {:4} / {:2} / {:4}\n", op, c.passed, c.failed + c.known, c.unsupported + c.unsupported_run);
  std::vector<const TestCase*> failures, run_refusals, known;
  for (const TestCase& t : tests) {
    if (t.outcome == Outcome::kFailed) failures.push_back(&t);
    if (t.outcome == Outcome::kUnsupportedAtRun) run_refusals.push_back(&t);
    if (t.outcome == Outcome::kKnown) known.push_back(&t);
  }
  if (!run_refusals.empty()) {
    fmt::print("\nrefused at run time instead of at load ({}):\n", run_refusals.size());
    for (const TestCase* t : run_refusals) fmt::print("  {}: {}\n", t->name, t->reason);
  }
  if (!known.empty()) {
    fmt::print("\nknown failures, not run (known_failures.txt, {}):\n", known.size());
    for (const TestCase* t : known) fmt::print("  {}: {}\n", t->name, t->reason);
  }
  for (const TestCase* t : failures) {
    if (t->stderr_text.empty()) continue;
    fmt::print("\n--- stderr of {} ---\n{}", t->name, t->stderr_text);
    if (t->stderr_text.back() != '\n') fmt::print("\n");
  }
  if (!failures.empty()) {
    fmt::print("\nFAILED ({}):\n", failures.size());
    for (const TestCase* t : failures) fmt::print("  {}: {}\n", t->name, t->reason);
  }
  fmt::print("\n{:<20} {:>6} {:>7} {:>7} {:>12} {:>15} {:>6} {:>10}\n", "suite", "tests", "passed", "failed",
             "unsupported", "unsupp. at run", "known", "pass rate");
  auto row = [](const std::string& name, const Counts& c) {
    fmt::print("{:<20} {:>6} {:>7} {:>7} {:>12} {:>15} {:>6} {:>9.1f}%\n", name, c.total(), c.passed, c.failed,
               c.unsupported, c.unsupported_run, c.known, c.total() ? 100.0 * c.passed / c.total() : 0.0);
  };
  for (const auto& [suite, c] : by_suite) row(suite, c);
  row("total", total);
  fmt::print("{} passed, {} failed\n", total.passed, total.failed);
}

void write_docs(const fs::path& path, const std::vector<TestCase>& tests) {
  struct OpStats {
    Counts counts;
    std::set<std::string> dtypes;
  };
  std::map<std::string, OpStats> stats;
  for (const TestCase& t : tests)
    for (const auto& op : t.ops) {
      stats[op].counts.add(t.outcome);
      if (t.outcome == Outcome::kPassed) stats[op].dtypes.insert(t.dtypes.begin(), t.dtypes.end());
    }
  std::ofstream out(path);
  out << "# Operators\n\n"
         "Generated by `build/tests/conformance_runner --data /usr/share/libonnx-testdata/data --data\n"
         "build/opsets-cases --write-docs docs/operators.md` from spindle's kernel registry, a run of the ONNX\n"
         "backend test suite (Debian `libonnx-testdata`, ONNX 1.12: opsets up to 17) and a run of the cases\n"
         "of tests/opsets (suite `opsets`: one-node models at opsets 18-23 with ONNX Runtime 1.30's outputs as\n"
         "the expected ones; see docs/opsets.md); do not edit by hand.\n\n"
         "- **opsets**: the opset versions of the default domain (or the operator's domain) spindle runs the\n"
         "  operator at (a version that only widened element types runs on the previous version's kernel).\n"
         "- **dtypes seen passing**: the element types of the graph inputs of the passing tests that use\n"
         "  the operator (a test's inputs, not a declaration of every type the kernel accepts).\n"
         "- **tests**: backend tests whose model graph has a node of the operator: passed / failed\n"
         "  (known failures included) / refused as unsupported. A `*_expanded` test counts for the\n"
         "  operators its function body expands to.\n\n"
         "| operator | opsets | dtypes seen passing | tests passed | failed | unsupported |\n"
         "|---|---|---|---:|---:|---:|\n";
  // Gradient has no kernel: the loader expands it into the nodes computing it.
  auto rows = kernels::KernelRegistry::global().ranges();
  rows.push_back({"ai.onnx.preview.training", "Gradient", "1 (expanded at load)"});
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::tie(a.domain, a.op_type) < std::tie(b.domain, b.op_type);
  });
  for (const auto& r : rows) {
    const std::string name = r.domain.empty() ? r.op_type : r.domain + "." + r.op_type;
    const OpStats& s = stats[name];
    std::string dtypes;
    for (const auto& d : s.dtypes) dtypes += (dtypes.empty() ? "" : ", ") + d;
    out << fmt::format("| {} | {} | {} | {} | {} | {} |\n", name, r.opsets, dtypes.empty() ? "–" : dtypes,
                       s.counts.passed, s.counts.failed + s.counts.known,
                       s.counts.unsupported + s.counts.unsupported_run);
  }
  std::set<std::string> registered;
  for (const auto& r : rows) registered.insert(r.domain.empty() ? r.op_type : r.domain + "." + r.op_type);
  out << "\n## Operators of the suite spindle has no kernel for\n\n"
         "Backend tests that use each one (all refused at load with the unsupported-operator error).\n\n"
         "| operator | tests |\n|---|---:|\n";
  for (const auto& [op, s] : stats)
    if (!registered.count(op)) out << fmt::format("| {} | {} |\n", op, s.counts.total());
  Counts total;
  std::map<std::string, Counts> by_suite;
  for (const TestCase& t : tests) {
    total.add(t.outcome);
    by_suite[suite_of(t.name)].add(t.outcome);
  }
  out << "\n## Suite totals\n\n| suite | tests | passed | failed | unsupported | pass rate |\n|---|---:|---:|---:|---:|---:|\n";
  auto row = [&](const std::string& name, const Counts& c) {
    out << fmt::format("| {} | {} | {} | {} | {} | {:.1f} % |\n", name, c.total(), c.passed, c.failed + c.known,
                       c.unsupported + c.unsupported_run, c.total() ? 100.0 * c.passed / c.total() : 0.0);
  };
  for (const auto& [suite, c] : by_suite) row(suite, c);
  row("total", total);
  fmt::print("wrote {}\n", path.string());
}

int usage(const char* argv0) {
  fmt::print(stderr,
             "usage: {} [--filter SUBSTRING] [--jobs N] [--timeout-s S] [--write-docs FILE] [--data DIR]... [--list]\n",
             argv0);
  return 2;
}

}  // namespace
}  // namespace spindle

int main(int argc, char** argv) {
  using namespace spindle;
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* what) -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "{} needs a value ({})\n", a, what);
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (a == "--filter") opt.filter = value("a substring of test names such as node/test_conv");
      else if (a == "--jobs") opt.jobs = std::max(1, std::stoi(value("a number of parallel test processes")));
      else if (a == "--timeout-s") opt.timeout_s = std::max(1, std::stoi(value("seconds per test")));
      else if (a == "--write-docs") opt.write_docs = value("a markdown file to write");
      else if (a == "--data") {
        if (!opt.data_given) opt.data.clear();
        opt.data_given = true;
        opt.data.push_back(value("the libonnx-testdata data directory"));
      }
      else if (a == "--list") opt.list = true;
      else if (a == "--help" || a == "-h") return usage(argv[0]), 0;
      else {
        fmt::print(stderr, "unknown argument '{}'\n", a);
        return usage(argv[0]);
      }
    } catch (const std::exception&) {
      fmt::print(stderr, "{}: '{}' is not a number\n", a, argv[i]);
      return 2;
    }
  }
  if (!opt.write_docs.empty() && !opt.filter.empty()) {
    fmt::print(stderr, "--write-docs needs the whole suite: drop --filter\n");
    return 2;
  }
  for (const fs::path& d : opt.data)
    if (!fs::exists(d)) {
      fmt::print(stderr, "{} not found: install libonnx-testdata (scripts/setup-deps.sh), or for opsets/ run "
                 "tests/opsets/run.sh\n", d.string());
      return 2;
    }
  auto tests = discover(opt);
  if (tests.empty()) {
    fmt::print(stderr, "no tests match filter '{}'\n", opt.filter);
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto known = known_failures();
  for (const auto& [name, reason] : known)
    if (opt.filter.empty() && std::none_of(tests.begin(), tests.end(), [&](const TestCase& t) { return t.name == name; }))
      fmt::print("known_failures.txt lists {}, which is not in the suite\n", name);
  run_all(tests, opt, known);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{} tests in {:.1f} s, {} at a time\n", tests.size(), secs, opt.jobs);
  if (!opt.write_docs.empty()) write_docs(opt.write_docs, tests);
  if (opt.list) {
    static const char* names[] = {"passed", "FAILED", "unsupported", "unsupported at run time", "known failure"};
    for (const auto& t : tests)
      fmt::print("{:<12} {}{}{}\n", names[static_cast<int>(t.outcome)], t.name, t.reason.empty() ? "" : ": ",
                 t.reason.substr(0, t.reason.find('\n')));
  }
  report(tests);
  bool failed = false;
  for (const auto& t : tests) failed |= t.outcome == Outcome::kFailed;
  return failed ? 1 : 0;
}
