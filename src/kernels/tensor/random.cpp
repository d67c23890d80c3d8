// random.cpp — random operators: RandomNormal, RandomUniform,
// RandomNormalLike, RandomUniformLike, Bernoulli, Multinomial, and Dropout
// (inference, and training_mode=true with a random mask).
//
// Numbers come from a counter-based generator: element i of run r of a
// kernel is a hash (SplitMix64 finalizer, twice) of (key, r, i), where key is
// the `seed` attribute's bits; without one, the process seed
// (spindle/random.h, Python's set_seed) mixed with the node's name and
// operator, or, before any set_random_seed, a std::random_device draw made
// when the kernel is created. Blocks of elements can be computed by any thread in any order, so
// the values do not depend on the thread count; a seeded node gives the same
// sequence of runs in every session (run r of one session gets the r-th set of
// numbers; concurrent runs of one session take run numbers in the order they
// reach the node).
//
// Uniform doubles in [0, 1) take the top 53 bits of a draw; normal values
// use Box-Muller on two draws. Multinomial samples each row serially (its
// rows are the parallel items).
#include <atomic>
#include <bit>
#include <cmath>
#include <random>

#include "kernels/op_schema.h"
#include "spindle/random.h"
#include "kernels/tensor/tensor_util.h"
#include "kernels/nn/nn_util.h"

namespace spindle::kernels::tensor {
namespace {

uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The random stream of one node: key from the seed, a run counter.
class RandomStream {
 public:
  RandomStream(const NodeInfo& node, bool int_seed) {
    if (node.attrs.has("seed")) {
      const uint64_t bits = int_seed ? static_cast<uint64_t>(node.attrs.get_int("seed"))
                                     : std::bit_cast<uint32_t>(node.attrs.get_float("seed"));
      key_ = mix64(bits ^ 0x5EED5EED5EED5EEDull);
    } else if (const std::optional<int64_t> seed = random_seed()) {
      uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a of the node's name and operator
      for (const std::string* text : {&node.name, &node.op_type})
        for (char c : *text) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
      key_ = mix64(static_cast<uint64_t>(*seed) ^ mix64(h));
    } else {
      std::random_device rd;
      key_ = mix64((static_cast<uint64_t>(rd()) << 32) ^ rd());
    }
  }
  RandomStream(const RandomStream&) = delete;
  RandomStream& operator=(const RandomStream&) = delete;

  // The key of the next run.
  uint64_t next_run() const { return mix64(key_ ^ mix64(runs_.fetch_add(1, std::memory_order_relaxed))); }

