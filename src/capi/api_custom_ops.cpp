// api_custom_ops.cpp — ONNX Runtime's C API over spindle: custom operators.
//
// An OrtCustomOp (a table of callbacks filled by the library defining it,
// usually through Ort::CustomOpBase) becomes a spindle::CustomOp
// (spindle/custom_op.h) carried by the session options: the session's loader
// accepts its nodes, and each node's kernel calls the op's CreateKernel /
// KernelCompute (or the status-returning V2 pair). Only the callbacks that
// exist at the op's `version` are called. Libraries of custom ops are
// loaded with dlopen and registered through their RegisterCustomOps.
#include <dlfcn.h>

#include "capi/capi_internal.h"
#include "capi/custom_kernel.h"
#include "common/log.h"
#include "kernels/custom/custom_op_kernel.h"
#include "spindle/custom_op.h"

namespace spindle::capi {
namespace {

// ---------------------------------------------------------------- the OrtCustomOp versions

// Each callback exists from the API version that added it.
constexpr uint32_t kCharacteristics = 8, kComputeV2 = 16, kOpsetRange = 17;

spindle::StatusCode code_from_ort(OrtErrorCode code) {
  switch (code) {
    case ORT_INVALID_ARGUMENT: return spindle::StatusCode::kInvalidArgument;
    case ORT_NO_SUCHFILE: return spindle::StatusCode::kNotFound;
    case ORT_NOT_IMPLEMENTED: return spindle::StatusCode::kUnsupported;
    case ORT_FAIL: return spindle::StatusCode::kInternal;
    default: return spindle::StatusCode::kRuntimeError;
  }
}

// Throws a custom op's error status as a spindle::Error (and frees it).
void throw_if_error(OrtStatus* st, const std::string& what) {
  if (!st) return;
  const spindle::StatusCode code = code_from_ort(st->code);
  std::string message = what + ": " + st->message;
  delete st;
  throw spindle::Error(code, std::move(message));
}

std::vector<spindle::DataType> declared_types(const OrtCustomOp* op, bool inputs) {
  const size_t n = inputs ? op->GetInputTypeCount(op) : op->GetOutputTypeCount(op);
  std::vector<spindle::DataType> types;
  for (size_t i = 0; i < n; ++i) {
    const ONNXTensorElementDataType t = inputs ? op->GetInputType(op, i) : op->GetOutputType(op, i);
    spindle::DataType d = spindle::DataType::kUndefined;
    if (t != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED && !dtype_from_ort(t, &d))
      throw spindle::Error(spindle::StatusCode::kUnsupported,
                           std::string("custom op ") + op->GetName(op) + ": " + (inputs ? "input " : "output ") +
                               std::to_string(i) + " has element type " + std::to_string(static_cast<int>(t)) +
                               ", which spindle does not support");
    types.push_back(d);
  }
  return types;
}

class KernelAdapter final : public spindle::CustomKernel {
 public:
  KernelAdapter(const OrtCustomOp* op, void* kernel, std::vector<spindle::DataType> output_types, std::string label,
                std::shared_ptr<const OrtLogger> logger)
      : op_(op), kernel_(kernel), output_types_(std::move(output_types)), label_(std::move(label)), logger_(std::move(logger)) {}
  ~KernelAdapter() override {
    if (op_->KernelDestroy) op_->KernelDestroy(kernel_);
  }
  std::shared_ptr<const std::vector<OrtValue>> constants;  // what KernelInfoGetConstantInput_tensor handed out
  void compute(spindle::CustomKernelContext& ctx) const override {
    OrtKernelContext c{&ctx, &output_types_, logger_.get(), {}, {}};
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const spindle::Tensor* t = ctx.input(i);
      c.inputs.push_back(t ? std::make_unique<OrtValue>(OrtValue{*t}) : nullptr);
    }
    c.outputs.resize(ctx.num_outputs());
    if (op_->version >= kComputeV2 && op_->KernelComputeV2) {
      throw_if_error(op_->KernelComputeV2(kernel_, &c), label_);
    } else if (op_->KernelCompute) {
      op_->KernelCompute(kernel_, &c);
    } else {
      throw spindle::Error(spindle::StatusCode::kInvalidArgument, label_ + ": the custom op has no KernelCompute");
    }
    for (size_t i = 0; i < c.outputs.size(); ++i)
      if (!c.outputs[i])
        throw spindle::Error(spindle::StatusCode::kRuntimeError,
                             label_ + ": the kernel returned without producing output " + std::to_string(i) +
                                 " (KernelContext_GetOutput was not called for it)");
  }

