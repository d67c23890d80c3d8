// rnn_test.cpp — RNN, GRU and LSTM beyond the ONNX node tests (which cover
// forward direction, layout 1, bias and peepholes): reverse and
// bidirectional runs, sequence_lens, thread-count independence, bad input.
// The properties are checked between runs of the kernel itself: reverse
// equals forward over the time-reversed input, each half of a bidirectional
// run equals the one-direction run, a sequence cut short equals running it
// alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {


struct CellCase {
  const char* op;
  int gates;
  int64_t linear_before_reset;
};
const CellCase kCells[] = {{"RNN", 1, 0}, {"GRU", 3, 0}, {"GRU", 3, 1}, {"LSTM", 4, 0}};
void PrintTo(const CellCase& c, std::ostream* os) {
  *os << c.op << (c.linear_before_reset ? " linear_before_reset" : "");
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-0.8f, 0.8f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

constexpr int64_t T = 5, B = 3, I = 4, H = 6;

struct Weights {
  Tensor w, r, b;
};
Weights weights(const CellCase& c, int64_t dirs, uint32_t seed, int64_t in = I, int64_t hidden = H) {
  const int64_t gh = c.gates * hidden;
  return {Tensor::from_vector<float>({dirs, gh, in}, random_values(static_cast<size_t>(dirs * gh * in), seed)),
          Tensor::from_vector<float>({dirs, gh, hidden}, random_values(static_cast<size_t>(dirs * gh * hidden), seed + 1)),
          Tensor::from_vector<float>({dirs, 2 * gh}, random_values(static_cast<size_t>(dirs * 2 * gh), seed + 2))};
}

Attributes attrs_for(const CellCase& c, const std::string& direction) {
  Attributes a;
  a.set("hidden_size", int64_t{H});
  a.set("direction", direction);
  if (std::string(c.op) == "GRU") a.set("linear_before_reset", c.linear_before_reset);
  return a;
}

// Y and Y_h of one run; `lens` empty = full length.
std::vector<Tensor> run(const CellCase& c, const std::string& direction, const Tensor& x, const Weights& wt,
                        const std::vector<int32_t>& lens = {}, ThreadPool* pool = nullptr) {
  std::vector<Tensor> in = {x, wt.w, wt.r, wt.b};
  if (!lens.empty()) in.push_back(Tensor::from_vector<int32_t>({static_cast<int64_t>(lens.size())}, lens));
  return kernels::run_kernel_once(c.op, 14, attrs_for(c, direction), in, 2, pool);
}

// x[t, b, :] for t reversed.
Tensor reverse_time(const Tensor& x) {
  const auto v = x.to_vector<float>();
  const int64_t t_n = x.dim(0), row = x.numel() / t_n;
  std::vector<float> out(v.size());
  for (int64_t t = 0; t < t_n; ++t)
    std::copy(v.begin() + t * row, v.begin() + (t + 1) * row, out.begin() + (t_n - 1 - t) * row);
  return Tensor::from_vector<float>(x.shape(), out);
}

// One direction's slice of stacked weights.
Weights direction_of(const Weights& wt, int64_t d) {
  auto slice = [d](const Tensor& t) {
    const auto v = t.to_vector<float>();
    const int64_t n = t.numel() / t.dim(0);
    Shape s = t.shape();
    s[0] = 1;
    return Tensor::from_vector<float>(s, std::vector<float>(v.begin() + d * n, v.begin() + (d + 1) * n));
  };
  return {slice(wt.w), slice(wt.r), slice(wt.b)};
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f) << what << " at " << i;
}

class RnnCell : public ::testing::TestWithParam<CellCase> {};

TEST_P(RnnCell, ReverseEqualsForwardOverTheReversedSequence) {
  const CellCase& c = GetParam();
  const Tensor x = Tensor::from_vector<float>({T, B, I}, random_values(T * B * I, 7));
  const Weights wt = weights(c, 1, 11);
  const auto rev = run(c, "reverse", x, wt);
  const auto fwd = run(c, "forward", reverse_time(x), wt);
  expect_near(rev[0].to_vector<float>(), reverse_time(fwd[0]).to_vector<float>(), "Y");
  expect_near(rev[1].to_vector<float>(), fwd[1].to_vector<float>(), "Y_h");
}

