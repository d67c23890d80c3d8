// conv_static_shape_test.cpp — a Conv created with its input's static shape
// (NodeInfo::input_shapes): where Winograd applies to that shape, U is
// packed at creation in place of the GEMM panels and W is not read again;
// its outputs are the bits of the lazy path (U packed on the first run) at
// any thread count. Without a static shape, or where Winograd does not
// apply, the kernel prepares what it did before.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/kernel.h"
#include "kernel_errors.h"

namespace spindle {
namespace {

using kernels::NodeInfo;
using kernels::OpKernel;

Tensor random_values(const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t(DataType::kFloat32, shape);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(gen);
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// A 3x3 Conv, pads 1, with constant W and B; `x_shape` (may be null) is
// the input's static shape given at creation.
struct StaticConv {
  Tensor W, B;
  NodeInfo node;
  StaticConv(int64_t M, int64_t C, const Shape* x_shape) : W(random_values({M, C, 3, 3}, 11)), B(random_values({M}, 12)) {
    node.op_type = "Conv";
    node.opset = 11;
    node.name = "c";
    node.attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    node.num_inputs = 3;
    node.const_inputs = {nullptr, &W, &B};
    if (x_shape) node.input_shapes = {*x_shape, W.shape(), B.shape()};
  }
  std::unique_ptr<OpKernel> create() const {
    const kernels::KernelFactory* f = kernels::KernelRegistry::global().find("", "Conv", 11);
    EXPECT_NE(f, nullptr);
    return (*f)(node);
  }
  // One run of `kernel`; W as the plan passes it (undefined once the kernel
  // owns it: the plan has freed the original).
  Tensor run(const OpKernel& kernel, const Tensor& X, int threads) const {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    std::vector<Tensor> inputs = {X, kernel.owns_constant_input(1) ? Tensor() : W, B};
    std::vector<Tensor> outputs(1);
    kernels::KernelContext ctx(node, inputs, outputs, pool.get());
    kernel.compute(ctx);
    return outputs[0];
  }
};

TEST(ConvStaticShape, WinogradWeightsArePackedAtCreationAndGiveTheLazyPathsBits) {
  const Shape xs = {1, 32, 28, 28};
  const Tensor X = random_values(xs, 13);
  StaticConv lazy(64, 32, nullptr), fixed(64, 32, &xs);
  const auto lazy_kernel = lazy.create();
  const size_t panels = lazy_kernel->packed_bytes();
  const Tensor want = lazy.run(*lazy_kernel, X, 1);
  const size_t u_bytes = lazy_kernel->packed_bytes() - panels;
  ASSERT_GT(panels, 0u);
  // U (36 x M x C floats) is 4x the 3x3 weights, at least.
  ASSERT_GE(u_bytes, static_cast<size_t>(36 * 64 * 32) * sizeof(float));

  const auto kernel = fixed.create();
  // Before any run: U and nothing else (no GEMM panels), and W is the
  // kernel's (the plan frees the original).
  EXPECT_EQ(kernel->packed_bytes(), u_bytes);
  EXPECT_TRUE(kernel->owns_constant_input(1));
  for (int threads : {1, 2}) {
    EXPECT_TRUE(same_bits(want, fixed.run(*kernel, X, threads))) << threads << " threads";
    EXPECT_TRUE(same_bits(want, lazy.run(*lazy_kernel, X, threads))) << threads << " threads (lazy)";
  }
  EXPECT_EQ(kernel->packed_bytes(), u_bytes);  // nothing more after runs
}

TEST(ConvStaticShape, DynamicShapesKeepTheLazyPath) {
  // No static shape: the panels at creation, U added by the first run.
  const Shape xs = {1, 32, 20, 20};
  StaticConv lazy(48, 32, nullptr);
  const auto kernel = lazy.create();
  const size_t panels = kernel->packed_bytes();
  ASSERT_GT(panels, 0u);
  const Tensor y = lazy.run(*kernel, random_values(xs, 14), 2);
  EXPECT_GT(kernel->packed_bytes(), panels);
  EXPECT_EQ(y.shape(), (Shape{1, 48, 20, 20}));
}

TEST(ConvStaticShape, ShapesWinogradDoesNotTakeKeepThePanels) {
  // 7x7 outputs (2x2 tiles) take im2col: the static shape changes nothing.
  const Shape xs = {1, 32, 7, 7};
  const Tensor X = random_values(xs, 15);
  StaticConv lazy(64, 32, nullptr), fixed(64, 32, &xs);
  const auto lazy_kernel = lazy.create();
  const auto kernel = fixed.create();
  EXPECT_EQ(kernel->packed_bytes(), lazy_kernel->packed_bytes());
  EXPECT_TRUE(same_bits(lazy.run(*lazy_kernel, X, 1), fixed.run(*kernel, X, 2)));
  EXPECT_EQ(kernel->packed_bytes(), lazy_kernel->packed_bytes());
}

TEST(ConvStaticShape, AnotherShapeAtRunTimeIsAnErrorNotACrash) {
  // A kernel holding W only as U, run on a shape that Winograd does not
  // take (the session's checks of the feeds prevent it): a clear error.
  const Shape xs = {1, 32, 28, 28};
  StaticConv fixed(64, 32, &xs);
  const auto kernel = fixed.create();
  const std::string message = testing::error_of([&] { fixed.run(*kernel, random_values({1, 32, 7, 7}, 16), 1); });
  EXPECT_NE(message.find("1x32x7x7"), std::string::npos) << message;
  EXPECT_NE(message.find("1x32x28x28"), std::string::npos) << message;
  // Its own shape still runs.
  EXPECT_EQ(fixed.run(*kernel, random_values(xs, 17), 1).shape(), (Shape{1, 64, 28, 28}));
}

}  // namespace
}  // namespace spindle
