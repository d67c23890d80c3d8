// spindle_module.cpp — the extension module `spindle._C` under the Python
// package `spindle` (spindle/__init__.py), shaped like ONNX Runtime's so that
// existing code changes only its import:
//
//   so = spindle.SessionOptions()
//   so.intra_op_num_threads = 2
//   so.execution_mode = spindle.ExecutionMode.ORT_PARALLEL
//   so.add_session_config_entry("session.intra_op.allow_spinning", "0")
//   sess = spindle.InferenceSession("model.onnx", so)
//   outputs = sess.run(None, {"x": array})
//
// Inputs are numpy arrays, borrowed without a copy when C-contiguous, aligned
// and in native byte order (copied into such an array otherwise; an element
// type the model does not expect is an error); outputs are numpy arrays
// that own the runtime's output buffers (no copy). The GIL is released while
// a model runs, so Python threads running sessions really overlap. spindle
// errors become Python exceptions with ONNX Runtime's class names and
// spindle's message (errors.cpp). Providers, OrtValue, IOBinding and the
// other pure-Python parts of ONNX Runtime's API are in spindle/__init__.py.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>

#include <onnx/onnx_pb.h>

#include "errors.h"
#include "spindle/environment.h"
#include "spindle/logging.h"
#include "spindle/random.h"
#include "spindle/session.h"
#include "spindle/version.h"

namespace py = pybind11;

#ifdef SPINDLE_PYTHON_CUSTOM_OPS
// Defined by spindle's ONNX Runtime C API (src/capi/api_custom_ops.cpp),
// which this module compiles in (CMakeLists.txt): a library of ONNX Runtime
// custom ops registers them through that API's function table, as it does
// under ONNX Runtime.
namespace spindle::capi {
Status register_custom_ops_library(SessionOptions& options, const std::string& path);
}
#endif