TEST_P(RnnCell, BidirectionalIsForwardAndReverseSideBySide) {
  const CellCase& c = GetParam();
  const Tensor x = Tensor::from_vector<float>({T, B, I}, random_values(T * B * I, 8));
  const Weights wt = weights(c, 2, 21);
  const auto both = run(c, "bidirectional", x, wt);
  ASSERT_EQ(both[0].shape(), (Shape{T, 2, B, H}));
  ASSERT_EQ(both[1].shape(), (Shape{2, B, H}));
  const auto y = both[0].to_vector<float>(), yh = both[1].to_vector<float>();
  for (int64_t d = 0; d < 2; ++d) {
    const auto one = run(c, d == 0 ? "forward" : "reverse", x, direction_of(wt, d));
    const auto y1 = one[0].to_vector<float>(), yh1 = one[1].to_vector<float>();
    std::vector<float> mine;
    for (int64_t t = 0; t < T; ++t)
      mine.insert(mine.end(), y.begin() + (t * 2 + d) * B * H, y.begin() + (t * 2 + d + 1) * B * H);
    expect_near(mine, y1, std::string("Y of direction ") + std::to_string(d));
    expect_near(std::vector<float>(yh.begin() + d * B * H, yh.begin() + (d + 1) * B * H), yh1,
                std::string("Y_h of direction ") + std::to_string(d));
  }
}

TEST_P(RnnCell, ASequenceCutShortEqualsRunningItAlone) {
  const CellCase& c = GetParam();
  const Tensor x = Tensor::from_vector<float>({T, B, I}, random_values(T * B * I, 9));
  const Weights wt = weights(c, 1, 31);
  const std::vector<int32_t> lens = {5, 2, 0};
  for (const char* dir : {"forward", "reverse"}) {
    const auto all = run(c, dir, x, wt, lens);
    const auto y = all[0].to_vector<float>(), yh = all[1].to_vector<float>();
    // Entry 1 alone, over its first 2 steps.
    const auto xv = x.to_vector<float>();
    std::vector<float> x1;
    for (int64_t t = 0; t < 2; ++t) x1.insert(x1.end(), xv.begin() + (t * B + 1) * I, xv.begin() + (t * B + 2) * I);
    const auto alone = run(c, dir, Tensor::from_vector<float>({2, 1, I}, x1), wt);
    const auto ya = alone[0].to_vector<float>();
    for (int64_t t = 0; t < T; ++t)
      for (int64_t k = 0; k < H; ++k) {
        const float got = y[static_cast<size_t>((t * B + 1) * H + k)];
        if (t < 2) {
          EXPECT_NEAR(got, ya[static_cast<size_t>(t * H + k)], 1e-5f) << dir << " t " << t;
        } else {
          EXPECT_EQ(got, 0.0f) << dir << ": Y past the sequence's end must be 0 (t " << t << ")";
        }
        EXPECT_EQ(y[static_cast<size_t>((t * B + 2) * H + k)], 0.0f) << dir << ": an empty sequence has Y 0";
      }
    expect_near(std::vector<float>(yh.begin() + H, yh.begin() + 2 * H), alone[1].to_vector<float>(),
                std::string(dir) + " Y_h of the short sequence");
    for (int64_t k = 0; k < H; ++k) EXPECT_EQ(yh[static_cast<size_t>(2 * H + k)], 0.0f) << "initial state of an empty sequence";
  }
}

// Batches of up to 4 multiply by R with the packed matrix-vector product,
// larger ones with a GEMM; hidden size 37 has vector lanes and a tail. Each entry of a
// batch of 6 must equal that entry run alone, in both directions.
TEST_P(RnnCell, ABatchOnTheGemmPathEqualsEachEntryOnTheDotProductPath) {
  const CellCase& c = GetParam();
  constexpr int64_t kT = 4, kB = 6, kI = 9, kH = 37;
  const Tensor x = Tensor::from_vector<float>({kT, kB, kI}, random_values(kT * kB * kI, 12));
  const Weights wt = weights(c, 2, 51, kI, kH);
  Attributes a = attrs_for(c, "bidirectional");
  a.set("hidden_size", kH);
  const auto all = kernels::run_kernel_once(c.op, 14, a, {x, wt.w, wt.r, wt.b}, 2);
  const auto y = all[0].to_vector<float>();
  const auto xv = x.to_vector<float>();
  for (int64_t b = 0; b < kB; ++b) {
    std::vector<float> xb;
    for (int64_t t = 0; t < kT; ++t) xb.insert(xb.end(), xv.begin() + (t * kB + b) * kI, xv.begin() + (t * kB + b + 1) * kI);
    const auto alone = kernels::run_kernel_once(c.op, 14, a, {Tensor::from_vector<float>({kT, 1, kI}, xb), wt.w, wt.r, wt.b}, 2);
    const auto ya = alone[0].to_vector<float>();  // [T, 2, 1, H]
    for (int64_t t = 0; t < kT; ++t)
      for (int64_t d = 0; d < 2; ++d)
        for (int64_t k = 0; k < kH; ++k)
          ASSERT_NEAR(y[static_cast<size_t>(((t * 2 + d) * kB + b) * kH + k)], ya[static_cast<size_t>((t * 2 + d) * kH + k)],
                      1e-5f)
              << "entry " << b << " t " << t << " direction " << d << " k " << k;
  }
}

