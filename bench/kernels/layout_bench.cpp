// layout_bench.cpp — would a blocked channel layout (NCHW8c: channels in
// blocks of 8, each block [H][W][8] floats) make depthwise and 1x1
// convolutions faster than spindle's Conv on NCHW? One thread, N = 1, on
// the depthwise and pointwise layers of MobileNetV3-Large / EfficientNet-B0
// at 224x224 (kLayers):
//   spindle_nchw           spindle's Conv kernel from the registry, created
//                          once as a session creates it (weights pre-packed),
//                          on NCHW input. Without an output allocator
//                          ctx.output() allocates a fresh zero-filled output
//                          on every call.
//   spindle_nchw_recycled  the same with the output handed back from one
//                          buffer, as the session's frame recycles buffers
//                          (no allocation, no zero fill).
//   nchwc                  spindle.BlockedConv (src/kernels/nn/blocked.cpp)
//                          from the registry, created the same way, on the
//                          input in NCHW8c ([C/8][H][W][8]), output
//                          [Cout/8][OH][OW][8] recycled, plus bias; at the
//                          active ISA level.
//   reorder                the layer's NCHW input to NCHW8c plus its NCHW8c
//                          output back to NCHW (blocked.isa.cpp's AVX2
//                          reorders): entering and leaving a blocked chain
//                          once.
// Before nchwc is timed, its output (back in NCHW) is checked against
// spindle's (1e-4 relative; both sum bias, then the taps / input channels,
// not necessarily in the same order). Counter GFLOPS = 2 MACs / time; the
// label names the layer. This file is compiled with -mavx2 -mfma
// (CMakeLists.txt): on x86-64 it needs such a CPU; elsewhere only
// spindle_nchw* is registered.
//
//   build/bench/kernels/bench_layout --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <new>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "primitives/conv/blocked.h"  // the reorders, called at their AVX2 level
#include "spindle/tensor.h"

