// api_session.cpp — ONNX Runtime's C API over spindle: sessions, runs, model metadata and run options.
#include "capi/capi_internal.h"

namespace spindle::capi {

OrtStatus* prepare_run(const char* fn, OrtSession* session, const char* const* input_names, const OrtValue* const* inputs,
                       size_t input_len, const char* const* output_names, size_t output_len, OrtValue** outputs,
                       spindle::Feeds& feeds, std::vector<std::string>& names) {
  if (!session) return null_argument(fn, "session");
  if (input_len && (!input_names || !inputs)) return null_argument(fn, !input_names ? "input_names" : "inputs");
  if (!output_names) return null_argument(fn, "output_names");
  if (!outputs) return null_argument(fn, "outputs");
  if (output_len == 0) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": output_names_len is 0; name at least one output");
  feeds.reserve(input_len);
  for (size_t i = 0; i < input_len; ++i) {
    if (!input_names[i]) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": input name " + std::to_string(i) + " is NULL");
    if (!inputs[i]) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": input '" + input_names[i] + "' is NULL");
    if (OrtStatus* s = feed_error(fn, input_names[i], inputs[i])) return s;
    feeds.emplace_back(input_names[i], inputs[i]->tensor);
  }
  // Free dimensions fixed by AddFreeDimensionOverride(ByName) must be fed at that size.
  if (!session->dim_overrides.empty()) {
    for (const auto& [name, tensor] : feeds) {
      for (const auto& info : session->session->inputs()) {
        if (info.name != name || !tensor.is_tensor()) continue;
        for (size_t d = 0; d < tensor.shape().size() && d < info.shape.size(); ++d) {
          const int64_t fixed = session->dim_overrides.find(info, d);
          if (fixed >= 0 && tensor.shape()[d] != fixed)
            return make_status(ORT_INVALID_ARGUMENT,
                               std::string(fn) + ": input '" + name + "' has " + std::to_string(tensor.shape()[d]) +
                                   " at dimension " + std::to_string(d) + ", which the session options fix at " +
                                   std::to_string(fixed));
        }
      }
    }
  }
  for (size_t i = 0; i < output_len; ++i) {
    if (!output_names[i]) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": output name " + std::to_string(i) + " is NULL");
    names.emplace_back(output_names[i]);
  }
  return nullptr;
}

OrtStatus* deliver(const char* fn, const std::vector<std::string>& names, std::vector<spindle::Tensor>& results,
                   OrtValue** outputs) {
  const size_t n = std::min(names.size(), results.size());
  for (size_t i = 0; i < n; ++i) {
    if (!outputs[i]) continue;
    const spindle::Tensor& r = results[i];
    const spindle::Tensor& dst = outputs[i]->tensor;
    if (!dst.is_tensor() || !dst.defined() || !r.is_tensor())
      return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the value given for output '" + names[i] + "' is " +
                                                   (dst.defined() ? dst.describe() : std::string("not a tensor")) +
                                                   "; the output is " + r.describe());
    if (dst.dtype() != r.dtype())
      return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the value given for output '" + names[i] +
                                                   "' has element type " + spindle::dtype_name(dst.dtype()) +
                                                   "; the output's type is " + spindle::dtype_name(r.dtype()));
    if (dst.shape() != r.shape())
      return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the value given for output '" + names[i] +
                                                   "' has shape " + spindle::shape_to_string(dst.shape()) +
                                                   "; this run's output has shape " + spindle::shape_to_string(r.shape()));
  }
  for (size_t i = 0; i < n; ++i) {
    spindle::Tensor& r = results[i];
    if (outputs[i]) {
      spindle::Tensor& dst = outputs[i]->tensor;
      if (r.dtype() == spindle::DataType::kString) {
        const auto* src = static_cast<const std::string*>(r.raw_data());
        auto* d = static_cast<std::string*>(dst.raw_mutable_data());
        for (int64_t k = 0; k < r.numel(); ++k) d[k] = src[k];
      } else {
        spindle::Tensor c = r.is_contiguous() ? r : r.clone();
        if (c.nbytes() && c.raw_data() != dst.raw_data()) std::memcpy(dst.raw_mutable_data(), c.raw_data(), c.nbytes());
      }
      continue;
    }
    // The caller may write into an output: one whose buffer is also held
    // elsewhere (a constant the session keeps, a feed passed through) is copied.
    if (r.is_tensor() && r.defined() &&
        ((r.buffer() && (!r.buffer()->owned() || r.buffer().use_count() > 1)) || !r.is_contiguous()))
      r = r.clone();
    outputs[i] = new OrtValue{std::move(r)};
  }
  return nullptr;
}

OrtStatus* feed_error(const char* fn, const char* name, const OrtValue* value) {
  if (value->map || value->maps)
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": input '" + name + "' is a " +
                                                 (value->map ? "map" : "sequence of maps") +
                                                 "; spindle's models take tensors, sequences of tensors and optionals");
  return nullptr;
}