TEST_P(RnnCell, ResultsDoNotDependOnTheThreadCount) {
  const CellCase& c = GetParam();
  const Tensor x = Tensor::from_vector<float>({T, B, I}, random_values(T * B * I, 10));
  const Weights wt = weights(c, 2, 41);
  const auto base = run(c, "bidirectional", x, wt);
  for (int threads : {2, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    const auto got = run(c, "bidirectional", x, wt, {}, pool.get());
    EXPECT_EQ(got[0].to_vector<float>(), base[0].to_vector<float>()) << threads << " threads";
    EXPECT_EQ(got[1].to_vector<float>(), base[1].to_vector<float>()) << threads << " threads";
  }
}

// A constant R is packed transposed when the kernel is created (blocks of
// 64 and 8 outputs and a tail: hidden size 37); the result equals the one
// from R read at run time up to summation order, and does not depend on the
// thread count.
TEST_P(RnnCell, APackedConstantREqualsRReadAtRunTime) {
  const CellCase& c = GetParam();
  constexpr int64_t kT = 6, kB = 2, kI = 5, kH = 37;
  const Tensor x = Tensor::from_vector<float>({kT, kB, kI}, random_values(kT * kB * kI, 71));
  const Weights wt = weights(c, 2, 72, kI, kH);
  kernels::NodeInfo node;
  node.op_type = c.op;
  node.opset = 14;
  node.attrs = attrs_for(c, "bidirectional");
  node.attrs.set("hidden_size", kH);
  node.num_inputs = 4;
  node.num_outputs = 2;
  const auto at_run_time = kernels::run_kernel_once(node, {x, wt.w, wt.r, wt.b});
  node.const_inputs = {nullptr, &wt.w, &wt.r, &wt.b};
  const auto packed = kernels::run_kernel_once(node, {x, wt.w, wt.r, wt.b});
  for (int o = 0; o < 2; ++o) {
    const auto want = at_run_time[static_cast<size_t>(o)].to_vector<float>();
    const auto got = packed[static_cast<size_t>(o)].to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f) << "output " << o << " element " << i;
  }
  for (int threads : {2, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    const auto got = kernels::run_kernel_once(node, {x, wt.w, wt.r, wt.b}, pool.get());
    EXPECT_EQ(got[0].to_vector<float>(), packed[0].to_vector<float>()) << threads << " threads";
    EXPECT_EQ(got[1].to_vector<float>(), packed[1].to_vector<float>()) << threads << " threads";
  }
}

// Everything a run can be given at once: layout 1, sequence lengths (one
// full, one cut short, one of a single step), initial states, peepholes,
// clip and, in a second pass, non-default activations; hidden size 200, so
// a step's recurrent product (R of 800 x 200 for LSTM) is split in row
// blocks across the pool, and 300 inputs, so the input projection is split
// in column blocks. The outputs must be the same bits with 1, 2 or 3
// threads, with W and R pre-packed at kernel creation or packed per call, and
// equal to the layout-0 run over the transposed inputs.
TEST_P(RnnCell, EveryInputAndAttributeGivesTheSameBitsForAnyThreadCountPackingAndLayout) {
  const CellCase& c = GetParam();
  const bool lstm = std::string(c.op) == "LSTM";
  // kI = 300: the input projection (18 rows x G*200 x 300) is split in
  // blocks of gate columns across the pool too.
  constexpr int64_t kT = 6, kB = 3, kI = 300, kH = 200, kD = 2;
  const int64_t gh = c.gates * kH;
  const int outputs = lstm ? 3 : 2;
  const Tensor x1 = Tensor::from_vector<float>({kB, kT, kI}, random_values(kB * kT * kI, 61));  // layout 1
  const Tensor w = Tensor::from_vector<float>({kD, gh, kI}, random_values(static_cast<size_t>(kD * gh * kI), 62));
  // Small recurrent weights keep the 200-term sums out of saturation.
  auto rv = random_values(static_cast<size_t>(kD * gh * kH), 63);
  for (float& v : rv) v *= 0.1f;
  const Tensor r = Tensor::from_vector<float>({kD, gh, kH}, rv);
  const Tensor bias = Tensor::from_vector<float>({kD, 2 * gh}, random_values(static_cast<size_t>(kD * 2 * gh), 64));
  const Tensor lens = Tensor::from_vector<int32_t>({kB}, {6, 3, 1});
  const Tensor h1 = Tensor::from_vector<float>({kB, kD, kH}, random_values(kB * kD * kH, 65));  // layout 1
  const Tensor c1 = Tensor::from_vector<float>({kB, kD, kH}, random_values(kB * kD * kH, 66));
  const Tensor peep = Tensor::from_vector<float>({kD, 3 * kH}, random_values(kD * 3 * kH, 67));
  // [A, B, ...rest] -> [B, A, ...rest]
  auto swap01 = [](const Tensor& t) {
    const auto v = t.to_vector<float>();
    const int64_t a = t.dim(0), b = t.dim(1), rest = t.numel() / (a * b);
    std::vector<float> out(v.size());
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < b; ++j)
        std::copy(v.begin() + (i * b + j) * rest, v.begin() + (i * b + j + 1) * rest, out.begin() + (j * a + i) * rest);
    Shape s = t.shape();
    std::swap(s[0], s[1]);
    return Tensor::from_vector<float>(s, out);
  };
  const std::vector<std::vector<std::string>> act_sets = {
      {},
      std::string(c.op) == "RNN"   ? std::vector<std::string>{"Softsign", "HardSigmoid"}
      : std::string(c.op) == "GRU" ? std::vector<std::string>{"HardSigmoid", "Softsign", "Sigmoid", "Relu"}
                                   : std::vector<std::string>{"HardSigmoid", "Tanh", "Softsign", "Sigmoid", "Elu", "Tanh"}};
  for (const auto& acts : act_sets) {
    const std::string what = acts.empty() ? "default activations" : "other activations";
    Attributes a = attrs_for(c, "bidirectional");
    a.set("hidden_size", kH);
    a.set("clip", 2.5f);
    if (!acts.empty()) a.set("activations", acts);
    auto run_with = [&](int64_t layout, ThreadPool* pool, bool prepacked) {
      std::vector<Tensor> in = {layout == 1 ? x1 : swap01(x1), w, r, bias, lens, layout == 1 ? h1 : swap01(h1)};
      if (lstm) {
        in.push_back(layout == 1 ? c1 : swap01(c1));
        in.push_back(peep);
      }
      kernels::NodeInfo node;
      node.op_type = c.op;
      node.opset = 14;
      node.attrs = a;
      node.attrs.set("layout", layout);
      node.num_inputs = static_cast<int>(in.size());
      node.num_outputs = outputs;
      if (prepacked) node.const_inputs = {nullptr, &in[1], &in[2], &in[3]};
      return kernels::run_kernel_once(node, in, pool);
    };
    const auto base = run_with(1, nullptr, false);
    ASSERT_EQ(base[0].shape(), (Shape{kB, kT, kD, kH}));
    auto expect_same = [&](const std::vector<Tensor>& got, const std::string& how) {
      for (int o = 0; o < outputs; ++o)
        EXPECT_EQ(got[static_cast<size_t>(o)].to_vector<float>(), base[static_cast<size_t>(o)].to_vector<float>())
            << what << ", " << how << ", output " << o;
    };
    // Y of entry 2 (one step) past its end is 0; its final state is not the initial one.
    const auto y = base[0].to_vector<float>();
    EXPECT_EQ(y[static_cast<size_t>(((2 * kT + 1) * kD) * kH)], 0.0f) << what;
    EXPECT_NE(base[1].to_vector<float>()[static_cast<size_t>(2 * kD * kH)], h1.to_vector<float>()[2 * kD * kH]) << what;
    expect_same(run_with(1, nullptr, true), "W and R pre-packed");
    for (int threads : {2, 3}) {
      auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
      expect_same(run_with(1, pool.get(), false), std::to_string(threads) + " threads");
      expect_same(run_with(1, pool.get(), true), std::to_string(threads) + " threads, pre-packed");
    }
    // The same three entries in a batch of 5, which takes the GEMM path
    // (no row blocks): the values agree within rounding.
    {
      auto grow = [](const Tensor& t, uint32_t seed) {  // two more entries along dim 0
        auto v = t.to_vector<float>();
        const auto more = random_values(static_cast<size_t>(2 * t.numel() / t.dim(0)), seed);
        v.insert(v.end(), more.begin(), more.end());
        Shape s = t.shape();
        s[0] += 2;
        return Tensor::from_vector<float>(s, v);
      };
      std::vector<Tensor> in = {grow(x1, 71), w, r, bias, Tensor::from_vector<int32_t>({kB + 2}, {6, 3, 1, 6, 2}),
                                grow(h1, 72)};
      if (lstm) {
        in.push_back(grow(c1, 73));
        in.push_back(peep);
      }
      Attributes a1 = a;
      a1.set("layout", int64_t{1});
      const auto wide = kernels::run_kernel_once(c.op, 14, a1, in, outputs);
      for (int o = 0; o < outputs; ++o) {
        const auto got = wide[static_cast<size_t>(o)].to_vector<float>(), want = base[static_cast<size_t>(o)].to_vector<float>();
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 1e-4f) << what << ": batch of 5 vs 3, output " << o << " at " << i;
      }
    }
    // Layout 0 over the transposed inputs: Y [T, D, B, H], states [D, B, H].
    const auto l0 = run_with(0, nullptr, false);
    const auto y0 = l0[0].to_vector<float>();
    for (int64_t t = 0; t < kT; ++t)
      for (int64_t d = 0; d < kD; ++d)
        for (int64_t b = 0; b < kB; ++b)
          for (int64_t k = 0; k < kH; ++k)
            ASSERT_EQ(y0[static_cast<size_t>(((t * kD + d) * kB + b) * kH + k)],
                      y[static_cast<size_t>(((b * kT + t) * kD + d) * kH + k)])
                << what << ": layout 0 vs 1 at t " << t << " d " << d << " b " << b << " k " << k;
    for (int o = 1; o < outputs; ++o)
      EXPECT_EQ(swap01(l0[static_cast<size_t>(o)]).to_vector<float>(), base[static_cast<size_t>(o)].to_vector<float>())
          << what << ": layout 0 vs 1, output " << o;
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, RnnCell, ::testing::ValuesIn(kCells),
                         [](const ::testing::TestParamInfo<CellCase>& info) {
                           return std::string(info.param.op) + (info.param.linear_before_reset ? "_lbr" : "");
                         });

