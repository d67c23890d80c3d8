// linalg_test.cpp — Einsum, Det, MeanVarianceNormalization and the window
// functions against straightforward reference loops, their errors, thread
// count independence, and the ONNX backend node tests of these ops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numbers>
#include <random>

#include "kernels/kernel.h"
#include "kernel_errors.h"
#include "onnx_node_runner.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {

using kernels::run_kernel_once;
using ::testing::HasSubstr;

template <class T>
Tensor random_tensor(const Shape& shape, uint32_t seed, int lo = -3, int hi = 3) {
  std::mt19937 gen(seed);
  std::vector<T> v(static_cast<size_t>(shape_numel(shape)));
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> d(lo, hi);
    for (auto& x : v) x = static_cast<T>(d(gen));
  } else {
    std::uniform_int_distribution<int> d(lo, hi);
    for (auto& x : v) x = static_cast<T>(d(gen));
  }
  return Tensor::from_vector<T>(shape, v);
}

// Brute-force einsum of an explicit equation without "...": every
// assignment of every letter, in double (or wrapping int64 for integers).
template <class T>
Tensor reference_einsum(const std::string& eq, const std::vector<Tensor>& in) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string cur;
  for (char c : eq.substr(0, arrow)) {
    if (c == ',') {
      terms.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  terms.push_back(cur);
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) size[terms[i][d]] = in[i].dim(static_cast<int64_t>(d));
  std::vector<char> letters;
  for (const auto& [c, _] : size) letters.push_back(c);
  Shape out_shape;
  for (char c : out) out_shape.push_back(size[c]);
  std::vector<std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>> acc(
      static_cast<size_t>(shape_numel(out_shape)), 0);
  std::map<char, int64_t> idx;
  for (char c : letters) idx[c] = 0;
  auto offset = [&](const std::string& term, const Shape& shape) {
    int64_t off = 0;
    for (size_t d = 0; d < term.size(); ++d) off = off * shape[d] + idx[term[d]];
    return off;
  };
  for (const auto& [c, n] : size)
    if (n == 0) return Tensor(dtype_of<T>(), out_shape);  // caller only uses this for non-empty cases
  while (true) {
    auto prod = static_cast<decltype(acc)::value_type>(1);
    for (size_t i = 0; i < terms.size(); ++i)
      prod *= static_cast<decltype(prod)>(in[i].data<T>()[offset(terms[i], in[i].shape())]);
    acc[static_cast<size_t>(offset(out, out_shape))] += prod;
    size_t k = letters.size();
    while (k-- > 0) {
      if (++idx[letters[k]] < size[letters[k]]) break;
      idx[letters[k]] = 0;
    }
    if (k == static_cast<size_t>(-1)) break;
  }
  std::vector<T> v(acc.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(acc[i]);
  return Tensor::from_vector<T>(out_shape, v);
}

Tensor einsum(const std::string& eq, std::vector<Tensor> in, ThreadPool* pool = nullptr) {
  return run_kernel_once("Einsum", 12, Attributes{{"equation", eq}}, std::move(in), 1, pool)[0];
}

struct EinsumCase {
  std::string equation;  // explicit, no "...": checked against reference_einsum
  std::vector<Shape> shapes;
};

class EinsumReference : public ::testing::TestWithParam<EinsumCase> {};

TEST_P(EinsumReference, FloatDoubleAndIntMatchBruteForce) {
  const EinsumCase& c = GetParam();
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  std::vector<Tensor> f, d, i32;
  for (size_t k = 0; k < c.shapes.size(); ++k) {
    f.push_back(random_tensor<float>(c.shapes[k], 7 + static_cast<uint32_t>(k)));
    d.push_back(random_tensor<double>(c.shapes[k], 7 + static_cast<uint32_t>(k)));
    i32.push_back(random_tensor<int32_t>(c.shapes[k], 7 + static_cast<uint32_t>(k)));
  }
  const Tensor want_d = reference_einsum<double>(c.equation, d);
  EXPECT_TRUE(testing::tensors_close(einsum(c.equation, d), want_d, 1e-12, 1e-12));
  EXPECT_TRUE(testing::tensors_close(einsum(c.equation, f), reference_einsum<float>(c.equation, f), 1e-5, 1e-4));
  EXPECT_TRUE(testing::tensors_close(einsum(c.equation, i32), reference_einsum<int32_t>(c.equation, i32), 0, 0));
  // Bitwise identical with a pool of 3 threads.
  const Tensor serial = einsum(c.equation, f), threaded = einsum(c.equation, f, pool.get());
  ASSERT_EQ(serial.shape(), threaded.shape());
  EXPECT_EQ(std::memcmp(serial.raw_data(), threaded.raw_data(), serial.nbytes()), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Einsum, EinsumReference,
    ::testing::Values(EinsumCase{"ij,jk->ik", {{37, 29}, {29, 41}}},          // gemm, both plain
                      EinsumCase{"ji,jk->ik", {{29, 37}, {29, 41}}},          // gemm, A transposed
                      EinsumCase{"ij,kj->ik", {{37, 29}, {300, 29}}},         // gemm, B transposed, 2 column blocks
                      EinsumCase{"bij,bjk->bik", {{3, 17, 19}, {3, 19, 23}}},  // batched gemm
                      EinsumCase{"bij,bjk->kbi", {{3, 17, 19}, {3, 19, 23}}},  // result permuted
                      EinsumCase{"ibj,jbk->bik", {{17, 3, 19}, {19, 3, 23}}},  // operands copied to matrix layout
                      EinsumCase{"abcd,cd->ab", {{4, 5, 12, 13}, {12, 13}}},   // two summed letters
                      EinsumCase{"ij,ij->ij", {{5, 6}, {5, 6}}},               // elementwise product
                      EinsumCase{"i,j->ij", {{5}, {7}}},                       // outer product
                      EinsumCase{"i,i->", {{9}, {9}}},                         // inner product
                      EinsumCase{"ij->ji", {{4, 7}}},                          // transpose
                      EinsumCase{"ij->i", {{4, 7}}},                           // row sums
                      EinsumCase{"ij->", {{4, 7}}},                            // total
                      EinsumCase{"ij->j", {{70, 90}}},                         // column sums (runs of outputs)
                      EinsumCase{"bij->bj", {{3, 50, 70}}},
                      EinsumCase{"ij,i->j", {{5, 7}, {5}}},                    // vector-matrix, too small for gemm
                      EinsumCase{"ii->i", {{6, 6}}},                           // diagonal
                      EinsumCase{"ii->", {{6, 6}}},                            // trace
                      EinsumCase{"iij,jk->ik", {{5, 5, 4}, {4, 3}}},           // diagonal then product
                      EinsumCase{"ab,b->a", {{40, 30}, {30}}},                 // matrix-vector
                      EinsumCase{"ij,j,jk->ik", {{4, 5}, {5}, {5, 6}}},        // three operands
                      EinsumCase{"ij,jk,kl,lm->im", {{3, 4}, {4, 5}, {5, 6}, {6, 2}}},
                      EinsumCase{"ab,cd->", {{2, 3}, {4, 5}}},                 // summed over one operand each
                      EinsumCase{"Ab,bA->A", {{3, 4}, {4, 3}}}),               // upper case letters
    [](const ::testing::TestParamInfo<EinsumCase>& info) { return "case" + std::to_string(info.index); });

TEST(Einsum, ImplicitOutputIsSortedSingleLettersUpperCaseFirst) {
  const Tensor a = random_tensor<double>({3, 4}, 1), b = random_tensor<double>({4, 5}, 2);
  // "jb,bA" -> "Aj" (once-only letters sorted: 'A' < 'j').
  const Tensor got = einsum("jb,bA", {a, b});
  EXPECT_TRUE(testing::tensors_close(got, reference_einsum<double>("jb,bA->Aj", {a, b}), 1e-12, 1e-12));
  // Repeated letters are summed: "ii" is the trace; spaces are ignored.
  const Tensor m = random_tensor<double>({4, 4}, 3);
  EXPECT_TRUE(testing::tensors_close(einsum(" i i ", {m}), reference_einsum<double>("ii->", {m}), 1e-12, 1e-12));
}

TEST(Einsum, EllipsisBroadcastsRightAligned) {
  // (2, 1, 3, 4) x (5, 4, 2) over "...ij,...jk->...ik": batch dims (2, 1)
  // and (5) broadcast to (2, 5).
  const Tensor a = random_tensor<double>({2, 1, 3, 4}, 4), b = random_tensor<double>({5, 4, 2}, 5);
  const Tensor got = einsum("...ij,...jk->...ik", {a, b});
  ASSERT_EQ(got.shape(), (Shape{2, 5, 3, 2}));
  const double* A = a.data<double>();
  const double* B = b.data<double>();
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 5; ++q)
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 2; ++k) {
          double s = 0;
          for (int j = 0; j < 4; ++j) s += A[(p * 3 + i) * 4 + j] * B[(q * 4 + j) * 2 + k];
          EXPECT_NEAR(got.data<double>()[((p * 5 + q) * 3 + i) * 2 + k], s, 1e-12);
        }
  // Implicit mode puts "..." first; an explicit output without "..." sums it.
  const Tensor x = random_tensor<double>({2, 3, 4}, 6);
  const Tensor implicit = einsum("...ji", {x});
  EXPECT_TRUE(testing::tensors_close(implicit, reference_einsum<double>("aji->aij", {x}), 1e-12, 1e-12));
  EXPECT_TRUE(testing::tensors_close(einsum("...i->i", {x}), reference_einsum<double>("abi->i", {x}), 1e-12, 1e-12));
  EXPECT_TRUE(testing::tensors_close(einsum("i...->...i", {x}), reference_einsum<double>("iab->abi", {x}), 1e-12,
                                     1e-12));
}

