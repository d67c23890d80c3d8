// tune_command.cpp — spindle tune: find the best thread settings for a model
// on this machine.
//
//   spindle tune MODEL [--input NAME=FILE]... [--shape NAME=DIMS]...
//                [--objective latency|throughput] [--concurrency N] [--budget-s S]
//                [--out FILE.json] [--plot FILE.svg] [--opt-level L]
//
// The search space: intra-op threads 1..cores, sequential or parallel mode
// (parallel with 2..cores inter-op threads), spinning on / off, and for the
// default thread count two more spin windows; for `throughput`, R concurrent
// requests x T intra threads with R x T <= cores (R up to --concurrency).
// Each setting gets one round of timed runs first; a setting whose round is
// 30 % slower than the best so far is pruned, the others get two more rounds.
// Settings not reached within --budget-s are reported as skipped. The three
// leaders then get two more rounds each, interleaved, so the winner is not
// noise; its spread (min..max of round medians) is reported. Among settings
// within 3 % of the best score (or within the spread of the best's rounds,
// when that is wider, up to 15 %), the one with the fewest threads (sequential before
// parallel) wins: threads that do not clearly help are not worth paying for.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "commands.h"
#include "model_common.h"
#include "spindle/cpu.h"

namespace spindle::cli {
namespace {

struct TuneArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  std::string objective = "latency";
  int concurrency = 0;  // 0 = cores
  double budget_s = 60;
  std::string out;
  std::string plot;
  std::string opt_level = "all";
};

struct Setting {
  int intra = 1;
  bool parallel = false;
  int inter = 1;
  bool spin = true;
  int spin_us = -1;  // -1 = default window
  int requests = 1;  // concurrent requests (throughput)

  std::string describe() const {
    std::string s = fmt::format("intra {} {}", intra, parallel ? fmt::format("parallel inter {}", inter) : "sequential");
    s += spin ? (spin_us >= 0 ? fmt::format(" spin {}us", spin_us) : " spin") : " nospin";
    if (requests > 1) s += fmt::format(" x{} requests", requests);
    return s;
  }
  int threads() const { return requests * (intra + (parallel ? inter : 0)); }
  SessionOptions options(GraphOptimizationLevel level) const {
    SessionOptions o;
    o.intra_op.num_threads = intra;
    o.inter_op.num_threads = parallel ? inter : 1;
    o.execution_mode = parallel ? ExecutionMode::kParallel : ExecutionMode::kSequential;
    o.graph_optimization_level = level;
    for (ThreadingOptions* pool : {&o.intra_op, &o.inter_op}) {
      pool->allow_spinning = spin;
      if (spin && spin_us >= 0) pool->spin_duration = std::chrono::microseconds(spin_us);
    }
    return o;
  }
};

struct Round {
  double p50_ms = 0, p90_ms = 0, cpu_ms = 0, per_s = 0;
};

struct Result {
  Setting setting;
  std::vector<Round> rounds;
  std::string note;
  double score() const {  // lower is better: median of the rounds' p50 (latency) or of 1 / throughput
    std::vector<double> v;
    for (const auto& r : rounds) v.push_back(r.p50_ms);
    return v.empty() ? INFINITY : percentile(v, 50);
  }
  double median(double Round::*f) const {
    std::vector<double> v;
    for (const auto& r : rounds) v.push_back(r.*f);
    return v.empty() ? NAN : percentile(v, 50);
  }
};

class Tuner {
 public:
  Tuner(const TuneArgs& a, GraphOptimizationLevel level) : a_(a), level_(level) {}

  // One round of one setting: `runs` runs per request thread after a warmup.
  Round measure(const Setting& s, const Feeds& feeds, int runs) {
    auto session = InferenceSession::create(a_.model, s.options(level_));
    session->run(feeds);
    std::vector<double> lat(static_cast<size_t>(runs * s.requests));
    std::atomic<int> next{0};
    const double cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    auto work = [&] {
      for (int i; (i = next.fetch_add(1)) < static_cast<int>(lat.size());) {
        const auto st = std::chrono::steady_clock::now();
        session->run(feeds);
        lat[static_cast<size_t>(i)] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - st).count();
      }
    };
    std::vector<std::thread> extra;
    for (int r = 1; r < s.requests; ++r) extra.emplace_back(work);
    work();
    for (auto& t : extra) t.join();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Round r;
    r.p50_ms = percentile(lat, 50);
    r.p90_ms = percentile(lat, 90);
    r.cpu_ms = (cpu_seconds() - cpu0) * 1e3 / static_cast<double>(lat.size());
    r.per_s = static_cast<double>(lat.size()) / wall;
    if (a_.objective == "throughput") r.p50_ms = 1e3 / r.per_s;  // score: ms per inference of throughput
    return r;
  }