 private:
  const OrtCustomOp* op_;
  void* kernel_;
  std::vector<spindle::DataType> output_types_;
  std::string label_;
  std::shared_ptr<const OrtLogger> logger_;
};

// An OrtCustomOp as a spindle::CustomOp. `library` keeps the shared library
// defining it loaded for as long as a session or options refer to the op.
class OpAdapter final : public spindle::CustomOp, public kernels::CustomTypeInference {
 public:
  explicit OpAdapter(const OrtCustomOp* op) : op_(op), name_(op->GetName(op)), logger_(std::make_shared<OrtLogger>()) {}
  // This op as one session's: its kernels log at the session's severity, with its log id.
  std::shared_ptr<const OpAdapter> for_session(int severity, const std::string& log_id) const {
    auto copy = std::make_shared<OpAdapter>(*this);
    copy->logger_ = std::make_shared<OrtLogger>(OrtLogger{spindle::logging::Logger(severity, log_id), severity});
    return copy;
  }
  // The op's InferOutputShapeFn (version 16 and later) on the node's input
  // types and attributes; nothing when the op has none.
  std::vector<spindle::DataType> infer_output_types(const spindle::CustomKernelInfo& node) const override {
    if (op_->version < kComputeV2 || !op_->InferOutputShapeFn) return {};
    OrtShapeInferContext ctx{&node, {}, {}, std::vector<spindle::DataType>(node.output_names.size(), spindle::DataType::kUndefined)};
    for (spindle::DataType t : node.input_types) {
      auto info = std::make_unique<OrtTensorTypeAndShapeInfo>();
      info->type = t == spindle::DataType::kUndefined ? ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED : dtype_to_ort(t);
      info->has_shape = false;
      ctx.inputs.push_back(std::move(info));
    }
    throw_if_error(op_->InferOutputShapeFn(op_, &ctx), "custom op " + name_ + ": InferOutputShapeFn");
    return ctx.outputs;
  }
  std::string name() const override { return name_; }
  std::vector<spindle::DataType> input_types() const override { return declared_types(op_, true); }
  std::vector<spindle::DataType> output_types() const override { return declared_types(op_, false); }
  int since_version() const override {
    return op_->version >= kOpsetRange && op_->GetStartVersion ? op_->GetStartVersion(op_) : 1;
  }
  int end_version() const override {
    return op_->version >= kOpsetRange && op_->GetEndVersion ? op_->GetEndVersion(op_) : INT_MAX;
  }
  std::unique_ptr<spindle::CustomKernel> create_kernel(const spindle::CustomKernelInfo& info) const override {
    const std::string label = "custom op " + (info.domain.empty() ? "" : info.domain + ".") + name_ +
                              (info.node_name.empty() ? "" : " '" + info.node_name + "'");
    if (op_->version >= kCharacteristics && op_->GetInputCharacteristic) {
      const size_t declared = op_->GetInputTypeCount(op_);
      for (size_t i = 0; i < declared; ++i) {
        const bool given = i < info.input_names.size() && !info.input_names[i].empty();
        if (!given && op_->GetInputCharacteristic(op_, i) == INPUT_OUTPUT_REQUIRED)
          throw spindle::Error(spindle::StatusCode::kInvalidArgument,
                               label + ": input " + std::to_string(i) + " is required and the node does not give it");
      }
    }
    auto constants = std::make_shared<std::vector<OrtValue>>();
    for (const spindle::Tensor& t : info.constant_inputs) constants->push_back(OrtValue{t});
    OrtKernelInfo ki{info, logger_, constants};
    const OrtApi* api = api_base()->GetApi(ORT_API_VERSION);
    void* kernel = nullptr;
    if (op_->version >= kComputeV2 && op_->CreateKernelV2) {
      throw_if_error(op_->CreateKernelV2(op_, api, &ki, &kernel), label);
    } else if (op_->CreateKernel) {
      kernel = op_->CreateKernel(op_, api, &ki);
    } else {
      throw spindle::Error(spindle::StatusCode::kInvalidArgument, label + ": the custom op has no CreateKernel");
    }
    auto adapter = std::make_unique<KernelAdapter>(op_, kernel, info.output_types, label, logger_);
    adapter->constants = std::move(constants);
    return adapter;
  }

  std::shared_ptr<void> library;

 private:
  const OrtCustomOp* op_;
  std::string name_;
  std::shared_ptr<const OrtLogger> logger_;
};

// ---------------------------------------------------------------- domains

OrtStatus* ORT_API_CALL CreateCustomOpDomain(const char* domain, OrtCustomOpDomain** out) noexcept {
  API_BEGIN
  CHECK_ARG("CreateCustomOpDomain", domain);
  CHECK_ARG("CreateCustomOpDomain", out);
  *out = new OrtCustomOpDomain{domain, {}};
  API_END
}
OrtStatus* ORT_API_CALL CustomOpDomain_Add(OrtCustomOpDomain* d, const OrtCustomOp* op) noexcept {
  API_BEGIN
  CHECK_ARG("CustomOpDomain_Add", d);
  CHECK_ARG("CustomOpDomain_Add", op);
  if (!op->GetName || !op->GetInputTypeCount || !op->GetInputType || !op->GetOutputTypeCount || !op->GetOutputType)
    return make_status(ORT_INVALID_ARGUMENT, "CustomOpDomain_Add: the custom op leaves GetName, GetInputType(Count) "
                                             "or GetOutputType(Count) NULL");
  d->ops.push_back(op);
  API_END
}
void ORT_API_CALL ReleaseCustomOpDomain(OrtCustomOpDomain* d) noexcept { delete d; }

OrtStatus* ORT_API_CALL AddCustomOpDomain(OrtSessionOptions* o, OrtCustomOpDomain* d) noexcept {
  API_BEGIN
  CHECK_ARG("AddCustomOpDomain", o);
  CHECK_ARG("AddCustomOpDomain", d);
  auto domain = std::make_shared<spindle::CustomOpDomain>();
  domain->name = d->name;
  for (const OrtCustomOp* op : d->ops) {
    const char* provider = op->GetExecutionProviderType ? op->GetExecutionProviderType(op) : nullptr;
    if (provider && std::strcmp(provider, "CPUExecutionProvider") != 0)
      return make_status(ORT_NOT_IMPLEMENTED, std::string("AddCustomOpDomain: custom op ") + op->GetName(op) +
                                                  " is for execution provider " + provider +
                                                  "; spindle runs custom ops on the CPU only");
    domain->ops.push_back(std::make_shared<OpAdapter>(op));
  }
  o->opts.custom_op_domains.push_back(std::move(domain));
  API_END
}

// ---------------------------------------------------------------- libraries

using RegisterFn = OrtStatus*(ORT_API_CALL*)(OrtSessionOptions*, const OrtApiBase*);

// dlopen's handle, closed with the last op of the library when `owned`.
struct Library {
  void* handle = nullptr;
  bool owned = true;
  ~Library() {
    if (owned && handle) dlclose(handle);
  }
};

// Loads `path` and calls `function` of it (or, with no path, of the process)
// on the options; ops the call adds keep the library loaded.
OrtStatus* register_from(const char* fn, OrtSessionOptions* o, const char* path, const char* function, bool owned,
                         void** handle_out) {
  auto lib = std::make_shared<Library>();
  lib->owned = owned;
  lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    const char* err = dlerror();
    std::error_code ec;
    if (path && !std::filesystem::exists(path, ec))
      return make_status(ORT_NO_SUCHFILE, std::string(fn) + ": the custom op library '" + path + "' does not exist");
    return make_status(ORT_FAIL, std::string(fn) + ": cannot load '" + (path ? path : "the process") +
                                     "': " + (err ? err : "dlopen failed"));
  }
  auto reg = reinterpret_cast<RegisterFn>(dlsym(lib->handle, function));
  if (!reg)
    return make_status(ORT_FAIL,
                       std::string(fn) + ": '" + (path ? path : "the process") + "' has no function " + function +
                           "(OrtSessionOptions*, const OrtApiBase*); a custom op library exports one (extern \"C\")");
  const size_t before = o->opts.custom_op_domains.size();
  if (OrtStatus* st = reg(o, api_base())) {
    o->opts.custom_op_domains.resize(before);
    return st;
  }
  for (size_t i = before; i < o->opts.custom_op_domains.size(); ++i)
    for (const auto& op : o->opts.custom_op_domains[i]->ops)
      if (auto* a = dynamic_cast<const OpAdapter*>(op.get())) const_cast<OpAdapter*>(a)->library = lib;
  if (handle_out) *handle_out = lib->handle;
  return nullptr;
}

