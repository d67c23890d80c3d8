// api_values.cpp — ONNX Runtime's C API over spindle: values: sequences, memory info and allocators, tensors, type and shape info, key-value pairs, providers.
#include "capi/capi_internal.h"

namespace spindle::capi {
namespace {

// ---------------------------------------------------------------- sequences and maps

// The type of a map value: map(key type, tensor(value type)).
OrtTypeInfo map_type(const OrtMapValue& m) {
  OrtTypeInfo t;
  t.type = ONNX_TYPE_MAP;
  t.map = std::make_shared<OrtMapTypeInfo>();
  t.map->key = dtype_to_ort(m.keys.dtype());
  t.map->value.type = ONNX_TYPE_TENSOR;
  t.map->value.tensor.type = dtype_to_ort(m.values.dtype());
  t.map->value.tensor.has_shape = false;
  return t;
}

// A map from a keys tensor and a values tensor of as many elements: the keys
// sorted, a key given twice keeping its first value (as ONNX Runtime's).
OrtStatus* make_map(const OrtValue* keys_value, const OrtValue* values_value, OrtValue** out) {
  using spindle::DataType;
  if (!keys_value || !values_value || !keys_value->tensor.is_tensor() || !keys_value->tensor.defined() ||
      !values_value->tensor.is_tensor() || !values_value->tensor.defined())
    return make_status(ORT_FAIL, "CreateValue: a map is built from two tensors, its keys and its values");
  const spindle::Tensor& keys = keys_value->tensor;
  const spindle::Tensor& values = values_value->tensor;
  const DataType kt = keys.dtype(), vt = values.dtype();
  if (kt != DataType::kInt64 && kt != DataType::kString)
    return make_status(ORT_FAIL, "CreateValue: map keys are " + std::string(spindle::dtype_name(kt)) + "; they must be int64 or string");
  if (vt != DataType::kInt64 && vt != DataType::kString && vt != DataType::kFloat32 && vt != DataType::kFloat64)
    return make_status(ORT_FAIL, "CreateValue: map values are " + std::string(spindle::dtype_name(vt)) +
                                     "; they must be int64, string, float or double");
  if (keys.numel() != values.numel())
    return make_status(ORT_FAIL, "CreateValue: " + std::to_string(keys.numel()) + " keys and " +
                                     std::to_string(values.numel()) + " values; a map needs as many of each");
  const auto n = static_cast<size_t>(keys.numel());
  const spindle::Tensor k = keys.is_contiguous() ? keys : keys.clone();
  const spindle::Tensor v = values.is_contiguous() ? values : values.clone();
  auto less = [&](size_t a, size_t b) {
    if (kt == DataType::kString) return static_cast<const std::string*>(k.raw_data())[a] < static_cast<const std::string*>(k.raw_data())[b];
    return static_cast<const int64_t*>(k.raw_data())[a] < static_cast<const int64_t*>(k.raw_data())[b];
  };
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), less);
  std::vector<size_t> kept;  // of each run of equal keys, the first given
  for (size_t i = 0; i < n; ++i)
    if (i == 0 || less(order[i - 1], order[i])) kept.push_back(order[i]);
  const int64_t m = static_cast<int64_t>(kept.size());
  spindle::Tensor out_keys(kt, spindle::Shape{m}), out_values(vt, spindle::Shape{m});
  auto gather = [&](const spindle::Tensor& src, spindle::Tensor& dst) {
    if (src.dtype() == DataType::kString) {
      const auto* from = static_cast<const std::string*>(src.raw_data());
      auto* to = static_cast<std::string*>(dst.raw_mutable_data());
      for (size_t i = 0; i < kept.size(); ++i) to[i] = from[kept[i]];
    } else {
      const size_t es = spindle::dtype_size(src.dtype());
      for (size_t i = 0; i < kept.size(); ++i)
        std::memcpy(static_cast<char*>(dst.raw_mutable_data()) + i * es, static_cast<const char*>(src.raw_data()) + kept[i] * es, es);
    }
  };
  gather(k, out_keys);
  gather(v, out_values);
  auto value = std::make_unique<OrtValue>();
  value->map = std::make_shared<const OrtMapValue>(OrtMapValue{std::move(out_keys), std::move(out_values)});
  *out = value.release();
  return nullptr;
}

OrtStatus* ORT_API_CALL GetValueCount(const OrtValue* v, size_t* out) noexcept {
  CHECK_ARG("GetValueCount", v);
  CHECK_ARG("GetValueCount", out);
  if (v->map) {
    *out = 2;  // its keys and its values
  } else if (v->maps) {
    *out = v->maps->size();
  } else if (v->tensor.is_sequence()) {
    *out = v->tensor.sequence_items().size();
  } else {
    return make_status(ORT_INVALID_ARGUMENT, "GetValueCount: the value is neither a sequence nor a map");
  }
  return nullptr;
}
OrtStatus* ORT_API_CALL GetValue(const OrtValue* v, int index, OrtAllocator*, OrtValue** out) noexcept {
  CHECK_ARG("GetValue", v);
  CHECK_ARG("GetValue", out);
  API_BEGIN
  if (v->map) {
    if (index != 0 && index != 1)
      return make_status(ORT_FAIL, "GetValue: index " + std::to_string(index) + " of a map; 0 gives its keys, 1 its values");
    *out = new OrtValue{(index == 0 ? v->map->keys : v->map->values).clone()};
    return nullptr;
  }
  if (v->maps) {
    if (index < 0 || static_cast<size_t>(index) >= v->maps->size())
      return index_error("GetValue", static_cast<size_t>(index), v->maps->size());
    *out = new OrtValue((*v->maps)[static_cast<size_t>(index)]);
    return nullptr;
  }
  if (!v->tensor.is_sequence())
    return make_status(ORT_INVALID_ARGUMENT, "GetValue: the value is neither a sequence nor a map");
  const auto& items = v->tensor.sequence_items();
  if (index < 0 || static_cast<size_t>(index) >= items.size()) return index_error("GetValue", static_cast<size_t>(index), items.size());
  *out = new OrtValue{items[static_cast<size_t>(index)]};
  API_END
}
OrtStatus* ORT_API_CALL CreateValue(const OrtValue* const* in, size_t n, enum ONNXType type, OrtValue** out) noexcept {
  CHECK_ARG("CreateValue", out);
  if (type == ONNX_TYPE_MAP) {
    if (n != 2)
      return make_status(ORT_FAIL, "CreateValue: a map is built from 2 values (keys, values); " + std::to_string(n) + " given");
    CHECK_ARG("CreateValue", in);
    API_BEGIN
    return make_map(in[0], in[1], out);
    API_END
  }
  if (type != ONNX_TYPE_SEQUENCE)
    return make_status(ORT_NOT_IMPLEMENTED, "CreateValue: only sequences (ONNX_TYPE_SEQUENCE) and maps (ONNX_TYPE_MAP) can be built");
  if (n == 0) return make_status(ORT_INVALID_ARGUMENT, "CreateValue: a sequence needs at least one tensor (its element type)");
  CHECK_ARG("CreateValue", in);
  API_BEGIN
  if (in[0] && in[0]->map) {
    // A sequence of maps of one type (what ZipMap gives).
    auto maps = std::make_shared<std::vector<OrtValue>>();
    for (size_t i = 0; i < n; ++i) {
      if (!in[i] || !in[i]->map || in[i]->map->keys.dtype() != in[0]->map->keys.dtype() ||
          in[i]->map->values.dtype() != in[0]->map->values.dtype())
        return make_status(ORT_INVALID_ARGUMENT, "CreateValue: item " + std::to_string(i) +
                                                     " is not a map of the first item's key and value types");
      maps->push_back(*in[i]);
    }
    auto value = std::make_unique<OrtValue>();
    value->maps = std::move(maps);
    *out = value.release();
    return nullptr;
  }
  std::vector<spindle::Tensor> items;
  for (size_t i = 0; i < n; ++i) {
    if (!in[i] || !in[i]->tensor.is_tensor() || !in[i]->tensor.defined())
      return make_status(ORT_INVALID_ARGUMENT, "CreateValue: item " + std::to_string(i) + " is not a tensor");
    items.push_back(in[i]->tensor);
  }
  const spindle::DataType dt = items[0].dtype();
  *out = new OrtValue{spindle::Tensor::sequence(dt, std::move(items))};
  API_END
}

