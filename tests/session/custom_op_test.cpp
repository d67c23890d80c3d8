// custom_op_test.cpp — operators defined by the application
// (spindle/custom_op.h): a session runs nodes of a custom domain with the
// application's kernels (attributes, the intra-op pool, results bitwise equal
// at 1 and 2 threads), consults them before its own operators, leaves them
// out of constant folding, and reports a missing op, a kernel's error and a
// wrong input type clearly, staying usable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <set>
#include <thread>

#include "kernels/kernel_errors.h"
#include "model_builder.h"
#include "spindle/custom_op.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::ModelBuilder;

// Affine(X; alpha: float, beta: int) -> alpha * X + beta, float32; fails on
// NaN. Counts its computes and the threads its blocks ran on.
struct AffineStats {
  std::atomic<int> computes{0};
  std::mutex mu;
  std::set<std::thread::id> threads;
};

class AffineKernel final : public CustomKernel {
 public:
  AffineKernel(const CustomKernelInfo& info, AffineStats* stats) : stats_(stats) {
    const CustomAttribute* a = info.attribute("alpha");
    const CustomAttribute* b = info.attribute("beta");
    if (!a || !std::holds_alternative<float>(*a) || !b || !std::holds_alternative<int64_t>(*b))
      throw Error(StatusCode::kInvalidArgument, "Affine needs a float alpha and an int beta");
    alpha_ = std::get<float>(*a);
    beta_ = static_cast<float>(std::get<int64_t>(*b));
  }
  void compute(CustomKernelContext& ctx) const override {
    ++stats_->computes;
    const Tensor& x = *ctx.input(0);
    Tensor& y = ctx.output(0, DataType::kFloat32, x.shape());
    const float* in = x.data<float>();
    float* out = y.mutable_data<float>();
    std::atomic<bool> nan{false};
    parallel_for(ctx.intra_op_pool(), 0, x.numel(), 256, [&](int64_t b, int64_t e) {
      {
        std::lock_guard<std::mutex> lock(stats_->mu);
        stats_->threads.insert(std::this_thread::get_id());
      }
      for (int64_t i = b; i < e; ++i) {
        if (std::isnan(in[i])) nan = true;
        out[i] = alpha_ * in[i] + beta_;
      }
    });
    if (nan) throw Error(StatusCode::kInvalidArgument, "Affine: X holds a NaN");
  }

 private:
  AffineStats* stats_;
  float alpha_ = 1, beta_ = 0;
};

class AffineOp final : public CustomOp {
 public:
  explicit AffineOp(AffineStats* stats, std::string name = "Affine") : stats_(stats), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::vector<DataType> input_types() const override { return {DataType::kFloat32}; }
  std::vector<DataType> output_types() const override { return {DataType::kFloat32}; }
  std::unique_ptr<CustomKernel> create_kernel(const CustomKernelInfo& info) const override {
    EXPECT_EQ(info.input_names.size(), 1u);
    return std::make_unique<AffineKernel>(info, stats_);
  }

 private:
  AffineStats* stats_;
  std::string name_;
};

SessionOptions with_ops(const std::string& domain, std::shared_ptr<const CustomOp> op, int threads) {
  SessionOptions o;
  o.intra_op_num_threads = threads;
  auto d = std::make_shared<CustomOpDomain>();
  d->name = domain;
  d->ops.push_back(std::move(op));
  o.custom_op_domains.push_back(std::move(d));
  return o;
}

// x float [N] -> y = Affine(x; alpha=0.5, beta=3) in domain my.ops, then Relu.
std::vector<uint8_t> affine_model(const std::string& domain = "my.ops", const std::string& op = "Affine") {
  ModelBuilder b;
  if (!domain.empty()) b.opset(domain, 1);
  b.input("x", {-1}).output("y", {-1});
  auto& n = b.node(op, {"x"}, {"a"}, "affine");
  n.set_domain(domain);
  ModelBuilder::attr_float(n, "alpha", 0.5f);
  ModelBuilder::attr_int(n, "beta", 3);
  b.node("Relu", {"a"}, {"y"});
  return b.bytes();
}

std::vector<float> run_affine(SessionOptions opts, const std::vector<float>& x) {
  auto s = InferenceSession::create_from_bytes(affine_model(), opts);
  auto out = s->run({{"x", Tensor::from_vector<float>({static_cast<int64_t>(x.size())}, x)}});
  const float* p = out[0].data<float>();
  return std::vector<float>(p, p + x.size());
}