namespace spindle {
namespace {

struct DtypeName {
  DataType dtype;
  const char* numpy;  // numpy dtype string
  const char* onnx;   // ONNX Runtime's type string
};
constexpr DtypeName kDtypes[] = {
    {DataType::kFloat32, "float32", "tensor(float)"},    {DataType::kFloat64, "float64", "tensor(double)"},
    {DataType::kFloat16, "float16", "tensor(float16)"},  {DataType::kInt8, "int8", "tensor(int8)"},
    {DataType::kInt16, "int16", "tensor(int16)"},        {DataType::kInt32, "int32", "tensor(int32)"},
    {DataType::kInt64, "int64", "tensor(int64)"},        {DataType::kUInt8, "uint8", "tensor(uint8)"},
    {DataType::kUInt16, "uint16", "tensor(uint16)"},     {DataType::kUInt32, "uint32", "tensor(uint32)"},
    {DataType::kUInt64, "uint64", "tensor(uint64)"},     {DataType::kBool, "bool", "tensor(bool)"},
};

const DtypeName* by_dtype(DataType t) {
  for (const auto& d : kDtypes)
    if (d.dtype == t) return &d;
  return nullptr;
}

// A numpy array of str / bytes / object -> a string tensor (copied; bytes
// are taken as UTF-8, objects through str()).
Tensor to_string_tensor(const py::array& a) {
  const py::array flat = py::module_::import("numpy").attr("ravel")(a);
  Tensor t(DataType::kString, Shape(a.shape(), a.shape() + a.ndim()));
  std::string* out = t.mutable_data<std::string>();
  int64_t i = 0;
  for (const auto& item : flat) {
    if (py::isinstance<py::bytes>(item)) out[i++] = item.cast<std::string>();
    else out[i++] = py::str(item).cast<std::string>();
  }
  return t;
}

// numpy has no bfloat16: ml_dtypes.bfloat16 when ml_dtypes is importable
// (as JAX and ONNX Runtime's tools use), else None, and bfloat16 values
// travel as uint16 arrays of their bits.
py::object bfloat16_numpy_dtype() {
  static py::object* cached = [] {
    auto* d = new py::object(py::none());  // kept for the process: no teardown order issue
    try {
      *d = py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
    } catch (const py::error_already_set&) {
    }
    return d;
  }();
  return *cached;
}
// The numpy dtype of each kDtypes entry, made once: building a dtype from
// its name on every call costs more than a small model's run takes to feed.
const py::dtype& cached_dtype(const DtypeName& d) {
  static const std::vector<py::dtype>* cached = [] {
    auto* v = new std::vector<py::dtype>;  // kept for the process, as bfloat16_numpy_dtype's
    for (const auto& e : kDtypes) v->push_back(py::dtype(e.numpy));
    return v;
  }();
  return (*cached)[static_cast<size_t>(&d - kDtypes)];
}

py::dtype numpy_dtype(DataType t, const DtypeName& d) {
  if (t == DataType::kBFloat16) {
    const py::object bf = bfloat16_numpy_dtype();
    return bf.is_none() ? cached_dtype(*by_dtype(DataType::kUInt16)) : py::reinterpret_borrow<py::dtype>(bf);
  }
  return cached_dtype(d);
}

// The kDtypes entry a numpy dtype stands for, compared in native byte order
// ('q' and 'l', '>f4' and '<f4' name the same element type); null if none.
// A dtype in native order (nearly every array) matches without making the
// native-order copy of it, and numpy's own dtype objects (those of
// np.float32 etc., shared by the arrays made with them) by identity first.
const DtypeName* match_dtype(const py::dtype& dt) {
  for (const auto& d : kDtypes)
    if (dt.ptr() == cached_dtype(d).ptr()) return &d;
  for (const auto& d : kDtypes)
    if (dt.equal(cached_dtype(d))) return &d;
  const py::dtype native = dt.attr("newbyteorder")("=");
  for (const auto& d : kDtypes)
    if (native.equal(cached_dtype(d))) return &d;
  return nullptr;
}

// numpy array -> Tensor (borrowed: `keep` holds the array until the run ends).
// `declared` is the model input's element type: a uint16 array given for a
// bfloat16 input holds the bfloat16 bits.
Tensor to_tensor(const std::string& name, const py::handle& value, std::vector<py::object>& keep,
                 DataType declared = DataType::kUndefined) {
  py::array a = py::array::ensure(value);
  if (!a) throw Error(StatusCode::kInvalidArgument, "input '" + name + "' is not convertible to a numpy array");
  const char kind = a.dtype().kind();
  if (kind == 'U' || kind == 'S' || kind == 'O') return to_string_tensor(a);
  const DtypeName* match = match_dtype(a.dtype());
  DataType dtype = match ? match->dtype : DataType::kUndefined;
  const py::object bf = bfloat16_numpy_dtype();
  if ((!bf.is_none() && a.dtype().equal(bf)) || (dtype == DataType::kUInt16 && declared == DataType::kBFloat16)) {
    dtype = DataType::kBFloat16;
    match = by_dtype(DataType::kUInt16);
  }
  if (!match)
    throw Error(StatusCode::kInvalidArgument,
                "input '" + name + "' has numpy dtype " + std::string(py::str(a.dtype())) +
                    ", which spindle does not support (expected float32, float64, float16, int8..int64, "
                    "uint8..uint64, bool, str, or ml_dtypes.bfloat16 / uint16 bits for bfloat16)");
  const py::dtype want = dtype == DataType::kBFloat16 ? a.dtype() : cached_dtype(*match);
  // Borrowed as is when C-contiguous, aligned and in native byte order;
  // otherwise copied into such an array, never rejected.
  const bool aligned = reinterpret_cast<uintptr_t>(a.data()) % dtype_size(dtype) == 0;
  const bool usable = (a.flags() & py::array::c_style) && aligned && a.dtype().equal(want);
  if (!usable) a = py::module_::import("numpy").attr("require")(a, want, py::make_tuple("C", "A"));
  Shape shape(a.shape(), a.shape() + a.ndim());
  keep.push_back(a);
  return Tensor::borrow(dtype, std::move(shape), const_cast<void*>(a.data()));
}

// A list of arrays -> a sequence value of `elem` tensors (ONNX Runtime takes
// lists for seq(tensor) inputs).
Tensor to_sequence(const std::string& name, const py::handle& value, DataType elem, std::vector<py::object>& keep) {
  if (!py::isinstance<py::list>(value) && !py::isinstance<py::tuple>(value))
    throw Error(StatusCode::kInvalidArgument, "input '" + name + "' is a sequence: expected a list of numpy arrays, got " +
                                                  std::string(py::str(py::type::of(value))));
  std::vector<Tensor> items;
  for (const auto& item : value) items.push_back(to_tensor(name, item, keep, elem));
  DataType dt = elem != DataType::kUndefined ? elem : items.empty() ? DataType::kFloat32 : items[0].dtype();
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].dtype() != dt)
      throw Error(StatusCode::kInvalidArgument, "input '" + name + "': item " + std::to_string(i) + " is " +
                                                    items[i].describe() + ", expected " + dtype_name(dt) +
                                                    " like the model's sequence");
  return Tensor::sequence(dt, std::move(items));
}