OrtStatus* ORT_API_CALL RegisterCustomOpsLibrary(OrtSessionOptions* o, const char* path, void** handle) noexcept {
  API_BEGIN
  CHECK_ARG("RegisterCustomOpsLibrary", o);
  CHECK_ARG("RegisterCustomOpsLibrary", path);
  CHECK_ARG("RegisterCustomOpsLibrary", handle);
  // Version 1 hands the handle to the caller, who closes it.
  return register_from("RegisterCustomOpsLibrary", o, path, "RegisterCustomOps", false, handle);
  API_END
}
OrtStatus* ORT_API_CALL RegisterCustomOpsLibrary_V2(OrtSessionOptions* o, const ORTCHAR_T* path) noexcept {
  API_BEGIN
  CHECK_ARG("RegisterCustomOpsLibrary_V2", o);
  CHECK_ARG("RegisterCustomOpsLibrary_V2", path);
  return register_from("RegisterCustomOpsLibrary_V2", o, path, "RegisterCustomOps", true, nullptr);
  API_END
}
// A registration function linked into the program (found by name among
// the process's exported symbols).
OrtStatus* ORT_API_CALL RegisterCustomOpsUsingFunction(OrtSessionOptions* o, const char* name) noexcept {
  API_BEGIN
  CHECK_ARG("RegisterCustomOpsUsingFunction", o);
  CHECK_ARG("RegisterCustomOpsUsingFunction", name);
  return register_from("RegisterCustomOpsUsingFunction", o, nullptr, name, true, nullptr);
  API_END
}

// ---------------------------------------------------------------- kernel info

OrtStatus* missing_attribute(const char* fn, const OrtKernelInfo* k, const char* name) {
  return make_status(ORT_FAIL, std::string(fn) + ": node '" + k->info.node_name + "' (" + k->info.op_type +
                                   ") has no attribute '" + name + "'");
}
OrtStatus* wrong_attribute(const char* fn, const OrtKernelInfo* k, const char* name, const char* want) {
  return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": attribute '" + name + "' of node '" +
                                               k->info.node_name + "' is not " + want);
}

template <class T>
OrtStatus* get_attribute(const char* fn, const OrtKernelInfo* k, const char* name, T* out, const char* want) {
  CHECK_ARG(fn, k);
  CHECK_ARG(fn, name);
  CHECK_ARG(fn, out);
  const spindle::CustomAttribute* a = k->info.attribute(name);
  if (!a) return missing_attribute(fn, k, name);
  const T* v = std::get_if<T>(a);
  if (!v) return wrong_attribute(fn, k, name, want);
  *out = *v;
  return nullptr;
}

// ONNX Runtime's size protocol: out NULL asks for the size; a buffer too
// small is an error that still reports the size needed.
template <class T>
OrtStatus* copy_out(const char* fn, const T* data, size_t count, T* out, size_t* size) {
  if (!out) {
    *size = count;
    return nullptr;
  }
  if (*size < count) {
    const size_t given = *size;
    *size = count;
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the buffer holds " + std::to_string(given) +
                                                 " elements; " + std::to_string(count) + " are needed");
  }
  std::copy(data, data + count, out);
  *size = count;
  return nullptr;
}
OrtStatus* copy_string_out(const char* fn, const std::string& s, char* out, size_t* size) {
  return copy_out(fn, s.c_str(), s.size() + 1, out, size);
}