// Every cell takes a fused step with its default activations (GRU with and
// without linear_before_reset); listing Tanh as ScaledTanh(1, 1) sends the
// same cell down the general path (gate vectors, std::tanh). Both must
// agree, with peepholes, input_forget, clip, initial states and sequence
// lengths.
TEST(RnnFusedStep, EqualsTheGeneralPath) {
  // H: a chunk of 64 units and a tail; for LSTM 2 x 32 units, 16, 8, then 6 alone
  constexpr int64_t kT = 7, kB = 2, kI = 5, kH = 94;
  for (const std::string op : {"LSTM", "GRU", "GRU0", "RNN"}) {
    const std::string name = op == "GRU0" ? "GRU" : op;
    const int64_t g = op == "LSTM" ? 4 : op == "RNN" ? 1 : 3, gh = g * kH;
    for (int64_t variant = 0; variant < 2; ++variant) {
      std::vector<Tensor> in = {
          Tensor::from_vector<float>({kT, kB, kI}, random_values(kT * kB * kI, 81)),
          Tensor::from_vector<float>({2, gh, kI}, random_values(static_cast<size_t>(2 * gh * kI), 82)),
          Tensor::from_vector<float>({2, gh, kH}, random_values(static_cast<size_t>(2 * gh * kH), 83)),
          Tensor::from_vector<float>({2, 2 * gh}, random_values(static_cast<size_t>(4 * gh), 84)),
          Tensor::from_vector<int32_t>({kB}, {7, 4}),
          Tensor::from_vector<float>({2, kB, kH}, random_values(2 * kB * kH, 85))};
      if (op == "LSTM") {
        in.push_back(Tensor::from_vector<float>({2, kB, kH}, random_values(2 * kB * kH, 86)));
        in.push_back(Tensor::from_vector<float>({2, 3 * kH}, random_values(6 * kH, 87)));
      }
      Attributes a;
      a.set("hidden_size", kH);
      a.set("direction", std::string("bidirectional"));
      if (variant == 1) a.set("clip", 1.5f);
      if (op == "LSTM") a.set("input_forget", variant);
      else if (op != "RNN") a.set("linear_before_reset", int64_t{op == "GRU" ? 1 : 0});
      Attributes general = a;
      general.set("activations", op == "LSTM"  ? std::vector<std::string>{"Sigmoid", "ScaledTanh", "ScaledTanh",
                                                                          "Sigmoid", "ScaledTanh", "ScaledTanh"}
                                 : op == "RNN" ? std::vector<std::string>{"ScaledTanh", "ScaledTanh"}
                                               : std::vector<std::string>{"Sigmoid", "ScaledTanh", "Sigmoid", "ScaledTanh"});
      general.set("activation_alpha", std::vector<float>(4, 1.0f));
      general.set("activation_beta", std::vector<float>(4, 1.0f));
      const int outputs = op == "LSTM" ? 3 : 2;
      const auto fused = kernels::run_kernel_once(name, 14, a, in, outputs);
      const auto slow = kernels::run_kernel_once(name, 14, general, in, outputs);
      for (int o = 0; o < outputs; ++o)
        expect_near(fused[static_cast<size_t>(o)].to_vector<float>(), slow[static_cast<size_t>(o)].to_vector<float>(),
                    op + " variant " + std::to_string(variant) + " output " + std::to_string(o));
    }
  }
}