// Outputs up to this size are copied into an array numpy allocates (one
// object); larger ones are handed over without a copy (the array then holds
// the tensor through a capsule).
constexpr size_t kCopiedOutputBytes = 64 << 10;

// Whether byte strides are those of a C-order array of the shape.
bool dense(const std::vector<py::ssize_t>& shape, const std::vector<py::ssize_t>& strides, py::ssize_t element) {
  py::ssize_t want = element;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != want) return false;
    want *= shape[i];
  }
  return true;
}

// Tensor -> numpy array owning the tensor (no copy when the tensor is its
// buffer's only holder and large); a string tensor -> an
// object array of str; a sequence -> a list of arrays; an optional -> None
// or what it holds.
py::object to_numpy(Tensor t) {
  if (t.is_optional()) {
    const Tensor* held = t.optional_value();
    return held ? to_numpy(*held) : py::none();
  }
  if (t.is_sequence()) {
    py::list out;
    for (const Tensor& item : t.sequence_items()) out.append(to_numpy(item));
    return out;
  }
  if (t.dtype() == DataType::kString) {
    py::array out(py::dtype("O"), std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()));
    auto** cells = static_cast<PyObject**>(out.mutable_data());
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      PyObject* str = PyUnicode_DecodeUTF8(s[i].data(), static_cast<py::ssize_t>(s[i].size()), "replace");
      if (!str) throw py::error_already_set();
      Py_XDECREF(cells[i]);
      cells[i] = str;
    }
    return out;
  }
  const DtypeName* d = by_dtype(t.dtype() == DataType::kBFloat16 ? DataType::kUInt16 : t.dtype());
  if (!d) throw Error(StatusCode::kUnsupported, "an output of dtype " + dtype_name(t.dtype()) + " cannot be returned to numpy");
  const py::dtype np_dtype = numpy_dtype(t.dtype(), *d);
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  std::vector<py::ssize_t> strides;
  const auto es = static_cast<py::ssize_t>(dtype_size(t.dtype()));
  for (int64_t s : t.strides()) strides.push_back(static_cast<py::ssize_t>(s) * es);
  // Shared memory (a constant of the model, an input's borrowed buffer,
  // another output) is copied, so writing into the array changes nothing else.
  const std::shared_ptr<Buffer>& b = t.buffer();
  if (!b || !b->owned() || b.use_count() != 1 || t.nbytes() <= kCopiedOutputBytes) {
    if (!dense(shape, strides, es)) return py::array(np_dtype, shape, strides, t.raw_data());
    py::array out(np_dtype, shape);
    if (t.nbytes()) std::memcpy(out.mutable_data(), t.raw_data(), t.nbytes());
    return out;
  }
  auto* owner = new Tensor(std::move(t));
  py::capsule free_when_done(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(np_dtype, shape, strides, owner->raw_data(), free_when_done);
}

// An input or output as ONNX Runtime's NodeArg: name, shape, type.
struct NodeArg {
  std::string name;
  py::list shape;
  std::string type;
};

NodeArg node_arg(const TensorInfo& info) {
  NodeArg a;
  a.name = info.name;
  for (size_t i = 0; i < info.shape.size(); ++i) {
    if (info.shape[i] >= 0) a.shape.append(info.shape[i]);
    else if (i < info.dim_names.size() && !info.dim_names[i].empty()) a.shape.append(info.dim_names[i]);
    else a.shape.append(py::none());
  }
  const DtypeName* d = by_dtype(info.dtype);
  a.type = d ? d->onnx : info.dtype == DataType::kString ? "tensor(string)" : "tensor(" + dtype_name(info.dtype) + ")";
  // ("tensor(bfloat16)" from dtype_name, as ONNX Runtime spells it.)
  if (info.is_sequence) a.type = "seq(" + a.type + ")";
  if (info.is_optional) a.type = "optional(" + a.type + ")";
  return a;
}