 private:
  const TuneArgs& a_;
  GraphOptimizationLevel level_;
};

std::vector<Setting> search_space(const TuneArgs& a, int cores) {
  std::vector<Setting> out;
  if (a.objective == "latency") {
    for (int intra = 1; intra <= cores; ++intra)
      for (bool spin : {true, false}) {
        out.push_back({intra, false, 1, spin, -1, 1});
        for (int inter = 2; inter <= cores; ++inter) out.push_back({intra, true, inter, spin, -1, 1});
      }
    for (int us : {20, 1000}) out.push_back({cores, false, 1, true, us, 1});
  } else {
    const int conc = a.concurrency > 0 ? a.concurrency : cores;
    for (int req = 1; req <= conc; ++req)
      for (int intra = 1; intra * req <= std::max(cores, req); ++intra)
        for (bool spin : {true, false}) out.push_back({intra, false, 1, spin, -1, req});
  }
  return out;
}

void progress(size_t done, size_t total, const std::string& what) {
  if (!isatty(STDERR_FILENO)) return;
  const int width = 30, filled = static_cast<int>(width * done / std::max<size_t>(total, 1));
  fmt::print(stderr, "\r[{}{}] {}/{} {:<50}", std::string(static_cast<size_t>(filled), '#'),
             std::string(static_cast<size_t>(width - filled), '.'), done, total, what.substr(0, 50));
  if (done == total) fmt::print(stderr, "\r{:<100}\r", "");
}

// Round tick spacing (1, 2, 2.5 or 5 times a power of ten) for an axis from 0
// to `top` with about `ticks` intervals.
double tick_step(double top, int ticks) {
  const double raw = top / ticks, mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

void write_plot(const std::string& path, const std::vector<Result>& results, const TuneArgs& a, int cores) {
  // latency: p50 against intra-op threads, one line per (mode, inter, spin).
  // throughput: inferences per second against the threads in use (requests x
  // intra-op threads), one line per (requests, spin), so one request with 2
  // threads and 2 requests with 1 thread each stand side by side.
  const bool tp = a.objective == "throughput";
  std::map<std::string, std::vector<std::pair<int, double>>> series;
  double ymax = 0;
  int xmax = cores;
  for (const auto& r : results) {
    if (r.rounds.empty() || r.setting.spin_us >= 0) continue;
    const Setting& s = r.setting;
    Setting key = s;
    key.intra = 0;
    const std::string name =
        tp ? fmt::format("{} request{} at a time, {}", s.requests, s.requests > 1 ? "s" : "", s.spin ? "spin" : "nospin")
           : key.describe().substr(8);  // drop "intra 0 "
    const int xv = tp ? s.intra * s.requests : s.intra;
    const double yv = tp ? r.median(&Round::per_s) : r.score();
    series[name].push_back({xv, yv});
    ymax = std::max(ymax, yv);
    xmax = std::max(xmax, xv);
  }
  const double step = tick_step(std::max(ymax, 1e-9) * 1.05, 5);
  const double ytop = std::ceil(std::max(ymax, 1e-9) * 1.05 / step) * step;
  const double W = 760, H = 440, L = 70, R = 280, T = 56, B = 50;
  auto x = [&](int t) { return L + (W - L - R) * (xmax > 1 ? (t - 1.0) / (xmax - 1.0) : 0.5); };
  auto y = [&](double v) { return T + (H - T - B) * (1.0 - v / ytop); };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"14\">spindle tune: {}</text>\n"
      "<text x=\"{}\" y=\"40\" fill=\"#555\">{} · {} cores · median of each setting's rounds</text>\n",
      W, H, L, tp ? "throughput against threads in use" : "p50 latency against intra-op threads", L,
      a.model.substr(a.model.find_last_of('/') + 1), cores);
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", L, H - B, W - R, H - B);
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", L, T, L, H - B);
  for (int t = 1; t <= xmax; ++t)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x(t), H - B + 18, t);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (L + W - R) / 2, H - 12,
                     tp ? "threads in use (concurrent requests x intra-op threads)" : "intra-op threads");
  for (double v = 0; v <= ytop + step / 2; v += step) {
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n", L - 6, y(v) + 4, v);
    svg += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", L, y(v), W - R, y(v));
  }
  svg += fmt::format("<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">{}</text>\n",
                     (T + H - B) / 2, (T + H - B) / 2, tp ? "inferences per second (higher is better)" : "ms (lower is better)");
  static const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  int i = 0;
  for (auto& [name, pts] : series) {
    std::sort(pts.begin(), pts.end());
    const char* c = colors[i % 8];
    std::string poly;
    for (const auto& [t, v] : pts) {
      poly += fmt::format("{:.1f},{:.1f} ", x(t), y(v));
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", x(t), y(v), c);
    }
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", poly, c);
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"3\" fill=\"{}\"/>\n", W - R + 16, T + 10 + 18 * i, c);
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", W - R + 34, T + 15 + 18 * i, name);
    ++i;
  }
  svg += "</svg>\n";
  std::ofstream f(path);
  f << svg;
  if (!f) throw Error(StatusCode::kRuntimeError, fmt::format("--plot {}: writing failed", path));
}