OrtStatus* ORT_API_CALL KernelInfoGetAttribute_float(const OrtKernelInfo* k, const char* name, float* out) noexcept {
  return get_attribute("KernelInfoGetAttribute_float", k, name, out, "a float");
}
OrtStatus* ORT_API_CALL KernelInfoGetAttribute_int64(const OrtKernelInfo* k, const char* name, int64_t* out) noexcept {
  return get_attribute("KernelInfoGetAttribute_int64", k, name, out, "an int");
}
OrtStatus* ORT_API_CALL KernelInfoGetAttribute_string(const OrtKernelInfo* k, const char* name, char* out,
                                                      size_t* size) noexcept {
  API_BEGIN
  const char* fn = "KernelInfoGetAttribute_string";
  CHECK_ARG(fn, k);
  CHECK_ARG(fn, name);
  CHECK_ARG(fn, size);
  const spindle::CustomAttribute* a = k->info.attribute(name);
  if (!a) return missing_attribute(fn, k, name);
  const auto* v = std::get_if<std::string>(a);
  if (!v) return wrong_attribute(fn, k, name, "a string");
  return copy_string_out(fn, *v, out, size);
  API_END
}
template <class T>
OrtStatus* get_array(const char* fn, const OrtKernelInfo* k, const char* name, T* out, size_t* size, const char* want) {
  CHECK_ARG(fn, k);
  CHECK_ARG(fn, name);
  CHECK_ARG(fn, size);
  const spindle::CustomAttribute* a = k->info.attribute(name);
  if (!a) return missing_attribute(fn, k, name);
  const auto* v = std::get_if<std::vector<T>>(a);
  if (!v) return wrong_attribute(fn, k, name, want);
  return copy_out(fn, v->data(), v->size(), out, size);
}
OrtStatus* ORT_API_CALL KernelInfoGetAttributeArray_float(const OrtKernelInfo* k, const char* name, float* out,
                                                          size_t* size) noexcept {
  return get_array("KernelInfoGetAttributeArray_float", k, name, out, size, "a list of floats");
}
OrtStatus* ORT_API_CALL KernelInfoGetAttributeArray_int64(const OrtKernelInfo* k, const char* name, int64_t* out,
                                                          size_t* size) noexcept {
  return get_array("KernelInfoGetAttributeArray_int64", k, name, out, size, "a list of ints");
}
// A tensor attribute as a new value the caller releases (ReleaseValue); the
// allocator is not needed: spindle's values hold their own memory.
OrtStatus* ORT_API_CALL KernelInfoGetAttribute_tensor(const OrtKernelInfo* k, const char* name, OrtAllocator*,
                                                      OrtValue** out) noexcept {
  const char* fn = "KernelInfoGetAttribute_tensor";
  CHECK_ARG(fn, k);
  CHECK_ARG(fn, name);
  CHECK_ARG(fn, out);
  API_BEGIN
  auto it = k->info.tensor_attributes.find(name);
  if (it == k->info.tensor_attributes.end()) {
    if (k->info.attribute(name)) return wrong_attribute(fn, k, name, "a tensor");
    return missing_attribute(fn, k, name);
  }
  *out = new OrtValue{it->second.clone()};
  API_END
}
// A list of strings in memory from `allocator`: the array and each string,
// which the caller frees with it.
OrtStatus* ORT_API_CALL KernelInfoGetAttributeArray_string(const OrtKernelInfo* k, const char* name, OrtAllocator* allocator,
                                                           char*** out, size_t* size) noexcept {
  const char* fn = "KernelInfoGetAttributeArray_string";
  CHECK_ARG(fn, k);
  CHECK_ARG(fn, name);
  CHECK_ARG(fn, allocator);
  CHECK_ARG(fn, out);
  CHECK_ARG(fn, size);
  API_BEGIN
  const spindle::CustomAttribute* a = k->info.attribute(name);
  if (!a) return missing_attribute(fn, k, name);
  const auto* v = std::get_if<std::vector<std::string>>(a);
  if (!v) return wrong_attribute(fn, k, name, "a list of strings");
  auto** array = static_cast<char**>(allocator->Alloc(allocator, std::max<size_t>(v->size(), 1) * sizeof(char*)));
  if (!array) throw std::bad_alloc();
  size_t done = 0;
  try {
    for (; done < v->size(); ++done) array[done] = copy_string(allocator, (*v)[done]);
  } catch (...) {
    for (size_t i = 0; i < done; ++i) allocator->Free(allocator, array[i]);
    allocator->Free(allocator, array);
    throw;
  }
  *out = array;
  *size = v->size();
  API_END
}
// Input `index` when the model makes it a constant (an initializer): the
// value belongs to the kernel info (and the kernel made from it).
OrtStatus* ORT_API_CALL KernelInfoGetConstantInput_tensor(const OrtKernelInfo* k, size_t index, int* is_constant,
                                                          const OrtValue** out) noexcept {
  const char* fn = "KernelInfoGetConstantInput_tensor";
  CHECK_ARG(fn, k);
  CHECK_ARG(fn, is_constant);
  CHECK_ARG(fn, out);
  const size_t count = k->info.input_names.size();
  if (index >= count) return index_error(fn, index, count);
  const OrtValue* v = k->constants && index < k->constants->size() ? &(*k->constants)[index] : nullptr;
  *is_constant = v && v->tensor.defined() ? 1 : 0;
  *out = *is_constant ? v : nullptr;
  return nullptr;
}
OrtStatus* ORT_API_CALL KernelInfo_GetInputCount(const OrtKernelInfo* k, size_t* out) noexcept {
  CHECK_ARG("KernelInfo_GetInputCount", k);
  CHECK_ARG("KernelInfo_GetInputCount", out);
  *out = k->info.input_names.size();
  return nullptr;
}
OrtStatus* ORT_API_CALL KernelInfo_GetOutputCount(const OrtKernelInfo* k, size_t* out) noexcept {
  CHECK_ARG("KernelInfo_GetOutputCount", k);
  CHECK_ARG("KernelInfo_GetOutputCount", out);
  *out = k->info.output_names.size();
  return nullptr;
}
OrtStatus* name_at(const char* fn, const OrtKernelInfo* k, const std::vector<std::string>& names, size_t index,
                   char* out, size_t* size) {
  CHECK_ARG(fn, k);
  CHECK_ARG(fn, size);
  if (index >= names.size()) return index_error(fn, index, names.size());
  return copy_string_out(fn, names[index], out, size);
}
OrtStatus* ORT_API_CALL KernelInfo_GetInputName(const OrtKernelInfo* k, size_t index, char* out, size_t* size) noexcept {
  API_BEGIN
  CHECK_ARG("KernelInfo_GetInputName", k);
  return name_at("KernelInfo_GetInputName", k, k->info.input_names, index, out, size);
  API_END
}
OrtStatus* ORT_API_CALL KernelInfo_GetOutputName(const OrtKernelInfo* k, size_t index, char* out, size_t* size) noexcept {
  API_BEGIN
  CHECK_ARG("KernelInfo_GetOutputName", k);
  return name_at("KernelInfo_GetOutputName", k, k->info.output_names, index, out, size);
  API_END
}
// A string of the node (its name, operator, domain) by the size protocol.
OrtStatus* node_string(const char* fn, const OrtKernelInfo* k, std::string spindle::CustomKernelInfo::*field, char* out,
                       size_t* size) {
  API_BEGIN
  CHECK_ARG(fn, k);
  CHECK_ARG(fn, size);
  return copy_string_out(fn, k->info.*field, out, size);
  API_END
}
OrtStatus* ORT_API_CALL KernelInfo_GetNodeName(const OrtKernelInfo* k, char* out, size_t* size) noexcept {
  return node_string("KernelInfo_GetNodeName", k, &spindle::CustomKernelInfo::node_name, out, size);
}
// The element type known at load (UNDEFINED when it is not); no shape.
OrtStatus* type_at(const char* fn, const OrtKernelInfo* k, const std::vector<spindle::DataType>& types, size_t index,
                   OrtTypeInfo** out) {
  CHECK_ARG(fn, k);
  CHECK_ARG(fn, out);
  if (index >= types.size()) return index_error(fn, index, types.size());
  auto* ti = new OrtTypeInfo;
  ti->type = ONNX_TYPE_TENSOR;
  ti->tensor.type = types[index] == spindle::DataType::kUndefined ? ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED
                                                                  : dtype_to_ort(types[index]);
  ti->tensor.has_shape = false;
  *out = ti;
  return nullptr;
}
OrtStatus* ORT_API_CALL KernelInfo_GetInputTypeInfo(const OrtKernelInfo* k, size_t index, OrtTypeInfo** out) noexcept {
  API_BEGIN
  CHECK_ARG("KernelInfo_GetInputTypeInfo", k);
  return type_at("KernelInfo_GetInputTypeInfo", k, k->info.input_types, index, out);
  API_END
}
OrtStatus* ORT_API_CALL KernelInfo_GetOutputTypeInfo(const OrtKernelInfo* k, size_t index, OrtTypeInfo** out) noexcept {
  API_BEGIN
  CHECK_ARG("KernelInfo_GetOutputTypeInfo", k);
  return type_at("KernelInfo_GetOutputTypeInfo", k, k->info.output_types, index, out);
  API_END
}
OrtStatus* ORT_API_CALL CopyKernelInfo(const OrtKernelInfo* k, OrtKernelInfo** out) noexcept {
  API_BEGIN
  CHECK_ARG("CopyKernelInfo", k);
  CHECK_ARG("CopyKernelInfo", out);
  *out = new OrtKernelInfo(*k);
  API_END
}
void ORT_API_CALL ReleaseKernelInfo(OrtKernelInfo* k) noexcept { delete k; }
OrtStatus* ORT_API_CALL KernelInfo_GetOperatorDomain(const OrtKernelInfo* k, char* out, size_t* size) noexcept {
  return node_string("KernelInfo_GetOperatorDomain", k, &spindle::CustomKernelInfo::domain, out, size);
}
OrtStatus* ORT_API_CALL KernelInfo_GetOperatorType(const OrtKernelInfo* k, char* out, size_t* size) noexcept {
  return node_string("KernelInfo_GetOperatorType", k, &spindle::CustomKernelInfo::op_type, out, size);
}
// A CPU allocator of the kernel's own (released with ReleaseAllocator).
OrtStatus* ORT_API_CALL KernelInfoGetAllocator(const OrtKernelInfo* k, OrtMemType, OrtAllocator** out) noexcept {
  CHECK_ARG("KernelInfoGetAllocator", k);
  CHECK_ARG("KernelInfoGetAllocator", out);
  API_BEGIN
  *out = new OrtAllocator(make_cpu_allocator());
  API_END
}