// ONNX Runtime's verbosity and memory-planning settings, accepted so that
// existing code runs unchanged: spindle's log has severities only (the
// session's log_severity_level and logid are SessionOptions' fields), and
// spindle plans memory per run itself, so they change nothing. RunOptions'
// log_severity_level and logid (its run_tag) set what a failed run logs.
struct PySessionOptions : SessionOptions {
  int log_verbosity_level = 0;
  bool enable_cpu_mem_arena = true;
  bool enable_mem_pattern = true;
  bool enable_mem_reuse = true;
};
// only_execute_path_to_fetches likewise: spindle always runs only the nodes
// the requested outputs depend on, whatever its value.
struct PyRunOptions : RunOptions {
  int log_verbosity_level = 0;
  bool only_execute_path_to_fetches = false;
};

// The RunOptions an argument holds; a TypeError naming `where` otherwise.
PyRunOptions* run_options_of(const char* where, const py::object& options) {
  if (!py::isinstance<PyRunOptions>(options))
    throw py::type_error(std::string(where) + ": run_options is a " +
                         std::string(py::str(py::type::of(options).attr("__name__"))) +
                         ", expected spindle.RunOptions or None");
  return options.cast<PyRunOptions*>();
}

// run_async requests whose callback has not yet returned. A callback needs
// the GIL, which a thread cannot take once the interpreter is finalizing (it
// would be stopped mid-call and the process aborted), so interpreter exit
// waits for them first (registered with atexit by the module). Exit must not
// wait forever for a run that never ends (an endless Loop): after
// kExitGrace it sets terminate on the RunOptions of every request still
// running, so each ends with kCancelled at its next check.
constexpr auto kExitGrace = std::chrono::seconds(5);
class AsyncRuns {
 public:
  static AsyncRuns& instance() {
    static auto* runs = new AsyncRuns;  // never destroyed: pool threads may end requests during exit
    return *runs;
  }
  // `ro` stays valid until forget(ro).
  void begin(RunOptions* ro) {
    std::lock_guard lock(mutex_);
    ++pending_;
    running_.insert(ro);
  }
  void forget(RunOptions* ro) {
    std::lock_guard lock(mutex_);
    running_.erase(ro);
  }
  void end() {
    std::lock_guard lock(mutex_);
    if (--pending_ == 0) done_.notify_all();
  }
  // Called with the GIL held; releases it while waiting.
  void wait_all_then_terminate() {
    py::gil_scoped_release release;
    std::unique_lock lock(mutex_);
    if (done_.wait_for(lock, kExitGrace, [this] { return pending_ == 0; })) return;
    for (RunOptions* ro : running_) ro->terminate.store(true);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  int pending_ = 0;
  std::set<RunOptions*> running_;
};

class PySession {
 public:
  PySession(const py::object& path_or_bytes, const std::optional<PySessionOptions>& options,
            const py::object& providers, const py::object& provider_options, const py::kwargs& kwargs)
      : options_(options.value_or(PySessionOptions{})) {
    check_providers(providers, provider_options);
    check_kwargs(kwargs);
    if (kwargs.contains("disabled_optimizers") && !kwargs["disabled_optimizers"].is_none()) {
      // ONNX Runtime's list (or set) of pass names, as its config key takes them.
      std::string names;
      for (const auto& n : kwargs["disabled_optimizers"]) names += (names.empty() ? "" : ",") + std::string(py::str(n));
      options_.add_config_entry(config_keys::kDisableOptimizers, names);
    }
    try {
      load(path_or_bytes);
    } catch (const Error& e) {
      python::rethrow_load_error(e, py::isinstance<py::bytes>(path_or_bytes) ? "<model bytes>"
                                                                             : std::string(py::str(path_or_bytes)));
    }
  }
  // Outstanding run_async callbacks need the GIL: the session's destructor
  // waits for them with the GIL released.
  ~PySession() {
    py::gil_scoped_release release;
    session_.reset();
  }

  std::vector<NodeArg> get_inputs() const {
    std::vector<NodeArg> out;
    for (const auto& i : session_->inputs()) out.push_back(node_arg(i));
    return out;
  }
  std::vector<NodeArg> get_overridable_initializers() const {
    std::vector<NodeArg> out;
    for (const auto& i : session_->overridable_initializers()) out.push_back(node_arg(i));
    return out;
  }
  std::vector<NodeArg> get_outputs() const {
    std::vector<NodeArg> out;
    for (const auto& o : session_->outputs()) out.push_back(node_arg(o));
    return out;
  }