void check_tune_args(const TuneArgs& a) {
  if (a.objective != "latency" && a.objective != "throughput")
    throw Error(StatusCode::kInvalidArgument, fmt::format("--objective {}: expected latency or throughput", a.objective));
  if (a.budget_s < 1)
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("--budget-s {}: too small to measure anything, expected at least 1 second", a.budget_s));
  if (a.concurrency < 0 || a.concurrency > 64)
    throw Error(StatusCode::kInvalidArgument, fmt::format("--concurrency {}: expected 1 to 64", a.concurrency));
  for (const auto& [flag, path] : {std::pair{"--out", a.out}, std::pair{"--plot", a.plot}}) {
    if (path.empty()) continue;
    std::ofstream probe(path, std::ios::app);
    if (!probe) throw Error(StatusCode::kInvalidArgument, fmt::format("{} {}: cannot be written", flag, path));
  }
}

// Runs per round: about 0.15 s of work, at least 3. `feeds` gets the inputs.
int runs_per_round(const TuneArgs& a, GraphOptimizationLevel level, Feeds& feeds) {
  // Load once up front: a model that fails to load fails before any timing.
  SessionOptions probe_opts;
  probe_opts.intra_op.num_threads = 1;
  probe_opts.graph_optimization_level = level;
  auto probe = InferenceSession::create(a.model, probe_opts);
  feeds = read_inputs(a.inputs);
  fill_random_inputs(*probe, feeds, a.shapes);
  const auto t0 = std::chrono::steady_clock::now();
  probe->run(feeds);
  probe->run(feeds);
  const double one_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 2;
  probe.reset();
  return std::clamp(static_cast<int>(0.15 / std::max(one_s, 1e-6)), 3, 200);
}

// The leaders of `order` (sorted by score) measured again; the winner is
// the setting with the fewest threads within the noise of the best.
Result* pick_winner(std::vector<Result*>& order, Tuner& tuner, const Feeds& feeds, int runs) {
  auto by_score = [](const Result* x, const Result* y) { return x->score() < y->score(); };
  // The leaders get two more rounds each, interleaved, and so does the
  // best of the simplest settings (fewest threads, sequential) when it is
  // not among them: the choice below prefers it within the noise, so it
  // must be measured beside them, not in an earlier phase of the machine
  // (a serial chain measured its sequential settings 9% slower than the
  // parallel ones in one stretch and tied them in the next).
  std::vector<Result*> again(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(3, order.size())));
  Result* simplest = order[0];
  for (Result* r : order)
    if (r->setting.threads() < simplest->setting.threads() ||
        (r->setting.threads() == simplest->setting.threads() && simplest->setting.parallel && !r->setting.parallel))
      simplest = r;
  if (std::find(again.begin(), again.end(), simplest) == again.end()) again.push_back(simplest);
  for (int k = 0; k < 2; ++k)
    for (Result* r : again) r->rounds.push_back(tuner.measure(r->setting, feeds, runs));
  std::sort(order.begin(), order.end(), by_score);
  // Fewest threads among those within the noise of the best: 3 %, or the
  // spread of the best's own rounds when that is wider (a busy machine; at
  // most 15 %), so extra threads are chosen only for a gain larger than the
  // measurement's own scatter.
  double best_lo = INFINITY, best_hi = 0;
  for (const auto& rd : order[0]->rounds) best_lo = std::min(best_lo, rd.p50_ms), best_hi = std::max(best_hi, rd.p50_ms);
  const double tolerance = std::clamp((best_hi - best_lo) / order[0]->score(), 0.03, 0.15);
  Result* winner = order[0];
  for (Result* r : order)
    if (r->score() <= (1 + tolerance) * order[0]->score() &&
        (r->setting.threads() < winner->setting.threads() ||
         (r->setting.threads() == winner->setting.threads() && !r->setting.parallel && winner->setting.parallel)))
      winner = r;
  return winner;
}

