// cxx_test.cpp — ONNX Runtime's C++ API (namespace Ort) used the way ONNX
// Runtime's documentation and samples use it: C++17, compiled against
// include/onnxruntime/ only (#include <onnxruntime_cxx_api.h>) and linked to
// libonnxruntime.so.1. The same program also runs on ONNX Runtime's own
// library (ctest capi_cxx_on_onnxruntime): the header's classes are a layer
// over the C table, so that both pass checks the header against ONNX
// Runtime's binary interface.
//
//   cxx_test TYPES_MODEL [CLS_MODEL OUT_FILE] [--onnxruntime]
//
// TYPES_MODEL is tests/capi/make_models.py's types.onnx (seq.onnx lies beside
// it). With CLS_MODEL (the PP-OCR direction classifier) the program runs it on
// capi_test.c's fixed input, checks that one and two intra-op threads give the
// same bits, and writes the output floats to OUT_FILE (capi_compare checks
// them against spindle's C++ API). --onnxruntime leaves out what only spindle
// promises.
#include <onnxruntime_cxx_api.h>
#include <onnxruntime_run_options_config_keys.h>
#include <onnxruntime_session_options_config_keys.h>

#include "checks.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

int failures = 0;

// A global object built before main: its constructor may run before the C++
// API's table pointer is initialized, and must still work.
const Ort::RunOptions global_run_options;

// Runs `body`, which must throw Ort::Exception with `code` and a message.
template <typename F>
void expect_throw(F&& body, OrtErrorCode code, const char* what, int line) {
  try {
    body();
  } catch (const Ort::Exception& e) {
    if (e.GetOrtErrorCode() != code || std::strlen(e.what()) == 0) {
      std::fprintf(stderr, "line %d: %s: expected code %d with a message, got %d: '%s'\n", line, what,
                   static_cast<int>(code), static_cast<int>(e.GetOrtErrorCode()), e.what());
      ++failures;
    } else {
      std::printf("  %s -> Ort::Exception %d: %s\n", what, static_cast<int>(code), e.what());
    }
    return;
  }
  std::fprintf(stderr, "line %d: %s: expected Ort::Exception %d, nothing thrown\n", line, what,
               static_cast<int>(code));
  ++failures;
}
#define EXPECT_THROW_CODE(stmt, code) expect_throw([&] { stmt; }, (code), #stmt, __LINE__)

// ---- pool threads created and joined through the callbacks, counted ----
std::atomic<int> threads_created{0}, threads_joined{0};
int creation_options_tag = 7;

struct CountedThread {
  std::thread thread;
};

OrtCustomThreadHandle create_thread(void* options, OrtThreadWorkerFn fn, void* param) {
  if (options != &creation_options_tag) {
    std::fprintf(stderr, "create_thread: not the creation options set\n");
    return nullptr;
  }
  auto* t = new CountedThread{std::thread([fn, param] { fn(param); })};
  ++threads_created;
  return reinterpret_cast<OrtCustomThreadHandle>(t);
}

void join_thread(OrtCustomThreadHandle handle) {
  auto* t = reinterpret_cast<CountedThread*>(const_cast<OrtCustomHandleType*>(handle));
  t->thread.join();
  delete t;
  ++threads_joined;
}

