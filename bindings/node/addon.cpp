// addon.cpp — the native part of the Node.js package (N-API through
// node-addon-api). index.js wraps it in onnxruntime-node's API shape.
//
// Native surface:
//   createSession(pathOrBuffer, options) -> Promise<Session>   (loads off the JS thread)
//   Session.inputNames, Session.outputNames
//   Session.inputMetadata, Session.outputMetadata -> [{ name, isTensor, type, shape }]
//     (onnxruntime-node's shape: a dynamic dimension is its name, '' if unnamed)
//   Session.run(feeds, outputNames, runOptions[, flat]) -> Promise<{ name: { type, data, dims } }>
//     feeds: { name: { type, data, dims } } or the flat array [name, type, data, dims, ...]
//     runOptions: { timeoutMs, terminate, logSeverityLevel, tag } (RunOptions::timeout_ms /
//     terminate / log_severity_level / run_tag), or undefined
//     flat true: the result is the array [type, data, dims, ...] in the order of outputNames
//     (all outputs when not given); index.js passes and takes the flat forms
//     (fewer Node-API calls a run)
//   Session.release()   drops the session (runs in flight keep it until they
//                       end); any later call throws onnxruntime-node's
//                       'Session already disposed.'
//   parallelInfo() -> string
// options: { intraOpNumThreads, interOpNumThreads, executionMode: 'sequential' |
// 'parallel', graphOptimizationLevel: 'disabled' | 'basic' | 'extended' | 'all',
// config: { 'session.intra_op.allow_spinning': '0', ... }, syncRunThresholdUs,
// logSeverityLevel (0-4), logId, optimizedModelFilePath }
// (index.js flattens onnxruntime-node's `extra` object into `config`).
// A run goes to a libuv worker thread, so several runs overlap, unless the
// session's recent runs took less than `syncRunThresholdUs` (default
// kDefaultSyncThresholdUs, 50 ms): then it runs on the JS thread, as every
// onnxruntime-node run does, because the hop to a worker and back costs the
// run more than its ~40 us round trip (cold caches, copied feeds); the
// promise is resolved before run() returns. A run on the JS
// thread reads the feeds' typed arrays in place; a run on a worker gets
// copies made on the JS thread, so JavaScript may reuse its arrays at once.
// Reading the arguments can run JavaScript (getters, a Proxy), and
// JavaScript can detach an ArrayBuffer (structuredClone with transfer) and
// let the collector free its memory; so run() converts them in two phases:
// the first reads every property, type, dim, string and output name into C++
// values and handles without taking a pointer, the second takes the data
// pointers and checks their lengths, and from there until the run's outputs
// no longer point into any feed no JavaScript runs. Nothing is coerced
// (valueOf, toString): a value of the wrong JavaScript type is refused.
// Outputs over 64 MiB whose buffer nobody else holds are
// handed to JavaScript without a copy (an external ArrayBuffer that keeps the
// buffer alive); the others (small ones, and those that share memory with the
// model (an initializer) or with another output) are copied into an
// ArrayBuffer each, so writing into them changes nothing else.
// Errors reject the promise with the C++ message.
#include <napi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "spindle/environment.h"
#include "spindle/session.h"
#include "spindle/version.h"

