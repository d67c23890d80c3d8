// registry_test.cpp — the kernel registry, the input checks every kernel
// family shares (kernel.h) and the node-test runner itself.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "kernels/kernel.h"
#include "kernels/tensor/tensor_util.h"
#include "kernel_errors.h"
#include "onnx_node_runner.h"

namespace spindle {
namespace {

TEST(KernelRegistry, UnknownOpIsUnsupported) {
  try {
    kernels::run_kernel_once("NoSuchOp", 13, {}, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("NoSuchOp"), std::string::npos);
  }
}

kernels::NodeInfo node_named(const std::string& op) {
  kernels::NodeInfo node;
  node.op_type = op;
  node.name = "n";
  return node;
}

StatusCode code_of(const std::function<void()>& fn) {
  StatusCode code = StatusCode::kOk;
  testing::error_of(fn, &code);
  return code;
}

// One require_float for every family: a type outside the op's constraint is
// the model's error, a float type the kernel lacks is spindle's limit.
TEST(KernelChecks, RequireFloatTellsModelErrorsFromMissingTypes) {
  const kernels::NodeInfo node = node_named("Conv");
  const Tensor f32 = Tensor::from_vector<float>({1}, {1.0f});
  const Tensor f64 = Tensor::from_vector<double>({1}, {1.0});
  const Tensor i32 = Tensor::from_vector<int32_t>({2}, {1, 2});
  EXPECT_EQ(code_of([&] { kernels::require_float(node, f32, "X"); }), StatusCode::kOk);
  EXPECT_EQ(code_of([&] { kernels::require_float(node, f64, "X", true); }), StatusCode::kOk);
  EXPECT_EQ(code_of([&] { kernels::require_float(node, f64, "X"); }), StatusCode::kUnsupported);
  EXPECT_EQ(code_of([&] { kernels::require_float(node, i32, "X", true); }), StatusCode::kInvalidArgument);
  try {
    kernels::require_float(node, i32, "X");
    FAIL() << "int32 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Conv 'n': input X is int32 2, expected float32"), std::string::npos) << e.what();
  }
}

TEST(KernelChecks, NormalizeAxisAcceptsMinusRankToRankMinusOne) {
  const kernels::NodeInfo node = node_named("Gather");
  EXPECT_EQ(kernels::normalize_axis(node, -3, 3), 0);
  EXPECT_EQ(kernels::normalize_axis(node, -1, 3), 2);
  EXPECT_EQ(kernels::normalize_axis(node, 2, 3), 2);
  EXPECT_EQ(code_of([&] { kernels::normalize_axis(node, 3, 3); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { kernels::normalize_axis(node, -4, 3); }), StatusCode::kInvalidArgument);
  try {
    kernels::normalize_axis(node, 5, 2, "axes");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("axes 5 is out of range for a rank-2 tensor (expected [-2, 1])"),
              std::string::npos)
        << e.what();
  }
}

// value_bytes (ConstantOfShape, Pad values...) writes float16 through the
// one float->half conversion the tensor type uses (round to nearest even).
TEST(KernelChecks, ValueBytesFloat16MatchesTensorConversion) {
  const kernels::NodeInfo node = node_named("ConstantOfShape");
  for (double v : {0.0, -0.0, 1.0, 1.0 / 3.0, 65504.0, 65520.0, 1e-8, 5.9604644775390625e-08, -2.5}) {
    const std::vector<unsigned char> b = kernels::tensor::value_bytes(node, DataType::kFloat16, v);
    ASSERT_EQ(b.size(), 2u);
    uint16_t bits = 0;
    std::memcpy(&bits, b.data(), 2);
    EXPECT_EQ(bits, float_to_float16(static_cast<float>(v))) << v;
  }
}

TEST(NodeRunner, TensorsCloseCatchesDifferences) {
  auto a = Tensor::from_vector<float>({2}, {1.0f, 2.0f});
  auto b = Tensor::from_vector<float>({2}, {1.0f, 2.5f});
  EXPECT_TRUE(testing::tensors_close(a, a, 1e-3, 1e-5));
  EXPECT_FALSE(testing::tensors_close(a, b, 1e-3, 1e-5));
  EXPECT_FALSE(testing::tensors_close(a, a.reshaped({1, 2}), 1e-3, 1e-5));
}

}  // namespace
}  // namespace spindle
