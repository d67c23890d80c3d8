// q8elem_bench.cpp — single-thread time of ResNet-50's 8-bit element-wise
// kernels, each run as its op (kernels::run_kernel_once: the kernel made and
// its output allocated every call, as a session would not, a few
// microseconds): QLinearAdd (com.microsoft, uint8, equal shapes) on the
// residual adds' sizes, spindle.MaxPoolNhwc (uint8, 3x3 stride 2 pad 1) on
// the stem's 112 x 112 x 64, the input's QuantizeLinear and ToNhwc.
//
//   taskset -c 1 build/bench/kernels/bench_q8elem --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace {

using spindle::Attributes;
using spindle::Shape;
using spindle::Tensor;
using spindle::kernels::NodeInfo;

std::vector<uint8_t> random_bytes(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 255);
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (auto& b : v) b = static_cast<uint8_t>(d(rng));
  return v;
}

NodeInfo node(const std::string& domain, const std::string& op, Attributes attrs, int num_inputs) {
  NodeInfo n;
  n.op_type = op;
  n.domain = domain;
  n.opset = 1;
  n.attrs = std::move(attrs);
  n.num_inputs = num_inputs;
  return n;
}

// QLinearAdd of two [1, h, h, c] uint8 tensors.
void BM_QLinearAdd(benchmark::State& state) {
  const int64_t h = state.range(0), c = state.range(1), n = h * h * c;
  const Shape s = {1, h, h, c};
  const Tensor a = Tensor::from_vector<uint8_t>(s, random_bytes(n, 1));
  const Tensor b = Tensor::from_vector<uint8_t>(s, random_bytes(n, 2));
  const auto scale = [](float v) { return Tensor::from_vector<float>({}, {v}); };
  const auto zero = [](uint8_t v) { return Tensor::from_vector<uint8_t>({}, {v}); };
  const std::vector<Tensor> in = {a, scale(0.0371f), zero(131), b, scale(0.0213f), zero(0), scale(0.0452f), zero(117)};
  const NodeInfo nd = node("com.microsoft", "QLinearAdd", {}, 8);
  for (auto _ : state) benchmark::DoNotOptimize(spindle::kernels::run_kernel_once(nd, in));
  state.counters["Melem/s"] = benchmark::Counter(static_cast<double>(n) * state.iterations() / 1e6, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_QLinearAdd)->Args({56, 256})->Args({28, 512})->Args({14, 1024})->Args({7, 2048})->Unit(benchmark::kMicrosecond);

// MaxPoolNhwc 3x3 / 2, pads 1, on [1, 112, 112, 64] uint8.
void BM_MaxPoolNhwc(benchmark::State& state) {
  const int64_t h = state.range(0), c = state.range(1);
  const Tensor x = Tensor::from_vector<uint8_t>({1, h, h, c}, random_bytes(h * h * c, 3));
  Attributes at;
  at.set("kernel_shape", std::vector<int64_t>{3, 3});
  at.set("strides", std::vector<int64_t>{2, 2});
  at.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  const NodeInfo nd = node("spindle", "MaxPoolNhwc", at, 1);
  for (auto _ : state) benchmark::DoNotOptimize(spindle::kernels::run_kernel_once(nd, {x}));
}
BENCHMARK(BM_MaxPoolNhwc)->Args({112, 64})->Unit(benchmark::kMicrosecond);

// The input's QuantizeLinear (uint8, per tensor) and spindle.ToNhwc of its
// [1, 3, 224, 224] bytes.
void BM_QuantizeLinear(benchmark::State& state) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> d(-2.2f, 2.6f);
  std::vector<float> v(3 * 224 * 224);
  for (auto& f : v) f = d(rng);
  const std::vector<Tensor> in = {Tensor::from_vector<float>({1, 3, 224, 224}, v),
                                  Tensor::from_vector<float>({}, {0.0187f}), Tensor::from_vector<uint8_t>({}, {114})};
  for (auto _ : state) benchmark::DoNotOptimize(spindle::kernels::run_kernel_once("QuantizeLinear", 13, {}, in));
}
BENCHMARK(BM_QuantizeLinear)->Unit(benchmark::kMicrosecond);

void BM_ToNhwc(benchmark::State& state) {
  const Tensor x = Tensor::from_vector<uint8_t>({1, 3, 224, 224}, random_bytes(3 * 224 * 224, 5));
  const NodeInfo nd = node("spindle", "ToNhwc", {}, 1);
  for (auto _ : state) benchmark::DoNotOptimize(spindle::kernels::run_kernel_once(nd, {x}));
}
BENCHMARK(BM_ToNhwc)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