namespace spindle {
namespace {

struct TypeName {
  DataType dtype;
  const char* name;  // onnxruntime-node's tensor type name
};
constexpr TypeName kTypes[] = {
    {DataType::kFloat32, "float32"}, {DataType::kFloat64, "float64"}, {DataType::kInt8, "int8"},
    {DataType::kUInt8, "uint8"},     {DataType::kInt16, "int16"},     {DataType::kUInt16, "uint16"},
    {DataType::kInt32, "int32"},     {DataType::kUInt32, "uint32"},   {DataType::kInt64, "int64"},
    {DataType::kUInt64, "uint64"},   {DataType::kBool, "bool"},       {DataType::kFloat16, "float16"},
    {DataType::kString, "string"},   {DataType::kBFloat16, "bfloat16"},
};

DataType dtype_of_name(const std::string& name) {
  for (const auto& t : kTypes)
    if (name == t.name) return t.dtype;
  std::string known;
  for (const auto& t : kTypes) known += (known.empty() ? "" : ", ") + std::string(t.name);
  throw Error(StatusCode::kInvalidArgument, "tensor type '" + name + "' is not supported (expected one of " + known + ")");
}

const char* name_of_dtype(DataType t) {
  for (const auto& k : kTypes)
    if (k.dtype == t) return k.name;
  return "unknown";
}

// An argument of the wrong JavaScript type: rejects as a TypeError, the
// class onnxruntime-node throws for one.
class ArgumentTypeError : public Error {
 public:
  explicit ArgumentTypeError(const std::string& message) : Error(StatusCode::kInvalidArgument, message) {}
};

// What JavaScript type a value is, for messages; reading it runs no JavaScript.
const char* js_type_name(const Napi::Value& v) {
  switch (v.Type()) {
    case napi_undefined: return "undefined";
    case napi_null: return "null";
    case napi_boolean: return "a boolean";
    case napi_number: return "a number";
    case napi_string: return "a string";
    case napi_symbol: return "a symbol";
    case napi_object: return v.IsArray() ? "an array" : "an object";
    case napi_function: return "a function";
    case napi_external: return "an external";
    case napi_bigint: return "a BigInt";
  }
  return "an unknown value";
}

// A string option. Not ToString(): on an object that calls its toString,
// user code in the middle of the conversion.
std::string string_option(const Napi::Object& o, const char* key) {
  const Napi::Value v = o.Get(key);
  if (!v.IsString()) throw ArgumentTypeError(std::string(key) + " is " + js_type_name(v) + ", expected a string");
  return v.As<Napi::String>().Utf8Value();
}

SessionOptions parse_options(const Napi::Object& o) {
  SessionOptions opts;
  auto count = [&](const char* key) -> int {
    const Napi::Value v = o.Get(key);
    if (!v.IsNumber())
      throw Error(StatusCode::kInvalidArgument, std::string(key) + " must be a number");
    const double d = v.As<Napi::Number>().DoubleValue();
    if (d < 0 || d != static_cast<int>(d))
      throw Error(StatusCode::kInvalidArgument,
                  std::string(key) + " is " + std::to_string(d) + ", expected 0 (default) or a positive integer");
    return static_cast<int>(d);
  };
  if (o.Has("intraOpNumThreads")) opts.intra_op_num_threads = count("intraOpNumThreads");
  if (o.Has("interOpNumThreads")) opts.inter_op_num_threads = count("interOpNumThreads");
  if (o.Has("executionMode")) {
    const std::string m = string_option(o, "executionMode");
    const auto mode = parse_execution_mode(m);
    if (!mode) throw Error(StatusCode::kInvalidArgument, "executionMode is '" + m + "', expected 'sequential' or 'parallel'");
    opts.execution_mode = *mode;
  }
  if (o.Has("graphOptimizationLevel")) {
    // onnxruntime-node's names: 'disabled' where spindle's other front ends say 'disable'.
    const std::string l = string_option(o, "graphOptimizationLevel");
    const auto level = l == "disable" ? std::nullopt : parse_optimization_level(l == "disabled" ? "disable" : l);
    if (!level)
      throw Error(StatusCode::kInvalidArgument,
                  "graphOptimizationLevel is '" + l + "', expected 'disabled', 'basic', 'extended' or 'all'");
    opts.graph_optimization_level = *level;
  }
  if (o.Has("logSeverityLevel")) opts.log_severity_level = count("logSeverityLevel");
  if (o.Has("logId")) opts.log_id = string_option(o, "logId");
  if (o.Has("enableProfiling")) opts.enable_profiling = o.Get("enableProfiling").ToBoolean();
  if (o.Has("profileFilePrefix")) opts.profile_file_prefix = string_option(o, "profileFilePrefix");
  if (o.Has("optimizedModelFilePath")) opts.optimized_model_filepath = string_option(o, "optimizedModelFilePath");
  if (o.Has("config")) {
    const Napi::Value cv = o.Get("config");
    if (!cv.IsObject()) throw ArgumentTypeError(std::string("config is ") + js_type_name(cv) + ", expected an object");
    const Napi::Object c = cv.As<Napi::Object>();
    const Napi::Array keys = c.GetPropertyNames();
    for (uint32_t i = 0; i < keys.Length(); ++i) {
      const std::string k = keys.Get(i).ToString();  // property names are strings
      const Napi::Value v = c.Get(k);
      if (!v.IsString())
        throw ArgumentTypeError("config entry '" + k + "' is " + js_type_name(v) + ", expected a string");
      opts.add_config_entry(k, v.As<Napi::String>().Utf8Value());
    }
  }
  return opts;
}

Napi::Error js_error(Napi::Env env, const std::string& message) { return Napi::Error::New(env, message); }
// The JavaScript error for a C++ exception: a TypeError for an argument of
// the wrong JavaScript type, an Error with the C++ message otherwise.
Napi::Value js_error_of(Napi::Env env, const std::exception& e) {
  if (dynamic_cast<const ArgumentTypeError*>(&e)) return Napi::TypeError::New(env, e.what()).Value();
  return js_error(env, e.what()).Value();
}

// Runs shorter than this run on the JavaScript thread (see the file comment).
// onnxruntime-node runs every run there, whatever its length, so up to here
// spindle blocks the event loop no longer than it would; longer runs still
// leave it free. The hop costs far more than its ~40 us round trip: the run
// moves to a worker on another core whose caches do not hold the model's
// weights, and its feeds are copied. Measured by bench/bindings/hop.js
// (docs/benchmarks.md, "The hop to a libuv worker"): at one intra-op thread
// the JavaScript thread ran 5-40 ms CNNs 3-14% faster (0-9% at two);
// if_model (0.28 ms) took 0.52 ms of CPU a run against 0.70 ms through a
// worker. 50 ms keeps models of that size on the JavaScript thread.
constexpr double kDefaultSyncThresholdUs = 50000;

// Recent run time of a session, shared by its runs on any thread: an
// exponential moving average (weight 1/4 per run) in nanoseconds; -1 until
// the first run finished.
struct RunClock {
  std::atomic<int64_t> recent_ns{-1};
  void record(std::chrono::steady_clock::duration d) {
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    const int64_t old = recent_ns.load(std::memory_order_relaxed);
    recent_ns.store(old < 0 ? ns : (3 * old + ns) / 4, std::memory_order_relaxed);
  }
};

std::vector<Tensor> timed_run(InferenceSession& s, const Feeds& feeds, const std::vector<std::string>& names,
                              RunOptions& run_options, RunClock& clock) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> out = s.run(feeds, names, &run_options);
  clock.record(std::chrono::steady_clock::now() - t0);
  return out;
}

// ---------------------------------------------------------------- Session

class Session : public Napi::ObjectWrap<Session> {
 public:

  static Napi::Function define(Napi::Env env) {
    return DefineClass(env, "Session",
                       {InstanceAccessor<&Session::input_names>("inputNames"),
                        InstanceAccessor<&Session::output_names>("outputNames"),
                        InstanceAccessor<&Session::input_metadata>("inputMetadata"),
                        InstanceAccessor<&Session::output_metadata>("outputMetadata"),
                        InstanceMethod<&Session::release>("release"),
                        InstanceMethod<&Session::run>("run"),
                        InstanceMethod<&Session::end_profiling>("endProfiling")});
  }

  explicit Session(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Session>(info) {}
  void set(std::shared_ptr<InferenceSession> s, double sync_threshold_us) {
    session_ = std::move(s);
    sync_threshold_ns_ = static_cast<int64_t>(sync_threshold_us * 1000);
  }

 private:
  // onnxruntime-node's message for any use of a released session.
  InferenceSession& live() const {
    if (!session_) throw Error(StatusCode::kInvalidArgument, "Session already disposed.");
    return *session_;
  }
  Napi::Value release(const Napi::CallbackInfo& info) {
    if (!session_) {
      js_error(info.Env(), "Session already disposed.").ThrowAsJavaScriptException();
      return info.Env().Undefined();
    }
    session_.reset();
    return info.Env().Undefined();
  }
  Napi::Value input_metadata(const Napi::CallbackInfo& info) { return metadata(info, true); }
  Napi::Value output_metadata(const Napi::CallbackInfo& info) { return metadata(info, false); }
  Napi::Value metadata(const Napi::CallbackInfo& info, bool inputs);
  Napi::Value input_names(const Napi::CallbackInfo& info) {
    Napi::Array a = Napi::Array::New(info.Env());
    uint32_t i = 0;
    for (const auto& in : live().inputs()) a.Set(i++, in.name);
    return a;
  }
  // Writes the runs recorded since creation (or the last call) as a Chrome
  // trace file and returns its path; an error when enableProfiling was not set.
  Napi::Value end_profiling(const Napi::CallbackInfo& info) {
    try {
      return Napi::String::New(info.Env(), live().end_profiling());
    } catch (const std::exception& e) {
      js_error(info.Env(), e.what()).ThrowAsJavaScriptException();
      return info.Env().Undefined();
    }
  }
  Napi::Value output_names(const Napi::CallbackInfo& info) {
    Napi::Array a = Napi::Array::New(info.Env());
    uint32_t i = 0;
    for (const auto& out : live().outputs()) a.Set(i++, out.name);
    return a;
  }
  Napi::Value run(const Napi::CallbackInfo& info);
  // The output names as JavaScript strings, made at the first run.
  Napi::Array output_keys(Napi::Env env) {
    if (output_keys_.IsEmpty()) {
      Napi::Array a = Napi::Array::New(env);
      uint32_t i = 0;
      for (const auto& out : live().outputs()) a.Set(i++, out.name);
      output_keys_ = Napi::Persistent(a.As<Napi::Object>());
    }
    return output_keys_.Value().As<Napi::Array>();
  }

  std::shared_ptr<InferenceSession> session_;
  Napi::ObjectReference output_keys_;
  std::shared_ptr<RunClock> clock_ = std::make_shared<RunClock>();
  int64_t sync_threshold_ns_ = 0;
};

// [{ name, isTensor, type, shape }]; a sequence or optional value is not a
// tensor (isTensor false and nothing else, as onnxruntime-node reports it).
Napi::Value Session::metadata(const Napi::CallbackInfo& info, bool inputs) {
  Napi::Env env = info.Env();
  if (!session_) {
    js_error(env, "Session already disposed.").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const std::vector<TensorInfo>& infos = inputs ? session_->inputs() : session_->outputs();
  Napi::Array a = Napi::Array::New(env, infos.size());
  for (size_t i = 0; i < infos.size(); ++i) {
    const TensorInfo& t = infos[i];
    Napi::Object m = Napi::Object::New(env);
    m.Set("name", t.name);
    const bool is_tensor = !t.is_sequence && !t.is_optional;
    m.Set("isTensor", is_tensor);
    if (is_tensor) {
      m.Set("type", name_of_dtype(t.dtype));
      Napi::Array shape = Napi::Array::New(env, t.shape.size());
      for (size_t d = 0; d < t.shape.size(); ++d) {
        const uint32_t k = static_cast<uint32_t>(d);
        if (t.shape[d] >= 0) shape.Set(k, static_cast<double>(t.shape[d]));
        else shape.Set(k, d < t.dim_names.size() ? t.dim_names[d] : std::string());
      }
      m.Set("shape", shape);
    }
    a.Set(static_cast<uint32_t>(i), m);
  }
  return a;
}

// The property names of a tensor object and the tensor type names, made once
// per environment (a worker thread has its own) and kept in an array
// (Node-API references hold objects only): a name made from a C string on
// every run is looked up in V8's string table each time. Slot 3 of the array
// holds the environment's Session class (init puts it there), slots from 4
// the names of kTypes in order. A run fetches the keys once (of()).
struct TensorKeys {
  static constexpr uint32_t kTypeNames = 4;
  Napi::Value type, data, dims;
  Napi::Array all;
  static TensorKeys of(Napi::Env env) {
    const Napi::Array a = env.GetInstanceData<Napi::ObjectReference>()->Value().As<Napi::Array>();
    return {a.Get(0u), a.Get(1u), a.Get(2u), a};
  }
  // The tensor type name of `t` as a JavaScript string.
  Napi::Value type_name(DataType t) const {
    for (uint32_t i = 0; i < std::size(kTypes); ++i)
      if (kTypes[i].dtype == t) return all.Get(kTypeNames + i);
    return Napi::String::New(all.Env(), "unknown");
  }
  static void install(Napi::Env env) {
    Napi::Array a = Napi::Array::New(env, kTypeNames + std::size(kTypes));
    a.Set(0u, Napi::String::New(env, "type"));
    a.Set(1u, Napi::String::New(env, "data"));
    a.Set(2u, Napi::String::New(env, "dims"));
    for (uint32_t i = 0; i < std::size(kTypes); ++i) a.Set(kTypeNames + i, Napi::String::New(env, kTypes[i].name));
    env.SetInstanceData(new Napi::ObjectReference(Napi::Persistent(a.As<Napi::Object>())));  // deleted with the environment
  }
};

// A feed after the first phase of run()'s conversion (see the file comment):
// every JavaScript read done, no pointer into JavaScript memory taken yet.
struct JsFeed {
  std::string name;
  DataType dtype = DataType::kUndefined;
  Shape dims;
  size_t nbytes = 0;                  // non-string feeds: the data's byte length dims and type call for
  Napi::TypedArray data;              // non-string feeds: its memory is read in the second phase
  std::vector<std::string> strings;   // string feeds: copied here
};

// Phase one: checks a feed's type, data and dims as read from its object
// (read_feed) or from the flat array index.js passes (run()). Getters may
// run here, so nothing read before stays valid unless it is a copy or a
// handle.
JsFeed read_feed_parts(const std::string& name, const Napi::Value& type, const Napi::Value& data,
                       const Napi::Value& dims_v) {
  JsFeed f;
  f.name = name;
  // No ToString(): it would call the object's toString.
  if (!type.IsString())
    throw ArgumentTypeError("feed '" + name + "' has a `type` that is " + js_type_name(type) +
                            ", expected a string such as 'float32'");
  f.dtype = dtype_of_name(type.As<Napi::String>().Utf8Value());
  const bool is_string = f.dtype == DataType::kString;
  if (!(is_string ? data.IsArray() : data.IsTypedArray()) || !dims_v.IsArray())
    throw ArgumentTypeError("feed '" + name + "' needs " + (is_string ? "an array of strings" : "a typed array") +
                            " `data` and an array `dims` (got " + js_type_name(data) + " and " +
                            js_type_name(dims_v) + ")");
  // Dims must be numbers, as onnxruntime-node wants them: ToNumber() would
  // call valueOf, user code that could detach an earlier feed's buffer.
  const Napi::Array dims_a = dims_v.As<Napi::Array>();
  const uint32_t rank = dims_a.Length();
  for (uint32_t i = 0; i < rank; ++i) {
    const Napi::Value e = dims_a.Get(i);
    if (!e.IsNumber())
      throw ArgumentTypeError("feed '" + name + "' has dims[" + std::to_string(i) + "] that is " + js_type_name(e) +
                              ", expected a non-negative integer number");
    const double d = e.As<Napi::Number>().DoubleValue();
    // 2^53: past it a double no longer holds every integer (and the cast to
    // int64_t of a larger or non-finite value is undefined).
    if (!(d >= 0 && d <= 9007199254740992.0) || d != static_cast<double>(static_cast<int64_t>(d)))
      throw Error(StatusCode::kInvalidArgument, "feed '" + name + "' has dims[" + std::to_string(i) + "] = " +
                                                    e.ToString().Utf8Value() +  // a number: no user code
                                                    ", expected a non-negative integer");
    f.dims.push_back(static_cast<int64_t>(d));
  }
  // The element count is checked against the data before anything of that
  // size is allocated: dims come from the caller, the data is what it has.
  int64_t numel = 0;
  try {
    numel = shape_numel(f.dims);  // throws on overflow
    if (!is_string) f.nbytes = checked_nbytes(numel, dtype_size(f.dtype));
  } catch (const Error& e) {
    throw Error(e.code(), "feed '" + name + "' has dims " + shape_to_string(f.dims) + ": " + e.status().message());
  }
  if (!is_string) {
    f.data = data.As<Napi::TypedArray>();
    return f;
  }
  const Napi::Array a = data.As<Napi::Array>();
  const uint32_t n = a.Length();
  if (static_cast<int64_t>(n) != numel)
    throw Error(StatusCode::kInvalidArgument, "feed '" + name + "' has " + std::to_string(n) + " strings, expected " +
                                                  std::to_string(numel) + " for dims " + shape_to_string(f.dims));
  // Grown as the strings are read, not reserved: a sparse array's length
  // costs JavaScript nothing.
  for (uint32_t i = 0; i < n; ++i) {
    const Napi::Value e = a.Get(i);
    if (!e.IsString())
      throw ArgumentTypeError("feed '" + name + "': data[" + std::to_string(i) + "] is " + js_type_name(e) +
                              ", expected a string");
    f.strings.push_back(e.As<Napi::String>().Utf8Value());
  }
  return f;
}

JsFeed read_feed(const TensorKeys& keys, const std::string& name, const Napi::Value& v) {
  if (!v.IsObject()) throw ArgumentTypeError("feed '" + name + "' is " + js_type_name(v) + ", expected a Tensor");
  const Napi::Object o = v.As<Napi::Object>();
  const Napi::Value type = o.Get(keys.type);
  const Napi::Value data = o.Get(keys.data);
  return read_feed_parts(name, type, data, o.Get(keys.dims));
}

// The feeds of a { name: { type, data, dims } } object.
std::vector<JsFeed> read_feeds(const Napi::Object& f) {
  const TensorKeys keys = TensorKeys::of(f.Env());
  std::vector<JsFeed> out;
  const Napi::Array names = f.GetPropertyNames();
  const uint32_t n = names.Length();
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const Napi::Value k = names.Get(i);  // property names are strings
    out.push_back(read_feed(keys, k.As<Napi::String>().Utf8Value(), f.Get(k)));
  }
  return out;
}

// The feeds of a flat array [name, type, data, dims, name, ...] (index.js's
// form: one array rather than an object per feed).
std::vector<JsFeed> read_flat_feeds(const Napi::Array& a) {
  const uint32_t n = a.Length();
  if (n % 4)
    throw ArgumentTypeError("run(feeds): a feeds array has " + std::to_string(n) +
                            " elements, expected [name, type, data, dims] for each feed");
  std::vector<JsFeed> out;
  out.reserve(n / 4);
  for (uint32_t i = 0; i < n; i += 4) {
    const Napi::Value name = a.Get(i);
    if (!name.IsString())
      throw ArgumentTypeError("run(feeds): feed name " + std::to_string(i / 4) + " is " + js_type_name(name) +
                              ", expected a string");
    out.push_back(read_feed_parts(name.As<Napi::String>().Utf8Value(), a.Get(i + 1), a.Get(i + 2), a.Get(i + 3)));
  }
  return out;
}

// Phase two: the feed as a runtime tensor, its data pointer taken now.
// Nothing here runs JavaScript, and run() calls no JavaScript between this
// and the end of the run. `borrow`: the tensor reads the typed array's memory
// in place (for a run that ends before control returns to JavaScript; the
// runtime never writes into a buffer it does not own); otherwise the bytes
// are copied into a new buffer.
Tensor take_feed(JsFeed& f, bool borrow) {
  if (f.dtype == DataType::kString) {
    Tensor t(f.dtype, f.dims);
    std::string* out = t.mutable_data<std::string>();
    for (size_t i = 0; i < f.strings.size(); ++i) out[i] = std::move(f.strings[i]);
    return t;
  }
  const Napi::TypedArray& ta = f.data;
  Napi::ArrayBuffer ab = ta.ArrayBuffer();
  // Detached (transferred by structuredClone or postMessage): its memory is
  // gone and its byte length reads 0.
  if (ab.IsDetached())
    throw Error(StatusCode::kInvalidArgument, "feed '" + f.name +
                                                  "' has data whose ArrayBuffer is detached (transferred away), "
                                                  "expected a typed array over memory it still holds");
  if (ta.ByteLength() != f.nbytes)
    throw Error(StatusCode::kInvalidArgument,
                "feed '" + f.name + "' has " + std::to_string(ta.ByteLength()) + " bytes of data, expected " +
                    std::to_string(f.nbytes) + " for type " + name_of_dtype(f.dtype) + " and dims " +
                    shape_to_string(f.dims));
  auto* src = static_cast<uint8_t*>(ab.Data()) + ta.ByteOffset();
  // A typed array of another element type (a Uint8Array at an odd offset fed
  // as float32) may be misaligned for the tensor's type: such a feed is copied.
  const bool aligned = reinterpret_cast<uintptr_t>(src) % dtype_size(f.dtype) == 0;
  if (borrow && aligned) return Tensor::borrow(f.dtype, f.dims, src);
  Tensor t(f.dtype, f.dims, Buffer::allocate(f.nbytes));
  if (f.nbytes) std::memcpy(t.raw_mutable_data(), src, f.nbytes);
  return t;
}

// Outputs up to this size are copied into memory V8 allocates (as
// onnxruntime-node copies every output), larger ones handed over. A
// handed-over buffer is freed by its finalizer, at the collector's pace: the
// buffers of a model's runs then go back to malloc in batches, its heap
// shrinks and grows, and every run takes fresh pages from the system. A page
// fault costs more than copying its 4 KB (on the 2-core VM, a decode step
// with 2 MB of present K/V outputs in a loop: 510 faults and 17.1 ms a run
// handed over, 51 faults and 6.8 ms copied), so only outputs too large to
// hold twice are handed over.
constexpr size_t kCopiedOutputBytes = size_t{64} << 20;

// Whether an output's buffer is handed over to its ArrayBuffer (the
// runtime's own buffer, this tensor its only holder, and large; the
// ArrayBuffer's finalizer then releases it) rather than copied.
bool handed_over(const Tensor& t) {
  const std::shared_ptr<Buffer>& b = t.buffer();
  return b && b->owned() && b.use_count() == 1 && t.nbytes() > kCopiedOutputBytes;
}

// The output's bytes as an ArrayBuffer of its own (as onnxruntime-node's, so
// `data.buffer` holds this output only): the runtime's buffer when handed
// over, else a copy.
Napi::ArrayBuffer output_bytes(Napi::Env env, const Tensor& t) {
  if (handed_over(t)) {
    auto* hold = new std::shared_ptr<Buffer>(t.buffer());
    return Napi::ArrayBuffer::New(
        env, const_cast<void*>(t.raw_data()), t.nbytes(),
        [](Napi::Env, void*, std::shared_ptr<Buffer>* h) { delete h; }, hold);
  }
  // Node's Buffer::Copy takes memory it does not zero first (an ArrayBuffer
  // made directly is zero-filled, then overwritten: on a decode step's 2 MB
  // of present K/V a tenth of the call); its ArrayBuffer is its own, of
  // exactly these bytes.
  if (t.nbytes() == 0) return Napi::ArrayBuffer::New(env, 0);
  return Napi::Buffer<uint8_t>::Copy(env, static_cast<const uint8_t*>(t.raw_data()), t.nbytes()).ArrayBuffer();
}

// A typed array of the output's type over the n elements of buf.
Napi::Value typed_array(Napi::Env env, DataType dtype, size_t n, Napi::ArrayBuffer buf) {
  switch (dtype) {
    case DataType::kFloat32: return Napi::Float32Array::New(env, n, buf, 0);
    case DataType::kFloat64: return Napi::Float64Array::New(env, n, buf, 0);
    case DataType::kInt8: return Napi::Int8Array::New(env, n, buf, 0);
    case DataType::kUInt8: case DataType::kBool: return Napi::Uint8Array::New(env, n, buf, 0);
    case DataType::kInt16: return Napi::Int16Array::New(env, n, buf, 0);
    case DataType::kUInt16: case DataType::kFloat16: case DataType::kBFloat16: return Napi::Uint16Array::New(env, n, buf, 0);
    case DataType::kInt32: return Napi::Int32Array::New(env, n, buf, 0);
    case DataType::kUInt32: return Napi::Uint32Array::New(env, n, buf, 0);
    case DataType::kInt64: return Napi::BigInt64Array::New(env, n, buf, 0);
    case DataType::kUInt64: return Napi::BigUint64Array::New(env, n, buf, 0);
    default: throw Error(StatusCode::kUnsupported, "an output of dtype " + dtype_name(dtype) + " cannot be returned");
  }
}

// Sequence values are refused, as onnxruntime-node refuses non-tensor outputs.
void check_returnable(const Tensor& t) {
  if (!t.is_tensor())
    throw Error(StatusCode::kUnsupported, "an output is a " + t.describe() +
                                              "; the Node.js binding returns tensors only (the Python one returns lists)");
}

Napi::Array tensor_dims(Napi::Env env, const Tensor& t) {
  Napi::Array dims = Napi::Array::New(env, t.shape().size());
  for (size_t i = 0; i < t.shape().size(); ++i) dims.Set(static_cast<uint32_t>(i), static_cast<double>(t.shape()[i]));
  return dims;
}

// The output's data: an array of strings or a typed array.
Napi::Value tensor_data(Napi::Env env, const Tensor& t) {
  if (t.dtype() == DataType::kString) {
    Napi::Array a = Napi::Array::New(env, static_cast<size_t>(t.numel()));
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.numel(); ++i) a.Set(static_cast<uint32_t>(i), Napi::String::New(env, s[i]));
    return a;
  }
  return typed_array(env, t.dtype(), static_cast<size_t>(t.numel()), output_bytes(env, t));
}

Napi::Value tensor_to_js(Napi::Env env, const TensorKeys& keys, const Tensor& t) {
  Napi::Object o = Napi::Object::New(env);
  o.Set(keys.type, keys.type_name(t.dtype()));
  o.Set(keys.dims, tensor_dims(env, t));
  o.Set(keys.data, tensor_data(env, t));
  return o;
}

// ---------------------------------------------------------------- workers

class CreateWorker : public Napi::AsyncWorker {
 public:
  CreateWorker(Napi::Env env, std::string path, std::vector<uint8_t> bytes, SessionOptions opts,
               double sync_threshold_us)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), path_(std::move(path)),
        bytes_(std::move(bytes)), opts_(std::move(opts)), sync_threshold_us_(sync_threshold_us) {}
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      session_ = path_.empty() ? InferenceSession::create_from_bytes(bytes_, opts_) : InferenceSession::create(path_, opts_);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override {
    // The Session class of this environment (a worker thread has its own).
    const Napi::Array per_env = Env().GetInstanceData<Napi::ObjectReference>()->Value().As<Napi::Array>();
    Napi::Object obj = per_env.Get(3u).As<Napi::Function>().New({});
    Session::Unwrap(obj)->set(std::move(session_), sync_threshold_us_);
    deferred_.Resolve(obj);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::string path_;
  std::vector<uint8_t> bytes_;
  SessionOptions opts_;
  double sync_threshold_us_;
  std::shared_ptr<InferenceSession> session_;
};

// The result object of a run: { name: { type, data, dims } }; `flat`: the
// array [type, data, dims, type, data, dims, ...] in the order of the
// outputs, from which index.js makes its tensors. `output_keys`: the
// session's output names as JavaScript strings, used when no names were
// requested.
Napi::Object outputs_to_js(Napi::Env env, const Napi::Array& output_keys, const std::vector<std::string>& requested,
                           const std::vector<Tensor>& outputs, bool flat) {
  for (const Tensor& t : outputs) check_returnable(t);
  const TensorKeys keys = TensorKeys::of(env);
  if (flat) {
    Napi::Array a = Napi::Array::New(env, 3 * outputs.size());
    uint32_t at = 0;
    for (const Tensor& t : outputs) {
      a.Set(at++, keys.type_name(t.dtype()));
      a.Set(at++, tensor_data(env, t));
      a.Set(at++, tensor_dims(env, t));
    }
    return a;
  }
  Napi::Object result = Napi::Object::New(env);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Napi::Value name =
        requested.empty() ? output_keys.Get(static_cast<uint32_t>(i)) : Napi::String::New(env, requested[i]);
    result.Set(name, tensor_to_js(env, keys, outputs[i]));
  }
  return result;
}