OrtStatus* ORT_API_CALL SessionGetInputCount(const OrtSession* s, size_t* out) noexcept {
  CHECK_ARG("SessionGetInputCount", s);
  CHECK_ARG("SessionGetInputCount", out);
  *out = s->session->inputs().size();
  return nullptr;
}
OrtStatus* ORT_API_CALL SessionGetOutputCount(const OrtSession* s, size_t* out) noexcept {
  CHECK_ARG("SessionGetOutputCount", s);
  CHECK_ARG("SessionGetOutputCount", out);
  *out = s->session->outputs().size();
  return nullptr;
}
OrtStatus* ORT_API_CALL SessionGetOverridableInitializerCount(const OrtSession* s, size_t* out) noexcept {
  CHECK_ARG("SessionGetOverridableInitializerCount", s);
  CHECK_ARG("SessionGetOverridableInitializerCount", out);
  *out = s->session->overridable_initializers().size();
  return nullptr;
}
// Initializers the model also lists as inputs: a run may feed them.
OrtStatus* ORT_API_CALL SessionGetOverridableInitializerName(const OrtSession* s, size_t index, OrtAllocator* a, char** out) noexcept {
  CHECK_ARG("SessionGetOverridableInitializerName", s);
  CHECK_ARG("SessionGetOverridableInitializerName", a);
  CHECK_ARG("SessionGetOverridableInitializerName", out);
  API_BEGIN
  const auto& v = s->session->overridable_initializers();
  if (index >= v.size()) return index_error("SessionGetOverridableInitializerName", index, v.size());
  *out = copy_string(a, v[index].name);
  API_END
}
OrtStatus* ORT_API_CALL SessionGetOverridableInitializerTypeInfo(const OrtSession* s, size_t index, OrtTypeInfo** out) noexcept {
  CHECK_ARG("SessionGetOverridableInitializerTypeInfo", s);
  CHECK_ARG("SessionGetOverridableInitializerTypeInfo", out);
  API_BEGIN
  const auto& v = s->session->overridable_initializers();
  if (index >= v.size()) return index_error("SessionGetOverridableInitializerTypeInfo", index, v.size());
  *out = type_info_of(v[index], s->dim_overrides);
  API_END
}
// Every input and output lives in CPU memory.
OrtStatus* memory_infos(const char* fn, const OrtSession* s, const OrtMemoryInfo** out, size_t n, size_t count) {
  if (!s) return null_argument(fn, "session");
  if (n && !out) return null_argument(fn, "memory_info");
  if (n != count)
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": room for " + std::to_string(n) + " entries; the model has " +
                                                 std::to_string(count));
  for (size_t i = 0; i < n; ++i) out[i] = &kCpuInfo;
  return nullptr;
}
OrtStatus* ORT_API_CALL SessionGetMemoryInfoForInputs(const OrtSession* s, const OrtMemoryInfo** out, size_t n) noexcept {
  return memory_infos("SessionGetMemoryInfoForInputs", s, out, n, s ? s->session->inputs().size() : 0);
}
OrtStatus* ORT_API_CALL SessionGetMemoryInfoForOutputs(const OrtSession* s, const OrtMemoryInfo** out, size_t n) noexcept {
  return memory_infos("SessionGetMemoryInfoForOutputs", s, out, n, s ? s->session->outputs().size() : 0);
}
OrtStatus* ORT_API_CALL SessionGetInputTypeInfo(const OrtSession* s, size_t index, OrtTypeInfo** out) noexcept {
  CHECK_ARG("SessionGetInputTypeInfo", s);
  CHECK_ARG("SessionGetInputTypeInfo", out);
  API_BEGIN
  const auto& v = s->session->inputs();
  if (index >= v.size()) return index_error("SessionGetInputTypeInfo", index, v.size());
  *out = type_info_of(v[index], s->dim_overrides);
  API_END
}
OrtStatus* ORT_API_CALL SessionGetOutputTypeInfo(const OrtSession* s, size_t index, OrtTypeInfo** out) noexcept {
  CHECK_ARG("SessionGetOutputTypeInfo", s);
  CHECK_ARG("SessionGetOutputTypeInfo", out);
  API_BEGIN
  const auto& v = s->session->outputs();
  if (index >= v.size()) return index_error("SessionGetOutputTypeInfo", index, v.size());
  *out = type_info_of(v[index], s->dim_overrides);
  API_END
}
OrtStatus* ORT_API_CALL SessionGetInputName(const OrtSession* s, size_t index, OrtAllocator* a, char** out) noexcept {
  CHECK_ARG("SessionGetInputName", s);
  CHECK_ARG("SessionGetInputName", a);
  CHECK_ARG("SessionGetInputName", out);
  API_BEGIN
  const auto& v = s->session->inputs();
  if (index >= v.size()) return index_error("SessionGetInputName", index, v.size());
  *out = copy_string(a, v[index].name);
  API_END
}
OrtStatus* ORT_API_CALL SessionGetOutputName(const OrtSession* s, size_t index, OrtAllocator* a, char** out) noexcept {
  CHECK_ARG("SessionGetOutputName", s);
  CHECK_ARG("SessionGetOutputName", a);
  CHECK_ARG("SessionGetOutputName", out);
  API_BEGIN
  const auto& v = s->session->outputs();
  if (index >= v.size()) return index_error("SessionGetOutputName", index, v.size());
  *out = copy_string(a, v[index].name);
  API_END
}
OrtStatus* ORT_API_CALL SessionEndProfiling(OrtSession* s, OrtAllocator* a, char** out) noexcept {
  CHECK_ARG("SessionEndProfiling", s);
  CHECK_ARG("SessionEndProfiling", a);
  CHECK_ARG("SessionEndProfiling", out);
  API_BEGIN
  *out = copy_string(a, s->session->end_profiling());
  API_END
}
OrtStatus* ORT_API_CALL SessionGetModelMetadata(const OrtSession* s, OrtModelMetadata** out) noexcept {
  CHECK_ARG("SessionGetModelMetadata", s);
  CHECK_ARG("SessionGetModelMetadata", out);
  API_BEGIN
  *out = new OrtModelMetadata{s->session->model_metadata()};
  API_END
}