  // run_options is taken as an object: pybind11 converting None to a
  // pointer first asks None for a foreign type, raising and clearing an
  // AttributeError on every call.
  py::list run(const py::object& output_names, const py::dict& feed, const py::object& options) {
    PyRunOptions* run_options = options.is_none() ? nullptr : run_options_of("run", options);
    const std::vector<std::string> names = to_names(output_names);
    std::vector<py::object> keep;
    const Feeds feeds = to_feeds(feed, keep);
    std::vector<Tensor> outputs;
    {
      py::gil_scoped_release release;
      outputs = session_->run(feeds, names, run_options);
    }
    return to_list(std::move(outputs));
  }

  // ONNX Runtime's run_async: returns at once; callback(outputs, user_data,
  // err) is called on the inter-op pool, holding the GIL, with the outputs
  // (a list of numpy arrays; empty on failure) and err = "" or the message.
  void run_async(const py::object& output_names, const py::dict& feed, const py::function& callback,
                 const py::object& user_data, const py::object& run_options) {
    // What the request holds of Python: the callback, the user data, the run
    // options (the caller's, else the request's own, so that interpreter exit
    // can terminate the run) and the fed arrays the feeds borrow.
    struct PyRefs {
      py::function callback;
      py::object user_data;
      py::object run_options;
      std::vector<py::object> keep;
    };
    // Released under the GIL by whichever thread drops the request last
    // (when the run could not be started, the caller).
    struct Request {
      std::unique_ptr<PyRefs> refs;
      ~Request() {
        if (!refs) return;
        py::gil_scoped_acquire acquire;
        refs.reset();
      }
    };
    py::object options = run_options.is_none()
                             ? py::cast(new PyRunOptions(), py::return_value_policy::take_ownership)
                             : run_options;
    PyRunOptions* ro = run_options_of("run_async", options);
    auto request = std::make_shared<Request>();
    request->refs.reset(new PyRefs{callback, user_data, std::move(options), {}});
    Feeds feeds = to_feeds(feed, request->refs->keep);
    std::vector<std::string> names = to_names(output_names);
    AsyncRuns::instance().begin(ro);
    py::gil_scoped_release release;
    try {
      session_->run_async(
          std::move(feeds), std::move(names),
          [request, ro](Status status, std::vector<Tensor> outputs) {
            {
              py::gil_scoped_acquire acquire;
              PyRefs& r = *request->refs;
              try {
                if (status.is_ok()) r.callback(to_list(std::move(outputs)), r.user_data, std::string());
                else r.callback(py::list(), r.user_data, status.to_string());
              } catch (py::error_already_set& e) {
                // An exception in the callback has nowhere to go: reported like
                // Python reports one in a thread.
                e.discard_as_unraisable("spindle run_async callback");
              } catch (const std::exception& e) {
                PyErr_SetString(PyExc_RuntimeError, e.what());
                PyErr_WriteUnraisable(r.callback.ptr());
              }
              AsyncRuns::instance().forget(ro);  // before its owner may be dropped
              // The callback may hold the last reference to this session, whose
              // destructor waits for this very callback: its references are
              // dropped on the main thread instead (a pending call).
              PyRefs* refs = request->refs.release();
              if (Py_AddPendingCall([](void* p) { delete static_cast<PyRefs*>(p); return 0; }, refs) != 0) delete refs;
            }
            AsyncRuns::instance().end();  // after the last use of the GIL
          },
          ro);
    } catch (...) {
      AsyncRuns::instance().forget(ro);
      AsyncRuns::instance().end();
      throw;
    }
  }

 private:
  void load(const py::object& path_or_bytes) {
    const SessionOptions& opts = options_;
    if (py::isinstance<py::bytes>(path_or_bytes)) {
      const std::string bytes = path_or_bytes.cast<std::string>();
      py::gil_scoped_release release;
      session_ = InferenceSession::create_from_bytes(
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), opts);
    } else {
      const std::string path = py::str(path_or_bytes);
      py::gil_scoped_release release;
      session_ = InferenceSession::create(path, opts);
    }
  }