// A run's options as read from JavaScript ({ timeoutMs, terminate,
// logSeverityLevel, tag }, checked by index.js), kept as plain values:
// RunOptions holds an atomic and is made where the run lives (the stack of a
// run on the JavaScript thread, the RunWorker).
struct JsRunOptions {
  int64_t timeout_ms = 0;
  bool terminate = false;
  int log_severity_level = -1;
  std::string tag;
  void apply(RunOptions& ro) const {
    ro.timeout_ms = timeout_ms;
    ro.terminate.store(terminate);
    ro.log_severity_level = log_severity_level;
    ro.run_tag = tag;
  }
};

JsRunOptions read_run_options(const Napi::Value& v) {
  JsRunOptions r;
  if (v.IsUndefined() || v.IsNull()) return r;
  if (!v.IsObject()) throw ArgumentTypeError(std::string("run options are ") + js_type_name(v) + ", expected an object");
  const Napi::Object o = v.As<Napi::Object>();
  const Napi::Value t = o.Get("timeoutMs");
  if (!t.IsUndefined()) {
    const double d = t.IsNumber() ? t.As<Napi::Number>().DoubleValue() : -1;
    if (!(d >= 0 && d <= 9007199254740991.0) || d != static_cast<double>(static_cast<int64_t>(d)))
      throw Error(StatusCode::kInvalidArgument,
                  std::string("runOptions.timeoutMs is ") + (t.IsNumber() ? t.ToString().Utf8Value() : js_type_name(t)) +
                      ", expected a non-negative integer number of milliseconds (0: no limit)");
    r.timeout_ms = static_cast<int64_t>(d);
  }
  const Napi::Value term = o.Get("terminate");
  if (!term.IsUndefined()) {
    if (!term.IsBoolean())
      throw ArgumentTypeError(std::string("runOptions.terminate is ") + js_type_name(term) + ", expected a boolean");
    r.terminate = term.As<Napi::Boolean>().Value();
  }
  const Napi::Value sev = o.Get("logSeverityLevel");
  if (sev.IsNumber()) r.log_severity_level = sev.As<Napi::Number>().Int32Value();
  const Napi::Value tag = o.Get("tag");
  if (tag.IsString()) r.tag = tag.As<Napi::String>().Utf8Value();
  return r;
}