// ---------------------------------------------------------------- memory info and allocators

OrtStatus* ORT_API_CALL CreateCpuMemoryInfo(OrtAllocatorType type, OrtMemType mem_type, OrtMemoryInfo** out) noexcept {
  API_BEGIN
  CHECK_ARG("CreateCpuMemoryInfo", out);
  *out = new OrtMemoryInfo{"Cpu", type, 0, mem_type};
  API_END
}
OrtStatus* ORT_API_CALL CreateMemoryInfo(const char* name, OrtAllocatorType type, int id, OrtMemType mem_type,
                                         OrtMemoryInfo** out) noexcept {
  CHECK_ARG("CreateMemoryInfo", name);
  CHECK_ARG("CreateMemoryInfo", out);
  API_BEGIN
  // Any device name describes memory; only "Cpu" memory can hold a tensor
  // (CreateTensorWithDataAsOrtValue, CreateAllocator refuse the others).
  *out = new OrtMemoryInfo{name, type, id, mem_type};
  API_END
}
void ORT_API_CALL ReleaseMemoryInfo(OrtMemoryInfo* p) noexcept {
  if (p != &kCpuInfo) delete p;
}
OrtStatus* ORT_API_CALL CompareMemoryInfo(const OrtMemoryInfo* a, const OrtMemoryInfo* b, int* out) noexcept {
  CHECK_ARG("CompareMemoryInfo", a);
  CHECK_ARG("CompareMemoryInfo", b);
  CHECK_ARG("CompareMemoryInfo", out);
  *out = (a->name == b->name && a->type == b->type && a->id == b->id && a->mem_type == b->mem_type) ? 0 : -1;
  return nullptr;
}
OrtStatus* ORT_API_CALL MemoryInfoGetName(const OrtMemoryInfo* p, const char** out) noexcept { CHECK_ARG("MemoryInfoGetName", p); CHECK_ARG("MemoryInfoGetName", out); *out = p->name.c_str(); return nullptr; }
OrtStatus* ORT_API_CALL MemoryInfoGetId(const OrtMemoryInfo* p, int* out) noexcept { CHECK_ARG("MemoryInfoGetId", p); CHECK_ARG("MemoryInfoGetId", out); *out = p->id; return nullptr; }
OrtStatus* ORT_API_CALL MemoryInfoGetMemType(const OrtMemoryInfo* p, OrtMemType* out) noexcept { CHECK_ARG("MemoryInfoGetMemType", p); CHECK_ARG("MemoryInfoGetMemType", out); *out = p->mem_type; return nullptr; }
OrtStatus* ORT_API_CALL MemoryInfoGetType(const OrtMemoryInfo* p, OrtAllocatorType* out) noexcept { CHECK_ARG("MemoryInfoGetType", p); CHECK_ARG("MemoryInfoGetType", out); *out = p->type; return nullptr; }
void ORT_API_CALL MemoryInfoGetDeviceType(const OrtMemoryInfo*, OrtMemoryInfoDeviceType* out) noexcept {
  if (out) *out = OrtMemoryInfoDeviceType_CPU;
}
OrtDeviceMemoryType ORT_API_CALL MemoryInfoGetDeviceMemType(const OrtMemoryInfo*) noexcept { return OrtDeviceMemoryType_DEFAULT; }
uint32_t ORT_API_CALL MemoryInfoGetVendorId(const OrtMemoryInfo*) noexcept { return 0; }

OrtStatus* ORT_API_CALL GetAllocatorWithDefaultOptions(OrtAllocator** out) noexcept {
  CHECK_ARG("GetAllocatorWithDefaultOptions", out);
  *out = &g_default_allocator;
  return nullptr;
}
OrtStatus* ORT_API_CALL CreateAllocator(const OrtSession* s, const OrtMemoryInfo* info, OrtAllocator** out) noexcept {
  CHECK_ARG("CreateAllocator", s);
  CHECK_ARG("CreateAllocator", info);
  CHECK_ARG("CreateAllocator", out);
  API_BEGIN
  if (info->name != "Cpu") return make_status(ORT_NOT_IMPLEMENTED, "CreateAllocator: spindle has CPU memory only");
  *out = new OrtAllocator(make_cpu_allocator());
  API_END
}
void ORT_API_CALL ReleaseAllocator(OrtAllocator* a) noexcept {
  if (a != &g_default_allocator) delete a;
}
OrtStatus* ORT_API_CALL AllocatorAlloc(OrtAllocator* a, size_t size, void** out) noexcept {
  CHECK_ARG("AllocatorAlloc", a);
  CHECK_ARG("AllocatorAlloc", out);
  *out = a->Alloc(a, size);
  if (!*out) return make_status(ORT_FAIL, "AllocatorAlloc: out of memory allocating " + std::to_string(size) + " bytes");
  return nullptr;
}
OrtStatus* ORT_API_CALL AllocatorFree(OrtAllocator* a, void* p) noexcept {
  CHECK_ARG("AllocatorFree", a);
  a->Free(a, p);
  return nullptr;
}
OrtStatus* ORT_API_CALL AllocatorGetInfo(const OrtAllocator* a, const OrtMemoryInfo** out) noexcept {
  CHECK_ARG("AllocatorGetInfo", a);
  CHECK_ARG("AllocatorGetInfo", out);
  *out = a->Info(a);
  return nullptr;
}