void tune_command(const TuneArgs& a) {
  check_tune_args(a);
  const GraphOptimizationLevel level = parse_optimization_level(a.opt_level).value();  // checked by CLI11
  Feeds feeds;
  const int runs = runs_per_round(a, level, feeds);
  const int cores = std::max(1, cpu_topology().default_num_threads);
  const std::vector<Setting> space = search_space(a, cores);
  Tuner tuner(a, level);
  std::vector<Result> results;
  for (const auto& s : space) results.push_back({s, {}, ""});
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  double best = INFINITY;
  for (size_t i = 0; i < results.size(); ++i) {
    Result& r = results[i];
    progress(i, results.size(), r.setting.describe());
    if (elapsed() > a.budget_s) {
      r.note = "skipped (budget)";
      continue;
    }
    r.rounds.push_back(tuner.measure(r.setting, feeds, runs));
    if (r.rounds[0].p50_ms > 1.3 * best) {
      r.note = "pruned";
    } else {
      for (int k = 0; k < 2 && elapsed() < a.budget_s; ++k) r.rounds.push_back(tuner.measure(r.setting, feeds, runs));
    }
    best = std::min(best, r.score());
  }
  progress(results.size(), results.size(), "");
  // The measured settings, best first.
  std::vector<Result*> order;
  for (auto& r : results)
    if (!r.rounds.empty()) order.push_back(&r);
  if (order.empty()) throw Error(StatusCode::kInvalidArgument, "the budget ran out before any setting was measured");
  auto by_score = [](const Result* x, const Result* y) { return x->score() < y->score(); };
  std::sort(order.begin(), order.end(), by_score);
  Result* winner = pick_winner(order, tuner, feeds, runs);
  winner->note = "WINNER";

  const bool lat = a.objective == "latency";
  fmt::print("model      {}\nobjective  {} · {} cores · {} runs per round · {:.1f} s\n\n", a.model, a.objective, cores,
             runs, elapsed());
  fmt::print("{:<44} {:>9} {:>9} {:>11} {:>10} {:>7}  {}\n", "setting", lat ? "p50 ms" : "ms/inf", "p90 ms",
             "cpu ms/inf", "per s", "rounds", "");
  for (const Result* r : order)
    fmt::print("{:<44} {:>9.3f} {:>9.3f} {:>11.3f} {:>10.1f} {:>7}  {}\n", r->setting.describe(), r->score(),
               r->median(&Round::p90_ms), r->median(&Round::cpu_ms), r->median(&Round::per_s), r->rounds.size(), r->note);
  for (const auto& r : results)
    if (r.rounds.empty()) fmt::print("{:<44} {:>9} {:>9} {:>11} {:>10} {:>7}  {}\n", r.setting.describe(), "-", "-", "-", "-", 0, r.note);
  double lo = INFINITY, hi = 0;
  for (const auto& rd : winner->rounds) lo = std::min(lo, rd.p50_ms), hi = std::max(hi, rd.p50_ms);
  fmt::print("\nwinner     {} : {:.3f} ms (rounds {:.3f} .. {:.3f})\n", winner->setting.describe(), winner->score(), lo, hi);
  auto margin = [&](const char* label, auto pred) {
    for (const auto& r : results)
      if (pred(r.setting) && !r.rounds.empty())
        return fmt::print("vs {:<8} {} : {:.3f} ms, the winner is {:.2f}x\n", label, r.setting.describe(), r.score(),
                          r.score() / winner->score());
    fmt::print("vs {:<8} not measured\n", label);
  };
  margin("default", [&](const Setting& s) { return s.intra == cores && !s.parallel && s.spin && s.spin_us < 0 && s.requests == 1; });
  margin("intra=1", [&](const Setting& s) { return s.intra == 1 && !s.parallel && s.spin && s.spin_us < 0 && s.requests == 1; });
  if (winner->setting.requests > 1)
    fmt::print("run {} requests at once, each with these options\n", winner->setting.requests);
  if (!a.out.empty()) {
    winner->setting.options(level).save(a.out);
    fmt::print("options    {} (use with spindle run|bench --options)\n", a.out);
  }
  if (!a.plot.empty()) {
    write_plot(a.plot, results, a, cores);
    fmt::print("plot       {}\n", a.plot);
  }
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto args = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand("tune", "Search the thread settings that run a model best on this machine");
  cmd->add_option("model", args->model, "ONNX model file")->required();
  cmd->add_option("--input", args->inputs, "NAME=FILE (.npy or .pb), repeatable; other inputs are random");
  cmd->add_option("--shape", args->shapes, "NAME=1x3x224x224 for random inputs with dynamic dimensions");
  cmd->add_option("--objective", args->objective, "latency (one request) or throughput (concurrent requests)");
  cmd->add_option("--concurrency", args->concurrency, "throughput: most concurrent requests to try (default: cores)");
  cmd->add_option("--budget-s", args->budget_s, "time budget in seconds for the search");
  cmd->add_option("--out", args->out, "write the winner as a JSON options file");
  cmd->add_option("--plot", args->plot, "write an SVG plot of time against threads");
  cmd->add_option("--opt-level", args->opt_level, "graph optimization level")
      ->check(CLI::IsMember(optimization_level_names()));
  cmd->callback([args] { tune_command(*args); });
}

}  // namespace spindle::cli