// ---------------------------------------------------------------- kernel context

OrtStatus* ORT_API_CALL KernelContext_GetInputCount(const OrtKernelContext* c, size_t* out) noexcept {
  CHECK_ARG("KernelContext_GetInputCount", c);
  CHECK_ARG("KernelContext_GetInputCount", out);
  *out = c->inputs.size();
  return nullptr;
}
OrtStatus* ORT_API_CALL KernelContext_GetOutputCount(const OrtKernelContext* c, size_t* out) noexcept {
  CHECK_ARG("KernelContext_GetOutputCount", c);
  CHECK_ARG("KernelContext_GetOutputCount", out);
  *out = c->outputs.size();
  return nullptr;
}
OrtStatus* ORT_API_CALL KernelContext_GetInput(const OrtKernelContext* c, size_t index, const OrtValue** out) noexcept {
  CHECK_ARG("KernelContext_GetInput", c);
  CHECK_ARG("KernelContext_GetInput", out);
  if (index >= c->inputs.size()) return index_error("KernelContext_GetInput", index, c->inputs.size());
  *out = c->inputs[index].get();  // NULL for an absent optional input
  return nullptr;
}
OrtStatus* ORT_API_CALL KernelContext_GetOutput(OrtKernelContext* c, size_t index, const int64_t* dims, size_t rank,
                                                OrtValue** out) noexcept {
  API_BEGIN
  const char* fn = "KernelContext_GetOutput";
  CHECK_ARG(fn, c);
  CHECK_ARG(fn, out);
  if (rank > 0) CHECK_ARG(fn, dims);
  if (index >= c->outputs.size()) return index_error(fn, index, c->outputs.size());
  spindle::Shape shape(dims, dims + rank);
  for (size_t d = 0; d < rank; ++d)
    if (shape[d] < 0)
      return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": output " + std::to_string(index) + ": dimension " +
                                                   std::to_string(d) + " is " + std::to_string(shape[d]) +
                                                   "; dimensions are not negative");
  // Asked again with the same shape: the same value.
  if (c->outputs[index] && c->outputs[index]->tensor.shape() == shape) {
    *out = c->outputs[index].get();
    return nullptr;
  }
  spindle::DataType dtype = kernels::declared_type(*c->output_types, index);
  if (dtype == spindle::DataType::kUndefined) {
    // An output whose type the op leaves open takes its first input's.
    for (const auto& in : c->inputs)
      if (in && in->tensor.defined()) {
        dtype = in->tensor.dtype();
        break;
      }
  }
  if (dtype == spindle::DataType::kUndefined)
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": output " + std::to_string(index) +
                                                 " has no element type: the custom op declares none and the node has "
                                                 "no input to take it from");
  spindle::Tensor& t = c->ctx->output(index, dtype, shape);
  c->outputs[index] = std::make_unique<OrtValue>(OrtValue{t});
  *out = c->outputs[index].get();
  API_END
}
// The checks of a kernel's request for memory: its arguments, CPU memory only.
OrtStatus* memory_request(const char* fn, const OrtKernelContext* c, const OrtMemoryInfo* info, const void* out) {
  CHECK_ARG(fn, c);
  CHECK_ARG(fn, info);
  CHECK_ARG(fn, out);
  if (info->name != "Cpu")
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": memory '" + info->name + "'; spindle has CPU memory only (\"Cpu\")");
  return nullptr;
}
OrtStatus* ORT_API_CALL KernelContext_GetAllocator(const OrtKernelContext* c, const OrtMemoryInfo* info,
                                                   OrtAllocator** out) noexcept {
  if (OrtStatus* s = memory_request("KernelContext_GetAllocator", c, info, out)) return s;
  *out = &g_default_allocator;
  return nullptr;
}
// CPU memory the kernel frees with the context's allocator (KernelContext_GetAllocator), as in ONNX Runtime.
OrtStatus* ORT_API_CALL KernelContext_GetScratchBuffer(const OrtKernelContext* c, const OrtMemoryInfo* info, size_t bytes,
                                                       void** out) noexcept {
  if (OrtStatus* s = memory_request("KernelContext_GetScratchBuffer", c, info, out)) return s;
  *out = nullptr;
  if (bytes == 0) return nullptr;
  *out = g_default_allocator.Alloc(&g_default_allocator, bytes);
  if (!*out)
    return make_status(ORT_FAIL, "KernelContext_GetScratchBuffer: out of memory allocating " + std::to_string(bytes) + " bytes");
  return nullptr;
}
// fn(usr_data, i) for i in [0, total): batches of consecutive indices (at
// most num_batch, 0 = one per index), each run whole by one thread of the
// session's intra-op pool (the caller included). The batches depend on
// total and num_batch only.
OrtStatus* ORT_API_CALL KernelContext_ParallelFor(const OrtKernelContext* c, void (*fn)(void*, size_t), size_t total,
                                                  size_t num_batch, void* usr_data) noexcept {
  API_BEGIN
  CHECK_ARG("KernelContext_ParallelFor", c);
  CHECK_ARG("KernelContext_ParallelFor", fn);
  if (total == 0) return nullptr;
  const size_t batches = num_batch == 0 ? total : std::min(num_batch, total);
  auto run_batch = [&](size_t b) {
    const size_t begin = total / batches * b + std::min(b, total % batches);
    const size_t end = begin + total / batches + (b < total % batches ? 1 : 0);
    for (size_t i = begin; i < end; ++i) fn(usr_data, i);
  };
  spindle::parallel_for(c->ctx->intra_op_pool(), 0, static_cast<int64_t>(batches), 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) run_batch(static_cast<size_t>(b));
  });
  API_END
}