// Hidden size 256 at batch 1: R has 1024 rows, two row blocks of the
// matrix-vector step, and odd steps stream the panels (and, on one thread,
// the blocks) last to first. The result is checked against a plain LSTM in
// double precision over 6 steps (a wrong panel offset on a backward step
// would be far off), and is the same bits at 1, 2 and 3 threads.
TEST(RnnLargeRecurrence, BackwardStepsGiveTheSameValuesAsAPlainLstm) {
  constexpr int64_t kT = 6, kI = 8, kH = 256, kG = 4 * kH;
  auto scaled = [](size_t n, uint32_t seed, float scale) {
    std::vector<float> v = random_values(n, seed);
    for (float& e : v) e *= scale;
    return v;
  };
  const auto xv = random_values(kT * kI, 91);
  const auto wv = scaled(kG * kI, 92, 0.25f), rv = scaled(kG * kH, 93, 0.06f), bv = scaled(2 * kG, 94, 0.5f);
  const std::vector<Tensor> in = {Tensor::from_vector<float>({kT, 1, kI}, xv),
                                  Tensor::from_vector<float>({1, kG, kI}, wv),
                                  Tensor::from_vector<float>({1, kG, kH}, rv),
                                  Tensor::from_vector<float>({1, 2 * kG}, bv)};
  Attributes a;
  a.set("hidden_size", kH);
  const auto one = kernels::run_kernel_once("LSTM", 14, a, in, 2);
  // Reference: gates in ONNX order i, o, f, c.
  std::vector<double> h(kH, 0.0), c(kH, 0.0), y;
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t t = 0; t < kT; ++t) {
    std::vector<double> g(kG);
    for (int64_t j = 0; j < kG; ++j) {
      double v = bv[static_cast<size_t>(j)] + bv[static_cast<size_t>(kG + j)];
      for (int64_t k = 0; k < kI; ++k) v += double{wv[static_cast<size_t>(j * kI + k)]} * xv[static_cast<size_t>(t * kI + k)];
      for (int64_t k = 0; k < kH; ++k) v += double{rv[static_cast<size_t>(j * kH + k)]} * h[static_cast<size_t>(k)];
      g[static_cast<size_t>(j)] = v;
    }
    for (int64_t k = 0; k < kH; ++k) {
      const auto u = static_cast<size_t>(k);
      const double ig = sig(g[u]), og = sig(g[kH + u]), fg = sig(g[2 * kH + u]), cg = std::tanh(g[3 * kH + u]);
      c[u] = fg * c[u] + ig * cg;
      h[u] = og * std::tanh(c[u]);
      y.push_back(h[u]);
    }
  }
  const auto got = one[0].to_vector<float>();
  ASSERT_EQ(got.size(), y.size());
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(got[i], y[i], 2e-5) << "step " << i / kH << " unit " << i % kH;
  for (int threads : {2, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    const auto more = kernels::run_kernel_once("LSTM", 14, a, in, 2, pool.get());
    EXPECT_EQ(more[0].to_vector<float>(), got) << threads << " threads";
  }
}

