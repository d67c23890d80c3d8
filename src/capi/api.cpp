// api.cpp — ONNX Runtime's C API (include/onnxruntime/onnxruntime_c_api.h)
// over spindle's C++ API: the function table and the exported entry points.
// Each Ort* handle is a small struct holding the spindle object
// (capi_internal.h); every entry point catches exceptions and turns them
// into an OrtStatus. The slots are implemented by group in api_env.cpp,
// api_session_options.cpp, api_session.cpp, api_values.cpp and
// api_custom_ops.cpp; slots spindle
// does not implement answer ORT_NOT_IMPLEMENTED naming the function
// (docs/capi.md lists the subset).
#include "capi/capi_internal.h"

namespace spindle::capi {
// slots.inc spells the slots' parameters as ONNX Runtime's header does:
// these are its enums, not spindle's of the same names.
using ::ExecutionMode;
using ::GraphOptimizationLevel;

namespace {

// ---------------------------------------------------------------- fallbacks for every slot

template <class R>
R stub_value() {
  if constexpr (!std::is_void_v<R>) return R{};
}

#define SPINDLE_ORT_STATUS_SLOT(name, params) \
  OrtStatus* ORT_API_CALL stub_##name params noexcept { return not_implemented(#name); }
// Objects of classes spindle never creates cannot reach their Release: no-op.
#define SPINDLE_ORT_RELEASE_SLOT(name, params) \
  void ORT_API_CALL stub_##name params noexcept {}
// Slots that return no status return NULL / 0 / nothing.
#define SPINDLE_ORT_VALUE_SLOT(name, ret, params) \
  ret ORT_API_CALL stub_##name params noexcept { return stub_value<ret>(); }
#include "capi/slots.inc"
#undef SPINDLE_ORT_STATUS_SLOT
#undef SPINDLE_ORT_RELEASE_SLOT
#undef SPINDLE_ORT_VALUE_SLOT

OrtApi make_api() {
  OrtApi api{};
#define SPINDLE_ORT_STATUS_SLOT(name, params) api.name = stub_##name;
#define SPINDLE_ORT_RELEASE_SLOT(name, params) api.name = stub_##name;
#define SPINDLE_ORT_VALUE_SLOT(name, ret, params) api.name = stub_##name;
#include "capi/slots.inc"
#undef SPINDLE_ORT_STATUS_SLOT
#undef SPINDLE_ORT_RELEASE_SLOT
#undef SPINDLE_ORT_VALUE_SLOT
  set_env_slots(api);
  set_session_options_slots(api);
  set_session_slots(api);
  set_value_slots(api);
  set_custom_op_slots(api);
  set_binding_slots(api);
  set_op_slots(api);
  return api;
}

const OrtApi g_api = make_api();

const OrtApi* ORT_API_CALL GetApi(uint32_t version) noexcept {
  // Every version from 1 to 30 is a prefix of this one table.
  return version >= 1 && version <= ORT_API_VERSION ? &g_api : nullptr;
}
const char* ORT_API_CALL GetVersionString() noexcept { return "1.30.0"; }

const OrtApiBase g_api_base = {GetApi, GetVersionString};

}  // namespace

const OrtApiBase* api_base() { return &g_api_base; }

}  // namespace spindle::capi

extern "C" {

ORT_EXPORT const OrtApiBase* ORT_API_CALL OrtGetApiBase(void) noexcept { return spindle::capi::api_base(); }

ORT_EXPORT OrtStatus* ORT_API_CALL OrtSessionOptionsAppendExecutionProvider_CPU(OrtSessionOptions* options,
                                                                                int) noexcept {
  if (!options) return spindle::capi::null_argument("OrtSessionOptionsAppendExecutionProvider_CPU", "options");
  return nullptr;
}

}  // extern "C"
