// api_binding.cpp — ONNX Runtime's C API over spindle: IO bindings. A
// binding holds a session's feeds and the outputs to fetch ahead of
// RunWithBinding. An output bound to a value is written into it; one bound
// to memory is allocated by the next run, and that value then stays bound
// (later runs write into it, as in ONNX Runtime).
#include "capi/capi_internal.h"

struct OrtIoBinding {
  const OrtSession* session;
  std::vector<std::string> input_names;
  std::vector<OrtValue> inputs;
  std::vector<std::string> output_names;
  std::vector<std::unique_ptr<OrtValue>> outputs;  // null: bound to memory, not run yet
};

namespace spindle::capi {
namespace {

OrtStatus* ORT_API_CALL CreateIoBinding(OrtSession* session, OrtIoBinding** out) noexcept {
  CHECK_ARG("CreateIoBinding", session);
  CHECK_ARG("CreateIoBinding", out);
  API_BEGIN
  *out = new OrtIoBinding{session, {}, {}, {}, {}};
  API_END
}
void ORT_API_CALL ReleaseIoBinding(OrtIoBinding* b) noexcept { delete b; }

OrtStatus* ORT_API_CALL BindInput(OrtIoBinding* b, const char* name, const OrtValue* value) noexcept {
  CHECK_ARG("BindInput", b);
  CHECK_ARG("BindInput", name);
  CHECK_ARG("BindInput", value);
  if (OrtStatus* s = feed_error("BindInput", name, value)) return s;
  API_BEGIN
  const auto& model_inputs = b->session->session->inputs();
  if (std::none_of(model_inputs.begin(), model_inputs.end(), [&](const spindle::TensorInfo& i) { return i.name == name; })) {
    std::string known;
    for (const auto& i : model_inputs) known += (known.empty() ? "'" : ", '") + i.name + "'";
    return make_status(ORT_FAIL, std::string("BindInput: the model has no input named '") + name + "'; its inputs are " + known);
  }
  for (size_t i = 0; i < b->input_names.size(); ++i) {
    if (b->input_names[i] == name) {
      b->inputs[i] = *value;
      return nullptr;
    }
  }
  b->input_names.emplace_back(name);
  b->inputs.push_back(*value);
  API_END
}

OrtStatus* bind_output(OrtIoBinding* b, const char* name, std::unique_ptr<OrtValue> value) {
  for (size_t i = 0; i < b->output_names.size(); ++i) {
    if (b->output_names[i] == name) {
      b->outputs[i] = std::move(value);
      return nullptr;
    }
  }
  b->output_names.emplace_back(name);
  b->outputs.push_back(std::move(value));
  return nullptr;
}
OrtStatus* ORT_API_CALL BindOutput(OrtIoBinding* b, const char* name, const OrtValue* value) noexcept {
  CHECK_ARG("BindOutput", b);
  CHECK_ARG("BindOutput", name);
  CHECK_ARG("BindOutput", value);
  if (!value->tensor.is_tensor() || !value->tensor.defined())
    return make_status(ORT_INVALID_ARGUMENT, std::string("BindOutput: the value for output '") + name +
                                                 "' is not a tensor; bind a tensor, or bind the output to memory "
                                                 "(BindOutputToDevice) for the run to allocate it");
  API_BEGIN
  return bind_output(b, name, std::make_unique<OrtValue>(*value));
  API_END
}
OrtStatus* ORT_API_CALL BindOutputToDevice(OrtIoBinding* b, const char* name, const OrtMemoryInfo* info) noexcept {
  CHECK_ARG("BindOutputToDevice", b);
  CHECK_ARG("BindOutputToDevice", name);
  CHECK_ARG("BindOutputToDevice", info);
  if (info->name != "Cpu")
    return make_status(ORT_NOT_IMPLEMENTED, "BindOutputToDevice: memory '" + info->name + "'; spindle has CPU memory only");
  API_BEGIN
  return bind_output(b, name, nullptr);
  API_END
}
void ORT_API_CALL ClearBoundInputs(OrtIoBinding* b) noexcept {
  if (!b) return;
  b->input_names.clear();
  b->inputs.clear();
}
void ORT_API_CALL ClearBoundOutputs(OrtIoBinding* b) noexcept {
  if (!b) return;
  b->output_names.clear();
  b->outputs.clear();
}
// CPU memory needs no synchronizing.
OrtStatus* ORT_API_CALL SynchronizeBoundInputs(OrtIoBinding* b) noexcept {
  CHECK_ARG("SynchronizeBoundInputs", b);
  return nullptr;
}
OrtStatus* ORT_API_CALL SynchronizeBoundOutputs(OrtIoBinding* b) noexcept {
  CHECK_ARG("SynchronizeBoundOutputs", b);
  return nullptr;
}

OrtStatus* ORT_API_CALL RunWithBinding(OrtSession* session, const OrtRunOptions* run_options,
                                       const OrtIoBinding* binding) noexcept {
  CHECK_ARG("RunWithBinding", session);
  CHECK_ARG("RunWithBinding", binding);
  auto* b = const_cast<OrtIoBinding*>(binding);  // a run fills the outputs bound to memory
  if (b->outputs.empty())
    return make_status(ORT_INVALID_ARGUMENT, "RunWithBinding: no output is bound; bind at least one (BindOutput, BindOutputToDevice)");
  API_BEGIN
  std::vector<const char*> in_names, out_names;
  std::vector<const OrtValue*> inputs;
  for (size_t i = 0; i < b->inputs.size(); ++i) {
    in_names.push_back(b->input_names[i].c_str());
    inputs.push_back(&b->inputs[i]);
  }
  std::vector<OrtValue*> outputs;
  for (size_t i = 0; i < b->outputs.size(); ++i) {
    out_names.push_back(b->output_names[i].c_str());
    outputs.push_back(b->outputs[i].get());
  }
  spindle::Feeds feeds;
  std::vector<std::string> names;
  if (OrtStatus* s = prepare_run("RunWithBinding", session, in_names.data(), inputs.data(), inputs.size(),
                                 out_names.data(), out_names.size(), outputs.data(), feeds, names))
    return s;
  auto results = session->session->run(feeds, names, run_options ? const_cast<spindle::RunOptions*>(&run_options->run) : nullptr);
  OrtStatus* st = deliver("RunWithBinding", names, results, outputs.data());
  // The values the run allocated stay bound.
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!b->outputs[i] && outputs[i]) b->outputs[i].reset(outputs[i]);
  return st;
  API_END
}

OrtStatus* ORT_API_CALL GetBoundOutputNames(const OrtIoBinding* b, OrtAllocator* a, char** buffer, size_t** lengths,
                                            size_t* count) noexcept {
  CHECK_ARG("GetBoundOutputNames", b);
  CHECK_ARG("GetBoundOutputNames", a);
  CHECK_ARG("GetBoundOutputNames", buffer);
  CHECK_ARG("GetBoundOutputNames", lengths);
  CHECK_ARG("GetBoundOutputNames", count);
  *buffer = nullptr;
  *lengths = nullptr;
  *count = 0;
  if (b->output_names.empty()) return nullptr;
  API_BEGIN
  size_t total = 0;
  for (const auto& n : b->output_names) total += n.size();
  auto* chars = static_cast<char*>(a->Alloc(a, std::max<size_t>(total, 1)));
  if (!chars) throw std::bad_alloc();
  auto* lens = static_cast<size_t*>(a->Alloc(a, b->output_names.size() * sizeof(size_t)));
  if (!lens) {
    a->Free(a, chars);
    throw std::bad_alloc();
  }
  size_t at = 0;
  for (size_t i = 0; i < b->output_names.size(); ++i) {
    std::memcpy(chars + at, b->output_names[i].data(), b->output_names[i].size());
    lens[i] = b->output_names[i].size();
    at += lens[i];
  }
  *buffer = chars;
  *lengths = lens;
  *count = b->output_names.size();
  API_END
}

// New values (the caller releases each, and the array with the allocator)
// sharing the bound ones' memory; an output not run yet is an empty value.
OrtStatus* ORT_API_CALL GetBoundOutputValues(const OrtIoBinding* b, OrtAllocator* a, OrtValue*** output,
                                             size_t* count) noexcept {
  CHECK_ARG("GetBoundOutputValues", b);
  CHECK_ARG("GetBoundOutputValues", a);
  CHECK_ARG("GetBoundOutputValues", output);
  CHECK_ARG("GetBoundOutputValues", count);
  *output = nullptr;
  *count = 0;
  if (b->outputs.empty()) return nullptr;
  API_BEGIN
  const size_t n = b->outputs.size();
  std::vector<std::unique_ptr<OrtValue>> values;
  for (const auto& v : b->outputs) values.push_back(v ? std::make_unique<OrtValue>(*v) : std::make_unique<OrtValue>());
  auto** arr = static_cast<OrtValue**>(a->Alloc(a, n * sizeof(OrtValue*)));
  if (!arr) throw std::bad_alloc();
  for (size_t i = 0; i < n; ++i) arr[i] = values[i].release();
  *output = arr;
  *count = n;
  API_END
}

}  // namespace

void set_binding_slots(OrtApi& api) {
#define SET(name) api.name = name;
  SET(CreateIoBinding) SET(ReleaseIoBinding) SET(BindInput) SET(BindOutput) SET(BindOutputToDevice)
  SET(ClearBoundInputs) SET(ClearBoundOutputs) SET(SynchronizeBoundInputs) SET(SynchronizeBoundOutputs)
  SET(RunWithBinding) SET(GetBoundOutputNames) SET(GetBoundOutputValues)
#undef SET
}

}  // namespace spindle::capi