  static std::vector<std::string> to_names(const py::object& output_names) {
    if (output_names.is_none()) return {};
    return output_names.cast<std::vector<std::string>>();
  }
  static py::list to_list(std::vector<Tensor> outputs) {
    py::list result;
    for (auto& t : outputs) result.append(to_numpy(std::move(t)));
    return result;
  }
  Feeds to_feeds(const py::dict& feed, std::vector<py::object>& keep) const {
    Feeds feeds;
    for (const auto& [k, v] : feed) {
      const std::string name = py::str(k);
      const TensorInfo* info = nullptr;
      for (const auto& i : session_->inputs())
        if (i.name == name) info = &i;
      if (info && info->is_optional) {
        // None is the empty optional; anything else is what it holds.
        Tensor held;
        if (!v.is_none())
          held = info->is_sequence ? to_sequence(name, v, info->dtype, keep) : to_tensor(name, v, keep, info->dtype);
        const DataType dt = held.defined() ? held.dtype() : info->dtype == DataType::kUndefined ? DataType::kFloat32 : info->dtype;
        feeds.emplace_back(name, Tensor::optional(dt, info->is_sequence, held));
      } else if (info && info->is_sequence) {
        feeds.emplace_back(name, to_sequence(name, v, info->dtype, keep));
      } else {
        feeds.emplace_back(name, to_tensor(name, v, keep, info ? info->dtype : DataType::kUndefined));
      }
    }
    return feeds;
  }

 public:
  std::vector<std::string> get_providers() const { return {"CPUExecutionProvider"}; }
  py::dict get_provider_options() const {
    py::dict d;
    d["CPUExecutionProvider"] = py::dict();
    return d;
  }
  const ModelMetadata& get_modelmeta() const { return session_->model_metadata(); }
  const PySessionOptions& get_session_options() const { return options_; }
  std::string end_profiling() { return session_->end_profiling(); }

 private:
  // Providers are accepted for drop-in compatibility: the CPU one only.
  static void check_providers(const py::object& providers, const py::object& provider_options) {
    if (providers.is_none()) return;
    size_t count = 0;
    for (const auto& p : providers) {
      ++count;
      // ONNX Runtime also accepts (name, options) tuples.
      const std::string name = py::isinstance<py::tuple>(p) ? py::str(p.cast<py::tuple>()[0]) : py::str(p);
      if (name != "CPUExecutionProvider")
        throw Error(StatusCode::kInvalidArgument,
                    "provider '" + name + "' is not available; spindle runs on CPU: use ['CPUExecutionProvider']");
    }
    if (!provider_options.is_none() && py::len(provider_options) != count)
      throw Error(StatusCode::kInvalidArgument,
                  "provider_options has " + std::to_string(py::len(provider_options)) + " entries for " +
                      std::to_string(count) + " provider(s); expected one per provider");
  }
  // ONNX Runtime's other keyword arguments are accepted (disabled_optimizers
  // names passes not to run; the other two have no effect here); any other
  // name is a TypeError, as for a Python function.
  static void check_kwargs(const py::kwargs& kwargs) {
    static const char* const kIgnored[] = {"disabled_optimizers", "enable_fallback", "read_config_from_model"};
    for (const auto& [k, v] : kwargs) {
      const std::string key = py::str(k);
      if (std::find(std::begin(kIgnored), std::end(kIgnored), key) == std::end(kIgnored))
        throw py::type_error("InferenceSession() got an unexpected keyword argument '" + key +
                             "' (accepted: sess_options, providers, provider_options, disabled_optimizers, "
                             "enable_fallback, read_config_from_model)");
    }
  }
  PySessionOptions options_;
  std::unique_ptr<InferenceSession> session_;
};

}  // namespace
}  // namespace spindle