// Threads of this process (/proc/self/status), -1 if unknown.
int count_threads() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Names, type infos and metadata of types.onnx.
void check_types_info(const Ort::Session& session) {
  Ort::AllocatorWithDefaultOptions allocator;
  EXPECT(session.GetInputCount() == 6);
  EXPECT(session.GetOutputCount() == 6);
  const char* in_names[] = {"f", "i64", "i32", "u8", "b", "s"};
  const ONNXTensorElementDataType types[] = {
      ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32,
      ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL, ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING};
  for (size_t i = 0; i < 6; ++i) {
    Ort::AllocatedStringPtr name = session.GetInputNameAllocated(i, allocator);
    EXPECT(std::string(name.get()) == in_names[i]);
    Ort::AllocatedStringPtr out_name = session.GetOutputNameAllocated(i, allocator);
    EXPECT(std::string(out_name.get()) == std::string(in_names[i]) + "_out");
    Ort::TypeInfo type_info = session.GetInputTypeInfo(i);
    EXPECT(type_info.GetONNXType() == ONNX_TYPE_TENSOR);
    auto tensor_info = type_info.GetTensorTypeAndShapeInfo();
    EXPECT(tensor_info.GetElementType() == types[i]);
    const std::vector<int64_t> shape = tensor_info.GetShape();
    const std::vector<const char*> symbols = tensor_info.GetSymbolicDimensions();
    if (i < 5) {
      EXPECT(shape == (std::vector<int64_t>{-1, 3}));
      EXPECT(symbols.size() == 2 && std::string(symbols[0]) == "batch" && std::string(symbols[1]).empty());
    } else {
      EXPECT(shape == std::vector<int64_t>{-1});
    }
    Ort::TypeInfo out_info = session.GetOutputTypeInfo(i);
    EXPECT(out_info.GetTensorTypeAndShapeInfo().GetElementType() == types[i]);
  }
  EXPECT(session.GetInputNames() == (std::vector<std::string>{"f", "i64", "i32", "u8", "b", "s"}));
  EXPECT(session.GetOutputNames().at(5) == "s_out");

  Ort::ModelMetadata metadata = session.GetModelMetadata();
  EXPECT(std::string(metadata.GetProducerNameAllocated(allocator).get()) == "capi-test");
  EXPECT(std::string(metadata.GetGraphNameAllocated(allocator).get()) == "capi_types");
  EXPECT(std::string(metadata.GetDomainAllocated(allocator).get()) == "org.spindle.test");
  EXPECT(std::string(metadata.GetDescriptionAllocated(allocator).get()) == "element types through the C API");
  EXPECT(std::string(metadata.GetGraphDescriptionAllocated(allocator).get()) == "graph of the C API test");
  EXPECT(metadata.GetVersion() == 3);
  std::vector<Ort::AllocatedStringPtr> keys = metadata.GetCustomMetadataMapKeysAllocated(allocator);
  std::vector<std::string> key_strings;
  for (const auto& k : keys) key_strings.emplace_back(k.get());
  EXPECT(key_strings.size() == 2);
  EXPECT((key_strings == std::vector<std::string>{"owner", "purpose"} ||
          key_strings == std::vector<std::string>{"purpose", "owner"}));
  EXPECT(std::string(metadata.LookupCustomMetadataMapAllocated("purpose", allocator).get()) == "c-api");
  EXPECT(metadata.LookupCustomMetadataMapAllocated("absent", allocator) == nullptr);
}