// ---------------------------------------------------------------- values

OrtStatus* shape_error(const char* fn, const int64_t* shape, size_t len) {
  if (len && !shape) return null_argument(fn, "shape");
  for (size_t i = 0; i < len; ++i)
    if (shape[i] < 0)
      return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": dimension " + std::to_string(i) + " is " +
                                                   std::to_string(shape[i]) + "; dimensions must be 0 or more");
  if (!spindle::checked_numel(std::span<const int64_t>(shape, len)))
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the shape's element count overflows int64");
  return nullptr;
}

OrtStatus* ORT_API_CALL CreateTensorWithDataAsOrtValue(const OrtMemoryInfo* info, void* data, size_t data_len,
                                                       const int64_t* shape, size_t shape_len,
                                                       ONNXTensorElementDataType type, OrtValue** out) noexcept {
  CHECK_ARG("CreateTensorWithDataAsOrtValue", info);
  CHECK_ARG("CreateTensorWithDataAsOrtValue", out);
  if (OrtStatus* s = shape_error("CreateTensorWithDataAsOrtValue", shape, shape_len)) return s;
  spindle::DataType dt;
  if (!dtype_from_ort(type, &dt)) return unsupported_type("CreateTensorWithDataAsOrtValue", type);
  if (dt == spindle::DataType::kString)
    return make_status(ORT_INVALID_ARGUMENT, "CreateTensorWithDataAsOrtValue: string tensors cannot wrap user memory; use CreateTensorAsOrtValue and FillStringTensor");
  if (info->name != "Cpu") return make_status(ORT_NOT_IMPLEMENTED, "CreateTensorWithDataAsOrtValue: spindle has CPU memory only");
  API_BEGIN
  spindle::Shape dims(shape, shape + shape_len);
  const size_t need = spindle::checked_nbytes(spindle::shape_numel(dims), spindle::dtype_size(dt));
  if (data_len < need)
    return make_status(ORT_INVALID_ARGUMENT, "CreateTensorWithDataAsOrtValue: the buffer holds " + std::to_string(data_len) +
                                                 " bytes; shape " + spindle::shape_to_string(dims) + " of " + spindle::dtype_name(dt) +
                                                 " needs " + std::to_string(need));
  if (need && !data) return null_argument("CreateTensorWithDataAsOrtValue", "p_data");
  *out = new OrtValue{spindle::Tensor::borrow(dt, std::move(dims), data)};
  API_END
}
OrtStatus* ORT_API_CALL CreateTensorAsOrtValue(OrtAllocator* a, const int64_t* shape, size_t shape_len,
                                               ONNXTensorElementDataType type, OrtValue** out) noexcept {
  CHECK_ARG("CreateTensorAsOrtValue", a);
  CHECK_ARG("CreateTensorAsOrtValue", out);
  if (OrtStatus* s = shape_error("CreateTensorAsOrtValue", shape, shape_len)) return s;
  spindle::DataType dt;
  if (!dtype_from_ort(type, &dt)) return unsupported_type("CreateTensorAsOrtValue", type);
  API_BEGIN
  *out = new OrtValue{spindle::Tensor(dt, spindle::Shape(shape, shape + shape_len))};
  API_END
}
// Wraps the caller's memory, which `deleter`'s Free releases with the last
// copy of the value.
OrtStatus* ORT_API_CALL CreateTensorWithDataAndDeleterAsOrtValue(OrtAllocator* deleter, void* data, size_t data_len,
                                                                 const int64_t* shape, size_t shape_len,
                                                                 ONNXTensorElementDataType type, OrtValue** out) noexcept {
  const char* fn = "CreateTensorWithDataAndDeleterAsOrtValue";
  CHECK_ARG(fn, deleter);
  CHECK_ARG(fn, out);
  if (!deleter->Free) return null_argument(fn, "deleter->Free");
  const OrtMemoryInfo* info = deleter->Info ? deleter->Info(deleter) : &kCpuInfo;
  if (OrtStatus* s = CreateTensorWithDataAsOrtValue(info ? info : &kCpuInfo, data, data_len, shape, shape_len, type, out))
    return s;
  API_BEGIN
  (*out)->owner = std::shared_ptr<void>(data, [deleter](void* p) {
    if (p) deleter->Free(deleter, p);
  });
  API_END
}
void ORT_API_CALL ReleaseValue(OrtValue* v) noexcept { delete v; }