TEST(Einsum, GemmPathMatchesGenericLoopWithBroadcastAndDiagonal) {
  // Small integers: float sums are exact, so the gemm path (float32) must
  // equal the generic loop (int32) exactly, whatever copies it needed.
  struct Case {
    std::string eq;
    std::vector<Shape> shapes;
  };
  for (const Case& c : {Case{"...ij,...jk->...ik", {{2, 1, 16, 20}, {3, 20, 24}}},  // batch broadcast: copy of A
                        Case{"iij,jk->ki", {{18, 18, 20}, {20, 24}}},              // diagonal: copy of A
                        Case{"bij,jk->bik", {{2, 16, 20}, {20, 24}}},              // B shared over the batch
                        Case{"bji,bkj->bik", {{2, 20, 16}, {2, 24, 20}}}}) {       // both transposed
    std::vector<Tensor> ints, floats;
    for (size_t k = 0; k < c.shapes.size(); ++k) {
      ints.push_back(random_tensor<int32_t>(c.shapes[k], 20 + static_cast<uint32_t>(k)));
      std::vector<float> v;
      for (int32_t x : ints.back().to_vector<int32_t>()) v.push_back(static_cast<float>(x));
      floats.push_back(Tensor::from_vector<float>(c.shapes[k], v));
    }
    const Tensor want = einsum(c.eq, ints), got = einsum(c.eq, floats);
    ASSERT_EQ(got.shape(), want.shape()) << c.eq;
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_EQ(got.data<float>()[i], static_cast<float>(want.data<int32_t>()[i])) << c.eq << " element " << i;
  }
}