// Runs types.onnx on a batch of two; checks every output value exactly.
void run_types(Ort::Session& session, const Ort::MemoryInfo& memory_info) {
  float f[6] = {-1.5f, 0.0f, 2.25f, 3.0f, -0.0f, 1e-3f};
  int64_t i64[6] = {0, -7, 1LL << 40, 5, -1, 2};
  int32_t i32[6] = {1, -2, 3, 100000, -100000, 0};
  uint8_t u8[6] = {0, 1, 254, 255, 128, 7};
  bool b[6] = {true, false, true, true, false, false};
  const int64_t shape[2] = {2, 3};
  const int64_t s_shape[1] = {2};

  Ort::AllocatorWithDefaultOptions allocator;
  std::vector<Ort::Value> inputs;
  inputs.push_back(Ort::Value::CreateTensor<float>(memory_info, f, 6, shape, 2));
  inputs.push_back(Ort::Value::CreateTensor<int64_t>(memory_info, i64, 6, shape, 2));
  inputs.push_back(Ort::Value::CreateTensor(memory_info, i32, sizeof i32, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32));
  inputs.push_back(Ort::Value::CreateTensor<uint8_t>(memory_info, u8, 6, shape, 2));
  inputs.push_back(Ort::Value::CreateTensor<bool>(memory_info, b, 6, shape, 2));
  inputs.push_back(Ort::Value::CreateTensor(allocator, s_shape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING));
  const char* strings[2] = {"hello", "w\xc3\xb6rld, longer than fifteen bytes"};
  inputs.back().FillStringTensor(strings, 2);
  EXPECT(inputs[0].IsTensor());
  EXPECT(inputs[0].GetTensorTypeAndShapeInfo().GetElementCount() == 6);
  EXPECT(inputs[0].GetTensorData<float>() == f);  // over the caller's buffer, not a copy
  EXPECT(inputs[0].GetTensorSizeInBytes() == sizeof f);
  EXPECT(inputs[0].GetTensorMemoryInfo().GetAllocatorName() == "Cpu");

  const char* input_names[6] = {"f", "i64", "i32", "u8", "b", "s"};
  const char* output_names[6] = {"f_out", "i64_out", "i32_out", "u8_out", "b_out", "s_out"};
  Ort::RunOptions run_options;
  run_options.SetRunTag("cxx_test");
  std::vector<Ort::Value> outputs =
      session.Run(run_options, input_names, inputs.data(), inputs.size(), output_names, 6);
  EXPECT(outputs.size() == 6);
  const float* f_out = outputs[0].GetTensorData<float>();
  for (int k = 0; k < 6; ++k) {
    const float expected = (f[k] > 0.0f ? f[k] : 0.0f) * 2.0f;
    EXPECT(std::memcmp(&f_out[k], &expected, sizeof(float)) == 0 || (expected == 0.0f && f_out[k] == 0.0f));
    EXPECT(outputs[1].GetTensorData<int64_t>()[k] == i64[k] + 7);
    EXPECT(outputs[2].GetTensorData<int32_t>()[k] == i32[k] * 3);
    EXPECT(outputs[3].GetTensorData<uint8_t>()[k] == static_cast<uint8_t>(u8[k] + 1));
    EXPECT(outputs[4].GetTensorData<bool>()[k] == !b[k]);
  }
  EXPECT(outputs[0].GetTensorTypeAndShapeInfo().GetShape() == (std::vector<int64_t>{2, 3}));
  EXPECT(outputs[4].GetTensorTypeAndShapeInfo().GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL);
  EXPECT(outputs[0].GetTypeInfo().GetONNXType() == ONNX_TYPE_TENSOR);

  // The string output: all at once with offsets, and one element at a time.
  const Ort::Value& s_out = outputs[5];
  const size_t total = s_out.GetStringTensorDataLength();
  EXPECT(total == std::strlen(strings[0]) + std::strlen(strings[1]));
  std::vector<char> content(total);
  size_t offsets[2] = {99, 99};
  s_out.GetStringTensorContent(content.data(), content.size(), offsets, 2);
  EXPECT(offsets[0] == 0 && offsets[1] == std::strlen(strings[0]));
  EXPECT(std::string(content.data(), total) == std::string(strings[0]) + strings[1]);
  EXPECT(s_out.GetStringTensorElementLength(1) == std::strlen(strings[1]));
  EXPECT(s_out.GetStringTensorElement(1) == strings[1]);
  EXPECT(s_out.GetStringTensorElement(0) == "hello");

  // A subset of outputs into pre-allocated values: one allocated here, one
  // left empty for the run to fill in.
  Ort::Value y = Ort::Value::CreateTensor<int64_t>(allocator, shape, 2);
  int64_t* y_data = y.GetTensorMutableData<int64_t>();
  for (int k = 0; k < 6; ++k) y_data[k] = -99;
  std::vector<Ort::Value> into;
  into.push_back(std::move(y));
  into.emplace_back(nullptr);
  const char* subset[2] = {"i64_out", "u8_out"};
  session.Run(Ort::RunOptions{nullptr}, input_names, inputs.data(), inputs.size(), subset, into.data(), 2);
  EXPECT(into[0].GetTensorData<int64_t>() == y_data);  // filled in place
  for (int k = 0; k < 6; ++k) EXPECT(y_data[k] == i64[k] + 7);
  EXPECT(into[1].GetTensorTypeAndShapeInfo().GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8);
  EXPECT(into[1].At<uint8_t>({1, 0}) == static_cast<uint8_t>(u8[3] + 1));
}

// seq.onnx: a sequence of two tensors in, three out, and its length.
void run_seq(const Ort::Env& env, const Ort::SessionOptions& options, const std::string& path,
             const Ort::MemoryInfo& memory_info) {
  Ort::Session session(env, path.c_str(), options);
  Ort::TypeInfo items_type = session.GetInputTypeInfo(0);
  EXPECT(items_type.GetONNXType() == ONNX_TYPE_SEQUENCE);
  Ort::TypeInfo element = items_type.GetSequenceTypeInfo().GetSequenceElementType();
  EXPECT(element.GetTensorTypeAndShapeInfo().GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);

  float a[2] = {1, 2}, b[2] = {3, 4}, x[2] = {5, 6};
  const int64_t shape[1] = {2};
  std::vector<Ort::Value> parts;
  parts.push_back(Ort::Value::CreateTensor<float>(memory_info, a, 2, shape, 1));
  parts.push_back(Ort::Value::CreateTensor<float>(memory_info, b, 2, shape, 1));
  std::vector<Ort::Value> inputs;
  inputs.push_back(Ort::Value::CreateSequence(parts));
  inputs.push_back(Ort::Value::CreateTensor<float>(memory_info, x, 2, shape, 1));
  EXPECT(!inputs[0].IsTensor() && inputs[0].GetCount() == 2);
  const char* in_names[2] = {"items", "x"};
  const char* out_names[2] = {"joined", "count"};
  auto outputs = session.Run(Ort::RunOptions{}, in_names, inputs.data(), 2, out_names, 2);
  EXPECT(outputs[0].GetCount() == 3);
  Ort::AllocatorWithDefaultOptions allocator;
  const float expected[3][2] = {{1, 2}, {3, 4}, {5, 6}};
  for (int i = 0; i < 3; ++i) {
    Ort::Value item = outputs[0].GetValue(i, allocator);
    EXPECT(item.GetTensorData<float>()[0] == expected[i][0] && item.GetTensorData<float>()[1] == expected[i][1]);
  }
  EXPECT(outputs[1].GetTensorData<int64_t>()[0] == 3);
  // A scalar: no dimensions, one element.
  EXPECT(outputs[1].GetTensorTypeAndShapeInfo().GetShape().empty());
  EXPECT(outputs[1].GetTensorTypeAndShapeInfo().GetSymbolicDimensions().empty());
  EXPECT(outputs[1].GetTensorTypeAndShapeInfo().GetElementCount() == 1);
  EXPECT(session.GetOutputTypeInfo(1).GetTensorTypeAndShapeInfo().GetShape().empty());
}