OrtStatus* ORT_API_CALL IsTensor(const OrtValue* v, int* out) noexcept {
  CHECK_ARG("IsTensor", v);
  CHECK_ARG("IsTensor", out);
  *out = v->tensor.is_tensor() && v->tensor.defined() ? 1 : 0;
  return nullptr;
}
OrtStatus* ORT_API_CALL HasValue(const OrtValue* v, int* out) noexcept {
  CHECK_ARG("HasValue", v);
  CHECK_ARG("HasValue", out);
  *out = v->map || v->maps ? 1 : v->tensor.is_optional() ? (v->tensor.optional_value() != nullptr) : v->tensor.defined();
  return nullptr;
}
OrtStatus* ORT_API_CALL GetValueType(const OrtValue* v, ONNXType* out) noexcept {
  CHECK_ARG("GetValueType", v);
  CHECK_ARG("GetValueType", out);
  const auto& t = v->tensor;
  *out = v->map ? ONNX_TYPE_MAP : v->maps ? ONNX_TYPE_SEQUENCE : t.is_optional() ? ONNX_TYPE_OPTIONAL : t.is_sequence() ? ONNX_TYPE_SEQUENCE : t.defined() ? ONNX_TYPE_TENSOR : ONNX_TYPE_UNKNOWN;
  return nullptr;
}
OrtStatus* tensor_only(const char* fn, const OrtValue* v) {
  if (!v) return null_argument(fn, "value");
  // ORT_FAIL, as ONNX Runtime's check of the value's kind.
  if (!v->tensor.is_tensor() || !v->tensor.defined())
    return make_status(ORT_FAIL, std::string(fn) + ": the value is a " + (v->map ? "map" : v->maps ? "sequence of maps" : v->tensor.is_sequence() ? "sequence" : v->tensor.is_optional() ? "optional" : "value without contents") + ", not a tensor");
  return nullptr;
}
OrtStatus* ORT_API_CALL GetTensorMutableData(OrtValue* v, void** out) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorMutableData", v)) return s;
  CHECK_ARG("GetTensorMutableData", out);
  *out = v->tensor.raw_mutable_data();
  return nullptr;
}
OrtStatus* ORT_API_CALL GetTensorData(const OrtValue* v, const void** out) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorData", v)) return s;
  CHECK_ARG("GetTensorData", out);
  *out = v->tensor.raw_data();
  return nullptr;
}
OrtStatus* ORT_API_CALL GetTensorTypeAndShape(const OrtValue* v, OrtTensorTypeAndShapeInfo** out) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorTypeAndShape", v)) return s;
  CHECK_ARG("GetTensorTypeAndShape", out);
  API_BEGIN
  *out = shape_info_of(v->tensor);
  API_END
}
OrtStatus* ORT_API_CALL GetTypeInfo(const OrtValue* v, OrtTypeInfo** out) noexcept {
  CHECK_ARG("GetTypeInfo", v);
  CHECK_ARG("GetTypeInfo", out);
  API_BEGIN
  const spindle::Tensor& t = v->tensor;
  auto* ti = new OrtTypeInfo;
  if (v->map) {
    *ti = map_type(*v->map);
  } else if (v->maps) {
    ti->type = ONNX_TYPE_SEQUENCE;
    ti->sequence = std::make_shared<OrtSequenceTypeInfo>();
    ti->sequence->element = map_type(*v->maps->front().map);
  } else if (t.is_sequence()) {
    *ti = sequence_type(t.dtype());
  } else if (t.is_optional()) {
    ti->type = ONNX_TYPE_OPTIONAL;
    ti->optional = std::make_shared<OrtOptionalTypeInfo>();
    if (t.optional_of_sequence()) {
      ti->optional->contained = sequence_type(t.dtype());
    } else {
      ti->optional->contained.type = ONNX_TYPE_TENSOR;
      ti->optional->contained.tensor.type = dtype_to_ort(t.dtype());
      ti->optional->contained.tensor.has_shape = false;
    }
  } else if (t.defined()) {
    ti->type = ONNX_TYPE_TENSOR;
    ti->tensor.type = dtype_to_ort(t.dtype());
    ti->tensor.dims = t.shape();
    ti->tensor.names.assign(ti->tensor.dims.size(), "");
  }
  *out = ti;
  API_END
}
OrtStatus* ORT_API_CALL GetTensorMemoryInfo(const OrtValue* v, const OrtMemoryInfo** out) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorMemoryInfo", v)) return s;
  CHECK_ARG("GetTensorMemoryInfo", out);
  *out = &kCpuInfo;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetTensorSizeInBytes(const OrtValue* v, size_t* out) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorSizeInBytes", v)) return s;
  CHECK_ARG("GetTensorSizeInBytes", out);
  if (v->tensor.dtype() == spindle::DataType::kString)
    return make_status(ORT_INVALID_ARGUMENT, "GetTensorSizeInBytes: a string tensor has no fixed byte size; use GetStringTensorDataLength");
  API_BEGIN
  *out = v->tensor.nbytes();
  API_END
}
OrtStatus* ORT_API_CALL GetTensorElementTypeAndShapeDataReference(const OrtValue* v, ONNXTensorElementDataType* type,
                                                                  const int64_t** shape, size_t* count) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorElementTypeAndShapeDataReference", v)) return s;
  CHECK_ARG("GetTensorElementTypeAndShapeDataReference", type);
  CHECK_ARG("GetTensorElementTypeAndShapeDataReference", shape);
  CHECK_ARG("GetTensorElementTypeAndShapeDataReference", count);
  *type = dtype_to_ort(v->tensor.dtype());
  *shape = v->tensor.shape().data();
  *count = v->tensor.shape().size();
  return nullptr;
}

// The address of one element (its indices, one per dimension).
OrtStatus* ORT_API_CALL TensorAt(OrtValue* v, const int64_t* location, size_t count, void** out) noexcept {
  if (OrtStatus* s = tensor_only("TensorAt", v)) return s;
  CHECK_ARG("TensorAt", out);
  const spindle::Tensor& t = v->tensor;
  if (count != t.shape().size())
    return make_status(ORT_INVALID_ARGUMENT, "TensorAt: " + std::to_string(count) + " indices for a tensor of rank " +
                                                 std::to_string(t.shape().size()));
  if (count) CHECK_ARG("TensorAt", location);
  API_BEGIN
  const spindle::Tensor c = t.is_contiguous() ? t : t.clone();
  if (!t.is_contiguous()) v->tensor = c;
  int64_t offset = 0;
  for (size_t d = 0; d < count; ++d) {
    if (location[d] < 0 || location[d] >= t.shape()[d])
      return make_status(ORT_INVALID_ARGUMENT, "TensorAt: index " + std::to_string(location[d]) + " of dimension " +
                                                   std::to_string(d) + " is out of range [0, " +
                                                   std::to_string(t.shape()[d]) + ")");
    offset = offset * t.shape()[d] + location[d];
  }
  const size_t element = t.dtype() == spindle::DataType::kString ? sizeof(std::string) : spindle::dtype_size(t.dtype());
  *out = static_cast<char*>(v->tensor.raw_mutable_data()) + static_cast<size_t>(offset) * element;
  API_END
}

// String tensors: elements are std::string objects in the tensor's buffer.
OrtStatus* string_tensor(const char* fn, const OrtValue* v) {
  if (OrtStatus* s = tensor_only(fn, v)) return s;
  if (v->tensor.dtype() != spindle::DataType::kString)
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the tensor is " + v->tensor.describe() + ", not a string tensor");
  return nullptr;
}
std::string* strings_of(OrtValue* v) { return static_cast<std::string*>(v->tensor.raw_mutable_data()); }
const std::string* strings_of(const OrtValue* v) { return static_cast<const std::string*>(v->tensor.raw_data()); }

