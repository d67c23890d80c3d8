// custom_ops.h — custom operators written against ONNX Runtime's C++ API the
// way ONNX Runtime's samples write them (Ort::CustomOpBase), in the domain
// "test.domain". custom_op_library.cpp builds them into a library with
// RegisterCustomOps; custom_op_cxx_test.cpp adds them to a domain directly.
//
//   ScaledSum(X, Y; scale: float, mode: "sum" | "diff") -> Z = scale * (X +/- Y)
//       float32, any shape (X and Y alike); version-1 callbacks (Compute).
//   ParallelIds(X; batches: int) -> Y = 2 * X, T: int64 [batches]
//       Y computed by KernelContext::ParallelFor in `batches` batches; T[b]
//       is the Linux thread id that ran batch b (each batch also waits 20 ms
//       so that every pool thread gets a batch), then logs "ParallelIds:
//       computed" at WARNING through the session's logger (ORT_CXX_LOG).
//       Status-returning callbacks.
//   FailIf(X) -> Y = X, or an error status naming the first negative element.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace test_ops {

inline OrtStatusPtr status_of(const Ort::Exception& e) {
  return Ort::GetApi().CreateStatus(e.GetOrtErrorCode(), e.what());
}

struct ScaledSumKernel {
  ScaledSumKernel(const OrtApi&, const OrtKernelInfo* info) {
    Ort::ConstKernelInfo ki(info);
    scale_ = ki.GetAttribute<float>("scale");
    const std::string mode = ki.GetAttribute<std::string>("mode");
    if (mode != "sum" && mode != "diff")
      throw Ort::Exception("ScaledSum: mode is '" + mode + "', expected 'sum' or 'diff'", ORT_INVALID_ARGUMENT);
    sign_ = mode == "sum" ? 1.0f : -1.0f;
  }
  void Compute(OrtKernelContext* context) {
    Ort::KernelContext ctx(context);
    Ort::ConstValue x = ctx.GetInput(0);
    Ort::ConstValue y = ctx.GetInput(1);
    const std::vector<int64_t> shape = x.GetTensorTypeAndShapeInfo().GetShape();
    const size_t n = x.GetTensorTypeAndShapeInfo().GetElementCount();
    if (y.GetTensorTypeAndShapeInfo().GetShape() != shape)
      throw Ort::Exception("ScaledSum: X and Y differ in shape", ORT_INVALID_ARGUMENT);
    const float* a = x.GetTensorData<float>();
    const float* b = y.GetTensorData<float>();
    float* z = ctx.GetOutput(0, shape).GetTensorMutableData<float>();
    for (size_t i = 0; i < n; ++i) z[i] = scale_ * (a[i] + sign_ * b[i]);
  }

 private:
  float scale_ = 1, sign_ = 1;
};

struct ScaledSumOp : Ort::CustomOpBase<ScaledSumOp, ScaledSumKernel> {
  void* CreateKernel(const OrtApi& api, const OrtKernelInfo* info) const { return new ScaledSumKernel(api, info); }
  const char* GetName() const { return "ScaledSum"; }
  size_t GetInputTypeCount() const { return 2; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
};

struct ParallelIdsKernel {
  ParallelIdsKernel(const OrtApi&, const OrtKernelInfo* info) {
    batches_ = Ort::ConstKernelInfo(info).GetAttribute<int64_t>("batches");
    if (batches_ < 1) throw Ort::Exception("ParallelIds: batches must be at least 1", ORT_INVALID_ARGUMENT);
  }
  struct Work {
    const float* x;
    float* y;
    int64_t* tids;
    size_t n, batches;
  };
  static void batch(void* p, size_t b) {
    auto* w = static_cast<Work*>(p);
    for (size_t i = w->n * b / w->batches; i < w->n * (b + 1) / w->batches; ++i) w->y[i] = 2.0f * w->x[i];
    w->tids[b] = static_cast<int64_t>(syscall(SYS_gettid));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    try {
      Ort::KernelContext ctx(context);
      Ort::ConstValue x = ctx.GetInput(0);
      const std::vector<int64_t> shape = x.GetTensorTypeAndShapeInfo().GetShape();
      Work w{x.GetTensorData<float>(), ctx.GetOutput(0, shape).GetTensorMutableData<float>(),
             ctx.GetOutput(1, std::vector<int64_t>{batches_}).GetTensorMutableData<int64_t>(),
             x.GetTensorTypeAndShapeInfo().GetElementCount(), static_cast<size_t>(batches_)};
      ctx.ParallelFor(batch, w.batches, w.batches, &w);
      ORT_CXX_LOG(ctx.GetLogger(), ORT_LOGGING_LEVEL_WARNING, "ParallelIds: computed");
      ORT_CXX_LOG(ctx.GetLogger(), ORT_LOGGING_LEVEL_INFO, "ParallelIds: below the session's level");
      return nullptr;
    } catch (const Ort::Exception& e) {
      return status_of(e);
    }
  }