// RunAsync on const.onnx: the outputs arrive in the callback, on a thread
// of the session's inter-op pool.
void run_async_const(Ort::Session& session, const Ort::MemoryInfo& memory_info) {
  float f[2] = {1, 2};
  const int64_t shape[1] = {2};
  Ort::Value x = Ort::Value::CreateTensor<float>(memory_info, f, 2, shape, 1);
  const char* in_name[1] = {"x"};
  const char* out_name[1] = {"y"};
  struct Done {
    std::promise<void> promise;
    OrtErrorCode code = ORT_OK;
    std::string message;
    float y1 = 0;
  } done;
  std::vector<Ort::Value> outputs;
  outputs.emplace_back(nullptr);
  Ort::RunOptions run_options;  // kept until the callback ran
  session.RunAsync(
      run_options, in_name, &x, 1, out_name, outputs.data(), 1,
      [](void* user_data, OrtValue** values, size_t count, OrtStatusPtr status) {
        auto* d = static_cast<Done*>(user_data);
        Ort::Status st(status);  // the callback owns it
        d->code = st.GetErrorCode();
        d->message = st.GetErrorMessage();
        if (st.IsOK() && count == 1) d->y1 = Ort::ConstValue(values[0]).GetTensorData<float>()[1];
        d->promise.set_value();
      },
      &done);
  done.promise.get_future().wait();
  if (done.code != ORT_OK) std::fprintf(stderr, "RunAsync: %s\n", done.message.c_str());
  EXPECT(done.code == ORT_OK && done.y1 == 2.0f);
  EXPECT(outputs[0] != nullptr && outputs[0].GetTensorData<float>()[1] == 2.0f);
}

// The PP-OCR classifier on capi_test.c's input; the output floats.
std::vector<float> run_cls(Ort::Session& session, const Ort::MemoryInfo& memory_info) {
  std::vector<float> x(1 * 3 * 48 * 192);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((static_cast<int>(i) * 37) % 101) / 50.0f - 1.0f;
  Ort::TypeInfo in_type = session.GetInputTypeInfo(0);
  std::vector<int64_t> shape = in_type.GetTensorTypeAndShapeInfo().GetShape();
  EXPECT(shape == (std::vector<int64_t>{-1, 3, -1, -1}));  // batch, height and width symbolic
  shape = {1, 3, 48, 192};
  Ort::Value input = Ort::Value::CreateTensor<float>(memory_info, x.data(), x.size(), shape.data(), shape.size());
  Ort::AllocatorWithDefaultOptions allocator;
  Ort::AllocatedStringPtr in_name = session.GetInputNameAllocated(0, allocator);
  Ort::AllocatedStringPtr out_name = session.GetOutputNameAllocated(0, allocator);
  const char* in_names[1] = {in_name.get()};
  const char* out_names[1] = {out_name.get()};
  auto outputs = session.Run(Ort::RunOptions{nullptr}, in_names, &input, 1, out_names, 1);
  const size_t count = outputs[0].GetTensorTypeAndShapeInfo().GetElementCount();
  EXPECT(count == 2);
  const float* y = outputs[0].GetTensorData<float>();
  return std::vector<float>(y, y + count);
}

}  // namespace

