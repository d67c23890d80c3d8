// optimizer_test.cpp — Adagrad, Momentum and Adam beyond the ONNX backend
// tests (which only use T = 0): bias correction and decay at T > 0, double
// precision, two tensors at once, the schema's default epsilon, and errors.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_errors.h"
#include "kernels/kernel.h"

namespace spindle {
namespace {

using kernels::NodeInfo;

std::vector<Tensor> run(const std::string& op, Attributes attrs, std::vector<Tensor> inputs, int outputs) {
  NodeInfo n;
  n.op_type = op;
  n.domain = "ai.onnx.preview.training";
  n.opset = 1;
  n.attrs = std::move(attrs);
  n.num_inputs = static_cast<int>(inputs.size());
  n.num_outputs = outputs;
  return kernels::run_kernel_once(n, std::move(inputs));
}

TEST(Optimizers, AdamBiasCorrectionAtT3InDouble) {
  const double r = 0.05, alpha = 0.8, beta = 0.9, eps = 1e-3, norm = 0.01;
  const std::vector<double> x = {1.5, -2.0}, g = {0.3, -0.7}, v = {0.1, 0.2}, h = {0.05, 0.4};
  auto out = run("Adam", {{"alpha", float(alpha)}, {"beta", float(beta)}, {"epsilon", float(eps)}, {"norm_coefficient", float(norm)}},
                 {Tensor::scalar<double>(r), Tensor::scalar<int64_t>(3), Tensor::from_vector<double>({2}, x),
                  Tensor::from_vector<double>({2}, g), Tensor::from_vector<double>({2}, v), Tensor::from_vector<double>({2}, h)},
                 3);
  const double a = float(alpha), b = float(beta), e = float(eps), nc = float(norm);
  const double r_adj = r * std::sqrt(1 - std::pow(b, 3)) / (1 - std::pow(a, 3));
  for (size_t k = 0; k < 2; ++k) {
    const double gr = nc * x[k] + g[k];
    const double vn = a * v[k] + (1 - a) * gr, hn = b * h[k] + (1 - b) * gr * gr;
    EXPECT_NEAR(out[0].to_vector<double>()[k], x[k] - r_adj * vn / (std::sqrt(hn) + e), 1e-12);
    EXPECT_NEAR(out[1].to_vector<double>()[k], vn, 1e-12);
    EXPECT_NEAR(out[2].to_vector<double>()[k], hn, 1e-12);
  }
}

TEST(Optimizers, AdagradDecayAndDefaultEpsilonOverTwoTensors) {
  // Inputs R, T, X1, X2, G1, G2, H1, H2; outputs X1', X2', H1', H2'.
  auto out = run("Adagrad", {{"decay_factor", 0.5f}},
                 {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(2), Tensor::from_vector<float>({1}, {1.0f}),
                  Tensor::from_vector<float>({2}, {1.0f, 2.0f}), Tensor::from_vector<float>({1}, {-1.0f}),
                  Tensor::from_vector<float>({2}, {0.0f, 3.0f}), Tensor::from_vector<float>({1}, {3.0f}),
                  Tensor::from_vector<float>({2}, {0.0f, 7.0f})},
                 4);
  const double r_adj = 0.1 / (1 + 2 * 0.5);
  EXPECT_NEAR(out[0].to_vector<float>()[0], 1.0 - r_adj * -1.0 / (2.0 + 1e-6), 1e-6);  // h = 3 + 1 = 4
  EXPECT_NEAR(out[1].to_vector<float>()[1], 2.0 - r_adj * 3.0 / (4.0 + 1e-6), 1e-6);   // h = 7 + 9 = 16
  EXPECT_EQ(out[1].to_vector<float>()[0], 1.0f);  // zero gradient, zero history: unchanged (epsilon > 0)
  EXPECT_EQ(out[3].to_vector<float>(), (std::vector<float>{0.0f, 16.0f}));
}

TEST(Optimizers, NesterovAfterTheFirstStepAndErrors) {
  const Attributes attrs{{"alpha", 0.9f}, {"beta", 0.5f}, {"norm_coefficient", 0.0f}, {"mode", std::string("nesterov")}};
  auto out = run("Momentum", attrs,
                 {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(1), Tensor::from_vector<float>({1}, {1.0f}),
                  Tensor::from_vector<float>({1}, {2.0f}), Tensor::from_vector<float>({1}, {1.0f})},
                 2);
  const double vn = 0.9 * 1.0 + 0.5 * 2.0;  // beta applies from T = 1 on
  EXPECT_NEAR(out[1].to_vector<float>()[0], vn, 1e-6);
  EXPECT_NEAR(out[0].to_vector<float>()[0], 1.0 - 0.1 * (2.0 + 0.9 * vn), 1e-6);
  try {
    run("Momentum", attrs,
        {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(1), Tensor::from_vector<float>({2}, {1, 1}),
         Tensor::from_vector<float>({1}, {2.0f}), Tensor::from_vector<float>({2}, {1, 1})},
        2);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has X float32 2 but a gradient or state float32 1"), std::string::npos) << e.what();
  }
  Attributes bad = attrs;
  bad.set("mode", std::string("heavy"));
  try {
    run("Momentum", bad, {}, 2);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mode 'heavy'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace spindle