class RunWorker : public Napi::AsyncWorker {
 public:
  RunWorker(Napi::Env env, std::shared_ptr<InferenceSession> s, std::shared_ptr<RunClock> clock, Feeds feeds,
            std::vector<std::string> names, const JsRunOptions& run_options, const Napi::Array& output_keys, bool flat)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), session_(std::move(s)),
        clock_(std::move(clock)), feeds_(std::move(feeds)), names_(std::move(names)),
        output_keys_(Napi::Persistent(output_keys.As<Napi::Object>())), flat_(flat) {
    run_options.apply(run_options_);
  }
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      outputs_ = timed_run(*session_, feeds_, names_, run_options_, *clock_);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    try {
      Napi::Object result = outputs_to_js(env, output_keys_.Value().As<Napi::Array>(), names_, outputs_, flat_);
      outputs_.clear();  // the ArrayBuffers are now the only holders
      deferred_.Resolve(result);
    } catch (const std::exception& e) {
      deferred_.Reject(js_error(env, e.what()).Value());
    }
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::shared_ptr<InferenceSession> session_;
  std::shared_ptr<RunClock> clock_;
  Feeds feeds_;
  std::vector<std::string> names_;
  Napi::ObjectReference output_keys_;
  bool flat_;
  RunOptions run_options_;  // lives as long as the run
  std::vector<Tensor> outputs_;
};

