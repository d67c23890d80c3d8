// soak.cpp — soak benchmark (spindle_soak): many threads sharing one
// session for minutes, with sessions created and destroyed alongside and
// runs cancelled mid-way, checking that every output is bitwise equal to a
// single-threaded run and that resident memory stays flat. Not a unit test:
// it is run by hand (bench/soak/run.sh) and its results go to
// docs/reliability.md.
//
//   spindle_soak [--model PATH] [--threads N] [--seconds S] [--intra K]
//                [--mode sequential|parallel] [--dyn D] [--inputs I]
//
// Threads:
//   N runner threads   run the shared session (intra-op threads K) on one of
//                      I fixed random inputs and compare with the reference
//   1 churn thread     creates a session from the model's bytes, runs it once,
//                      compares, destroys it, again and again
//   1 cancel thread    runs the shared session and sets RunOptions::terminate
//                      after 0-3 ms from another thread; the run must either
//                      fail with CANCELLED or return the reference output
// The reference for each input comes from a session with one thread.
// Dynamic dimensions: the first (batch) is 1, the others D.
// RSS is sampled every second; "start" is the sample after the first quarter
// of the run (pools, arenas and caches warmed up), "end" the last one.
// Spinning is off in every pool (the soak shares its cores with the runner
// threads; spinning workers would only slow them down).
// Exit status 1 when an output differs, a run fails other than by
// cancellation, or RSS grew by more than 10 % from start to end.
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "spindle/session.h"

namespace {

using namespace spindle;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string model;
  int threads = 8;
  int seconds = 60;
  int intra = 2;
  ExecutionMode mode = ExecutionMode::kSequential;
  int64_t dyn = 160;
  int inputs = 4;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "spindle_soak: %s\nusage: spindle_soak [--model PATH] [--threads N] [--seconds S] [--intra K] "
               "[--mode sequential|parallel] [--dyn D] [--inputs I]\n",
               why.c_str());
  std::exit(2);
}

int64_t parse_int(const std::string& flag, const char* text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi)
    usage(flag + " " + text + ": expected a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  const char* home = std::getenv("HOME");
  a.model = std::string(home ? home : "") + "/.cache/spindle/models/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (i + 1 >= argc) usage(f + ": missing value");
    const char* v = argv[++i];
    if (f == "--model") a.model = v;
    else if (f == "--threads") a.threads = static_cast<int>(parse_int(f, v, 1, 256));
    else if (f == "--seconds") a.seconds = static_cast<int>(parse_int(f, v, 1, 24 * 3600));
    else if (f == "--intra") a.intra = static_cast<int>(parse_int(f, v, 1, 256));
    else if (f == "--dyn") a.dyn = parse_int(f, v, 1, 1 << 16);
    else if (f == "--inputs") a.inputs = static_cast<int>(parse_int(f, v, 1, 64));
    else if (f == "--mode") {
      if (std::strcmp(v, "sequential") == 0) a.mode = ExecutionMode::kSequential;
      else if (std::strcmp(v, "parallel") == 0) a.mode = ExecutionMode::kParallel;
      else usage(std::string("--mode ") + v + ": expected sequential or parallel");
    } else {
      usage("unknown flag " + f);
    }
  }
  return a;
}

size_t rss_kib() {
  std::ifstream in("/proc/self/statm");
  size_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) / 1024;
}

// Random values for every declared input (float in [-1, 1]; integers 0..3).
Feeds make_feeds(const std::vector<TensorInfo>& infos, int64_t dyn, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uf(-1.f, 1.f);
  Feeds feeds;
  for (const TensorInfo& info : infos) {
    Shape shape = info.shape;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] < 0) shape[d] = d == 0 ? 1 : dyn;
    Tensor t(info.dtype, shape);
    const int64_t n = t.numel();
    if (info.dtype == DataType::kFloat32) {
      for (int64_t i = 0; i < n; ++i) t.mutable_data<float>()[i] = uf(rng);
    } else if (info.dtype == DataType::kInt64) {
      for (int64_t i = 0; i < n; ++i) t.mutable_data<int64_t>()[i] = static_cast<int64_t>(rng() % 4);
    } else if (info.dtype != DataType::kBool) {
      throw Error(StatusCode::kUnsupported, "spindle_soak: input '" + info.name + "' has type " +
                                                   dtype_name(info.dtype) + " (expected float32, int64 or bool)");
    }
    feeds.emplace_back(info.name, std::move(t));
  }
  return feeds;
}

bool same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dtype() != b[i].dtype() || a[i].shape() != b[i].shape() || a[i].nbytes() != b[i].nbytes()) return false;
    if (std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].nbytes()) != 0) return false;
  }
  return true;
}

struct Counts {
  std::atomic<int64_t> runs{0}, wrong{0}, errors{0}, cancelled{0}, cancel_completed{0}, sessions{0};
  std::atomic<int64_t> max_cancel_us{0};
  std::mutex mu;
  std::string first_error;
  void error(const std::string& what) {
    errors++;
    std::lock_guard lock(mu);
    if (first_error.empty()) first_error = what;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  std::ifstream file(args.model, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "spindle_soak: cannot open %s (run scripts/fetch-models.sh, or pass --model)\n",
                 args.model.c_str());
    return 2;
  }
  const std::string bytes((std::istreambuf_iterator<char>(file)), {});
  const std::span<const uint8_t> model(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());