// ---------------------------------------------------------------- shape inference

OrtStatus* ORT_API_CALL ShapeInferContext_GetInputCount(const OrtShapeInferContext* c, size_t* out) noexcept {
  CHECK_ARG("ShapeInferContext_GetInputCount", c);
  CHECK_ARG("ShapeInferContext_GetInputCount", out);
  *out = c->inputs.size();
  return nullptr;
}
// The context keeps the type and shape (valid during the call; the caller does not release it).
OrtStatus* ORT_API_CALL ShapeInferContext_GetInputTypeShape(const OrtShapeInferContext* c, size_t index,
                                                            OrtTensorTypeAndShapeInfo** out) noexcept {
  CHECK_ARG("ShapeInferContext_GetInputTypeShape", c);
  CHECK_ARG("ShapeInferContext_GetInputTypeShape", out);
  if (index >= c->inputs.size()) return index_error("ShapeInferContext_GetInputTypeShape", index, c->inputs.size());
  *out = c->inputs[index].get();
  return nullptr;
}
OrtStatus* ORT_API_CALL ShapeInferContext_GetAttribute(const OrtShapeInferContext* c, const char* name,
                                                       const OrtOpAttr** out) noexcept {
  CHECK_ARG("ShapeInferContext_GetAttribute", c);
  CHECK_ARG("ShapeInferContext_GetAttribute", name);
  CHECK_ARG("ShapeInferContext_GetAttribute", out);
  API_BEGIN
  const spindle::CustomAttribute* a = c->node->attribute(name);
  if (!a)
    return make_status(ORT_INVALID_ARGUMENT, std::string("ShapeInferContext_GetAttribute: node '") + c->node->node_name +
                                                 "' (" + c->node->op_type + ") has no attribute '" + name + "'");
  auto it = c->attrs.try_emplace(name, OrtOpAttr{name, *a}).first;
  *out = &it->second;
  API_END
}
// Only the element type matters to spindle, which infers no shapes.
OrtStatus* ORT_API_CALL ShapeInferContext_SetOutputTypeShape(const OrtShapeInferContext* c, size_t index,
                                                             const OrtTensorTypeAndShapeInfo* info) noexcept {
  CHECK_ARG("ShapeInferContext_SetOutputTypeShape", c);
  CHECK_ARG("ShapeInferContext_SetOutputTypeShape", info);
  if (index >= c->outputs.size()) return index_error("ShapeInferContext_SetOutputTypeShape", index, c->outputs.size());
  spindle::DataType t = spindle::DataType::kUndefined;
  if (info->type != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED && !dtype_from_ort(info->type, &t))
    return unsupported_type("ShapeInferContext_SetOutputTypeShape", info->type);
  c->outputs[index] = t;
  return nullptr;
}