TEST(RnnBadInput, ErrorsNameTheInputAndWhatWasExpected) {
  const CellCase lstm = kCells[3];
  const Tensor x = Tensor::from_vector<float>({T, B, I}, random_values(T * B * I, 1));
  const Weights wt = weights(lstm, 1, 2);
  Attributes no_hidden;
  testing::expect_error("LSTM", 14, no_hidden, {x, wt.w, wt.r}, {"LSTM", "hidden_size", "positive"}, 2);
  Attributes bad_dir = attrs_for(lstm, "sideways");
  testing::expect_error("LSTM", 14, bad_dir, {x, wt.w, wt.r}, {"direction", "sideways", "bidirectional"}, 2);
  testing::expect_error("LSTM", 14, attrs_for(lstm, "forward"), {x, wt.r, wt.r},
                        {"input W", "1x24x6", "expected 1x24x4"}, 2);
  testing::expect_error("LSTM", 14, attrs_for(lstm, "forward"),
                        {x, wt.w, wt.r, wt.b, Tensor::from_vector<int32_t>({B}, {5, 6, 1})},
                        {"sequence_lens[1] is 6", "0..5"}, 2);
  Attributes acts = attrs_for(lstm, "forward");
  acts.set("activations", std::vector<std::string>{"Sigmoid", "Tanh"});
  testing::expect_error("LSTM", 14, acts, {x, wt.w, wt.r}, {"activations has 2 entries", "expected 3"}, 2);
  acts.set("activations", std::vector<std::string>{"Sigmoid", "Tanh", "Swish"});
  testing::expect_error("LSTM", 14, acts, {x, wt.w, wt.r}, {"activation 'Swish' is not supported"}, 2);
}

// ---------------------------------------------------------------- DynamicQuantizeLSTM
// com.microsoft DynamicQuantizeLSTM, ONNX Runtime's quantize_dynamic LSTM
// (tests/opsets checks its values against ONNX Runtime): int8 W [D, I, 4H]
// and R [D, H, 4H] with their scales and zero points as inputs 8-11.