Napi::Value Session::run(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto deferred = Napi::Promise::Deferred::New(env);
  try {
    InferenceSession& session = live();
    if (info.Length() < 1 || !info[0].IsObject()) throw ArgumentTypeError("run(feeds): feeds must be an object");
    const Napi::Object f = info[0].As<Napi::Object>();
    // Phase one (see the file comment): everything JavaScript can intervene
    // in, read into C++ values and handles; no pointer into a buffer yet.
    std::vector<JsFeed> js_feeds = f.IsArray() ? read_flat_feeds(f.As<Napi::Array>()) : read_feeds(f);
    std::vector<std::string> names;
    if (info.Length() > 1 && !info[1].IsUndefined() && !info[1].IsNull()) {
      if (!info[1].IsArray())
        throw ArgumentTypeError(std::string("run(feeds, outputNames): outputNames is ") + js_type_name(info[1]) +
                                ", expected an array of strings");
      const Napi::Array a = info[1].As<Napi::Array>();
      for (uint32_t i = 0; i < a.Length(); ++i) {
        const Napi::Value n = a.Get(i);
        if (!n.IsString())
          throw ArgumentTypeError("output name " + std::to_string(i) + " is " + js_type_name(n) + ", expected a string");
        names.push_back(n.As<Napi::String>().Utf8Value());
      }
    }
    const JsRunOptions run_options = read_run_options(info.Length() > 2 ? info[2] : env.Undefined());
    const bool flat = info.Length() > 3 && info[3].IsBoolean() && info[3].As<Napi::Boolean>().Value();
    // Phase two: the data pointers. No JavaScript runs from here until the
    // outputs no longer point into a feed.
    const int64_t recent = clock_->recent_ns.load(std::memory_order_relaxed);
    const bool sync = recent >= 0 && recent < sync_threshold_ns_;
    Feeds feeds;
    feeds.reserve(js_feeds.size());
    for (JsFeed& jf : js_feeds) feeds.emplace_back(jf.name, take_feed(jf, sync));
    if (sync) {
      RunOptions ro;
      run_options.apply(ro);
      std::vector<Tensor> outputs = timed_run(session, feeds, names, ro, *clock_);
      // An output may be a feed or a view of one (Identity, Reshape): it is
      // copied now, as output_bytes would copy it later, because making the
      // JavaScript objects can run JavaScript (a setter on Object.prototype)
      // that could detach a feed's buffer before a later output is read.
      for (Tensor& t : outputs)
        if (t.is_tensor() && t.buffer() && !t.buffer()->owned()) t = t.clone();
      feeds.clear();  // an output that is an input's buffer is then held by the output alone
      Napi::Object result = outputs_to_js(env, output_keys(env), names, outputs, flat);
      deferred.Resolve(result);
      return deferred.Promise();
    }
    auto* w = new RunWorker(env, session_, clock_, std::move(feeds), std::move(names), run_options, output_keys(env), flat);
    Napi::Promise p = w->promise();
    w->Queue();
    return p;
  } catch (const std::exception& e) {
    deferred.Reject(js_error_of(env, e));
    return deferred.Promise();
  }
}