// Copies `count` elements of `bytes` each into data (ONNX Runtime's size
// protocol: *out is the size in bytes needed; too small a buffer is an error).
OrtStatus* read_bytes(const void* from, size_t bytes, void* data, size_t len, size_t* out) {
  *out = bytes;
  if (bytes && (!data || len < bytes))
    return make_status(ORT_INVALID_ARGUMENT, "ReadOpAttr: the buffer holds " + std::to_string(data ? len : 0) +
                                                 " bytes; the attribute needs " + std::to_string(bytes));
  if (bytes) std::memcpy(data, from, bytes);
  return nullptr;
}
OrtStatus* ORT_API_CALL ReadOpAttr(const OrtOpAttr* attr, OrtOpAttrType type, void* data, size_t len, size_t* out) noexcept {
  CHECK_ARG("ReadOpAttr", attr);
  CHECK_ARG("ReadOpAttr", out);
  API_BEGIN
  const auto& v = attr->value;
  auto wrong = [&](const char* want) {
    return make_status(ORT_INVALID_ARGUMENT, "ReadOpAttr: attribute '" + attr->name + "' is not " + want);
  };
  switch (type) {
    case ORT_OP_ATTR_INT: {
      const auto* i = std::get_if<int64_t>(&v);
      return i ? read_bytes(i, sizeof *i, data, len, out) : wrong("an int");
    }
    case ORT_OP_ATTR_FLOAT: {
      const auto* f = std::get_if<float>(&v);
      return f ? read_bytes(f, sizeof *f, data, len, out) : wrong("a float");
    }
    case ORT_OP_ATTR_INTS: {
      const auto* i = std::get_if<std::vector<int64_t>>(&v);
      return i ? read_bytes(i->data(), i->size() * sizeof(int64_t), data, len, out) : wrong("a list of ints");
    }
    case ORT_OP_ATTR_FLOATS: {
      const auto* f = std::get_if<std::vector<float>>(&v);
      return f ? read_bytes(f->data(), f->size() * sizeof(float), data, len, out) : wrong("a list of floats");
    }
    case ORT_OP_ATTR_STRING: {
      const auto* s = std::get_if<std::string>(&v);
      return s ? read_bytes(s->data(), s->size(), data, len, out) : wrong("a string");
    }
    case ORT_OP_ATTR_STRINGS: {
      // Each string followed by a NUL.
      const auto* s = std::get_if<std::vector<std::string>>(&v);
      if (!s) return wrong("a list of strings");
      std::string joined;
      for (const auto& e : *s) joined.append(e).push_back('\0');
      return read_bytes(joined.data(), joined.size(), data, len, out);
    }
    default:
      return make_status(ORT_NOT_IMPLEMENTED, "ReadOpAttr: attribute type " + std::to_string(static_cast<int>(type)) +
                                                  " is not supported (int, float, string and their lists are)");
  }
  API_END
}

