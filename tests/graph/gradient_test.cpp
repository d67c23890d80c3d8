// gradient_test.cpp — the Gradient training op, expanded at load: gradients
// through broadcasting, values used several times and every differentiable
// op agree with central finite differences of the forward graph; an input y
// does not depend on gets zeros; an op that cannot be differentiated is
// refused at load, naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "../session/model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using testing::ModelBuilder;
constexpr int kDouble = onnx::TensorProto::DOUBLE;

// x [2, 3], b [3] (broadcast over rows), k [2] (unused by w):
//   w = Sigmoid(Tanh(x * b) / x) + Exp(Log(x)) - Neg(Sqrt(x))
// outputs w and Gradient(xs = [x, b, k], y = w).
std::vector<uint8_t> gradient_model(const std::string& extra_op = "") {
  ModelBuilder b(12);
  auto* training = b.proto().add_opset_import();
  training->set_domain("ai.onnx.preview.training");
  training->set_version(1);
  b.input("x", {2, 3}, kDouble).input("b", {3}, kDouble).input("k", {2}, kDouble);
  b.output("w", {2, 3}, kDouble).output("dx", {2, 3}, kDouble).output("db", {3}, kDouble).output("dk", {2}, kDouble);
  b.node("Mul", {"x", "b"}, {"t"});
  b.node("Tanh", {"t"}, {"u"});
  b.node("Div", {"u", "x"}, {"v"});
  b.node("Sigmoid", {"v"}, {"s"});
  b.node("Log", {"x"}, {"l"});
  b.node("Exp", {"l"}, {"e"});
  b.node("Sqrt", {"x"}, {"q"});
  b.node("Neg", {"q"}, {"nq"});
  b.node("Add", {"s", "e"}, {"a"});
  if (extra_op.empty()) {
    b.node("Sub", {"a", "nq"}, {"w"});
  } else {
    b.node("Sub", {"a", "nq"}, {"w0"});
    b.node(extra_op, {"w0"}, {"w"});
  }
  auto& g = b.node("Gradient", {"x", "b", "k"}, {"dx", "db", "dk"});
  g.set_domain("ai.onnx.preview.training");
  auto* xs = g.add_attribute();
  xs->set_name("xs");
  xs->set_type(onnx::AttributeProto::STRINGS);
  for (const char* n : {"x", "b", "k"}) xs->add_strings(n);
  auto* y = g.add_attribute();
  y->set_name("y");
  y->set_type(onnx::AttributeProto::STRING);
  y->set_s("w");
  return b.bytes();
}

double sum_w(InferenceSession& s, const std::vector<double>& x, const std::vector<double>& b) {
  auto out = s.run({{"x", Tensor::from_vector<double>({2, 3}, x)},
                    {"b", Tensor::from_vector<double>({3}, b)},
                    {"k", Tensor::from_vector<double>({2}, {0, 0})}},
                   {"w"});
  const auto w = out[0].to_vector<double>();
  return std::accumulate(w.begin(), w.end(), 0.0);
}

TEST(Gradient, MatchesFiniteDifferencesThroughBroadcastAndSharedValues) {
  const std::vector<double> x = {0.6, 0.9, 1.3, 0.7, 1.1, 1.4};
  const std::vector<double> b = {0.5, -1.2, 2.0};
  for (ExecutionMode mode : {ExecutionMode::kSequential, ExecutionMode::kParallel}) {
    SessionOptions o;
    o.execution_mode = mode;
    auto s = InferenceSession::create_from_bytes(gradient_model(), o);
    auto out = s->run({{"x", Tensor::from_vector<double>({2, 3}, x)},
                       {"b", Tensor::from_vector<double>({3}, b)},
                       {"k", Tensor::from_vector<double>({2}, {3, 4})}});
    const auto dx = out[1].to_vector<double>();
    const auto db = out[2].to_vector<double>();
    ASSERT_EQ(out[2].shape(), (Shape{3}));  // summed over the broadcast rows
    EXPECT_EQ(out[3].to_vector<double>(), (std::vector<double>{0, 0}));
    // Central differences of sum(w) in each element of x (which = 0) or b (1).
    auto check = [&](int which, const std::vector<double>& grad) {
      const double h = 1e-6;
      for (size_t i = 0; i < grad.size(); ++i) {
        std::vector<double> plus[2] = {x, b}, minus[2] = {x, b};
        plus[which][i] += h;
        minus[which][i] -= h;
        const double fd = (sum_w(*s, plus[0], plus[1]) - sum_w(*s, minus[0], minus[1])) / (2 * h);
        EXPECT_NEAR(grad[i], fd, 1e-6 * std::max(1.0, std::fabs(fd))) << (which ? "db[" : "dx[") << i << "]";
      }
    };
    check(0, dx);
    check(1, db);
  }
}

TEST(Gradient, AnOpThatCannotBeDifferentiatedIsRefusedAtLoad) {
  StatusCode code = StatusCode::kOk;
  try {
    InferenceSession::create_from_bytes(gradient_model("Relu"));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    code = e.code();
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("cannot differentiate Relu"));
  }
  EXPECT_EQ(code, StatusCode::kUnsupported);
}

}  // namespace
}  // namespace spindle