 private:
  uint64_t key_ = 0;
  mutable std::atomic<uint64_t> runs_{0};
};

uint64_t draw(uint64_t run_key, uint64_t i) { return mix64(run_key + mix64(i)); }

// Uniform in [0, 1).
double uniform01(uint64_t run_key, uint64_t i) {
  return static_cast<double>(draw(run_key, i) >> 11) * 0x1.0p-53;
}

// Standard normal (Box-Muller on draws 2i and 2i + 1).
double normal01(uint64_t run_key, uint64_t i) {
  const double u1 = 1.0 - uniform01(run_key, 2 * i);  // (0, 1]
  const double u2 = uniform01(run_key, 2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// One drawn value (a hash of its index, and for normals a log and a cosine
// shared by two draws) is costed as 4 ops: blocks of 16K values. Values are
// functions of their index, so the blocks never change a result.
int64_t value_grain() { return grain_for_cost(nn::ops_cost(4.0)); }

// y[i] = f(i) for every element, converted to y's dtype, in parallel blocks.
template <typename F>
void fill_values(const NodeInfo& node, KernelContext& ctx, Tensor& y, F&& f) {
  auto run = [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    parallel_for(ctx.pool(), 0, y.numel(), value_grain(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = static_cast<T>(f(i));
    });
  };
  switch (y.dtype()) {
    case DataType::kFloat32: run(y.mutable_data<float>()); break;
    case DataType::kFloat64: run(y.mutable_data<double>()); break;
    case DataType::kInt32: run(y.mutable_data<int32_t>()); break;
    case DataType::kInt64: run(y.mutable_data<int64_t>()); break;
    case DataType::kInt8: run(y.mutable_data<int8_t>()); break;
    case DataType::kUInt8: run(y.mutable_data<uint8_t>()); break;
    case DataType::kInt16: run(y.mutable_data<int16_t>()); break;
    case DataType::kUInt16: run(y.mutable_data<uint16_t>()); break;
    case DataType::kUInt32: run(y.mutable_data<uint32_t>()); break;
    case DataType::kUInt64: run(y.mutable_data<uint64_t>()); break;
    case DataType::kBool: run(y.mutable_data<bool>()); break;
    default: fail_unsupported(node, fmt::format("output of type {} is not supported", dtype_name(y.dtype())));
  }
}

bool is_float(DataType t) { return t == DataType::kFloat32 || t == DataType::kFloat64; }

// The `dtype` attribute (an ONNX TensorProto type code), or `fallback`.
DataType dtype_attr(const NodeInfo& node, DataType fallback) {
  if (!node.attrs.has("dtype")) return fallback;
  const int64_t code = node.attrs.get_int("dtype");
  if (code < 1 || code > 16) fail(node, fmt::format("attribute dtype is {}, not an ONNX tensor type", code));
  return static_cast<DataType>(code);
}

// ---------------------------------------------------------------- RandomNormal / RandomUniform (+Like)

class RandomFillKernel final : public OpKernel {
 public:
  RandomFillKernel(const NodeInfo& node, bool normal, bool like) : normal_(normal), like_(like), stream_(node, false) {
    if (normal) {
      a_ = node.attrs.get_float("mean", 0.0f);
      b_ = node.attrs.get_float("scale", 1.0f);
    } else {
      a_ = node.attrs.get_float("low", 0.0f);
      b_ = node.attrs.get_float("high", 1.0f);
      if (!(a_ <= b_)) fail(node, fmt::format("attribute low {} is above high {}", a_, b_));
    }
    has_dtype_ = node.attrs.has("dtype");
    dtype_ = dtype_attr(node, DataType::kFloat32);
    if (has_dtype_ && !is_float(dtype_))
      fail_unsupported(node, fmt::format("attribute dtype is {}, expected float32 or float64", dtype_name(dtype_)));
    if (!like) {
      if (!node.attrs.has("shape")) fail(node, "missing required attribute 'shape'");
      shape_ = node.attrs.get_ints("shape");
      for (int64_t d : shape_)
        if (d < 0) fail(node, fmt::format("attribute shape {} has a negative dimension", dims_string(shape_)));
      if (!checked_numel(shape_)) fail(node, fmt::format("attribute shape {} is too large", dims_string(shape_)));
    }
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    Shape shape = shape_;
    DataType dtype = dtype_;
    if (like_) {
      const Tensor& x = ctx.input(0);
      shape = x.shape();
      if (!has_dtype_) {
        if (!is_float(x.dtype()))
          fail_unsupported(node, fmt::format("input is {}; without a dtype attribute the output takes its type, "
                                             "expected float32 or float64", x.describe()));
        dtype = x.dtype();
      }
    }
    Tensor& y = ctx.output(0, dtype, shape);
    const uint64_t key = stream_.next_run();
    const double a = a_, b = b_;
    if (normal_)
      fill_values(node, ctx, y, [&](int64_t i) { return a + b * normal01(key, static_cast<uint64_t>(i)); });
    else
      fill_values(node, ctx, y, [&](int64_t i) { return a + (b - a) * uniform01(key, static_cast<uint64_t>(i)); });
  }

 private:
  bool normal_, like_, has_dtype_ = false;
  double a_ = 0.0, b_ = 1.0;
  DataType dtype_ = DataType::kFloat32;
  Shape shape_;
  RandomStream stream_;
};

// ---------------------------------------------------------------- Bernoulli

// y[i] = 1 with probability x[i] (a float32 / float64 in [0, 1]), else 0;
// y of the dtype attribute (numeric or bool), x's type by default.
class BernoulliKernel final : public OpKernel {
 public:
  explicit BernoulliKernel(const NodeInfo& node) : stream_(node, false), has_dtype_(node.attrs.has("dtype")) {
    if (has_dtype_) dtype_ = dtype_attr(node, DataType::kFloat32);
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (!is_float(x.dtype()))
      fail(node, fmt::format("input is {}, expected float32 or float64 probabilities", x.describe()));
    const std::vector<double> p = x.dtype() == DataType::kFloat32 ? widen(x.data<float>(), x.numel())
                                                                  : widen(x.data<double>(), x.numel());
    for (size_t i = 0; i < p.size(); ++i)
      if (!(p[i] >= 0.0 && p[i] <= 1.0))
        fail(node, fmt::format("input value {} at element {} is not a probability in [0, 1]", p[i], i));
    Tensor& y = ctx.output(0, has_dtype_ ? dtype_ : x.dtype(), x.shape());
    const uint64_t key = stream_.next_run();
    fill_values(node, ctx, y, [&](int64_t i) {
      return uniform01(key, static_cast<uint64_t>(i)) < p[static_cast<size_t>(i)] ? 1 : 0;
    });
  }

 private:
  template <typename T>
  static std::vector<double> widen(const T* v, int64_t n) {
    return std::vector<double>(v, v + n);
  }
  RandomStream stream_;
  bool has_dtype_;
  DataType dtype_ = DataType::kFloat32;
};

// ---------------------------------------------------------------- Multinomial

// input [batch, classes] of unnormalized log-probabilities; output [batch,
// sample_size] of class indices (int32 by default, or int64).
class MultinomialKernel final : public OpKernel {
 public:
  explicit MultinomialKernel(const NodeInfo& node)
      : stream_(node, false),
        samples_(node.attrs.get_int("sample_size", 1)),
        dtype_(dtype_attr(node, DataType::kInt32)) {
    if (samples_ < 1) fail(node, fmt::format("attribute sample_size is {}, expected >= 1", samples_));
    if (dtype_ != DataType::kInt32 && dtype_ != DataType::kInt64)
      fail(node, fmt::format("attribute dtype is {}, expected int32 or int64", dtype_name(dtype_)));
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (!is_float(x.dtype()) || x.rank() != 2)
      fail(node, fmt::format("input is {}, expected a 2-D float32 or float64 tensor [batch_size, class_size]",
                             x.describe()));
    const int64_t batch = x.dim(0), classes = x.dim(1);
    if (classes < 1 && batch > 0) fail(node, fmt::format("input is {}, expected at least one class", x.describe()));
    if (!checked_mul(batch, samples_)) fail(node, fmt::format("output [{}, {}] is too large", batch, samples_));
    Tensor& y = ctx.output(0, dtype_, {batch, samples_});
    const uint64_t key = stream_.next_run();
    const bool f32 = x.dtype() == DataType::kFloat32;
    const int64_t S = samples_;
    // A row: three passes over its classes (max, exp, prefix sum), then a
    // binary search of the prefix sums per sample.
    const double row_work =
        3.0 * static_cast<double>(classes) + static_cast<double>(S) * std::log2(static_cast<double>(classes) + 1.0);
    parallel_for(ctx.pool(), 0, batch, grain_for_cost(nn::ops_cost(row_work)), [&](int64_t r0, int64_t r1) {
      std::vector<double> cdf(static_cast<size_t>(classes));
      for (int64_t r = r0; r < r1; ++r) {
        double mx = -INFINITY;
        for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, value(x, f32, r * classes + c));
        double total = 0.0;
        for (int64_t c = 0; c < classes; ++c) {
          const double v = value(x, f32, r * classes + c);
          total += std::isfinite(mx) ? std::exp(v - mx) : 0.0;
          cdf[static_cast<size_t>(c)] = total;
        }
        if (!(total > 0.0) || !std::isfinite(total))
          fail(node, fmt::format("row {} of input {} has no finite positive probability", r, x.describe()));
        for (int64_t s = 0; s < S; ++s) {
          const double u = uniform01(key, static_cast<uint64_t>(r * S + s)) * total;
          const int64_t c = std::min<int64_t>(
              std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin(), classes - 1);
          if (dtype_ == DataType::kInt32) y.mutable_data<int32_t>()[r * S + s] = static_cast<int32_t>(c);
          else y.mutable_data<int64_t>()[r * S + s] = c;
        }
      }
    });
  }

 private:
  static double value(const Tensor& x, bool f32, int64_t i) {
    return f32 ? static_cast<double>(x.data<float>()[i]) : x.data<double>()[i];
  }
  RandomStream stream_;
  int64_t samples_;
  DataType dtype_;
};

// ---------------------------------------------------------------- Dropout

// Writes 1 (true / 1.0) into every element of t.
void fill_ones(const NodeInfo& node, Tensor& t) {
  const int64_t n = t.numel();
  auto fill = [&](auto one) {
    using T = decltype(one);
    T* p = static_cast<T*>(t.raw_mutable_data());
    std::fill(p, p + n, one);
  };
  switch (t.dtype()) {
    case DataType::kFloat32: fill(1.0f); break;
    case DataType::kFloat64: fill(1.0); break;
    case DataType::kFloat16: fill(uint16_t{0x3C00}); break;
    case DataType::kBool: case DataType::kUInt8: case DataType::kInt8: fill(uint8_t{1}); break;
    case DataType::kInt16: case DataType::kUInt16: fill(uint16_t{1}); break;
    case DataType::kInt32: case DataType::kUInt32: fill(uint32_t{1}); break;
    case DataType::kInt64: case DataType::kUInt64: fill(uint64_t{1}); break;
    default: fail_unsupported(node, fmt::format("mask of type {} is not supported", dtype_name(t.dtype())));
  }
}

// Opsets 1..11: ratio (and is_test before 7) are attributes; the mask is of
// the input type before 10 and bool from 10. Inference: output = input,
// mask = all ones. Opsets 12..: ratio and training_mode are optional inputs;
// with training_mode=true each element is kept with probability 1 - ratio
// (mask true, output x / (1 - ratio)) or dropped (mask false, output 0),
// float32 / float64 input, ratio in [0, 1).
class DropoutKernel final : public OpKernel {
 public:
  explicit DropoutKernel(const NodeInfo& node) : opset_(node.opset), stream_(node, true) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    elem_size(node, x, "data");
    if (opset_ >= 12 && ctx.has_input(2)) {
      const Tensor& tm = ctx.input(2);
      if (tm.dtype() != DataType::kBool || tm.numel() != 1)
        fail(node, fmt::format("input training_mode is {}, expected a bool scalar", tm.describe()));
      if (*tm.data<bool>()) {
        double ratio = 0.5;
        if (ctx.has_input(1)) {
          const Tensor& r = ctx.input(1);
          if (r.numel() != 1) fail(node, fmt::format("input ratio is {}, expected a scalar", r.describe()));
          if (r.dtype() == DataType::kFloat32) ratio = *r.data<float>();
          else if (r.dtype() == DataType::kFloat64) ratio = *r.data<double>();
          else fail_unsupported(node, fmt::format("input ratio is {}, expected float32 or float64", r.describe()));
        }
        if (!(ratio >= 0.0 && ratio < 1.0)) fail(node, fmt::format("input ratio is {}, expected [0, 1)", ratio));
        if (ratio > 0.0) return train(ctx, x, ratio);
      }
    }
    ctx.set_output(0, x);
    if (ctx.wants_output(1)) {
      Tensor& mask = ctx.output(1, opset_ < 10 ? x.dtype() : DataType::kBool, x.shape());
      fill_ones(node, mask);
    }
  }

 private:
  void train(KernelContext& ctx, const Tensor& x, double ratio) const {
    const NodeInfo& node = ctx.node();
    if (!is_float(x.dtype()))
      fail_unsupported(node, fmt::format("input data is {}; training_mode=true supports float32 and float64",
                                         x.describe()));
    const uint64_t key = stream_.next_run();
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    bool* mask = ctx.wants_output(1) ? ctx.output(1, DataType::kBool, x.shape()).mutable_data<bool>() : nullptr;
    const double keep = 1.0 / (1.0 - ratio);
    auto run = [&](auto* out, const auto* in) {
      using T = std::remove_pointer_t<decltype(out)>;
      const T scale = static_cast<T>(keep);
      parallel_for(ctx.pool(), 0, x.numel(), value_grain(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const bool kept = uniform01(key, static_cast<uint64_t>(i)) >= ratio;
          out[i] = kept ? in[i] * scale : T(0);
          if (mask) mask[i] = kept;
        }
      });
    };
    if (x.dtype() == DataType::kFloat32) run(y.mutable_data<float>(), x.data<float>());
    else run(y.mutable_data<double>(), x.data<double>());
  }

  int opset_;
  RandomStream stream_;
};

}  // namespace

void register_random(KernelRegistry& r) {
  for (const bool normal : {true, false})
    for (const bool like : {false, true}) {
      const char* op = normal ? (like ? "RandomNormalLike" : "RandomNormal") : (like ? "RandomUniformLike" : "RandomUniform");
      r.add("", op, 1, kMaxOpset, [normal, like](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
        return std::make_unique<RandomFillKernel>(node, normal, like);
      });
    }
  r.add("", "Bernoulli", 15, kMaxOpset, factory_of<BernoulliKernel>());
  r.add("", "Multinomial", 7, kMaxOpset, factory_of<MultinomialKernel>());
  r.add("", "Dropout", 1, 17, factory_of<DropoutKernel>());
}

}  // namespace spindle::kernels::tensor