namespace {

using spindle::Buffer;
using spindle::DataType;
using spindle::Shape;
using spindle::Tensor;
namespace sk = spindle::kernels;

// Depthwise: group = c = cout. Pointwise: k = 1, s = 1, no pads. Pads k / 2.
struct Layer {
  bool dw;
  int64_t c, h, k, s, cout;
  int64_t g = 1;  // groups when not depthwise
  int64_t group() const { return dw ? c : g; }
  int64_t pad() const { return k / 2; }
  int64_t oh() const { return (h + 2 * pad() - k) / s + 1; }
  // Multiply-adds: C/group x Cout x OH x OW x k x k.
  double macs() const { return static_cast<double>(oh() * oh()) * static_cast<double>(c / group() * cout * k * k); }
  std::string label() const {
    const std::string hs = std::to_string(h);
    if (!dw && g > 1)
      return "gc" + std::to_string(k) + "x" + std::to_string(k) + " s" + std::to_string(s) + " C" + std::to_string(c) +
             " g" + std::to_string(g) + " " + hs + "x" + hs;
    if (!dw && s > 1) return "pw s" + std::to_string(s) + " " + std::to_string(c) + "->" + std::to_string(cout) + " " + hs + "x" + hs;
    if (dw)
      return "dw" + std::to_string(k) + "x" + std::to_string(k) + " s" + std::to_string(s) + " C" + std::to_string(c) +
             " " + hs + "x" + hs;
    return "pw " + std::to_string(c) + "->" + std::to_string(cout) + " " + hs + "x" + hs;
  }
};

Layer dw(int64_t c, int64_t h, int64_t k, int64_t s) { return {true, c, h, k, s, c}; }
Layer pw(int64_t c, int64_t cout, int64_t h) { return {false, c, h, 1, 1, cout}; }
Layer gc(int64_t c, int64_t h, int64_t s, int64_t width) { return {false, c, h, 3, s, c, c / width}; }
Layer pws(int64_t c, int64_t cout, int64_t h, int64_t s) { return {false, c, h, 1, s, cout}; }

const Layer kLayers[] = {
    dw(64, 112, 3, 2),  dw(72, 56, 3, 1),   dw(72, 56, 5, 2),    dw(120, 28, 5, 1),   dw(240, 28, 3, 2),
    dw(480, 14, 3, 1),  dw(672, 14, 5, 1),  dw(960, 7, 5, 1),    dw(144, 56, 3, 1),   dw(1152, 7, 5, 1),
    pw(16, 64, 112),    pw(72, 24, 56),     pw(24, 72, 56),      pw(120, 40, 28),     pw(240, 40, 28),
    pw(480, 80, 14),    pw(80, 480, 14),    pw(672, 112, 14),    pw(672, 160, 7),     pw(960, 160, 7),
    pw(160, 960, 7),    pw(1152, 192, 7),   pw(192, 1152, 7),
    // RegNet-Y-400MF: grouped 3x3 of group width 8, 1x1 stride-2 projections.
    gc(48, 56, 1, 8),   gc(104, 28, 1, 8),  gc(208, 14, 1, 8),   gc(440, 7, 1, 8),    gc(48, 112, 2, 8),
    gc(104, 56, 2, 8),  pws(32, 48, 112, 2), pws(48, 104, 56, 2),
};

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t(DataType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

// One layer: its tensors and spindle's kernel for it.
struct SpindleConv {
  Layer L;
  Tensor X, W, B;
  sk::NodeInfo info;
  std::unique_ptr<sk::OpKernel> kernel;
  std::vector<Tensor> inputs, outputs{1};
  std::shared_ptr<Buffer> recycled;  // the output's buffer for spindle_nchw_recycled
  sk::OutputAllocator allocator;

  explicit SpindleConv(const Layer& l) : L(l) {
    X = random_tensor({1, L.c, L.h, L.h}, 1);
    W = random_tensor({L.cout, L.c / L.group(), L.k, L.k}, 2);
    B = random_tensor({L.cout}, 3);
    info.op_type = "Conv";
    info.opset = 13;
    info.attrs.set("group", L.group());
    info.attrs.set("kernel_shape", std::vector<int64_t>{L.k, L.k});
    info.attrs.set("pads", std::vector<int64_t>{L.pad(), L.pad(), L.pad(), L.pad()});
    info.attrs.set("strides", std::vector<int64_t>{L.s, L.s});
    info.num_inputs = 3;
    info.num_outputs = 1;
    info.const_inputs = {nullptr, &W, &B};
    info.prepack = true;
    const sk::KernelFactory* factory = sk::KernelRegistry::global().find("", "Conv", 13);
    if (!factory) throw std::runtime_error("no Conv kernel at opset 13");
    kernel = (*factory)(info);
    inputs = {X, W, B};
    recycled = Buffer::allocate(static_cast<size_t>(L.cout * L.oh() * L.oh()) * sizeof(float));
    allocator = [this](DataType dtype, const Shape& shape) { return Tensor(dtype, shape, recycled); };
  }
  // outputs[0] is replaced on every call (ctx.output() makes a new tensor).
  void run(bool recycle) {
    sk::KernelContext ctx(info, std::span<const Tensor>(inputs), std::span<Tensor>(outputs), nullptr,
                          recycle ? &allocator : nullptr);
    kernel->compute(ctx);
  }
};

void set_counters(benchmark::State& st, const Layer& L, bool flops) {
  if (flops)
    st.counters["GFLOPS"] = benchmark::Counter(2.0 * L.macs(), benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
  st.SetLabel(L.label());
}

void spindle_run(benchmark::State& st, bool recycle) {
  const Layer& L = kLayers[st.range(0)];
  std::unique_ptr<SpindleConv> conv;
  try {
    conv = std::make_unique<SpindleConv>(L);
    conv->run(recycle);
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  for (auto _ : st) {
    conv->run(recycle);
    benchmark::DoNotOptimize(conv->outputs[0].raw_data());
    benchmark::ClobberMemory();
  }
  set_counters(st, L, true);
}

void spindle_nchw(benchmark::State& st) { spindle_run(st, false); }
void spindle_nchw_recycled(benchmark::State& st) { spindle_run(st, true); }

#if defined(__x86_64__)

struct FreeFloats {
  void operator()(float* p) const { std::free(p); }
};

// 64-byte aligned, zero-filled floats.
class Floats {
 public:
  explicit Floats(size_t n)
      : p_(static_cast<float*>(std::aligned_alloc(64, std::max<size_t>((n * sizeof(float) + 63) / 64 * 64, 64)))) {
    if (!p_) throw std::bad_alloc();
    std::fill_n(p_.get(), n, 0.0f);
  }
  float* data() { return p_.get(); }
  const float* data() const { return p_.get(); }

 private:
  std::unique_ptr<float, FreeFloats> p_;
};

// ---------------------------------------------------------------- reorders
//
// The product's per-ISA loops (src/primitives/conv/blocked.isa.cpp), AVX2 level.

// x [C][P] -> y [C/8][P][8] (C a multiple of 8).
void to_nchwc(const float* x, int64_t C, int64_t P, float* y) {
  for (int64_t cb = 0; cb < C / 8; ++cb) sk::avx2::blocked_pack8(x + cb * 8 * P, P, y + cb * 8 * P);
}

// y [C/8][P][8] -> x [C][P].
void from_nchwc(const float* y, int64_t C, int64_t P, float* x) {
  for (int64_t cb = 0; cb < C / 8; ++cb) sk::avx2::blocked_unpack8(y + cb * 8 * P, P, x + cb * 8 * P);
}

// ---------------------------------------------------------------- the blocked layer
//
// spindle.BlockedConv (src/kernels/nn/blocked.cpp) from the registry, created
// as a session creates it (weights pre-packed), on the layer's input in
// NCHW8c, its output handed back from one buffer, on the calling thread.

struct BlockedConv {
  Layer L;
  int64_t P, OP;  // input and output pixels
  Tensor xb, W, B;
  sk::NodeInfo info;
  std::unique_ptr<sk::OpKernel> kernel;
  std::vector<Tensor> inputs, outputs{1};
  std::shared_ptr<Buffer> recycled;
  sk::OutputAllocator allocator;

  explicit BlockedConv(const SpindleConv& s)
      : L(s.L), P(L.h * L.h), OP(L.oh() * L.oh()), xb(DataType::kFloat32, {1, L.c / 8, L.h, L.h, 8}), W(s.W),
        B(s.B) {
    to_nchwc(s.X.data<float>(), L.c, P, xb.mutable_data<float>());
    info.op_type = "BlockedConv";
    info.domain = "spindle";
    info.opset = 1;
    info.attrs = s.info.attrs;
    info.num_inputs = 3;
    info.num_outputs = 1;
    info.const_inputs = {nullptr, &W, &B};
    info.prepack = true;
    const sk::KernelFactory* factory = sk::KernelRegistry::global().find("spindle", "BlockedConv", 1);
    if (!factory) throw std::runtime_error("no spindle.BlockedConv kernel");
    kernel = (*factory)(info);
    inputs = {xb, W, B};
    recycled = Buffer::allocate(static_cast<size_t>(L.cout * OP) * sizeof(float));
    allocator = [this](DataType dtype, const Shape& shape) { return Tensor(dtype, shape, recycled); };
  }
  const float* y() const { return outputs[0].data<float>(); }
  void run() {
    sk::KernelContext ctx(info, std::span<const Tensor>(inputs), std::span<Tensor>(outputs), nullptr, &allocator);
    kernel->compute(ctx);
  }
};

bool have_avx2_fma(benchmark::State& st) {
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return true;
  st.SkipWithError("no AVX2 + FMA on this CPU");
  return false;
}

// "" when y (NCHW) matches spindle's output within 1e-4 relative (of the
// larger of |reference| and 1), else where it does not.
std::string compare(const float* got, const Tensor& ref) {
  const float* r = ref.data<float>();
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const float tol = 1e-4f * std::max(std::abs(r[i]), 1.0f);
    if (!(std::abs(got[i] - r[i]) <= tol))
      return "nchwc mismatch at " + std::to_string(i) + ": " + std::to_string(got[i]) + " vs spindle " +
             std::to_string(r[i]);
  }
  return "";
}

void nchwc(benchmark::State& st) {
  if (!have_avx2_fma(st)) return;
  const Layer& L = kLayers[st.range(0)];
  std::unique_ptr<SpindleConv> conv;
  std::unique_ptr<BlockedConv> blocked;
  try {
    conv = std::make_unique<SpindleConv>(L);
    conv->run(true);
    blocked = std::make_unique<BlockedConv>(*conv);
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  blocked->run();
  std::vector<float> back(static_cast<size_t>(L.cout * blocked->OP));
  from_nchwc(blocked->y(), L.cout, blocked->OP, back.data());
  const std::string error = compare(back.data(), conv->outputs[0]);
  if (!error.empty()) {
    st.SkipWithError(error.c_str());
    return;
  }
  for (auto _ : st) {
    blocked->run();
    benchmark::DoNotOptimize(blocked->y());
    benchmark::ClobberMemory();
  }
  set_counters(st, L, true);
}

void reorder(benchmark::State& st) {
  if (!have_avx2_fma(st)) return;
  const Layer& L = kLayers[st.range(0)];
  const int64_t P = L.h * L.h, OP = L.oh() * L.oh();
  const Tensor X = random_tensor({1, L.c, L.h, L.h}, 1);
  Floats xb(static_cast<size_t>(L.c * P)), yb(static_cast<size_t>(L.cout * OP)), y(static_cast<size_t>(L.cout * OP));
  for (auto _ : st) {
    to_nchwc(X.data<float>(), L.c, P, xb.data());
    from_nchwc(yb.data(), L.cout, OP, y.data());
    benchmark::DoNotOptimize(xb.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(st, L, false);
}
#endif

void layers(benchmark::internal::Benchmark* b) {
  for (int i = 0; i < static_cast<int>(std::size(kLayers)); ++i) b->Arg(i);
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(spindle_nchw)->Apply(layers);
BENCHMARK(spindle_nchw_recycled)->Apply(layers);
#if defined(__x86_64__)
BENCHMARK(nchwc)->Apply(layers);
BENCHMARK(reorder)->Apply(layers);
#endif

}  // namespace

BENCHMARK_MAIN();