int run_all(int argc, char** argv) {
  bool on_onnxruntime = false;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--onnxruntime") == 0)
      on_onnxruntime = true;
    else
      args.emplace_back(argv[i]);
  }
  if (args.size() != 1 && args.size() != 3) {
    std::fprintf(stderr, "usage: cxx_test TYPES_MODEL [CLS_MODEL OUT_FILE] [--onnxruntime]\n");
    return 2;
  }
  const std::string types_model = args[0];
  const std::string work_dir = dir_of(types_model);

  std::printf("library version %s\n", Ort::GetVersionString().c_str());
  EXPECT(Ort::GetVersionString().rfind("1.30", 0) == 0);
  EXPECT(static_cast<const OrtRunOptions*>(global_run_options) != nullptr);
  EXPECT(&Ort::GetApi() == OrtGetApiBase()->GetApi(ORT_API_VERSION));
  const std::vector<std::string> providers = Ort::GetAvailableProviders();
  EXPECT(!providers.empty() && providers.back() == "CPUExecutionProvider");

  // Statuses and the 16-bit float types.
  {
    Ort::Status ok{nullptr};
    EXPECT(ok.IsOK());
    Ort::Status bad("made up", ORT_INVALID_GRAPH);
    EXPECT(!bad.IsOK() && bad.GetErrorCode() == ORT_INVALID_GRAPH && bad.GetErrorMessage() == "made up");
    Ort::Status from_exception(Ort::Exception("thrown", ORT_NO_MODEL));
    EXPECT(from_exception.GetErrorCode() == ORT_NO_MODEL && from_exception.GetErrorMessage() == "thrown");
    EXPECT_THROW_CODE(Ort::ThrowOnError(bad), ORT_INVALID_GRAPH);
    EXPECT(Ort::Float16_t(1.5f).val == 0x3e00 && Ort::Float16_t::FromBits(0xc000).ToFloat() == -2.0f);
    EXPECT(Ort::Float16_t(65504.0f).val == 0x7bff && Ort::Float16_t(1e6f).IsInfinity());
    EXPECT(Ort::Float16_t(5.96046448e-8f).val == 0x0001 && Ort::Float16_t::FromBits(0x0001).ToFloat() == 5.96046448e-8f);
    EXPECT(Ort::BFloat16_t(1.0f).val == 0x3f80 && Ort::BFloat16_t::FromBits(0x4040).ToFloat() == 3.0f);
  }

  int created_before_release = 0;
  {
    // Global thread pools with custom thread callbacks (the threading
    // documentation's program).
    Ort::ThreadingOptions threading_options;
    threading_options.SetGlobalIntraOpNumThreads(3)
        .SetGlobalInterOpNumThreads(2)
        .SetGlobalSpinControl(0)
        .SetGlobalDenormalAsZero()
        .SetGlobalCustomCreateThreadFn(create_thread)
        .SetGlobalCustomThreadCreationOptions(&creation_options_tag)
        .SetGlobalCustomJoinThreadFn(join_thread);
    Ort::Env env(threading_options, ORT_LOGGING_LEVEL_WARNING, "cxx_test");

    Ort::SessionOptions session_options;
    session_options.DisablePerSessionThreads();
    session_options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
    session_options.SetExecutionMode(ExecutionMode::ORT_SEQUENTIAL);
    session_options.SetLogId("cxx_test");
    session_options.SetLogSeverityLevel(ORT_LOGGING_LEVEL_WARNING);
    session_options.AddConfigEntry(kOrtSessionOptionsConfigAllowIntraOpSpinning, "0");
    EXPECT(session_options.HasConfigEntry(kOrtSessionOptionsConfigAllowIntraOpSpinning));
    EXPECT(!session_options.HasConfigEntry(kOrtSessionOptionsConfigAllowInterOpSpinning));
    EXPECT(session_options.GetConfigEntry(kOrtSessionOptionsConfigAllowIntraOpSpinning) == "0");
    EXPECT(session_options.GetConfigEntryOrDefault(kOrtSessionOptionsConfigAllowInterOpSpinning, "d") == "d");

    // Every key constant of the headers is a key the library takes (spindle
    // refuses keys it does not know), and reads back.
    {
      Ort::SessionOptions keyed;
      const std::pair<const char*, const char*> entries[] = {
          {kOrtSessionOptionsConfigUseEnvAllocators, "0"},
          {kOrtSessionOptionsConfigLoadModelFormat, "ONNX"},
          {kOrtSessionOptionsConfigSaveModelFormat, "ONNX"},
          {kOrtSessionOptionsConfigUseORTModelBytesDirectly, "0"},
          {kOrtSessionOptionsConfigUseORTModelBytesForInitializers, "0"},
          {kOrtSessionOptionsDisableQuantQDQ, "0"},
          {kOrtSessionOptionsDisableDoubleQDQRemover, "0"},
          {kOrtSessionOptionsEnableQuantQDQCleanup, "0"},
          {kOrtSessionOptionsQDQIsInt8Allowed, "0"},
          {kOrtSessionOptionsAvx2PrecisionMode, "0"},
          {kOrtSessionOptionsEnableGeluApproximation, "0"},
          {kOrtSessionOptionsDisableSpecifiedOptimizers, ""},
          {kOrtSessionOptionsDisableAheadOfTimeFunctionInlining, "0"},
          {kOrtSessionOptionsConfigMinimalBuildOptimizations, ""},
          {kOrtSessionOptionsConfigStrictAllowReleasedOpsetsOnly, "1"},
          {kNodePartitionConfigFile, ""},
          {kDebugLayoutTransformation, "0"},
          {kOrtSessionOptionsConfigStrictShapeTypeInference, "0"},
          {kOrtSessionOptionsConfigAllowIntraOpSpinning, "1"},
          {kOrtSessionOptionsConfigAllowInterOpSpinning, "1"},
          {kOrtSessionOptionsConfigSetDenormalAsZero, "0"},
          {kOrtSessionOptionsConfigForceSpinningStop, "0"},
          {kOrtSessionOptionsConfigDynamicBlockBase, "0"},
          {kOrtSessionOptionsConfigIntraOpThreadAffinities, "0"},
          {kOrtSessionOptionsDisableCPUEPFallback, "0"},
          {kOrtSessionOptionsConfigDisablePrepacking, "0"},
          {kOrtSessionOptionsUseDeviceAllocatorForInitializers, "0"},
          {kOrtSessionOptionsOptimizedModelExternalInitializersFileName, "weights.bin"},
          {kOrtSessionOptionsOptimizedModelExternalInitializersMinSizeInBytes, "1024"},
          {kOrtSessionOptionsModelExternalInitializersFileFolderPath, "."},
          {kOrtSessionOptionsSavePrePackedConstantInitializers, "0"},
          {kOrtSessionOptionsCollectNodeMemoryStatsToFile, "stats.csv"},
          {kOrtSessionOptionsQDQMatMulNBitsAccuracyLevel, "4"},
          {kOrtSessionOptionEpContextEnable, "0"},
          {kOrtSessionOptionEpContextFilePath, "ctx.onnx"},
          {kOrtSessionOptionEpContextEmbedMode, "0"},
      };
      for (const auto& [key, value] : entries) {
        try {
          keyed.AddConfigEntry(key, value);
          EXPECT(keyed.GetConfigEntry(key) == value);
        } catch (const Ort::Exception& e) {
          std::fprintf(stderr, "AddConfigEntry(%s, \"%s\"): %s\n", key, value, e.what());
          ++failures;
        }
      }
    }

    Ort::MemoryInfo memory_info = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    EXPECT(memory_info.GetAllocatorName() == "Cpu");
    EXPECT(memory_info.GetDeviceType() == OrtMemoryInfoDeviceType_CPU);
    EXPECT(memory_info.GetMemoryType() == OrtMemTypeDefault);

    // types.onnx from its path and from bytes.
    Ort::Session session(env, types_model.c_str(), session_options);
    check_types_info(session);
    run_types(session, memory_info);
    const std::vector<char> bytes = read_bytes(types_model);
    EXPECT(!bytes.empty());
    Ort::Session from_bytes(env, bytes.data(), bytes.size(), session_options);
    check_types_info(from_bytes);
    run_types(from_bytes, memory_info);
    run_seq(env, session_options, work_dir + "seq.onnx", memory_info);

    // A cloned set of options with a fixed free dimension.
    {
      Ort::SessionOptions fixed = session_options.Clone();
      fixed.AddFreeDimensionOverrideByName("batch", 2);
      EXPECT(fixed.GetConfigEntry(kOrtSessionOptionsConfigAllowIntraOpSpinning) == "0");
      Ort::Session fixed_session(env, types_model.c_str(), fixed);
      EXPECT(fixed_session.GetInputTypeInfo(0).GetTensorTypeAndShapeInfo().GetShape() ==
             (std::vector<int64_t>{2, 3}));
      run_types(fixed_session, memory_info);
    }

    // Run options: tag, config entries, terminate.
    {
      Ort::RunOptions run_options;
      run_options.SetRunTag("tagged").SetRunLogSeverityLevel(ORT_LOGGING_LEVEL_ERROR);
      EXPECT(std::string(run_options.GetRunTag()) == "tagged");
      EXPECT(run_options.GetRunLogSeverityLevel() == ORT_LOGGING_LEVEL_ERROR);
      run_options.AddConfigEntry(kOrtRunOptionsConfigEnableMemoryArenaShrinkage, "cpu:0");
      EXPECT(std::string(run_options.GetConfigEntry(kOrtRunOptionsConfigEnableMemoryArenaShrinkage)) == "cpu:0");
      // const.onnx: x float [2] -> y = Identity(x), w (an initializer).
      Ort::Session small(env, (work_dir + "const.onnx").c_str(), session_options);
      float f[2] = {1, 2};
      const int64_t shape[1] = {2};
      Ort::Value x = Ort::Value::CreateTensor<float>(memory_info, f, 2, shape, 1);
      const char* in_name[1] = {"x"};
      const char* out_name[1] = {"y"};
      run_options.SetTerminate();
      EXPECT_THROW_CODE(small.Run(run_options, in_name, &x, 1, out_name, 1), ORT_FAIL);
      run_options.UnsetTerminate();
      auto y = small.Run(run_options, in_name, &x, 1, out_name, 1);
      EXPECT(y[0].GetTensorData<float>()[1] == 2.0f);
      // IO binding: the bound run gives the same output, named; an output
      // bound to a value is written into it.
      {
        Ort::IoBinding binding(small);
        binding.BindInput("x", x);
        binding.BindOutput("y", memory_info);
        small.Run(run_options, binding);
        EXPECT(binding.GetOutputNames() == std::vector<std::string>{"y"});
        std::vector<Ort::Value> bound = binding.GetOutputValues();
        EXPECT(bound.size() == 1 && bound[0].GetTensorData<float>()[0] == 1.0f &&
               bound[0].GetTensorData<float>()[1] == 2.0f);
        float w_out[2] = {0, 0};
        Ort::Value w_value = Ort::Value::CreateTensor<float>(memory_info, w_out, 2, shape, 1);
        binding.BindOutput("w", w_value);
        binding.SynchronizeInputs();
        small.Run(run_options, binding);
        binding.SynchronizeOutputs();
        EXPECT(w_out[0] == 1.0f && w_out[1] == 2.0f);
        EXPECT((binding.GetOutputNames() == std::vector<std::string>{"y", "w"}));
        binding.ClearBoundInputs();
        binding.ClearBoundOutputs();
        EXPECT(binding.GetOutputNames().empty() && binding.GetOutputValues().empty());
        EXPECT_THROW_CODE(binding.BindInput("no_such_input", x), ORT_FAIL);
      }
      // A map from keys and values: read back in key order.
      {
        int64_t keys[3] = {3, 1, 2};
        float values[3] = {30, 10, 20};
        const int64_t three[1] = {3};
        Ort::Value k = Ort::Value::CreateTensor<int64_t>(memory_info, keys, 3, three, 1);
        Ort::Value v = Ort::Value::CreateTensor<float>(memory_info, values, 3, three, 1);
        Ort::Value map = Ort::Value::CreateMap(k, v);
        EXPECT(map.GetCount() == 2 && !map.IsTensor());
        Ort::AllocatorWithDefaultOptions default_allocator;
        Ort::Value map_keys = map.GetValue(0, default_allocator);
        Ort::Value map_values = map.GetValue(1, default_allocator);
        EXPECT(map_keys.GetTensorData<int64_t>()[0] == 1 && map_keys.GetTensorData<int64_t>()[2] == 3);
        EXPECT(map_values.GetTensorData<float>()[0] == 10.0f && map_values.GetTensorData<float>()[2] == 30.0f);
        Ort::TypeInfo map_type = map.GetTypeInfo();
        EXPECT(map_type.GetONNXType() == ONNX_TYPE_MAP);
        auto map_info = map_type.GetMapTypeInfo();
        EXPECT(map_info.GetMapKeyType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
        EXPECT(map_info.GetMapValueType().GetTensorTypeAndShapeInfo().GetElementType() ==
               ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
      }
      // Errors: an unknown feed name, a feed of the wrong element type.
      const char* bad_name[1] = {"no_such_input"};
      EXPECT_THROW_CODE(small.Run(run_options, bad_name, &x, 1, out_name, 1), ORT_INVALID_ARGUMENT);
      int32_t wrong[2] = {1, 2};
      Ort::Value w = Ort::Value::CreateTensor<int32_t>(memory_info, wrong, 2, shape, 1);
      EXPECT_THROW_CODE(small.Run(run_options, in_name, &w, 1, out_name, 1), ORT_INVALID_ARGUMENT);
      const char* bad_output[1] = {"no_such_output"};
      EXPECT_THROW_CODE(small.Run(run_options, in_name, &x, 1, bad_output, 1), ORT_INVALID_ARGUMENT);
    }

    // Profiling: the session writes a trace file and names it.
    {
      Ort::SessionOptions profiled;
      const std::string prefix = work_dir + "cxx_test_profile";
      profiled.EnableProfiling(prefix.c_str());
      Ort::Session profiled_session(env, types_model.c_str(), profiled);
      run_types(profiled_session, memory_info);
      Ort::AllocatorWithDefaultOptions allocator;
      Ort::AllocatedStringPtr file = profiled_session.EndProfilingAllocated(allocator);
      const std::string name = file.get();
      std::printf("  profile: %s\n", name.c_str());
      EXPECT(name.find("cxx_test_profile") != std::string::npos);
      EXPECT(!read_bytes(name).empty());
      std::remove(name.c_str());
    }

    // The classifier: global pools (3 intra-op threads) and a session of its
    // own with one thread give the same bits.
    if (args.size() == 3) {
      Ort::Session cls(env, args[1].c_str(), session_options);
      const std::vector<float> y = run_cls(cls, memory_info);
      Ort::SessionOptions one_thread;
      one_thread.SetIntraOpNumThreads(1).SetInterOpNumThreads(1);
      Ort::Session cls1(env, args[1].c_str(), one_thread);
      const std::vector<float> y1 = run_cls(cls1, memory_info);
      EXPECT(y.size() == y1.size() && std::memcmp(y.data(), y1.data(), y.size() * sizeof(float)) == 0);
      std::printf("  cls output: %.7f %.7f\n", static_cast<double>(y.at(0)), static_cast<double>(y.at(1)));
      std::ofstream out(args[2], std::ios::binary);
      out.write(reinterpret_cast<const char*>(y.data()), static_cast<std::streamsize>(y.size() * sizeof(float)));
      EXPECT(out.good());
    } else {
      std::printf("note: no PP-OCR classifier given; its run is left out\n");
    }

    // A session's own pools through per-session callbacks, in parallel
    // mode: every thread joined when the session goes.
    {
      const int created0 = threads_created.load(), joined0 = threads_joined.load();
      {
        Ort::SessionOptions own;
        own.SetIntraOpNumThreads(2)
            .SetInterOpNumThreads(2)
            .SetExecutionMode(ExecutionMode::ORT_PARALLEL)
            .SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_EXTENDED)
            .SetCustomCreateThreadFn(create_thread)
            .SetCustomThreadCreationOptions(&creation_options_tag)
            .SetCustomJoinThreadFn(join_thread);
        Ort::Session own_session(env, types_model.c_str(), own);
        run_types(own_session, memory_info);
        Ort::Session own_const(env, (work_dir + "const.onnx").c_str(), own);
        run_async_const(own_const, memory_info);
      }
      const int created = threads_created.load() - created0, joined = threads_joined.load() - joined0;
      std::printf("session pool threads: %d created through the callbacks, %d joined\n", created, joined);
      EXPECT(created >= 1);
      EXPECT(created == joined);
    }

    // Errors as exceptions.
    EXPECT_THROW_CODE(Ort::Session(env, "/nonexistent/model.onnx", session_options), ORT_NO_SUCHFILE);
    static const char garbage[] = "not an onnx model \x01\x02\x03\xff\xfe";
    EXPECT_THROW_CODE(Ort::Session(env, garbage, sizeof garbage, session_options), ORT_INVALID_PROTOBUF);
    // An index past the inputs: ONNX Runtime answers ORT_FAIL, spindle ORT_INVALID_ARGUMENT.
    EXPECT_THROW_CODE(session.GetInputTypeInfo(6), on_onnxruntime ? ORT_FAIL : ORT_INVALID_ARGUMENT);
    // A custom-op library that does not exist (custom_op_test.c and
    // custom_op_cxx_test.cpp run real ones): ONNX Runtime answers ORT_FAIL.
    Ort::SessionOptions custom;
    EXPECT_THROW_CODE(custom.RegisterCustomOpsLibrary("/nonexistent/libcustom_ops.so"),
                      on_onnxruntime ? ORT_FAIL : ORT_NO_SUCHFILE);

    // Handles move; the moved-from one is empty.
    Ort::Session moved = std::move(from_bytes);
    EXPECT(static_cast<OrtSession*>(from_bytes) == nullptr && moved.GetInputCount() == 6);

    created_before_release = threads_created.load() - threads_joined.load();
    // Every thread of the process besides main is a pool thread made
    // through the callbacks (the sessions alive here use the global pools).
    const int live = count_threads();
    std::printf("threads alive: %d (main + %d through the callbacks)\n", live, created_before_release);
    if (!on_onnxruntime) EXPECT(live == 1 + created_before_release);
  }  // sessions, then the env: the global pools' threads are joined here
  const int created = threads_created.load(), joined = threads_joined.load();
  std::printf("pool threads: %d created through the callbacks, %d joined\n", created, joined);
  // intra-op 3 (the caller and two workers) and inter-op 2: at least the two
  // intra-op workers lived until the env went.
  EXPECT(created_before_release >= 2);
  EXPECT(created == joined);

  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("all checks passed\n");
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run_all(argc, argv);
  } catch (const Ort::Exception& e) {
    std::fprintf(stderr, "unexpected Ort::Exception %d: %s\n", static_cast<int>(e.GetOrtErrorCode()), e.what());
    return 1;
  }
}