TEST(Einsum, IntegersWrapAndEmptyDimensionsGiveZeros) {
  const Tensor a = Tensor::from_vector<int8_t>({2}, {100, 100}), b = Tensor::from_vector<int8_t>({2}, {2, 1});
  EXPECT_EQ(einsum("i,i->", {a, b}).data<int8_t>()[0], static_cast<int8_t>(300 - 256));
  const Tensor got = einsum("ij,jk->ik", {Tensor(DataType::kFloat32, {3, 0}), Tensor(DataType::kFloat32, {0, 2})});
  ASSERT_EQ(got.shape(), (Shape{3, 2}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got.data<float>()[i], 0.0f);
  EXPECT_EQ(einsum("ij->ji", {Tensor(DataType::kFloat32, {0, 3})}).shape(), (Shape{3, 0}));
}

TEST(Einsum, BadEquationsAndInputsNameWhatWasExpected) {
  const Tensor m = random_tensor<float>({2, 3}, 1);
  auto expect_error = [](const std::string& eq, std::vector<Tensor> in, const std::string& what) {
    try {
      einsum(eq, std::move(in));
      ADD_FAILURE() << eq << " was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("Einsum"));
      EXPECT_THAT(e.what(), HasSubstr(what)) << eq;
    }
  };
  expect_error("ij,jk->ik", {m}, "has 2 input terms, expected one per input (1)");
  expect_error("i1->i", {m}, "has the term 'i1', expected letters and at most one '...'");
  expect_error("i..j->ij", {m}, "expected letters and at most one '...'");
  expect_error("ij->k", {m}, "has 'k' in the output but in no input term");
  expect_error("ij->ii", {m}, "repeats 'i' in the output");
  expect_error("ijk->i", {m}, "expected rank 3 for the term 0");
  expect_error("ii->i", {m}, "share a letter");
  expect_error("ij,ij->ij", {m, random_tensor<float>({2, 4}, 2)}, "expected equal sizes or 1");
  expect_error("ij,ij->ij", {m, random_tensor<double>({2, 3}, 2)}, "expected the dtype of input 0");
}

// ---------------------------------------------------------------- Det

// Determinant by cofactor expansion (small n only).
double cofactor_det(const std::vector<double>& a, int n) {
  if (n == 1) return a[0];
  double det = 0;
  for (int c = 0; c < n; ++c) {
    std::vector<double> minor;
    for (int r = 1; r < n; ++r)
      for (int k = 0; k < n; ++k)
        if (k != c) minor.push_back(a[static_cast<size_t>(r * n + k)]);
    det += (c % 2 ? -1.0 : 1.0) * a[static_cast<size_t>(c)] * cofactor_det(minor, n - 1);
  }
  return det;
}

TEST(Det, BatchedMatchesCofactorExpansion) {
  for (int n : {1, 2, 3, 5}) {
    const Tensor x = random_tensor<double>({2, 3, n, n}, static_cast<uint32_t>(n));
    const Tensor y = run_kernel_once("Det", 11, {}, {x})[0];
    ASSERT_EQ(y.shape(), (Shape{2, 3}));
    for (int b = 0; b < 6; ++b) {
      const double* p = x.data<double>() + b * n * n;
      EXPECT_NEAR(y.data<double>()[b], cofactor_det(std::vector<double>(p, p + n * n), n), 1e-9) << n;
    }
  }
  // float32, a row swap (negative sign) and a singular matrix.
  const Tensor f = Tensor::from_vector<float>({2, 2, 2}, {0, 1, 1, 0, 1, 2, 2, 4});
  const Tensor y = run_kernel_once("Det", 11, {}, {f})[0];
  EXPECT_FLOAT_EQ(y.data<float>()[0], -1.0f);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 0.0f);
}