Napi::Value create_session(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    if (info.Length() < 1) throw Error(StatusCode::kInvalidArgument, "createSession(pathOrBuffer, options): missing model");
    SessionOptions opts;
    double sync_threshold_us = kDefaultSyncThresholdUs;
    if (info.Length() > 1 && info[1].IsObject()) {
      const Napi::Object o = info[1].As<Napi::Object>();
      opts = parse_options(o);
      if (o.Has("syncRunThresholdUs")) {
        const Napi::Value v = o.Get("syncRunThresholdUs");
        sync_threshold_us = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
        if (!(sync_threshold_us >= 0))
          throw Error(StatusCode::kInvalidArgument,
                      "syncRunThresholdUs must be a number of microseconds >= 0 (0: every run on a worker thread)");
      }
    }
    std::string path;
    std::vector<uint8_t> bytes;
    if (info[0].IsString()) {
      path = info[0].ToString();
    } else if (info[0].IsTypedArray() || info[0].IsBuffer()) {
      const Napi::TypedArray ta = info[0].As<Napi::TypedArray>();
      if (ta.ArrayBuffer().IsDetached())
        throw Error(StatusCode::kInvalidArgument, "the model's ArrayBuffer is detached (transferred away)");
      const auto* p = static_cast<const uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
      bytes.assign(p, p + ta.ByteLength());
    } else if (info[0].IsArrayBuffer()) {
      Napi::ArrayBuffer ab = info[0].As<Napi::ArrayBuffer>();
      if (ab.IsDetached())
        throw Error(StatusCode::kInvalidArgument, "the model's ArrayBuffer is detached (transferred away)");
      const auto* p = static_cast<const uint8_t*>(ab.Data());
      bytes.assign(p, p + ab.ByteLength());
    } else {
      throw Error(StatusCode::kInvalidArgument, "the model must be a path string or a Uint8Array / Buffer of its bytes");
    }
    auto* w = new CreateWorker(env, std::move(path), std::move(bytes), std::move(opts), sync_threshold_us);
    Napi::Promise p = w->promise();
    w->Queue();
    return p;
  } catch (const std::exception& e) {
    auto deferred = Napi::Promise::Deferred::New(env);
    deferred.Reject(js_error_of(env, e));
    return deferred.Promise();
  }
}

}  // namespace

Napi::Object init(Napi::Env env, Napi::Object exports) {
  TensorKeys::install(env);
  Napi::Function cls = Session::define(env);
  env.GetInstanceData<Napi::ObjectReference>()->Value().Set(3u, cls);
  exports.Set("Session", cls);
  exports.Set("createSession", Napi::Function::New(env, create_session));
  exports.Set("version", Napi::String::New(env, spindle::version()));
  exports.Set("parallelInfo", Napi::Function::New(env, [](const Napi::CallbackInfo& info) -> Napi::Value {
                return Napi::String::New(info.Env(), parallel_info());
              }));
  return exports;
}

}  // namespace spindle

static Napi::Object init_addon(Napi::Env env, Napi::Object exports) { return spindle::init(env, exports); }

NODE_API_MODULE(spindle, init_addon)