struct QuantizedLstm {
  Tensor w, r, b, ws, wz, rs, rz;
  std::vector<int8_t> wq, rq;  // the weights as stored
};
QuantizedLstm quantized_lstm(int64_t dirs, int64_t in, int64_t hidden, bool per_unit, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(-127, 127);
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  const int64_t gh = 4 * hidden;
  QuantizedLstm q;
  q.wq.resize(static_cast<size_t>(dirs * in * gh));
  q.rq.resize(static_cast<size_t>(dirs * hidden * gh));
  for (int8_t& v : q.wq) v = static_cast<int8_t>(code(rng));
  for (int8_t& v : q.rq) v = static_cast<int8_t>(code(rng));
  q.w = Tensor::from_vector<int8_t>({dirs, in, gh}, q.wq);
  q.r = Tensor::from_vector<int8_t>({dirs, hidden, gh}, q.rq);
  q.b = Tensor::from_vector<float>({dirs, 2 * gh}, random_values(static_cast<size_t>(dirs * 2 * gh), seed + 1));
  const Shape ps = per_unit ? Shape{dirs, gh} : Shape{dirs};
  const size_t n = static_cast<size_t>(shape_numel(ps));
  std::vector<float> s(2 * n);
  for (float& v : s) v = scale(rng);
  q.ws = Tensor::from_vector<float>(ps, std::vector<float>(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n)));
  q.rs = Tensor::from_vector<float>(ps, std::vector<float>(s.begin() + static_cast<std::ptrdiff_t>(n), s.end()));
  q.wz = q.rz = Tensor::from_vector<int8_t>(ps, std::vector<int8_t>(n, 0));
  return q;
}

kernels::NodeInfo quantized_lstm_node(int64_t hidden, const std::string& direction) {
  kernels::NodeInfo node;
  node.op_type = "DynamicQuantizeLSTM";
  node.domain = "com.microsoft";
  node.opset = 1;
  node.attrs.set("hidden_size", hidden);
  node.attrs.set("direction", direction);
  node.num_inputs = 12;
  node.num_outputs = 3;
  return node;
}

std::vector<Tensor> quantized_lstm_inputs(const Tensor& x, const QuantizedLstm& q, const Tensor& lens = Tensor()) {
  return {x, q.w, q.r, q.b, lens, Tensor(), Tensor(), Tensor(), q.ws, q.wz, q.rs, q.rz};
}

// The float LSTM of the dequantized weights (W, R back in LSTM's [D, 4H, K]
// layout): the quantized cell differs from it only by the quantization of X
// and H_{t-1} (1/255 of their range), so a transposed weight or a gate read
// from the wrong columns shows here.
TEST(QuantizedLstm, ApproximatesTheFloatLstmOfItsDequantizedWeights) {
  constexpr int64_t kT = 6, kB = 2, kI = 10, kH = 24, kGh = 4 * kH;
  for (bool per_unit : {false, true}) {
    const QuantizedLstm q = quantized_lstm(1, kI, kH, per_unit, 31);
    auto dequantized = [&](const std::vector<int8_t>& codes, const Tensor& scales, int64_t K) {
      std::vector<float> f(static_cast<size_t>(kGh * K));
      const auto s = scales.to_vector<float>();
      for (int64_t j = 0; j < kGh; ++j)
        for (int64_t k = 0; k < K; ++k)
          f[static_cast<size_t>(j * K + k)] =
              static_cast<float>(codes[static_cast<size_t>(k * kGh + j)]) * s[per_unit ? static_cast<size_t>(j) : 0];
      return Tensor::from_vector<float>({1, kGh, K}, f);
    };
    const Tensor x = Tensor::from_vector<float>({kT, kB, kI}, random_values(kT * kB * kI, 33));
    Attributes a;
    a.set("hidden_size", kH);
    const auto want = kernels::run_kernel_once("LSTM", 14, a, {x, dequantized(q.wq, q.ws, kI), dequantized(q.rq, q.rs, kH), q.b}, 3);
    const auto got = kernels::run_kernel_once(quantized_lstm_node(kH, "forward"), quantized_lstm_inputs(x, q));
    for (int o = 0; o < 3; ++o) {
      const auto g = got[static_cast<size_t>(o)].to_vector<float>(), w = want[static_cast<size_t>(o)].to_vector<float>();
      ASSERT_EQ(g.size(), w.size());
      double worst = 0, largest = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        worst = std::max(worst, std::fabs(static_cast<double>(g[i]) - w[i]));
        largest = std::max(largest, std::fabs(static_cast<double>(w[i])));
      }
      // Quantization moves outputs by a few hundredths; a misread weight by their size.
      EXPECT_LT(worst, 0.08 * largest) << "output " << o << (per_unit ? " per unit" : " per direction");
      EXPECT_GT(largest, 0.5) << "output " << o;
      EXPECT_GT(worst, 0.0) << "output " << o << ": no quantization at all?";
    }
  }
}