TEST(Det, NonSquareInputIsAnError) {
  try {
    run_kernel_once("Det", 11, {}, {Tensor(DataType::kFloat32, {2, 3})});
    FAIL() << "a 2x3 matrix was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("Det: input X is float32 2x3, expected (..., M, M) square matrices"));
  }
}

// ---------------------------------------------------------------- MVN

TEST(MeanVarianceNormalization, MatchesReferenceOverDefaultAndGivenAxes) {
  const Tensor x = random_tensor<float>({2, 3, 4, 5}, 9);
  const float* p = x.data<float>();
  for (const std::vector<int64_t>& axes : {std::vector<int64_t>{0, 2, 3}, std::vector<int64_t>{-1}}) {
    Attributes attrs;
    if (axes.size() == 1) attrs.set("axes", axes);
    const Tensor y = run_kernel_once("MeanVarianceNormalization", 13, attrs, {x})[0];
    ASSERT_EQ(y.shape(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      // The group of element i: same index on the kept axes.
      const int64_t n = i / 60, c = (i / 20) % 3, h = (i / 5) % 4;
      double s = 0, s2 = 0, cnt = 0;
      for (int64_t j = 0; j < x.numel(); ++j) {
        const bool same = axes.size() == 3 ? (j / 20) % 3 == c : (j / 5) == n * 12 + c * 4 + h;
        if (!same) continue;
        s += p[j];
        s2 += static_cast<double>(p[j]) * p[j];
        ++cnt;
      }
      const double mean = s / cnt, sd = std::sqrt(s2 / cnt - mean * mean);
      EXPECT_NEAR(y.data<float>()[i], (p[i] - mean) / (sd + 1e-9), 1e-4);
    }
  }
  try {
    run_kernel_once("MeanVarianceNormalization", 13, Attributes{{"axes", std::vector<int64_t>{4}}}, {x});
    FAIL() << "axis 4 of a rank-4 input was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("axis 4 is out of range for a rank-4 tensor"));
  }
}

// ---------------------------------------------------------------- windows

TEST(Windows, MatchCosineSumsPeriodicAndSymmetric) {
  const double pi = std::numbers::pi;
  struct W {
    const char* op;
    double a0, a1, a2;
  };
  for (const W& w : {W{"HannWindow", 0.5, 0.5, 0}, W{"HammingWindow", 25.0 / 46, 21.0 / 46, 0},
                     W{"BlackmanWindow", 0.42, 0.5, 0.08}})
    for (int periodic : {0, 1}) {
      const Tensor y = run_kernel_once(w.op, 17,
                                       Attributes{{"periodic", int64_t{periodic}}, {"output_datatype", int64_t{11}}},
                                       {Tensor::scalar<int64_t>(10)})[0];
      ASSERT_EQ(y.dtype(), DataType::kFloat64);
      ASSERT_EQ(y.shape(), Shape{10});
      const double N = periodic ? 10 : 9;
      for (int i = 0; i < 10; ++i)
        EXPECT_NEAR(y.data<double>()[i], w.a0 - w.a1 * std::cos(2 * pi * i / N) + w.a2 * std::cos(4 * pi * i / N),
                    1e-12)
            << w.op;
    }
  try {
    run_kernel_once("HannWindow", 17, Attributes{{"output_datatype", int64_t{6}}}, {Tensor::scalar<int64_t>(4)});
    FAIL() << "an int32 window was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
    EXPECT_THAT(e.what(), HasSubstr("output_datatype 6 is not supported"));
  }
}

// ---------------------------------------------------------------- DFT, STFT

// Complex [1, n, 2] signal from re/im values.
Tensor complex_signal(const std::vector<float>& re, const std::vector<float>& im) {
  std::vector<float> v;
  for (size_t i = 0; i < re.size(); ++i) v.insert(v.end(), {re[i], im[i]});
  return Tensor::from_vector<float>({1, static_cast<int64_t>(re.size()), 2}, v);
}

TEST(Dft, ACosineHasTwoPeaksOfHalfTheLength) {
  const int64_t n = 12, k0 = 3;
  std::vector<float> x(n);
  for (int64_t j = 0; j < n; ++j) x[static_cast<size_t>(j)] = static_cast<float>(std::cos(2 * std::numbers::pi * k0 * j / n));
  const auto y = run_kernel_once("DFT", 17, {}, {Tensor::from_vector<float>({1, n, 1}, x)})[0].to_vector<float>();
  for (int64_t k = 0; k < n; ++k) {
    const float want = (k == k0 || k == n - k0) ? n / 2.0f : 0.0f;
    EXPECT_NEAR(y[static_cast<size_t>(2 * k)], want, 1e-4f) << "bin " << k;
    EXPECT_NEAR(y[static_cast<size_t>(2 * k + 1)], 0.0f, 1e-4f) << "bin " << k;
  }
}

TEST(Dft, InverseUndoesForwardWithPaddingAndOnesidedIsThePrefix) {
  const std::vector<float> re = {1, -2, 0.5f, 3, 0, 1.5f, -1}, im = {0, 1, -1, 2, 0.5f, 0, 1};
  const Tensor x = complex_signal(re, im);
  Attributes inverse;
  inverse.set("inverse", int64_t{1});
  const Tensor len = Tensor::scalar<int64_t>(10);  // zero-padded to 10 samples
  const auto fwd = run_kernel_once("DFT", 17, {}, {x, len})[0];
  ASSERT_EQ(fwd.shape(), (Shape{1, 10, 2}));
  const auto back = run_kernel_once("DFT", 17, inverse, {fwd})[0].to_vector<float>();
  for (size_t j = 0; j < 10; ++j) {
    EXPECT_NEAR(back[2 * j], j < re.size() ? re[j] : 0.0f, 1e-5f) << j;
    EXPECT_NEAR(back[2 * j + 1], j < im.size() ? im[j] : 0.0f, 1e-5f) << j;
  }
  // Onesided on a real signal: the first n/2 + 1 bins of the full transform.
  const Tensor real = Tensor::from_vector<float>({1, 7, 1}, re);
  Attributes onesided;
  onesided.set("onesided", int64_t{1});
  const auto half = run_kernel_once("DFT", 17, onesided, {real})[0];
  const auto full = run_kernel_once("DFT", 17, {}, {real})[0].to_vector<float>();
  ASSERT_EQ(half.shape(), (Shape{1, 4, 2}));
  const auto h = half.to_vector<float>();
  EXPECT_EQ(h, std::vector<float>(full.begin(), full.begin() + 8));
}

TEST(Stft, EachFrameIsTheDftOfTheWindowedFrame) {
  std::vector<float> sig(20);
  for (size_t i = 0; i < sig.size(); ++i) sig[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)) + 0.1 * static_cast<double>(i));
  const std::vector<float> window = {0.1f, 0.5f, 1.0f, 0.5f, 0.2f, 0.9f};
  const auto y = run_kernel_once("STFT", 17, {},
                                 {Tensor::from_vector<float>({1, 20, 1}, sig), Tensor::scalar<int64_t>(4),
                                  Tensor::from_vector<float>({6}, window)})[0];
  ASSERT_EQ(y.shape(), (Shape{1, 4, 4, 2}));  // (20 - 6) / 4 + 1 frames, 6 / 2 + 1 bins
  const auto yv = y.to_vector<float>();
  Attributes onesided;
  onesided.set("onesided", int64_t{1});
  for (int64_t f = 0; f < 4; ++f) {
    std::vector<float> frame(6);
    for (size_t j = 0; j < 6; ++j) frame[j] = sig[static_cast<size_t>(f * 4) + j] * window[j];
    const auto want = run_kernel_once("DFT", 17, onesided, {Tensor::from_vector<float>({1, 6, 1}, frame)})[0].to_vector<float>();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(yv[static_cast<size_t>(f) * 8 + i], want[i], 1e-5f) << f;
  }
}