OrtStatus* ORT_API_CALL FillStringTensor(OrtValue* v, const char* const* s, size_t len) noexcept {
  if (OrtStatus* st = string_tensor("FillStringTensor", v)) return st;
  API_BEGIN
  const auto n = static_cast<size_t>(v->tensor.numel());
  if (len != n)
    return make_status(ORT_INVALID_ARGUMENT, "FillStringTensor: " + std::to_string(len) + " strings for a tensor of " + std::to_string(n) + " elements");
  if (n && !s) return null_argument("FillStringTensor", "s");
  std::string* d = strings_of(v);
  for (size_t i = 0; i < n; ++i) d[i] = s[i] ? s[i] : "";
  API_END
}
OrtStatus* ORT_API_CALL FillStringTensorElement(OrtValue* v, const char* s, size_t index) noexcept {
  if (OrtStatus* st = string_tensor("FillStringTensorElement", v)) return st;
  CHECK_ARG("FillStringTensorElement", s);
  API_BEGIN
  if (index >= static_cast<size_t>(v->tensor.numel())) return index_error("FillStringTensorElement", index, v->tensor.numel());
  strings_of(v)[index] = s;
  API_END
}
OrtStatus* ORT_API_CALL GetResizedStringTensorElementBuffer(OrtValue* v, size_t index, size_t length, char** out) noexcept {
  if (OrtStatus* st = string_tensor("GetResizedStringTensorElementBuffer", v)) return st;
  CHECK_ARG("GetResizedStringTensorElementBuffer", out);
  API_BEGIN
  if (index >= static_cast<size_t>(v->tensor.numel())) return index_error("GetResizedStringTensorElementBuffer", index, v->tensor.numel());
  std::string& e = strings_of(v)[index];
  e.resize(length);
  *out = e.data();
  API_END
}
OrtStatus* ORT_API_CALL GetStringTensorDataLength(const OrtValue* v, size_t* out) noexcept {
  if (OrtStatus* st = string_tensor("GetStringTensorDataLength", v)) return st;
  CHECK_ARG("GetStringTensorDataLength", out);
  API_BEGIN
  size_t total = 0;
  const std::string* d = strings_of(v);
  for (int64_t i = 0; i < v->tensor.numel(); ++i) total += d[i].size();
  *out = total;
  API_END
}
OrtStatus* ORT_API_CALL GetStringTensorElementLength(const OrtValue* v, size_t index, size_t* out) noexcept {
  if (OrtStatus* st = string_tensor("GetStringTensorElementLength", v)) return st;
  CHECK_ARG("GetStringTensorElementLength", out);
  if (index >= static_cast<size_t>(v->tensor.numel())) return index_error("GetStringTensorElementLength", index, v->tensor.numel());
  *out = strings_of(v)[index].size();
  return nullptr;
}
OrtStatus* ORT_API_CALL GetStringTensorElement(const OrtValue* v, size_t s_len, size_t index, void* s) noexcept {
  if (OrtStatus* st = string_tensor("GetStringTensorElement", v)) return st;
  if (index >= static_cast<size_t>(v->tensor.numel())) return index_error("GetStringTensorElement", index, v->tensor.numel());
  const std::string& e = strings_of(v)[index];
  if (s_len < e.size())
    return make_status(ORT_INVALID_ARGUMENT, "GetStringTensorElement: the buffer holds " + std::to_string(s_len) + " bytes; the element has " + std::to_string(e.size()));
  if (!e.empty()) {
    CHECK_ARG("GetStringTensorElement", s);
    std::memcpy(s, e.data(), e.size());
  }
  return nullptr;
}
OrtStatus* ORT_API_CALL GetStringTensorContent(const OrtValue* v, void* s, size_t s_len, size_t* offsets,
                                               size_t offsets_len) noexcept {
  if (OrtStatus* st = string_tensor("GetStringTensorContent", v)) return st;
  API_BEGIN
  const auto n = static_cast<size_t>(v->tensor.numel());
  if (offsets_len != n)
    return make_status(ORT_INVALID_ARGUMENT, "GetStringTensorContent: " + std::to_string(offsets_len) + " offsets for a tensor of " + std::to_string(n) + " elements");
  const std::string* d = strings_of(v);
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += d[i].size();
  if (s_len < total)
    return make_status(ORT_INVALID_ARGUMENT, "GetStringTensorContent: the buffer holds " + std::to_string(s_len) + " bytes; the strings need " + std::to_string(total));
  if (n && !offsets) return null_argument("GetStringTensorContent", "offsets");
  if (total && !s) return null_argument("GetStringTensorContent", "s");
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    offsets[i] = at;
    if (!d[i].empty()) std::memcpy(static_cast<char*>(s) + at, d[i].data(), d[i].size());
    at += d[i].size();
  }
  API_END
}

// ---------------------------------------------------------------- type and shape info