// The same bits for any thread count (the step products split across the
// pool at H = 256), whether W and R are packed when the kernel is created
// or read at run time, and a bidirectional run is its two directions side by
// side.
TEST(QuantizedLstm, SameBitsForAnyThreadCountPackingAndDirection) {
  constexpr int64_t kT = 5, kB = 3, kI = 40, kH = 256;
  const QuantizedLstm q = quantized_lstm(2, kI, kH, true, 41);
  const Tensor x = Tensor::from_vector<float>({kT, kB, kI}, random_values(kT * kB * kI, 43));
  const Tensor lens = Tensor::from_vector<int32_t>({kB}, {5, 2, 4});
  const std::vector<Tensor> in = quantized_lstm_inputs(x, q, lens);
  kernels::NodeInfo node = quantized_lstm_node(kH, "bidirectional");
  const auto base = kernels::run_kernel_once(node, in);
  ASSERT_EQ(base[0].shape(), (Shape{kT, 2, kB, kH}));
  kernels::NodeInfo packed = node;
  packed.const_inputs = {nullptr, &in[1], &in[2]};
  for (int threads : {1, 2, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    for (const kernels::NodeInfo* n : {&node, &packed}) {
      const auto more = kernels::run_kernel_once(*n, in, pool.get());
      for (int o = 0; o < 3; ++o)
        EXPECT_EQ(more[static_cast<size_t>(o)].to_vector<float>(), base[static_cast<size_t>(o)].to_vector<float>())
            << threads << " threads, output " << o << (n == &packed ? ", packed" : "");
    }
  }
  // Direction d alone: its slice of every per-direction input.
  for (int64_t d = 0; d < 2; ++d) {
    auto slice = [d](const Tensor& t) {
      const int64_t n = t.numel() / t.dim(0);
      Shape s = t.shape();
      s[0] = 1;
      Tensor out(t.dtype(), s);
      const size_t bytes = static_cast<size_t>(n) * dtype_size(t.dtype());
      std::memcpy(out.raw_mutable_data(), static_cast<const char*>(t.raw_data()) + static_cast<size_t>(d) * bytes, bytes);
      return out;
    };
    QuantizedLstm one{slice(q.w), slice(q.r), slice(q.b), slice(q.ws), slice(q.wz), slice(q.rs), slice(q.rz), {}, {}};
    const auto alone = kernels::run_kernel_once(quantized_lstm_node(kH, d == 0 ? "forward" : "reverse"),
                                                quantized_lstm_inputs(x, one, lens));
    const auto y = base[0].to_vector<float>(), y1 = alone[0].to_vector<float>();
    for (int64_t t = 0; t < kT; ++t)
      for (int64_t i = 0; i < kB * kH; ++i)
        ASSERT_EQ(y[static_cast<size_t>((t * 2 + d) * kB * kH + i)], y1[static_cast<size_t>(t * kB * kH + i)])
            << "direction " << d << " step " << t;
  }
}

TEST(QuantizedLstm, ErrorsNameTheInputAndWhatWasExpected) {
  const QuantizedLstm q = quantized_lstm(1, I, H, false, 51);
  const Tensor x = Tensor::from_vector<float>({T, B, I}, random_values(T * B * I, 52));
  const kernels::NodeInfo node = quantized_lstm_node(H, "forward");
  auto error = [&](std::vector<Tensor> in) { return testing::error_of([&] { kernels::run_kernel_once(node, in); }); };
  std::vector<Tensor> in = quantized_lstm_inputs(x, q);
  in[8] = Tensor();
  EXPECT_NE(error(in).find("W_scale (input 8) is missing"), std::string::npos) << error(in);
  in = quantized_lstm_inputs(x, q);
  in[11] = Tensor::from_vector<uint8_t>({1}, {0});
  EXPECT_NE(error(in).find("input R_zero_point is"), std::string::npos) << error(in);
  EXPECT_NE(error(in).find("expected int8 of shape [1]"), std::string::npos) << error(in);
  in = quantized_lstm_inputs(x, q);
  in[10] = Tensor::from_vector<float>({2}, {0.1f, 0.1f});
  EXPECT_NE(error(in).find("R_scale"), std::string::npos) << error(in);
  in = quantized_lstm_inputs(x, q);
  std::swap(in[1], in[2]);
  EXPECT_NE(error(in).find("input W has shape 1x6x24, expected 1x4x24"), std::string::npos) << error(in);
  in = quantized_lstm_inputs(x, q);
  in[1] = Tensor::from_vector<float>({1, I, 4 * H}, random_values(I * 4 * H, 53));
  EXPECT_NE(error(in).find("input W is float32"), std::string::npos) << error(in);
}

}  // namespace
}  // namespace spindle