  try {
    auto no_spin = [](SessionOptions o) {
      o.add_config_entry(config_keys::kIntraOpAllowSpinning, "0");
      o.add_config_entry(config_keys::kInterOpAllowSpinning, "0");
      return o;
    };
    SessionOptions single;
    single.intra_op_num_threads = 1;
    auto reference_session = InferenceSession::create_from_bytes(model, single);
    std::vector<Feeds> feeds;
    std::vector<std::vector<Tensor>> reference;
    for (int i = 0; i < args.inputs; ++i) {
      feeds.push_back(make_feeds(reference_session->inputs(), args.dyn, 1234u + static_cast<uint32_t>(i)));
      reference.push_back(reference_session->run(feeds.back()));
    }
    reference_session.reset();

    SessionOptions shared_options;
    shared_options.intra_op_num_threads = args.intra;
    shared_options.inter_op_num_threads = args.intra;
    shared_options.execution_mode = args.mode;
    auto shared = InferenceSession::create_from_bytes(model, no_spin(shared_options));

    Counts counts;
    std::atomic<bool> stop{false};
    auto check = [&](const std::vector<Tensor>& out, size_t k) {
      counts.runs++;
      if (!same(out, reference[k])) counts.wrong++;
    };

    std::vector<std::thread> threads;
    for (int t = 0; t < args.threads; ++t)
      threads.emplace_back([&, t] {
        for (size_t k = static_cast<size_t>(t); !stop; ++k) {
          const size_t which = k % feeds.size();
          try {
            check(shared->run(feeds[which]), which);
          } catch (const Error& e) {
            counts.error(e.what());
          }
        }
      });
    threads.emplace_back([&] {  // churn
      SessionOptions o;
      o.intra_op_num_threads = 2;
      o = no_spin(o);
      for (size_t k = 0; !stop; ++k) {
        try {
          auto s = InferenceSession::create_from_bytes(model, o);
          counts.sessions++;
          check(s->run(feeds[k % feeds.size()]), k % feeds.size());
        } catch (const Error& e) {
          counts.error(e.what());
        }
      }
    });
    threads.emplace_back([&] {  // cancel
      std::mt19937 rng(7);
      for (size_t k = 0; !stop; ++k) {
        RunOptions ro;
        const auto delay = std::chrono::microseconds(rng() % 3000);
        Clock::time_point fired;
        std::thread canceller([&] {
          std::this_thread::sleep_for(delay);
          fired = Clock::now();
          ro.terminate = true;
        });
        const size_t which = k % feeds.size();
        try {
          auto out = shared->run(feeds[which], {}, &ro);
          canceller.join();
          counts.cancel_completed++;
          check(out, which);
        } catch (const Error& e) {
          const auto returned = Clock::now();
          canceller.join();
          if (e.code() == StatusCode::kCancelled) {
            counts.cancelled++;
            const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(returned - fired).count();
            int64_t prev = counts.max_cancel_us.load();
            while (us > prev && !counts.max_cancel_us.compare_exchange_weak(prev, us)) {
            }
          } else {
            counts.error(e.what());
          }
        }
      }
    });

    const auto start = Clock::now();
    const auto end = start + std::chrono::seconds(args.seconds);
    const auto warm = start + std::chrono::milliseconds(args.seconds * 250);
    size_t rss_first = rss_kib(), rss_start = 0, rss_end = 0, rss_max = 0;
    while (Clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const size_t r = rss_kib();
      if (rss_start == 0 && Clock::now() >= warm) rss_start = r;
      rss_end = r;
      rss_max = std::max(rss_max, r);
    }
    stop = true;
    for (auto& t : threads) t.join();
    if (rss_start == 0) rss_start = rss_first;

    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    const double growth = 100.0 * (static_cast<double>(rss_end) - static_cast<double>(rss_start)) / static_cast<double>(rss_start);
    std::printf("spindle_soak: model %s, %d runner threads x %.0f s on one session (intra %d, %s), 1 churn thread, 1 cancel thread\n",
                args.model.c_str(), args.threads, secs, args.intra,
                args.mode == ExecutionMode::kParallel ? "parallel" : "sequential");
    std::printf("  runs checked: %lld (%.1f/s), wrong outputs: %lld, errors: %lld\n",
                static_cast<long long>(counts.runs.load()), static_cast<double>(counts.runs.load()) / secs,
                static_cast<long long>(counts.wrong.load()), static_cast<long long>(counts.errors.load()));
    std::printf("  sessions created and destroyed: %lld; runs cancelled: %lld (slowest return after terminate: %.1f ms), "
                "completed before the cancel: %lld\n",
                static_cast<long long>(counts.sessions.load()), static_cast<long long>(counts.cancelled.load()),
                static_cast<double>(counts.max_cancel_us.load()) / 1000.0,
                static_cast<long long>(counts.cancel_completed.load()));
    std::printf("  RSS: start %.1f MiB (after warm-up), end %.1f MiB, max %.1f MiB, growth %+.1f %%\n",
                static_cast<double>(rss_start) / 1024, static_cast<double>(rss_end) / 1024,
                static_cast<double>(rss_max) / 1024, growth);
    if (!counts.first_error.empty()) std::printf("  first error: %s\n", counts.first_error.c_str());
    const bool ok = counts.wrong == 0 && counts.errors == 0 && growth <= 10.0;
    std::printf("spindle_soak: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "spindle_soak: %s\n", e.what());
    return 2;
  }
}