OrtStatus* ORT_API_CALL CreateTensorTypeAndShapeInfo(OrtTensorTypeAndShapeInfo** out) noexcept {
  API_BEGIN
  CHECK_ARG("CreateTensorTypeAndShapeInfo", out);
  *out = new OrtTensorTypeAndShapeInfo;
  API_END
}
void ORT_API_CALL ReleaseTensorTypeAndShapeInfo(OrtTensorTypeAndShapeInfo* p) noexcept { delete p; }
OrtStatus* ORT_API_CALL SetTensorElementType(OrtTensorTypeAndShapeInfo* i, ONNXTensorElementDataType t) noexcept {
  CHECK_ARG("SetTensorElementType", i);
  i->type = t;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetDimensions(OrtTensorTypeAndShapeInfo* i, const int64_t* dims, size_t n) noexcept {
  CHECK_ARG("SetDimensions", i);
  if (n) CHECK_ARG("SetDimensions", dims);
  API_BEGIN
  i->dims.assign(dims, dims + n);
  i->names.resize(n);
  API_END
}
OrtStatus* ORT_API_CALL GetTensorElementType(const OrtTensorTypeAndShapeInfo* i, ONNXTensorElementDataType* out) noexcept {
  CHECK_ARG("GetTensorElementType", i);
  CHECK_ARG("GetTensorElementType", out);
  *out = i->type;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetDimensionsCount(const OrtTensorTypeAndShapeInfo* i, size_t* out) noexcept {
  CHECK_ARG("GetDimensionsCount", i);
  CHECK_ARG("GetDimensionsCount", out);
  *out = i->dims.size();
  return nullptr;
}
OrtStatus* ORT_API_CALL GetDimensions(const OrtTensorTypeAndShapeInfo* i, int64_t* values, size_t n) noexcept {
  CHECK_ARG("GetDimensions", i);
  if (n) CHECK_ARG("GetDimensions", values);
  for (size_t k = 0; k < n && k < i->dims.size(); ++k) values[k] = i->dims[k];
  return nullptr;
}
OrtStatus* ORT_API_CALL GetSymbolicDimensions(const OrtTensorTypeAndShapeInfo* i, const char** names, size_t n) noexcept {
  CHECK_ARG("GetSymbolicDimensions", i);
  if (n) CHECK_ARG("GetSymbolicDimensions", names);
  for (size_t k = 0; k < n; ++k) names[k] = k < i->names.size() ? i->names[k].c_str() : "";
  return nullptr;
}
OrtStatus* ORT_API_CALL SetSymbolicDimensions(OrtTensorTypeAndShapeInfo* i, const char** names, size_t n) noexcept {
  CHECK_ARG("SetSymbolicDimensions", i);
  if (n) CHECK_ARG("SetSymbolicDimensions", names);
  API_BEGIN
  i->names.assign(n, "");
  for (size_t k = 0; k < n; ++k) i->names[k] = names[k] ? names[k] : "";
  API_END
}
OrtStatus* ORT_API_CALL GetTensorShapeElementCount(const OrtTensorTypeAndShapeInfo* i, size_t* out) noexcept {
  CHECK_ARG("GetTensorShapeElementCount", i);
  CHECK_ARG("GetTensorShapeElementCount", out);
  // A dynamic (negative) dimension makes the count unknown: SIZE_MAX, as
  // ONNX Runtime's -1 read as size_t.
  for (int64_t d : i->dims) {
    if (d < 0) {
      *out = static_cast<size_t>(-1);
      return nullptr;
    }
  }
  auto count = spindle::checked_numel(i->dims);
  if (!count) return make_status(ORT_INVALID_ARGUMENT, "GetTensorShapeElementCount: the element count overflows int64");
  *out = static_cast<size_t>(*count);
  return nullptr;
}
bool ORT_API_CALL TensorTypeAndShape_HasShape(const OrtTensorTypeAndShapeInfo* i) noexcept { return i && i->has_shape; }
OrtStatus* ORT_API_CALL CastTypeInfoToTensorInfo(const OrtTypeInfo* t, const OrtTensorTypeAndShapeInfo** out) noexcept {
  CHECK_ARG("CastTypeInfoToTensorInfo", t);
  CHECK_ARG("CastTypeInfoToTensorInfo", out);
  *out = t->type == ONNX_TYPE_TENSOR ? &t->tensor : nullptr;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetOnnxTypeFromTypeInfo(const OrtTypeInfo* t, ONNXType* out) noexcept {
  CHECK_ARG("GetOnnxTypeFromTypeInfo", t);
  CHECK_ARG("GetOnnxTypeFromTypeInfo", out);
  *out = t->type;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetDenotationFromTypeInfo(const OrtTypeInfo* t, const char** const out, size_t* len) noexcept {
  CHECK_ARG("GetDenotationFromTypeInfo", t);
  CHECK_ARG("GetDenotationFromTypeInfo", out);
  CHECK_ARG("GetDenotationFromTypeInfo", len);
  *out = t->denotation.c_str();
  *len = t->denotation.size();
  return nullptr;
}
void ORT_API_CALL ReleaseTypeInfo(OrtTypeInfo* p) noexcept { delete p; }
// The casts return a part of the type info (released with it); NULL for another kind.
template <class Part>
OrtStatus* cast_part(const char* fn, const OrtTypeInfo* t, const Part** out, ONNXType kind,
                     std::shared_ptr<Part> OrtTypeInfo::*part) {
  CHECK_ARG(fn, t);
  CHECK_ARG(fn, out);
  *out = t->type == kind ? (t->*part).get() : nullptr;
  return nullptr;
}
OrtStatus* ORT_API_CALL CastTypeInfoToMapTypeInfo(const OrtTypeInfo* t, const OrtMapTypeInfo** out) noexcept {
  return cast_part("CastTypeInfoToMapTypeInfo", t, out, ONNX_TYPE_MAP, &OrtTypeInfo::map);
}
OrtStatus* ORT_API_CALL GetMapKeyType(const OrtMapTypeInfo* m, ONNXTensorElementDataType* out) noexcept {
  CHECK_ARG("GetMapKeyType", m);
  CHECK_ARG("GetMapKeyType", out);
  *out = m->key;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetMapValueType(const OrtMapTypeInfo* m, OrtTypeInfo** out) noexcept {
  CHECK_ARG("GetMapValueType", m);
  CHECK_ARG("GetMapValueType", out);
  API_BEGIN
  *out = new OrtTypeInfo(m->value);
  API_END
}
OrtStatus* ORT_API_CALL CastTypeInfoToSequenceTypeInfo(const OrtTypeInfo* t, const OrtSequenceTypeInfo** out) noexcept {
  return cast_part("CastTypeInfoToSequenceTypeInfo", t, out, ONNX_TYPE_SEQUENCE, &OrtTypeInfo::sequence);
}
OrtStatus* ORT_API_CALL GetSequenceElementType(const OrtSequenceTypeInfo* s, OrtTypeInfo** out) noexcept {
  CHECK_ARG("GetSequenceElementType", s);
  CHECK_ARG("GetSequenceElementType", out);
  API_BEGIN
  *out = new OrtTypeInfo(s->element);
  API_END
}
OrtStatus* ORT_API_CALL CastTypeInfoToOptionalTypeInfo(const OrtTypeInfo* t, const OrtOptionalTypeInfo** out) noexcept {
  return cast_part("CastTypeInfoToOptionalTypeInfo", t, out, ONNX_TYPE_OPTIONAL, &OrtTypeInfo::optional);
}
OrtStatus* ORT_API_CALL GetOptionalContainedTypeInfo(const OrtOptionalTypeInfo* o, OrtTypeInfo** out) noexcept {
  CHECK_ARG("GetOptionalContainedTypeInfo", o);
  CHECK_ARG("GetOptionalContainedTypeInfo", out);
  API_BEGIN
  *out = new OrtTypeInfo(o->contained);
  API_END
}

// ---------------------------------------------------------------- key-value pairs
// These slots return no status: on a NULL argument (or out of memory in
// CreateKeyValuePairs, which then sets *out to NULL) they do nothing.

void ORT_API_CALL CreateKeyValuePairs(OrtKeyValuePairs** out) noexcept {
  if (out) *out = new (std::nothrow) OrtKeyValuePairs;
}
void ORT_API_CALL AddKeyValuePair(OrtKeyValuePairs* kvps, const char* key, const char* value) noexcept {
  if (!kvps || !key || !value) return;
  try {
    for (size_t i = 0; i < kvps->keys.size(); ++i)
      if (kvps->keys[i] == key) {
        kvps->values[i] = value;
        kvps->sync();
        return;
      }
    kvps->keys.emplace_back(key);
    kvps->values.emplace_back(value);
    kvps->sync();
  } catch (...) {
  }
}
const char* ORT_API_CALL GetKeyValue(const OrtKeyValuePairs* kvps, const char* key) noexcept {
  if (!kvps || !key) return nullptr;
  for (size_t i = 0; i < kvps->keys.size(); ++i)
    if (kvps->keys[i] == key) return kvps->values[i].c_str();
  return nullptr;
}
void ORT_API_CALL GetKeyValuePairs(const OrtKeyValuePairs* kvps, const char* const** keys, const char* const** values,
                                   size_t* num_entries) noexcept {
  if (!kvps || !keys || !values || !num_entries) return;
  *keys = kvps->key_ptrs.data();
  *values = kvps->value_ptrs.data();
  *num_entries = kvps->keys.size();
}
void ORT_API_CALL RemoveKeyValuePair(OrtKeyValuePairs* kvps, const char* key) noexcept {
  if (!kvps || !key) return;
  for (size_t i = 0; i < kvps->keys.size(); ++i)
    if (kvps->keys[i] == key) {
      kvps->keys.erase(kvps->keys.begin() + static_cast<std::ptrdiff_t>(i));
      kvps->values.erase(kvps->values.begin() + static_cast<std::ptrdiff_t>(i));
      kvps->sync();
      return;
    }
}
void ORT_API_CALL ReleaseKeyValuePairs(OrtKeyValuePairs* kvps) noexcept { delete kvps; }

// ---------------------------------------------------------------- providers, build info

OrtStatus* ORT_API_CALL GetAvailableProviders(char*** out, int* len) noexcept {
  CHECK_ARG("GetAvailableProviders", out);
  CHECK_ARG("GetAvailableProviders", len);
  auto** arr = static_cast<char**>(std::malloc(sizeof(char*)));
  if (!arr) return make_status(ORT_FAIL, "out of memory");
  arr[0] = strdup("CPUExecutionProvider");
  *out = arr;
  *len = 1;
  return nullptr;
}
OrtStatus* ORT_API_CALL ReleaseAvailableProviders(char** ptr, int len) noexcept {
  if (ptr) {
    for (int i = 0; i < len; ++i) std::free(ptr[i]);
    std::free(ptr);
  }
  return nullptr;
}
const char* ORT_API_CALL GetBuildInfoString() noexcept { return "spindle (ONNX Runtime 1.30 C API)"; }


}  // namespace

void set_value_slots(OrtApi& api) {
#define SET(name) api.name = name;
  SET(SessionGetInputCount) SET(GetValueCount) SET(GetValue) SET(CreateValue) SET(SessionGetOutputCount) SET(SessionGetOverridableInitializerCount) SET(SessionGetOverridableInitializerName) SET(SessionGetOverridableInitializerTypeInfo) SET(SessionGetMemoryInfoForInputs) SET(SessionGetMemoryInfoForOutputs) SET(SessionGetInputTypeInfo) SET(SessionGetOutputTypeInfo) SET(SessionGetInputName) SET(SessionGetOutputName) SET(SessionEndProfiling) SET(SessionGetModelMetadata) SET(CreateCpuMemoryInfo) SET(CreateMemoryInfo) SET(ReleaseMemoryInfo) SET(CompareMemoryInfo) SET(MemoryInfoGetName) SET(MemoryInfoGetId) SET(MemoryInfoGetMemType) SET(MemoryInfoGetType) SET(MemoryInfoGetDeviceType) SET(MemoryInfoGetDeviceMemType) SET(MemoryInfoGetVendorId) SET(GetAllocatorWithDefaultOptions) SET(CreateAllocator) SET(ReleaseAllocator) SET(AllocatorAlloc) SET(AllocatorFree) SET(AllocatorGetInfo) SET(CreateTensorWithDataAsOrtValue) SET(CreateTensorAsOrtValue) SET(ReleaseValue) SET(CreateTensorWithDataAndDeleterAsOrtValue) SET(TensorAt) SET(IsTensor) SET(HasValue) SET(GetValueType) SET(GetTensorMutableData) SET(GetTensorData) SET(GetTensorTypeAndShape) SET(GetTypeInfo) SET(GetTensorMemoryInfo) SET(GetTensorSizeInBytes) SET(GetTensorElementTypeAndShapeDataReference) SET(FillStringTensor) SET(FillStringTensorElement) SET(GetResizedStringTensorElementBuffer) SET(GetStringTensorDataLength) SET(GetStringTensorElementLength) SET(GetStringTensorElement) SET(GetStringTensorContent) SET(CreateTensorTypeAndShapeInfo) SET(ReleaseTensorTypeAndShapeInfo) SET(SetTensorElementType) SET(SetDimensions) SET(GetTensorElementType) SET(GetDimensionsCount) SET(GetDimensions) SET(GetSymbolicDimensions) SET(SetSymbolicDimensions) SET(GetTensorShapeElementCount) SET(TensorTypeAndShape_HasShape) SET(CastTypeInfoToTensorInfo) SET(GetOnnxTypeFromTypeInfo) SET(GetDenotationFromTypeInfo) SET(ReleaseTypeInfo) SET(CastTypeInfoToMapTypeInfo) SET(GetMapKeyType) SET(GetMapValueType) SET(CastTypeInfoToSequenceTypeInfo) SET(GetSequenceElementType) SET(CastTypeInfoToOptionalTypeInfo) SET(GetOptionalContainedTypeInfo) SET(CreateKeyValuePairs) SET(AddKeyValuePair) SET(GetKeyValue) SET(GetKeyValuePairs) SET(RemoveKeyValuePair) SET(ReleaseKeyValuePairs) SET(GetAvailableProviders) SET(ReleaseAvailableProviders) SET(GetBuildInfoString)
#undef SET
}

}  // namespace spindle::capi