 private:
  int64_t batches_ = 1;
};

struct ParallelIdsOp : Ort::CustomOpBase<ParallelIdsOp, ParallelIdsKernel, true> {
  OrtStatusPtr CreateKernelV2(const OrtApi& api, const OrtKernelInfo* info, void** kernel) const {
    try {
      *kernel = new ParallelIdsKernel(api, info);
      return nullptr;
    } catch (const Ort::Exception& e) {
      return status_of(e);
    }
  }
  const char* GetName() const { return "ParallelIds"; }
  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  size_t GetOutputTypeCount() const { return 2; }
  ONNXTensorElementDataType GetOutputType(size_t i) const {
    return i == 0 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT : ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  }
};

struct FailIfKernel {
  FailIfKernel(const OrtApi&, const OrtKernelInfo*) {}
  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    Ort::KernelContext ctx(context);
    Ort::ConstValue x = ctx.GetInput(0);
    const std::vector<int64_t> shape = x.GetTensorTypeAndShapeInfo().GetShape();
    const size_t n = x.GetTensorTypeAndShapeInfo().GetElementCount();
    const float* a = x.GetTensorData<float>();
    for (size_t i = 0; i < n; ++i)
      if (a[i] < 0)
        return Ort::GetApi().CreateStatus(ORT_INVALID_ARGUMENT,
                                          ("FailIf: element " + std::to_string(i) + " is negative").c_str());
    float* y = ctx.GetOutput(0, shape).GetTensorMutableData<float>();
    for (size_t i = 0; i < n; ++i) y[i] = a[i];
    return nullptr;
  }
};

struct FailIfOp : Ort::CustomOpBase<FailIfOp, FailIfKernel, true> {
  OrtStatusPtr CreateKernelV2(const OrtApi& api, const OrtKernelInfo* info, void** kernel) const {
    *kernel = new FailIfKernel(api, info);
    return nullptr;
  }
  const char* GetName() const { return "FailIf"; }
  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
};

// Convert(X float; to: int) -> Y of element type `to` (float or int64), in
// the domain "infer.domain" (make_models.py's convert.onnx): the declared
// output type is undefined and InferOutputShape chooses it.
struct ConvertKernel {
  ConvertKernel(const OrtApi&, const OrtKernelInfo* info) { to_ = Ort::ConstKernelInfo(info).GetAttribute<int64_t>("to"); }
  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    try {
      Ort::KernelContext ctx(context);
      Ort::ConstValue x = ctx.GetInput(0);
      const std::vector<int64_t> shape = x.GetTensorTypeAndShapeInfo().GetShape();
      const size_t n = x.GetTensorTypeAndShapeInfo().GetElementCount();
      const float* in = x.GetTensorData<float>();
      Ort::UnownedValue y = ctx.GetOutput(0, shape);
      if (y.GetTensorTypeAndShapeInfo().GetElementType() != to_)
        return Ort::GetApi().CreateStatus(ORT_FAIL, "Convert: the output's type is not 'to'");
      if (to_ == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
        int64_t* out = y.GetTensorMutableData<int64_t>();
        for (size_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(in[i]);
      } else {
        float* out = y.GetTensorMutableData<float>();
        for (size_t i = 0; i < n; ++i) out[i] = in[i];
      }
      return nullptr;
    } catch (const Ort::Exception& e) {
      return status_of(e);
    }
  }

 private:
  int64_t to_ = 0;
};

struct ConvertOp : Ort::CustomOpBase<ConvertOp, ConvertKernel, true> {
  OrtStatusPtr CreateKernelV2(const OrtApi& api, const OrtKernelInfo* info, void** kernel) const {
    try {
      *kernel = new ConvertKernel(api, info);
      return nullptr;
    } catch (const Ort::Exception& e) {
      return status_of(e);
    }
  }
  static Ort::Status InferOutputShape(Ort::ShapeInferContext& ctx) {
    const int64_t to = ctx.GetAttrInt("to");
    if (to != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && to != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)
      return Ort::Status("Convert: 'to' must be float (1) or int64 (7)", ORT_INVALID_ARGUMENT);
    return ctx.SetOutputShape(0, ctx.GetInputShape(0), static_cast<ONNXTensorElementDataType>(to));
  }
  const char* GetName() const { return "Convert"; }
  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED; }
};

}  // namespace test_ops