// Det, MeanVarianceNormalization, DFT and STFT split their matrices, lanes,
// signals and frames into blocks sized by ops_cost; the shapes below give
// several blocks each, and a 3-thread pool must give the serial bits.
TEST(LinalgThreads, PerItemLoopsGiveTheSameBitsOnAPool) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  Attributes mvn_axes;
  mvn_axes.set("axes", std::vector<int64_t>{-1});
  Attributes onesided;
  onesided.set("onesided", int64_t{1});
  struct Case {
    const char* op;
    Attributes attrs;
    std::vector<Tensor> inputs;
    Shape out;
  };
  const std::vector<Case> cases = {
      {"Det", {}, {random_tensor<float>({2000, 8, 8}, 21)}, {2000}},
      {"MeanVarianceNormalization", mvn_axes, {random_tensor<float>({8, 1000, 16}, 22)}, {8, 1000, 16}},
      {"DFT", {}, {random_tensor<float>({600, 16, 1}, 23)}, {600, 16, 2}},
      {"STFT", onesided, {random_tensor<float>({2, 2400, 1}, 24), Tensor::scalar<int64_t>(8),
                           Tensor(), Tensor::scalar<int64_t>(16)}, {2, 299, 9, 2}},
  };
  for (const Case& c : cases) {
    const Tensor serial = run_kernel_once(c.op, 17, c.attrs, c.inputs)[0];
    const Tensor threaded = run_kernel_once(c.op, 17, c.attrs, c.inputs, 1, pool.get())[0];
    ASSERT_EQ(serial.shape(), c.out) << c.op;
    ASSERT_EQ(threaded.shape(), c.out) << c.op;
    EXPECT_EQ(std::memcmp(serial.raw_data(), threaded.raw_data(), serial.nbytes()), 0) << c.op;
  }
}