// ---------------------------------------------------------------- loggers

OrtStatus* ORT_API_CALL KernelInfo_GetLogger(const OrtKernelInfo* k, const OrtLogger** out) noexcept {
  CHECK_ARG("KernelInfo_GetLogger", k);
  CHECK_ARG("KernelInfo_GetLogger", out);
  static const OrtLogger process_default;
  *out = k->logger ? k->logger.get() : &process_default;
  return nullptr;
}
OrtStatus* ORT_API_CALL KernelContext_GetLogger(const OrtKernelContext* c, const OrtLogger** out) noexcept {
  CHECK_ARG("KernelContext_GetLogger", c);
  CHECK_ARG("KernelContext_GetLogger", out);
  static const OrtLogger process_default;
  *out = c->logger ? c->logger : &process_default;
  return nullptr;
}
OrtStatus* ORT_API_CALL Logger_LogMessage(const OrtLogger* logger, OrtLoggingLevel severity, const char* message,
                                          const ORTCHAR_T* file, int line, const char*) noexcept {
  CHECK_ARG("Logger_LogMessage", logger);
  CHECK_ARG("Logger_LogMessage", message);
  if (severity < ORT_LOGGING_LEVEL_VERBOSE || severity > ORT_LOGGING_LEVEL_FATAL)
    return make_status(ORT_INVALID_ARGUMENT, "Logger_LogMessage: severity " + std::to_string(static_cast<int>(severity)) +
                                                 " is not a logging level (0 verbose .. 4 fatal)");
  API_BEGIN
  const auto s = static_cast<spindle::LogSeverity>(severity);
  if (logger->logger.enabled(s)) logger->logger.write(s, message, file ? file : "", line);
  API_END
}
OrtStatus* ORT_API_CALL Logger_GetLoggingSeverityLevel(const OrtLogger* logger, OrtLoggingLevel* out) noexcept {
  CHECK_ARG("Logger_GetLoggingSeverityLevel", logger);
  CHECK_ARG("Logger_GetLoggingSeverityLevel", out);
  *out = static_cast<OrtLoggingLevel>(logger->severity >= 0 ? logger->severity
                                                            : static_cast<int>(spindle::default_log_severity()));
  return nullptr;
}

}  // namespace

void set_custom_op_slots(OrtApi& api) {
#define SET(name) api.name = name;
  SET(CreateCustomOpDomain) SET(CustomOpDomain_Add) SET(ReleaseCustomOpDomain) SET(AddCustomOpDomain)
  SET(RegisterCustomOpsLibrary) SET(RegisterCustomOpsLibrary_V2) SET(RegisterCustomOpsUsingFunction)
  SET(KernelInfoGetAttribute_float) SET(KernelInfoGetAttribute_int64) SET(KernelInfoGetAttribute_string)
  SET(KernelInfoGetAttributeArray_float) SET(KernelInfoGetAttributeArray_int64) SET(KernelInfo_GetInputCount)
  SET(KernelInfoGetAttribute_tensor) SET(KernelInfoGetAttributeArray_string) SET(KernelInfoGetConstantInput_tensor)
  SET(KernelInfo_GetOutputCount) SET(KernelInfo_GetInputName) SET(KernelInfo_GetOutputName) SET(KernelInfo_GetNodeName)
  SET(KernelInfo_GetInputTypeInfo) SET(KernelInfo_GetOutputTypeInfo) SET(CopyKernelInfo) SET(ReleaseKernelInfo)
  SET(KernelContext_GetInputCount) SET(KernelContext_GetOutputCount) SET(KernelContext_GetInput)
  SET(KernelContext_GetOutput) SET(KernelContext_GetAllocator) SET(KernelContext_ParallelFor)
  SET(KernelContext_GetScratchBuffer)
  SET(ShapeInferContext_GetInputCount) SET(ShapeInferContext_GetInputTypeShape) SET(ShapeInferContext_GetAttribute)
  SET(ShapeInferContext_SetOutputTypeShape) SET(ReadOpAttr) SET(KernelInfo_GetLogger) SET(KernelContext_GetLogger)
  SET(Logger_LogMessage) SET(Logger_GetLoggingSeverityLevel) SET(KernelInfo_GetOperatorDomain)
  SET(KernelInfo_GetOperatorType) SET(KernelInfoGetAllocator)
#undef SET
}

void bind_custom_op_logging(SessionOptions& opts) {
  for (auto& domain : opts.custom_op_domains) {
    if (!domain) continue;
    auto is_adapter = [](const std::shared_ptr<const CustomOp>& op) { return dynamic_cast<const OpAdapter*>(op.get()) != nullptr; };
    if (std::none_of(domain->ops.begin(), domain->ops.end(), is_adapter)) continue;
    auto copy = std::make_shared<CustomOpDomain>(*domain);
    for (auto& op : copy->ops)
      if (const auto* a = dynamic_cast<const OpAdapter*>(op.get())) op = a->for_session(opts.log_severity_level, opts.log_id);
    domain = std::move(copy);
  }
}

Status register_custom_ops_library(SessionOptions& options, const std::string& path) {
  OrtSessionOptions o;
  o.opts.custom_op_domains = options.custom_op_domains;
  if (OrtStatus* st = RegisterCustomOpsLibrary_V2(&o, path.c_str())) {
    Status s(code_from_ort(st->code), st->message);
    delete st;
    return s;
  }
  options.custom_op_domains = std::move(o.opts.custom_op_domains);
  return Status::ok();
}

}  // namespace spindle::capi
