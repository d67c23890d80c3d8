// rnn_test.cpp — RNN, GRU and LSTM beyond the ONNX node tests (which cover
// forward direction, layout 1, bias and peepholes): reverse and
// bidirectional runs, sequence_lens, thread-count independence, bad input.
// The properties are checked between runs of the kernel itself: reverse
// equals forward over the time-reversed input, each half of a bidirectional
// run equals the one-direction run, a sequence cut short equals running it
// alone.
#include <gtest/gtest.h>

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
Weights weights(const CellCase& c, int64_t dirs, uint32_t seed) {
  const int64_t gh = c.gates * H;
  return {Tensor::from_vector<float>({dirs, gh, I}, random_values(static_cast<size_t>(dirs * gh * I), seed)),
          Tensor::from_vector<float>({dirs, gh, H}, random_values(static_cast<size_t>(dirs * gh * H), seed + 1)),
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

// Batches of up to 4 multiply by R with per-row dot products, larger ones
// with a GEMM; hidden size 37 has vector lanes and a tail. Each entry of a
// batch of 6 must equal that entry run alone, in both directions.
TEST_P(RnnCell, ABatchOnTheGemmPathEqualsEachEntryOnTheDotProductPath) {
  const CellCase& c = GetParam();
  constexpr int64_t kT = 4, kB = 6, kI = 9, kH = 37;
  const int64_t gh = c.gates * kH;
  const Tensor x = Tensor::from_vector<float>({kT, kB, kI}, random_values(kT * kB * kI, 12));
  const Weights wt{Tensor::from_vector<float>({2, gh, kI}, random_values(static_cast<size_t>(2 * gh * kI), 51)),
                   Tensor::from_vector<float>({2, gh, kH}, random_values(static_cast<size_t>(2 * gh * kH), 52)),
                   Tensor::from_vector<float>({2, 2 * gh}, random_values(static_cast<size_t>(4 * gh), 53))};
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

INSTANTIATE_TEST_SUITE_P(Cells, RnnCell, ::testing::ValuesIn(kCells),
                         [](const ::testing::TestParamInfo<CellCase>& info) {
                           return std::string(info.param.op) + (info.param.linear_before_reset ? "_lbr" : "");
                         });

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

}  // namespace
}  // namespace spindle