TEST(SignalBadInput, ErrorsNameTheInputAndWhatWasExpected) {
  const Tensor x = Tensor::from_vector<float>({1, 4, 3}, std::vector<float>(12, 1.0f));
  testing::expect_error("DFT", 17, {}, {x}, {"DFT", "[batch, ..., 1] (real) or [batch, ..., 2] (complex)"});
  const Tensor real = Tensor::from_vector<float>({1, 4, 1}, {1, 2, 3, 4});
  testing::expect_error("DFT", 17, Attributes{{"axis", int64_t{2}}}, {real}, {"attribute axis 2", "expected 1..1"});
  testing::expect_error("DFT", 17, {}, {real, Tensor::scalar<int64_t>(0)}, {"dft_length is 0", "> 0"});
  testing::expect_error("STFT", 17, {}, {real, Tensor::scalar<int64_t>(1), Tensor(), Tensor::scalar<int64_t>(9)},
                        {"frame length 9", "expected 1..4"});
  testing::expect_error("MelWeightMatrix", 17, {},
                        {Tensor::scalar<int32_t>(8), Tensor::scalar<int32_t>(16), Tensor::scalar<int32_t>(8192),
                         Tensor::scalar<float>(0.0f), Tensor::scalar<float>(20000.0f)},
                        {"mel band", "upper_edge_hertz 20000"});
}