namespace {

// ---------------------------------------------------------------- sessions

// A denotation fixed by AddFreeDimensionOverride that an input gives a
// different fixed size is refused when the session is created, as ONNX
// Runtime does.
OrtStatus* check_denotation_overrides(const OrtSession& session) {
  const auto& by_denotation = session.dim_overrides.by_denotation;
  if (by_denotation.empty()) return nullptr;
  for (const auto& info : session.session->inputs()) {
    for (size_t d = 0; d < info.dim_denotations.size() && d < info.shape.size(); ++d) {
      auto it = by_denotation.find(DimOverrides::upper(info.dim_denotations[d]));
      if (it == by_denotation.end() || info.shape[d] < 0 || info.shape[d] == it->second) continue;
      return make_status(ORT_INVALID_ARGUMENT, "CreateSession: invalid free dimension override: input '" + info.name +
                                                   "' has the fixed size " + std::to_string(info.shape[d]) +
                                                   " at dimension " + std::to_string(d) + " ('" + it->first +
                                                   "'), not the override's " + std::to_string(it->second));
    }
  }
  return nullptr;
}

OrtStatus* finish_session(const OrtEnv* env, const OrtSessionOptions* options, OrtSession** out,
                          const std::function<std::unique_ptr<spindle::InferenceSession>(const spindle::SessionOptions&,
                                                                                         spindle::Environment*)>& make) {
  spindle::SessionOptions opts = options ? options->opts : spindle::SessionOptions{};
  if (!opts.use_per_session_threads) {
    // As in ONNX Runtime, a session on the global pools ignores its own
    // thread settings (the pools were configured on the OrtEnv).
    opts.intra_op = spindle::ThreadingOptions{.name = "intra_op"};
    opts.inter_op = spindle::ThreadingOptions{.name = "inter_op"};
    opts.set_denormal_as_zero = false;
  } else if (options) {
    if (OrtStatus* s = hooks_check("CreateSession", options->create_fn, options->join_fn)) return s;
    if (options->create_fn) {
      opts.custom_create_thread_fn = create_thread_trampoline;
      opts.custom_join_thread_fn = join_thread_trampoline;
      opts.custom_thread_creation_options = intern_hooks(options->create_fn, options->join_fn, options->create_options);
    }
  }
  bind_custom_op_logging(opts);
  auto session = std::make_unique<OrtSession>();
  session->env = env ? env->env : nullptr;
  {
    const spindle::io::ExternalFilesScope files(options ? &options->external_files : nullptr);
    session->session = make(opts, session->env.get());
  }
  if (options) session->dim_overrides = options->dim_overrides;
  if (OrtStatus* s = check_denotation_overrides(*session)) return s;
  *out = session.release();
  return nullptr;
}

OrtStatus* ORT_API_CALL CreateSession(const OrtEnv* env, const ORTCHAR_T* path, const OrtSessionOptions* options,
                                      OrtSession** out) noexcept {
  CHECK_ARG("CreateSession", env);
  CHECK_ARG("CreateSession", path);
  CHECK_ARG("CreateSession", out);
  API_BEGIN
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return make_status(ORT_NO_SUCHFILE, std::string("Load model from ") + path + " failed: file does not exist");
  return finish_session(env, options, out, [&](const spindle::SessionOptions& o, spindle::Environment* e) {
    return spindle::InferenceSession::create(path, o, e);
  });
  API_END_CTX(true)
}
OrtStatus* ORT_API_CALL CreateSessionFromArray(const OrtEnv* env, const void* data, size_t len,
                                               const OrtSessionOptions* options, OrtSession** out) noexcept {
  CHECK_ARG("CreateSessionFromArray", env);
  CHECK_ARG("CreateSessionFromArray", data);
  CHECK_ARG("CreateSessionFromArray", out);
  API_BEGIN
  return finish_session(env, options, out, [&](const spindle::SessionOptions& o, spindle::Environment* e) {
    return spindle::InferenceSession::create_from_bytes(std::span<const uint8_t>(static_cast<const uint8_t*>(data), len), o, e);
  });
  API_END_CTX(true)
}
void ORT_API_CALL ReleaseSession(OrtSession* s) noexcept { delete s; }

OrtStatus* ORT_API_CALL Run(OrtSession* session, const OrtRunOptions* run_options, const char* const* input_names,
                            const OrtValue* const* inputs, size_t input_len, const char* const* output_names,
                            size_t output_len, OrtValue** outputs) noexcept {
  API_BEGIN
  spindle::Feeds feeds;
  std::vector<std::string> names;
  if (OrtStatus* s = prepare_run("Run", session, input_names, inputs, input_len, output_names, output_len, outputs, feeds, names))
    return s;
  auto results = session->session->run(feeds, names, run_options ? const_cast<spindle::RunOptions*>(&run_options->run) : nullptr);
  return deliver("Run", names, results, outputs);
  API_END
}

// RunAsync: the run goes to the inter-op pool (InferenceSession::run_async);
// on completion the outputs are written to `outputs` (which the caller keeps
// alive until then) and the callback gets them with a status it releases.
OrtStatus* ORT_API_CALL RunAsync(OrtSession* session, const OrtRunOptions* run_options, const char* const* input_names,
                                 const OrtValue* const* inputs, size_t input_len, const char* const* output_names,
                                 size_t output_len, OrtValue** outputs, RunAsyncCallbackFn callback,
                                 void* user_data) noexcept {
  CHECK_ARG("RunAsync", callback);
  API_BEGIN
  spindle::Feeds feeds;
  std::vector<std::string> names;
  if (OrtStatus* s = prepare_run("RunAsync", session, input_names, inputs, input_len, output_names, output_len, outputs,
                                 feeds, names))
    return s;
  auto shared_names = std::make_shared<std::vector<std::string>>(names);
  session->session->run_async(
      std::move(feeds), std::move(names),
      [shared_names, outputs, output_len, callback, user_data](spindle::Status status, std::vector<spindle::Tensor> results) {
        OrtStatus* st = from_status(status);
        if (!st) {
          try {
            st = deliver("RunAsync", *shared_names, results, outputs);
          } catch (const std::exception& e) {
            st = make_status(ORT_RUNTIME_EXCEPTION, e.what());
          }
        }
        callback(user_data, outputs, output_len, st);
      },
      run_options ? const_cast<spindle::RunOptions*>(&run_options->run) : nullptr);
  API_END
}

// ---------------------------------------------------------------- model metadata

#define METADATA_STRING(Fn, field)                                                                 \
  OrtStatus* ORT_API_CALL Fn(const OrtModelMetadata* m, OrtAllocator* a, char** out) noexcept {   \
    CHECK_ARG(#Fn, m);                                                                             \
    CHECK_ARG(#Fn, a);                                                                             \
    CHECK_ARG(#Fn, out);                                                                           \
    API_BEGIN                                                                                      \
    *out = copy_string(a, m->meta.field);                                                          \
    API_END                                                                                        \
  }
METADATA_STRING(ModelMetadataGetProducerName, producer_name)
METADATA_STRING(ModelMetadataGetGraphName, graph_name)
METADATA_STRING(ModelMetadataGetDomain, domain)
METADATA_STRING(ModelMetadataGetDescription, description)
METADATA_STRING(ModelMetadataGetGraphDescription, graph_description)
OrtStatus* ORT_API_CALL ModelMetadataGetVersion(const OrtModelMetadata* m, int64_t* out) noexcept {
  CHECK_ARG("ModelMetadataGetVersion", m);
  CHECK_ARG("ModelMetadataGetVersion", out);
  *out = m->meta.version;
  return nullptr;
}
OrtStatus* ORT_API_CALL ModelMetadataLookupCustomMetadataMap(const OrtModelMetadata* m, OrtAllocator* a, const char* key,
                                                             char** out) noexcept {
  CHECK_ARG("ModelMetadataLookupCustomMetadataMap", m);
  CHECK_ARG("ModelMetadataLookupCustomMetadataMap", a);
  CHECK_ARG("ModelMetadataLookupCustomMetadataMap", key);
  CHECK_ARG("ModelMetadataLookupCustomMetadataMap", out);
  API_BEGIN
  auto it = m->meta.custom_metadata_map.find(key);
  *out = it == m->meta.custom_metadata_map.end() ? nullptr : copy_string(a, it->second);
  API_END
}
OrtStatus* ORT_API_CALL ModelMetadataGetCustomMetadataMapKeys(const OrtModelMetadata* m, OrtAllocator* a, char*** keys,
                                                              int64_t* num_keys) noexcept {
  CHECK_ARG("ModelMetadataGetCustomMetadataMapKeys", m);
  CHECK_ARG("ModelMetadataGetCustomMetadataMapKeys", a);
  CHECK_ARG("ModelMetadataGetCustomMetadataMapKeys", keys);
  CHECK_ARG("ModelMetadataGetCustomMetadataMapKeys", num_keys);
  API_BEGIN
  const auto& map = m->meta.custom_metadata_map;
  *num_keys = static_cast<int64_t>(map.size());
  *keys = nullptr;
  if (map.empty()) return nullptr;
  auto** arr = static_cast<char**>(a->Alloc(a, map.size() * sizeof(char*)));
  if (!arr) throw std::bad_alloc();
  size_t i = 0;
  for (const auto& [k, v] : map) arr[i++] = copy_string(a, k);
  *keys = arr;
  API_END
}
void ORT_API_CALL ReleaseModelMetadata(OrtModelMetadata* m) noexcept { delete m; }

// ---------------------------------------------------------------- run options

OrtStatus* ORT_API_CALL CreateRunOptions(OrtRunOptions** out) noexcept {
  API_BEGIN
  CHECK_ARG("CreateRunOptions", out);
  *out = new OrtRunOptions;
  API_END
}
void ORT_API_CALL ReleaseRunOptions(OrtRunOptions* p) noexcept { delete p; }
OrtStatus* ORT_API_CALL RunOptionsSetRunLogVerbosityLevel(OrtRunOptions* r, int v) noexcept { CHECK_ARG("RunOptionsSetRunLogVerbosityLevel", r); r->verbosity = v; return nullptr; }
OrtStatus* ORT_API_CALL RunOptionsSetRunLogSeverityLevel(OrtRunOptions* r, int v) noexcept { CHECK_ARG("RunOptionsSetRunLogSeverityLevel", r); r->run.log_severity_level = v; return nullptr; }
OrtStatus* ORT_API_CALL RunOptionsGetRunLogVerbosityLevel(const OrtRunOptions* r, int* out) noexcept { CHECK_ARG("RunOptionsGetRunLogVerbosityLevel", r); CHECK_ARG("RunOptionsGetRunLogVerbosityLevel", out); *out = r->verbosity; return nullptr; }
OrtStatus* ORT_API_CALL RunOptionsGetRunLogSeverityLevel(const OrtRunOptions* r, int* out) noexcept { CHECK_ARG("RunOptionsGetRunLogSeverityLevel", r); CHECK_ARG("RunOptionsGetRunLogSeverityLevel", out); *out = r->run.log_severity_level; return nullptr; }
OrtStatus* ORT_API_CALL RunOptionsSetRunTag(OrtRunOptions* r, const char* tag) noexcept {
  CHECK_ARG("RunOptionsSetRunTag", r);
  API_BEGIN
  r->run.run_tag = tag ? tag : "";
  API_END
}
OrtStatus* ORT_API_CALL RunOptionsGetRunTag(const OrtRunOptions* r, const char** out) noexcept {
  CHECK_ARG("RunOptionsGetRunTag", r);
  CHECK_ARG("RunOptionsGetRunTag", out);
  *out = r->run.run_tag.c_str();
  return nullptr;
}
OrtStatus* ORT_API_CALL RunOptionsSetTerminate(OrtRunOptions* r) noexcept { CHECK_ARG("RunOptionsSetTerminate", r); r->run.terminate = true; return nullptr; }
OrtStatus* ORT_API_CALL RunOptionsUnsetTerminate(OrtRunOptions* r) noexcept { CHECK_ARG("RunOptionsUnsetTerminate", r); r->run.terminate = false; return nullptr; }
OrtStatus* ORT_API_CALL AddRunConfigEntry(OrtRunOptions* r, const char* key, const char* value) noexcept {
  CHECK_ARG("AddRunConfigEntry", r);
  CHECK_ARG("AddRunConfigEntry", key);
  CHECK_ARG("AddRunConfigEntry", value);
  API_BEGIN
  r->entries[key] = value;  // kept and read back; spindle's runs take no per-run keys
  API_END
}
const char* ORT_API_CALL GetRunConfigEntry(const OrtRunOptions* r, const char* key) noexcept {
  if (!r || !key) return nullptr;
  auto it = r->entries.find(key);
  return it == r->entries.end() ? nullptr : it->second.c_str();
}


}  // namespace

void set_session_slots(OrtApi& api) {
#define SET(name) api.name = name;
  SET(CreateSession) SET(CreateSessionFromArray) SET(ReleaseSession) SET(Run) SET(RunAsync) SET(ModelMetadataGetProducerName) SET(ModelMetadataGetGraphName) SET(ModelMetadataGetDomain) SET(ModelMetadataGetDescription) SET(ModelMetadataGetGraphDescription) SET(ModelMetadataGetVersion) SET(ModelMetadataLookupCustomMetadataMap) SET(ModelMetadataGetCustomMetadataMapKeys) SET(ReleaseModelMetadata) SET(CreateRunOptions) SET(ReleaseRunOptions) SET(RunOptionsSetRunLogVerbosityLevel) SET(RunOptionsSetRunLogSeverityLevel) SET(RunOptionsGetRunLogVerbosityLevel) SET(RunOptionsGetRunLogSeverityLevel) SET(RunOptionsSetRunTag) SET(RunOptionsGetRunTag) SET(RunOptionsSetTerminate) SET(RunOptionsUnsetTerminate) SET(AddRunConfigEntry) SET(GetRunConfigEntry)
#undef SET
}

}  // namespace spindle::capi
