// random_test.cpp — the random operators (RandomNormal, RandomUniform, their
// Like forms, Bernoulli, Multinomial, training Dropout): statistics of large
// draws, a seed giving the same bits at any thread count, shapes and dtypes,
// errors; and Col2Im against naive loops, with its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"

namespace spindle {
namespace {

using testing::expect_error;

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    v[static_cast<size_t>(i)] = t.dtype() == DataType::kFloat32 ? t.data<float>()[i] : t.data<double>()[i];
  return v;
}

void mean_var(const std::vector<double>& v, double& mean, double& var) {
  mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  var /= static_cast<double>(v.size());
}

// Runs op with 1 and 3 intra-op threads and checks both give the same bits.
Tensor run_everywhere(const std::string& op, int opset, const Attributes& attrs, const std::vector<Tensor>& inputs,
                      int outputs = 1, int output = 0) {
  const Tensor serial = kernels::run_kernel_once(op, opset, attrs, inputs, outputs, nullptr)[static_cast<size_t>(output)];
  for (int threads : {1, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    const Tensor par = kernels::run_kernel_once(op, opset, attrs, inputs, outputs, pool.get())[static_cast<size_t>(output)];
    EXPECT_TRUE(bitwise_equal(serial, par)) << op << " with " << threads << " threads";
  }
  return serial;
}

TEST(RandomUniform, SeededDrawsAreUniformAndTheSameAtAnyThreadCount) {
  const Attributes attrs{{"shape", std::vector<int64_t>{400, 500}}, {"low", -1.0f}, {"high", 3.0f}, {"seed", 7.0f}};
  const Tensor y = run_everywhere("RandomUniform", 1, attrs, {});
  ASSERT_EQ(y.dtype(), DataType::kFloat32);
  ASSERT_EQ(y.shape(), (Shape{400, 500}));
  const auto v = as_doubles(y);
  for (double x : v) ASSERT_TRUE(x >= -1.0 && x < 3.0) << x;
  double mean = 0, var = 0;
  mean_var(v, mean, var);
  EXPECT_NEAR(mean, 1.0, 0.01);
  EXPECT_NEAR(var, 16.0 / 12.0, 0.02);
  // Quarters of the range get a quarter of the draws each.
  int counts[4] = {0, 0, 0, 0};
  for (double x : v) ++counts[std::min(3, static_cast<int>(x + 1.0))];
  for (int c : counts) EXPECT_NEAR(c / 200000.0, 0.25, 0.005);
  // Another seed gives other numbers; the same seed, the same ones.
  Attributes other = attrs;
  other.set("seed", 8.0f);
  EXPECT_FALSE(bitwise_equal(y, kernels::run_kernel_once("RandomUniform", 1, other, {}, 1)[0]));
  EXPECT_TRUE(bitwise_equal(y, kernels::run_kernel_once("RandomUniform", 22, attrs, {}, 1)[0]));
}

TEST(RandomNormal, SeededDrawsHaveTheMeanAndScaleAndDtype) {
  const Attributes attrs{{"shape", std::vector<int64_t>{200000}}, {"mean", 2.0f}, {"scale", 0.5f}, {"seed", 1.5f},
                         {"dtype", int64_t{11}}};
  const Tensor y = run_everywhere("RandomNormal", 1, attrs, {});
  ASSERT_EQ(y.dtype(), DataType::kFloat64);
  double mean = 0, var = 0;
  mean_var(as_doubles(y), mean, var);
  EXPECT_NEAR(mean, 2.0, 0.005);
  EXPECT_NEAR(var, 0.25, 0.005);
  // About 68.3% within one standard deviation.
  int within = 0;
  for (double x : as_doubles(y)) within += std::fabs(x - 2.0) < 0.5;
  EXPECT_NEAR(within / 200000.0, 0.6827, 0.005);
}

TEST(RandomNormal, UnseededRunsDiffer) {
  const Attributes attrs{{"shape", std::vector<int64_t>{64}}};
  const Tensor a = kernels::run_kernel_once("RandomNormal", 1, attrs, {}, 1)[0];
  const Tensor b = kernels::run_kernel_once("RandomNormal", 1, attrs, {}, 1)[0];
  EXPECT_FALSE(bitwise_equal(a, b));
}

TEST(RandomLike, TakeTheInputShapeAndTypeUnlessDtypeIsGiven) {
  const Tensor x = Tensor::from_vector<double>({3, 7}, std::vector<double>(21, 0.0));
  const Tensor u = run_everywhere("RandomUniformLike", 1, {{"seed", 3.0f}}, {x});
  EXPECT_EQ(u.dtype(), DataType::kFloat64);
  EXPECT_EQ(u.shape(), (Shape{3, 7}));
  const Tensor n = run_everywhere("RandomNormalLike", 1, {{"seed", 3.0f}, {"dtype", int64_t{1}}}, {x});
  EXPECT_EQ(n.dtype(), DataType::kFloat32);
  EXPECT_EQ(n.shape(), (Shape{3, 7}));
  const Tensor ints = Tensor::from_vector<int64_t>({2}, {1, 2});
  expect_error("RandomUniformLike", 1, {}, {ints}, {"int64", "dtype"});
}

TEST(Bernoulli, RateFollowsTheProbabilityAndDtype) {
  std::vector<float> p(100000);
  for (size_t i = 0; i < p.size(); ++i) p[i] = i % 4 == 0 ? 0.0f : i % 4 == 1 ? 1.0f : i % 4 == 2 ? 0.3f : 0.8f;
  const Tensor x = Tensor::from_vector<float>({100000}, p);
  const Tensor y = run_everywhere("Bernoulli", 15, {{"seed", 11.0f}}, {x});
  ASSERT_EQ(y.dtype(), DataType::kFloat32);
  double ones[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < p.size(); ++i) {
    const float v = y.data<float>()[i];
    ASSERT_TRUE(v == 0.0f || v == 1.0f);
    ones[i % 4] += v;
  }
  EXPECT_EQ(ones[0], 0.0);
  EXPECT_EQ(ones[1], 25000.0);
  EXPECT_NEAR(ones[2] / 25000.0, 0.3, 0.012);
  EXPECT_NEAR(ones[3] / 25000.0, 0.8, 0.012);
  const Tensor b = run_everywhere("Bernoulli", 15, {{"seed", 11.0f}, {"dtype", int64_t{9}}}, {x});
  ASSERT_EQ(b.dtype(), DataType::kBool);
  for (size_t i = 0; i < p.size(); ++i) ASSERT_EQ(b.data<bool>()[i], y.data<float>()[i] == 1.0f);
  expect_error("Bernoulli", 15, {}, {Tensor::from_vector<float>({2}, {0.5f, 1.5f})}, {"1.5", "probability"});
}

TEST(Multinomial, FrequenciesFollowTheSoftmaxOfEachRow) {
  const Tensor x = Tensor::from_vector<float>(
      {2, 3}, {std::log(0.1f), std::log(0.2f), std::log(0.7f), 5.0f, 5.0f, -1000.0f});
  const Attributes attrs{{"sample_size", int64_t{60000}}, {"seed", 2.0f}, {"dtype", int64_t{7}}};
  const Tensor y = run_everywhere("Multinomial", 7, attrs, {x});
  ASSERT_EQ(y.dtype(), DataType::kInt64);
  ASSERT_EQ(y.shape(), (Shape{2, 60000}));
  double counts[2][3] = {{0, 0, 0}, {0, 0, 0}};
  for (int r = 0; r < 2; ++r)
    for (int s = 0; s < 60000; ++s) {
      const int64_t c = y.data<int64_t>()[r * 60000 + s];
      ASSERT_TRUE(c >= 0 && c < 3);
      ++counts[r][c];
    }
  EXPECT_NEAR(counts[0][0] / 60000, 0.1, 0.008);
  EXPECT_NEAR(counts[0][1] / 60000, 0.2, 0.008);
  EXPECT_NEAR(counts[0][2] / 60000, 0.7, 0.008);
  EXPECT_NEAR(counts[1][0] / 60000, 0.5, 0.008);
  EXPECT_EQ(counts[1][2], 0.0);
  const Tensor d = kernels::run_kernel_once("Multinomial", 7, {{"seed", 2.0f}}, {x}, 1)[0];
  EXPECT_EQ(d.dtype(), DataType::kInt32);
  EXPECT_EQ(d.shape(), (Shape{2, 1}));
  expect_error("Multinomial", 7, {}, {Tensor::from_vector<float>({3}, {1, 2, 3})}, {"2-D"});
  expect_error("Multinomial", 7, {{"sample_size", int64_t{0}}}, {x}, {"sample_size", ">= 1"});
  expect_error("Multinomial", 7, {{"dtype", int64_t{1}}}, {x}, {"dtype", "int32 or int64"});
}

TEST(Dropout, TrainingModeDropsAtTheRatioAndScalesTheKeptValues) {
  std::vector<float> xv(100000);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = 1.0f + static_cast<float>(i % 13);
  const Tensor x = Tensor::from_vector<float>({100, 1000}, xv);
  const Tensor ratio = Tensor::scalar<float>(0.25f);
  const Tensor train = Tensor::scalar<bool>(true);
  const Attributes attrs{{"seed", int64_t{5}}};
  const Tensor y = run_everywhere("Dropout", 13, attrs, {x, ratio, train}, 2, 0);
  const Tensor mask = run_everywhere("Dropout", 13, attrs, {x, ratio, train}, 2, 1);
  ASSERT_EQ(mask.dtype(), DataType::kBool);
  double kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const bool m = mask.data<bool>()[i];
    kept += m;
    ASSERT_EQ(y.data<float>()[i], m ? xv[i] * (1.0f / 0.75f) : 0.0f) << i;
  }
  EXPECT_NEAR(kept / 100000.0, 0.75, 0.006);
  // Ratio 0 and inference copy the input.
  const Tensor same = kernels::run_kernel_once("Dropout", 13, {}, {x, Tensor::scalar<float>(0.0f), train}, 1)[0];
  EXPECT_TRUE(bitwise_equal(same, x));
  const Tensor infer = kernels::run_kernel_once("Dropout", 13, {}, {x, ratio, Tensor::scalar<bool>(false)}, 1)[0];
  EXPECT_TRUE(bitwise_equal(infer, x));
  expect_error("Dropout", 13, {}, {x, Tensor::scalar<float>(1.0f), train}, {"ratio", "[0, 1)"});
}

TEST(RandomUniform, RejectsBadAttributes) {
  expect_error("RandomUniform", 1, {{"shape", std::vector<int64_t>{2}}, {"low", 2.0f}, {"high", 1.0f}},
               {}, {"low", "high"});
  expect_error("RandomUniform", 1, {{"shape", std::vector<int64_t>{2, -1}}}, {}, {"shape", "negative"});
  expect_error("RandomNormal", 1, {{"shape", std::vector<int64_t>{2}}, {"dtype", int64_t{6}}}, {},
               {"dtype", "float32 or float64"});
  expect_error("RandomNormal", 1, {}, {}, {"shape"});
}

// ---------------------------------------------------------------- Col2Im

// Naive Col2Im over 2 or 3 spatial dims.
std::vector<float> col2im_reference(const std::vector<float>& x, int64_t N, int64_t C, const std::vector<int64_t>& img,
                                    const std::vector<int64_t>& blk, const std::vector<int64_t>& dil,
                                    const std::vector<int64_t>& pads, const std::vector<int64_t>& str) {
  const size_t nd = img.size();
  std::vector<int64_t> cnt(nd);
  int64_t L = 1, K = 1, P = 1;
  for (size_t i = 0; i < nd; ++i) {
    cnt[i] = (img[i] + pads[i] + pads[nd + i] - dil[i] * (blk[i] - 1) - 1) / str[i] + 1;
    L *= cnt[i];
    K *= blk[i];
    P *= img[i];
  }
  std::vector<float> y(static_cast<size_t>(N * C * P), 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t l = 0; l < L; ++l) {
          int64_t kr = k, lr = l, off = 0;
          bool inside = true;
          for (size_t i = nd; i-- > 0;) {
            const int64_t ki = kr % blk[i], li = lr % cnt[i];
            kr /= blk[i];
            lr /= cnt[i];
            const int64_t p = li * str[i] - pads[i] + ki * dil[i];
            if (p < 0 || p >= img[i]) inside = false;
            int64_t stride = 1;
            for (size_t j = i + 1; j < nd; ++j) stride *= img[j];
            off += p * stride;
          }
          if (inside) y[static_cast<size_t>((n * C + c) * P + off)] += x[static_cast<size_t>(((n * C + c) * K + k) * L + l)];
        }
  return y;
}

TEST(Col2Im, MatchesNaiveLoopsOnRandomShapes) {
  std::mt19937 rng(42);
  auto pick = [&](int lo, int hi) { return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (int trial = 0; trial < 40; ++trial) {
    const size_t nd = trial % 3 == 2 ? 3 : 2;
    std::vector<int64_t> img(nd), blk(nd), dil(nd), str(nd), pads(2 * nd);
    int64_t L = 1, K = 1;
    for (size_t i = 0; i < nd; ++i) {
      img[i] = pick(2, 7);
      blk[i] = pick(1, 3);
      dil[i] = pick(1, 2);
      str[i] = pick(1, 3);
      pads[i] = pick(0, 2);
      pads[nd + i] = pick(0, 2);
      const int64_t span = img[i] + pads[i] + pads[nd + i], extent = dil[i] * (blk[i] - 1);
      if (extent >= span) blk[i] = 1;
      L *= (span - dil[i] * (blk[i] - 1) - 1) / str[i] + 1;
      K *= blk[i];
    }
    const int64_t N = pick(1, 2), C = pick(1, 3);
    std::vector<float> x(static_cast<size_t>(N * C * K * L));
    for (float& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
    const Tensor X = Tensor::from_vector<float>({N, C * K, L}, x);
    const Attributes attrs{{"dilations", dil}, {"pads", pads}, {"strides", str}};
    const Tensor Y = run_everywhere("Col2Im", 18, attrs,
                                    {X, Tensor::from_vector<int64_t>({static_cast<int64_t>(nd)}, img),
                                     Tensor::from_vector<int64_t>({static_cast<int64_t>(nd)}, blk)});
    Shape want{N, C};
    want.insert(want.end(), img.begin(), img.end());
    ASSERT_EQ(Y.shape(), want);
    const auto ref = col2im_reference(x, N, C, img, blk, dil, pads, str);
    const auto got = Y.to_vector<float>();
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got[i], ref[i], 1e-5) << "trial " << trial << " element " << i;
  }
}

TEST(Col2Im, RejectsInconsistentShapes) {
  const Tensor X = Tensor::from_vector<float>({1, 4, 12}, std::vector<float>(48, 1.0f));
  auto dims = [](std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); };
  // image 4x5, block 2x2: 3 * 4 = 12 blocks; 4x4 gives 9.
  expect_error("Col2Im", 18, {}, {X, dims({4, 4}), dims({2, 2})}, {"12 block positions", "expected 9"});
  expect_error("Col2Im", 18, {}, {X, dims({4, 5}), dims({3, 2})}, {"multiple of prod(block_shape"});
  expect_error("Col2Im", 18, {}, {X, dims({4}), dims({2})}, {"at least 2 spatial dims"});
  expect_error("Col2Im", 18, {}, {X, dims({4, 5}), dims({2})}, {"block_shape", "expected 2"});
  expect_error("Col2Im", 18, {}, {X, dims({4, 0}), dims({2, 2})}, {"image_shape", "non-positive"});
  expect_error("Col2Im", 18, {}, {X, dims({4, 5}), dims({2, 9})}, {"does not fit"});
  expect_error("Col2Im", 18, {{"strides", std::vector<int64_t>{1, 0}}}, {X, dims({4, 5}), dims({2, 2})},
               {"strides", "non-positive"});
  expect_error("Col2Im", 18, {{"pads", std::vector<int64_t>{1, 1}}}, {X, dims({4, 5}), dims({2, 2})},
               {"pads", "expected 4"});
  expect_error("Col2Im", 18, {}, {Tensor::from_vector<float>({4, 12}, std::vector<float>(48)), dims({4, 5}), dims({2, 2})},
               {"rank 3"});
}

}  // namespace
}  // namespace spindle