TEST(CustomOp, RunsWithAttributesOnTheIntraOpPool) {
  std::vector<float> x(50000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) - 40.0f;
  AffineStats one_stats, two_stats;
  const auto one = run_affine(with_ops("my.ops", std::make_shared<AffineOp>(&one_stats), 1), x);
  const auto two = run_affine(with_ops("my.ops", std::make_shared<AffineOp>(&two_stats), 2), x);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(one[i], std::max(0.0f, 0.5f * x[i] + 3.0f)) << i;
  EXPECT_EQ(one, two);
  EXPECT_EQ(one_stats.computes, 1);
  EXPECT_EQ(one_stats.threads.size(), 1u);
  EXPECT_GE(two_stats.threads.size(), 1u);
}

// Negate(X) -> -X under any name: a custom "Relu" of the default domain.
class NegateOp final : public CustomOp {
 public:
  std::string name() const override { return "Relu"; }
  std::vector<DataType> input_types() const override { return {DataType::kFloat32}; }
  std::vector<DataType> output_types() const override { return {DataType::kFloat32}; }
  std::unique_ptr<CustomKernel> create_kernel(const CustomKernelInfo&) const override {
    struct K final : CustomKernel {
      void compute(CustomKernelContext& ctx) const override {
        const Tensor& x = *ctx.input(0);
        Tensor& y = ctx.output(0, DataType::kFloat32, x.shape());
        for (int64_t i = 0; i < x.numel(); ++i) y.mutable_data<float>()[i] = -x.data<float>()[i];
      }
    };
    return std::make_unique<K>();
  }
};

TEST(CustomOp, ComesBeforeBuiltInOperators) {
  AffineStats stats;
  SessionOptions o = with_ops("my.ops", std::make_shared<AffineOp>(&stats), 1);
  auto d = std::make_shared<CustomOpDomain>();
  d->name = "ai.onnx";
  d->ops.push_back(std::make_shared<NegateOp>());
  o.custom_op_domains.push_back(d);
  auto s = InferenceSession::create_from_bytes(affine_model(), o);
  auto out = s->run({{"x", Tensor::from_vector<float>({1}, {-10.0f})}});
  EXPECT_EQ(out[0].data<float>()[0], 2.0f);  // -(0.5 * -10 + 3); the built-in Relu would give 0
}

TEST(CustomOp, ConstantInputsAreNotFolded) {
  AffineStats stats;
  ModelBuilder b;
  b.opset("my.ops", 1);
  b.output("y", {2});
  b.initializer("c", {2}, {1.0f, -2.0f});
  auto& n = b.node("Affine", {"c"}, {"y"}, "affine");
  n.set_domain("my.ops");
  ModelBuilder::attr_float(n, "alpha", 2.0f);
  ModelBuilder::attr_int(n, "beta", 1);
  auto s = InferenceSession::create_from_bytes(b.bytes(), with_ops("my.ops", std::make_shared<AffineOp>(&stats), 1));
  EXPECT_EQ(stats.computes, 0);
  auto out = s->run({});
  EXPECT_EQ(stats.computes, 1);
  EXPECT_EQ(out[0].data<float>()[0], 3.0f);
  EXPECT_EQ(out[0].data<float>()[1], -3.0f);
}

TEST(CustomOp, ErrorsAreClearAndTheSessionStaysUsable) {
  StatusCode code{};
  const std::string missing = error_of([] { InferenceSession::create_from_bytes(affine_model()); }, &code);
  EXPECT_EQ(code, StatusCode::kUnsupported);
  EXPECT_THAT(missing, HasSubstr("my.ops.Affine"));

  AffineStats stats;
  auto s = InferenceSession::create_from_bytes(affine_model(), with_ops("my.ops", std::make_shared<AffineOp>(&stats), 2));
  const std::string nan = error_of(
      [&] { s->run({{"x", Tensor::from_vector<float>({2}, {1.0f, std::nanf("")})}}); }, &code);
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  EXPECT_THAT(nan, HasSubstr("Affine: X holds a NaN"));
  const std::string type = error_of([&] { s->run({{"x", Tensor::from_vector<int64_t>({1}, {1})}}); });
  EXPECT_THAT(type, HasSubstr("float32"));
  auto out = s->run({{"x", Tensor::from_vector<float>({1}, {2.0f})}});
  EXPECT_EQ(out[0].data<float>()[0], 4.0f);
}

}  // namespace
}  // namespace spindle
