// fuzz_util.h — what the libFuzzer targets share: the caps that keep one
// execution small and short, generated feeds, and the rule for what counts
// as a finding.
//
// A target calls guarded(): a spindle::Error is the library's way of saying
// "this input is bad" and is fine; any other exception (std::bad_alloc,
// std::out_of_range from stoll, ...) escapes, aborts the process and is a
// crash, as are sanitizer reports and signals. libFuzzer's own limits
// (scripts/fuzz.sh: -timeout, -rss_limit_mb, -malloc_limit_mb) catch hangs
// and huge allocations; on top of them each run gets a deadline through
// RunOptions::terminate, so a slow but legitimate model ends with a
// kCancelled error rather than a timeout report.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "spindle/session.h"

namespace spindle::fuzz {

// Caps of one execution (documented in docs/reliability.md).
inline constexpr int64_t kMaxInputElements = 1 << 14;  // per generated input
inline constexpr auto kRunDeadline = std::chrono::milliseconds(1000);

// Memory limits of a fuzzed session, under libFuzzer's caps
// (-malloc_limit_mb=1024, -rss_limit_mb=2048): a tensor past them is the
// clean RESOURCE_EXHAUSTED a user would get, so an out-of-memory finding
// means an allocation the limits do not see.
inline constexpr int64_t kMaxTensorBytes = int64_t{256} << 20;
inline constexpr int64_t kMaxRunBytes = int64_t{768} << 20;

// Session options for fuzzing: one thread (no pool threads started per
// execution), every optimizer pass, the memory limits above.
inline SessionOptions fuzz_session_options() {
  SessionOptions o;
  o.intra_op_num_threads = 1;
  o.inter_op_num_threads = 1;
  o.graph_optimization_level = GraphOptimizationLevel::kAll;
  o.max_tensor_bytes = kMaxTensorBytes;
  o.max_run_bytes = kMaxRunBytes;
  return o;
}

// Calls fn; a spindle::Error is an accepted outcome, anything else escapes.
template <class Fn>
void guarded(Fn&& fn) {
  try {
    fn();
  } catch (const Error&) {
  }
}

// An in-memory file (memfd) reachable by path, for readers that take paths.
class MemFile {
 public:
  explicit MemFile(const char* name) : fd_(::memfd_create(name, 0)) {
    if (fd_ < 0) __builtin_trap();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  const std::string& write(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0) __builtin_trap();
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) __builtin_trap();
      done += static_cast<size_t>(n);
    }
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// One thread that sets RunOptions::terminate when a run passes its deadline.
class Watchdog {
 public:
  Watchdog() : thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void arm(RunOptions* options, std::chrono::milliseconds after) {
    std::lock_guard lock(mu_);
    options_ = options;
    deadline_ = std::chrono::steady_clock::now() + after;
    cv_.notify_all();
  }
  void disarm() {
    std::lock_guard lock(mu_);
    options_ = nullptr;
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      if (!options_) {
        cv_.wait(lock);
      } else if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && options_ &&
                 std::chrono::steady_clock::now() >= deadline_) {
        options_->terminate = true;
        options_ = nullptr;
      }
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  RunOptions* options_ = nullptr;
  std::chrono::steady_clock::time_point deadline_;
  bool stop_ = false;
  std::thread thread_;
};

// Reads every byte of a value (tensors, sequence items, optional contents),
// so that a buffer smaller than its shape says shows up under ASan.
inline uint64_t touch(const Tensor& t) {
  uint64_t sum = 0;
  if (!t.defined()) return 0;
  if (t.is_sequence()) {
    for (const Tensor& item : t.sequence_items()) sum += touch(item);
    return sum;
  }
  if (t.is_optional()) {
    const Tensor* v = t.optional_value();
    return v ? touch(*v) : 0;
  }
  if (t.dtype() == DataType::kString) {
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.numel(); ++i) sum += s[i].size();
    return sum;
  }
  const auto* p = static_cast<const unsigned char*>(t.raw_data());
  const size_t n = t.nbytes();
  for (size_t i = 0; i < n; ++i) sum += p[i];
  return sum;
}

// A small input for a declared graph input: dynamic dimensions become 2,
// values are small (integers 0..4, so they are valid indices for most
// shapes; floats in [-2.5, 2.5]). Returns an undefined Tensor when the
// declared shape is larger than kMaxInputElements.
inline Tensor make_input(const TensorInfo& info) {
  if (info.is_optional) return Tensor::optional(info.dtype, info.is_sequence);
  if (info.is_sequence) return Tensor::sequence(info.dtype, {});
  Shape shape = info.shape;
  for (int64_t& d : shape)
    if (d < 0) d = 2;
  const auto n = checked_numel(shape);
  if (!n || *n > kMaxInputElements || (dtype_size(info.dtype) == 0 && info.dtype != DataType::kString)) return {};
  Tensor t(info.dtype, shape);
  for (int64_t i = 0; i < *n; ++i) {
    const int64_t k = (i * 7) % 11 - 5;
    const int64_t idx = (i * 3) % 5;
    switch (info.dtype) {
      case DataType::kFloat32: t.mutable_data<float>()[i] = 0.5f * static_cast<float>(k); break;
      case DataType::kFloat64: t.mutable_data<double>()[i] = 0.5 * static_cast<double>(k); break;
      case DataType::kFloat16:
        static_cast<uint16_t*>(t.raw_mutable_data())[i] = float_to_float16(0.5f * static_cast<float>(k));
        break;
      case DataType::kInt64: t.mutable_data<int64_t>()[i] = idx; break;
      case DataType::kInt32: t.mutable_data<int32_t>()[i] = static_cast<int32_t>(idx); break;
      case DataType::kInt16: t.mutable_data<int16_t>()[i] = static_cast<int16_t>(idx); break;
      case DataType::kInt8: t.mutable_data<int8_t>()[i] = static_cast<int8_t>(idx); break;
      case DataType::kUInt8: t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(idx); break;
      case DataType::kUInt16: t.mutable_data<uint16_t>()[i] = static_cast<uint16_t>(idx); break;
      case DataType::kUInt32: t.mutable_data<uint32_t>()[i] = static_cast<uint32_t>(idx); break;
      case DataType::kUInt64: t.mutable_data<uint64_t>()[i] = static_cast<uint64_t>(idx); break;
      case DataType::kBool: t.mutable_data<bool>()[i] = (i & 1) != 0; break;
      case DataType::kString: t.mutable_data<std::string>()[i] = (i & 1) ? "a" : "bc"; break;
      default: return {};
    }
  }
  return t;
}

// Runs `session` once on `feeds` under the run deadline and reads every
// output. Errors are spindle::Error (caught by the caller's guarded()).
inline void run_capped(InferenceSession& session, const Feeds& feeds) {
  static Watchdog watchdog;
  RunOptions options;
  watchdog.arm(&options, kRunDeadline);
  struct Disarm {
    ~Disarm() { watchdog.disarm(); }
  } disarm;
  for (const Tensor& out : session.run(feeds, {}, &options)) touch(out);
}

}  // namespace spindle::fuzz