// ---------------------------------------------------------------- ONNX node tests

class LinalgNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LinalgNodeTest, MatchesOnnxReference) { EXPECT_TRUE(testing::run_onnx_node_test(GetParam())); }

INSTANTIATE_TEST_SUITE_P(LinalgOnnx, LinalgNodeTest,
                         ::testing::Values("test_einsum_batch_diagonal", "test_einsum_batch_matmul",
                                           "test_einsum_inner_prod", "test_einsum_sum", "test_einsum_transpose",
                                           "test_det_2d", "test_det_nd", "test_mvn", "test_hannwindow",
                                           "test_hammingwindow_symmetric", "test_blackmanwindow", "test_dft",
                                           "test_dft_axis", "test_dft_inverse", "test_stft", "test_stft_with_window",
                                           "test_melweightmatrix"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// NaN inputs (or 0 / 0 with a zero scale) quantize to 0 instead of an
// undefined float-to-integer conversion (a fuzzed model found it under
// UBSan); the other values still round half to even and saturate.
TEST(QuantizeLinear, NanQuantizesToZeroOthersRoundAndSaturate) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from_vector<float>({6}, {nan, -nan, 2.5f, 1000.0f, -inf, inf});
  const Tensor u = run_kernel_once("QuantizeLinear", 13, {},
                                   {x, Tensor::scalar<float>(1.0f), Tensor::scalar<uint8_t>(uint8_t{0})})[0];
  EXPECT_EQ(u.to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 2, 255, 0, 255}));
  const Tensor s = run_kernel_once("QuantizeLinear", 13, {},
                                   {x, Tensor::scalar<float>(1.0f), Tensor::scalar<int8_t>(int8_t{0})})[0];
  EXPECT_EQ(s.to_vector<int8_t>(), (std::vector<int8_t>{0, 0, 2, 127, -128, 127}));
  const Tensor zero_scale = run_kernel_once("QuantizeLinear", 13, {},
                                            {Tensor::from_vector<float>({2}, {0.0f, 1.0f}), Tensor::scalar<float>(0.0f),
                                             Tensor::scalar<uint8_t>(uint8_t{3})})[0];
  EXPECT_EQ(zero_scale.to_vector<uint8_t>(), (std::vector<uint8_t>{0, 255}));
}

}  // namespace
}  // namespace spindle