PYBIND11_MODULE(_C, m) {
  using namespace spindle;
  m.doc() = "spindle's extension module; use the package `spindle`";
  m.attr("__version__") = version();
  python::register_errors(m);
  py::module_::import("atexit").attr("register")(
      py::cpp_function([] { AsyncRuns::instance().wait_all_then_terminate(); }, py::name("_wait_for_async_runs")));

  py::enum_<ExecutionMode>(m, "ExecutionMode",
                           "Sequential: nodes one after another; parallel: independent nodes on the inter-op pool")
      .value("ORT_SEQUENTIAL", ExecutionMode::kSequential)
      .value("ORT_PARALLEL", ExecutionMode::kParallel);
  py::enum_<GraphOptimizationLevel>(m, "GraphOptimizationLevel", "How far the optimizer rewrites the graph at load")
      .value("ORT_DISABLE_ALL", GraphOptimizationLevel::kDisableAll)
      .value("ORT_ENABLE_BASIC", GraphOptimizationLevel::kBasic)
      .value("ORT_ENABLE_EXTENDED", GraphOptimizationLevel::kExtended)
      .value("ORT_ENABLE_ALL", GraphOptimizationLevel::kAll);

  // Thread counts are checked when set, by the same validation (and with the
  // same message) as session creation.
  auto thread_count = [](ThreadingOptions SessionSettings::*pool) {
    return [pool](PySessionOptions& o, int v) {
      SessionOptions probe;
      (probe.*pool).num_threads = v;
      probe.validate().throw_if_error();
      (o.*pool).num_threads = v;
    };
  };
  py::class_<PySessionOptions>(m, "SessionOptions")
      .def(py::init<>())
      .def_property("intra_op_num_threads", [](const PySessionOptions& o) { return o.intra_op_num_threads; },
                    thread_count(&SessionSettings::intra_op))
      .def_property("inter_op_num_threads", [](const PySessionOptions& o) { return o.inter_op_num_threads; },
                    thread_count(&SessionSettings::inter_op))
      .def_readwrite("execution_mode", &SessionOptions::execution_mode)
      .def_readwrite("graph_optimization_level", &SessionOptions::graph_optimization_level)
      .def_readwrite("use_per_session_threads", &SessionOptions::use_per_session_threads)
      .def_readwrite("enable_profiling", &SessionOptions::enable_profiling)
      .def_readwrite("profile_file_prefix", &SessionOptions::profile_file_prefix)
      .def_readwrite("optimized_model_filepath", &SessionOptions::optimized_model_filepath)
      .def_readwrite("log_severity_level", &SessionOptions::log_severity_level)  // -1: the process default
      .def_readwrite("log_verbosity_level", &PySessionOptions::log_verbosity_level)
      .def_readwrite("logid", &SessionOptions::log_id)
      .def_readwrite("enable_cpu_mem_arena", &PySessionOptions::enable_cpu_mem_arena)
      .def_readwrite("enable_mem_pattern", &PySessionOptions::enable_mem_pattern)
      .def_readwrite("enable_mem_reuse", &PySessionOptions::enable_mem_reuse)
      .def("add_session_config_entry",
           [](PySessionOptions& o, const std::string& key, const std::string& value) { o.add_config_entry(key, value); })
      .def("get_session_config_entry", [](const PySessionOptions& o, const std::string& key) {
        auto value = o.config_entry(key);
        if (!value) throw Error(StatusCode::kNotFound, "session config entry '" + key + "' is not set");
        return *value;
      })
      .def("register_custom_ops_library", [](PySessionOptions& o, const std::string& path) {
#ifdef SPINDLE_PYTHON_CUSTOM_OPS
        // A missing library is NoSuchFile, as a missing model file.
        if (Status s = capi::register_custom_ops_library(o, path); !s.is_ok()) python::rethrow_load_error(Error(s), path);
#else
        throw Error(StatusCode::kUnsupported, "register_custom_ops_library: this build of spindle has no ONNX "
                                              "Runtime C API (libonnxruntime) to register '" + path + "' through");
#endif
      });

  py::class_<PyRunOptions>(m, "RunOptions")
      .def(py::init<>())
      // -1 (the default): the session's severity; logid is the run's tag, as in ONNX Runtime
      .def_readwrite("log_severity_level", &RunOptions::log_severity_level)
      .def_readwrite("log_verbosity_level", &PyRunOptions::log_verbosity_level)
      .def_readwrite("logid", &RunOptions::run_tag)
      // spindle: always on (a run skips the nodes no requested output needs); the value is kept, not read
      .def_readwrite("only_execute_path_to_fetches", &PyRunOptions::only_execute_path_to_fetches)
      .def_property("terminate", [](const PyRunOptions& r) { return r.terminate.load(); },
                    [](PyRunOptions& r, bool v) { r.terminate.store(v); })
      .def_readwrite("run_tag", &RunOptions::run_tag)
      .def_readwrite("timeout_ms", &RunOptions::timeout_ms);  // spindle: fail the run past this many ms (0 = none)

  py::class_<ModelMetadata>(m, "ModelMetadata", "The model's metadata (InferenceSession.get_modelmeta())")
      .def_readonly("producer_name", &ModelMetadata::producer_name)
      .def_readonly("graph_name", &ModelMetadata::graph_name)
      .def_readonly("domain", &ModelMetadata::domain)
      .def_readonly("description", &ModelMetadata::description)
      .def_readonly("graph_description", &ModelMetadata::graph_description)
      .def_readonly("version", &ModelMetadata::version)
      .def_readonly("custom_metadata_map", &ModelMetadata::custom_metadata_map);

  py::class_<NodeArg>(m, "NodeArg", "A model input or output: name, shape (ints, dimension names, None), type")
      .def(py::init([](std::string name, py::list shape, std::string type) {
             return NodeArg{std::move(name), std::move(shape), std::move(type)};
           }),
           py::arg("name"), py::arg("shape"), py::arg("type"))
      .def_readonly("name", &NodeArg::name)
      .def_readonly("shape", &NodeArg::shape)
      .def_readonly("type", &NodeArg::type)
      .def("__repr__", [](const NodeArg& a) {
        return "NodeArg(name='" + a.name + "', type='" + a.type + "', shape=" + std::string(py::repr(a.shape)) + ")";
      });

  py::class_<PySession>(m, "InferenceSession")
      .def(py::init<const py::object&, const std::optional<PySessionOptions>&, const py::object&, const py::object&,
                    const py::kwargs&>(),
           py::arg("path_or_bytes"), py::arg("sess_options") = py::none(), py::arg("providers") = py::none(),
           py::arg("provider_options") = py::none())
      .def("get_inputs", &PySession::get_inputs)
      .def("get_overridable_initializers", &PySession::get_overridable_initializers)
      .def("get_outputs", &PySession::get_outputs)
      .def("get_providers", &PySession::get_providers)
      .def("get_provider_options", &PySession::get_provider_options)
      .def("get_modelmeta", &PySession::get_modelmeta, py::return_value_policy::copy)
      .def("get_session_options", &PySession::get_session_options, py::return_value_policy::copy)
      .def("end_profiling", &PySession::end_profiling)
      .def("run", &PySession::run, py::arg("output_names"), py::arg("input_feed"),
           py::arg("run_options") = py::none())
      .def("run_async", &PySession::run_async, py::arg("output_names"), py::arg("input_feed"), py::arg("callback"),
           py::arg("user_data") = py::none(), py::arg("run_options") = py::none());

  m.def("_set_seed", [](int64_t seed) { set_random_seed(seed); }, py::arg("seed"));
  m.def("_set_default_log_severity", [](int severity) { set_default_log_severity(static_cast<LogSeverity>(severity)); },
        "The process default of spindle's log (0 verbose .. 4 fatal; checked by set_default_logger_severity)");
  // add_free_dimension_override_by_denotation: the graph inputs' dimension
  // denotations (the session keeps none), read from the model again only
  // when such an override was given. Inputs without any are left out.
  m.def("_input_dim_denotations", [](const py::object& model) {
    std::string bytes;
    if (py::isinstance<py::bytes>(model)) {
      bytes = model.cast<std::string>();
    } else {
      const std::string path = model.cast<std::string>();
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) throw Error(StatusCode::kNotFound, "cannot read " + path);
    }
    onnx::ModelProto proto;
    if (!proto.ParseFromString(bytes)) throw Error(StatusCode::kInvalidArgument, "the model is not a valid ONNX ModelProto");
    py::dict out;
    for (const auto& input : proto.graph().input()) {
      if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) continue;
      py::list dims;
      bool any = false;
      for (const auto& d : input.type().tensor_type().shape().dim()) {
        dims.append(d.denotation());
        any = any || !d.denotation().empty();
      }
      if (any) out[py::str(input.name())] = dims;
    }
    return out;
  });
  m.def("set_num_threads", [](int n) { set_num_threads(n); },
        "Threads of the global intra-op pool and of sessions created later with intra_op_num_threads = 0 "
        "(PyTorch's name)");
  m.def("get_num_threads", [] { return get_num_threads(); }, "The count set_num_threads set (or its default)");
  m.def("set_num_interop_threads", [](int n) { set_num_interop_threads(n); },
        "Threads of the global inter-op pool (PyTorch's name)");
  m.def("get_num_interop_threads", [] { return get_num_interop_threads(); },
        "The count set_num_interop_threads set (or its default)");
  m.def("parallel_info", [] { return parallel_info(); },
        "The threading layout: pools, threads, placement (PyTorch's name)");
}
