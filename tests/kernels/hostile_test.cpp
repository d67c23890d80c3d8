// hostile_test.cpp — kernels fed the shapes, attributes and values a hostile
// model chooses (issue 11): sizes that multiply or add past int64, huge
// sampling grids, indices out of range, float -> integer conversions of NaN
// and out-of-range values, and NaN inputs to activations and max-like ops.
//
// Every size case must end in a spindle::Error that names the op and what
// was wrong (never a crash, a wrapped size or std::bad_alloc); the NaN and
// conversion cases compare with what onnxruntime-node 1.30 returns for the
// same node and inputs (values recorded in docs/nan-and-overflow.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/math/activation.h"
#include "kernel_errors.h"

namespace spindle {
namespace {

using kernels::run_kernel_once;
using testing::expect_error;

constexpr int64_t k2p62 = int64_t{1} << 62;
constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor i64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

// Values of a float tensor with NaN spelled as the string "nan" (gtest
// compares NaN unequal to itself).
std::vector<std::string> text_of(const Tensor& t) {
  std::vector<std::string> out;
  for (float v : t.to_vector<float>()) out.push_back(std::isnan(v) ? "nan" : std::to_string(v));
  return out;
}
std::vector<std::string> text_of(std::vector<float> v) { return text_of(f32({static_cast<int64_t>(v.size())}, v)); }

// Runs op and expects a spindle::Error of `code` whose message holds every needle.
void expect_code(const std::string& op, int opset, Attributes attrs, std::vector<Tensor> inputs, StatusCode code,
                 const std::vector<std::string>& needles, int num_outputs = 1) {
  try {
    run_kernel_once(op, opset, std::move(attrs), std::move(inputs), num_outputs);
    ADD_FAILURE() << op << ": expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    const std::string msg = e.what();
    for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  }
}

// ---------------------------------------------------------------- sizes from data

// Used to multiply the requested dims into a wrapped int64 (UB; UBSan:
// signed integer overflow in basic.cpp).
TEST(HostileSizes, ReshapeShapeProductOverflowIsAnError) {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  expect_error("Reshape", 14, {}, {x, i64({-1, k2p62, 4})}, {"Reshape", "does not fit in a 64-bit size"});
  expect_error("Reshape", 14, {}, {x, i64({k2p62, 8, 0})}, {"Reshape", "does not fit in a 64-bit size"});
  expect_error("Reshape", 14, {{"allowzero", int64_t{1}}}, {x, i64({k2p62, 4, 0})}, {"Reshape", "64-bit"});
  expect_error("Reshape", 14, {{"allowzero", int64_t{1}}}, {x, i64({k2p62, 0, 4})}, {"Reshape", "element counts differ"});
}

// Used to end in SIGFPE / std::bad_alloc; the error now names the node and the shape.
TEST(HostileSizes, ConstantOfShapeOverflowNamesTheNodeAndShape) {
  expect_error("ConstantOfShape", 9, {}, {i64({k2p62 + 1, 4})},
               {"ConstantOfShape", "output 0", "4611686018427387905, 4", "64-bit"});
  // Fits in int64 elements but not in bytes: RESOURCE_EXHAUSTED naming the node.
  expect_code("ConstantOfShape", 9, {}, {i64({int64_t{1} << 61, 8})}, StatusCode::kInvalidArgument,
              {"ConstantOfShape", "64-bit"});
  expect_code("ConstantOfShape", 9, {}, {i64({int64_t{1} << 61})}, StatusCode::kResourceExhausted,
              {"ConstantOfShape", "output 0", "does not fit in memory"});
  // 2^48 floats: 1 PiB, more than any address space; a clean error, not std::bad_alloc.
  expect_code("ConstantOfShape", 9, {}, {i64({int64_t{1} << 48})}, StatusCode::kResourceExhausted,
              {"ConstantOfShape", "output 0"});
}

TEST(HostileSizes, ExpandTileAndPadOverflowAreErrors) {
  const Tensor x = f32({2}, {1, 2});
  expect_error("Expand", 13, {}, {x, i64({k2p62, 4, 2})}, {"Expand", "output 0", "64-bit"});
  expect_error("Tile", 13, {}, {x, i64({k2p62})}, {"Tile", "tiled dimension", "does not fit"});
  expect_error("Pad", 13, {}, {x, i64({0, kMax64})}, {"Pad", "larger than a 64-bit size"});
  expect_error("Pad", 13, {}, {x, i64({kMin64, kMax64})}, {"Pad", "64-bit"});
  // The source maps of Pad are as long as the output: the output is refused
  // before they are built (used to be a multi-terabyte std::vector).
  expect_code("Pad", 13, {}, {x, i64({0, int64_t{1} << 48})}, StatusCode::kResourceExhausted, {"Pad", "output 0"});
}

// A pooling kernel of 2^30 taps, almost all of them in the end padding,
// costs what its few real taps cost (the tap ranges are computed, not
// walked tap by tap: a fuzzed model of this shape ran for minutes).
TEST(HostileSizes, HugePoolKernelsCostTheirRealTaps) {
  const int64_t big = int64_t{1} << 30;
  const Tensor X = Tensor::from_vector<float>({1, 1, 2, 3}, {1, 5, 2, 4, 0, 3});
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{1, big}}, {"pads", std::vector<int64_t>{0, 0, 0, big}}};
  for (const char* op : {"MaxPool", "AveragePool"}) {
    const Tensor Y = run_kernel_once(op, 11, attrs, {X})[0];
    ASSERT_EQ(Y.shape(), (Shape{1, 1, 2, 4})) << op;
    // Output column ow covers input columns ow.. (the rest is padding).
    const std::vector<float> want = std::string(op) == "MaxPool"
                                        ? std::vector<float>{5, 5, 2, 2, 4, 3, 3, 3}
                                        : std::vector<float>{8.0f / 3, 3.5f, 2, 2, 7.0f / 3, 1.5f, 3, 3};
    const auto got = Y.to_vector<float>();
    for (size_t i = 0; i < want.size(); ++i) {
      if (i % 4 != 3) {
        EXPECT_FLOAT_EQ(got[i], want[i]) << op << " element " << i;
      }
    }
  }
}

// A window whose first tap lies 2^61 columns left of the row (a begin
// padding of 2^61 and a kernel reaching back into the row): its pointer
// used to be formed as x + start, far outside the input (undefined
// behaviour that UBSan reports; fuzz_graph found it). The one output
// column pools the row.
TEST(HostileSizes, PoolWindowsStartingFarInThePadding) {
  const int64_t pad = int64_t{1} << 61;
  const Tensor X = Tensor::from_vector<float>({1, 1, 2, 3}, {1, 5, 2, 4, 0, 3});
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{1, pad + 3}}, {"pads", std::vector<int64_t>{0, pad, 0, 0}}};
  for (const char* op : {"MaxPool", "AveragePool"}) {
    const Tensor Y = run_kernel_once(op, 11, attrs, {X})[0];
    ASSERT_EQ(Y.shape(), (Shape{1, 1, 2, 1})) << op;
    const std::vector<float> want = std::string(op) == "MaxPool" ? std::vector<float>{5, 4}
                                                                 : std::vector<float>{8.0f / 3, 7.0f / 3};
    const auto got = Y.to_vector<float>();
    EXPECT_FLOAT_EQ(got[0], want[0]) << op;
    EXPECT_FLOAT_EQ(got[1], want[1]) << op;
  }
}

TEST(HostileSizes, RangeCountsAreChecked) {
  expect_error("Range", 11, {}, {Tensor::scalar<float>(0), Tensor::scalar<float>(1e30f), Tensor::scalar<float>(1e-30f)},
               {"Range", "more than fit in a 64-bit count"});
  expect_error("Range", 11, {},
               {Tensor::scalar<float>(0), Tensor::scalar<float>(INFINITY), Tensor::scalar<float>(1.0f)},
               {"Range", "64-bit count"});
  expect_error("Range", 11, {}, {Tensor::scalar<int64_t>(kMin64), Tensor::scalar<int64_t>(kMax64), Tensor::scalar<int64_t>(1)},
               {"Range", "64-bit count"});
  // A span past int64 with a large step is fine: 3 elements.
  auto y = run_kernel_once("Range", 11, {},
                           {Tensor::scalar<int64_t>(kMin64), Tensor::scalar<int64_t>(kMax64),
                            Tensor::scalar<int64_t>(int64_t{1} << 62)})[0];
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{kMin64, -k2p62, 0, k2p62}));
}

TEST(HostileSizes, OneHotDepthAndIndicesFromData) {
  const Tensor values = f32({2}, {0, 1});
  expect_error("OneHot", 11, {}, {i64({0}), Tensor::scalar<float>(kNaN), values}, {"OneHot", "depth"});
  expect_error("OneHot", 11, {}, {i64({0}), Tensor::scalar<float>(1e30f), values}, {"OneHot", "depth"});
  // NaN and huge float indices are "out of range": all off (not UB).
  auto y = run_kernel_once("OneHot", 11, {},
                           {f32({4}, {kNaN, 1e30f, -1e30f, -1.0f}), Tensor::scalar<float>(3), values})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
}

TEST(HostileSizes, TriluAndEyeLikeExtremeK) {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(run_kernel_once("Trilu", 14, {}, {x, Tensor::scalar<int64_t>(kMax64)})[0].to_vector<float>(),
            (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(run_kernel_once("Trilu", 14, {}, {x, Tensor::scalar<int64_t>(kMin64)})[0].to_vector<float>(),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(run_kernel_once("Trilu", 14, {{"upper", int64_t{0}}}, {x, Tensor::scalar<int64_t>(kMax64)})[0]
                .to_vector<float>(),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(run_kernel_once("EyeLike", 9, {{"k", kMax64}}, {x})[0].to_vector<float>(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(run_kernel_once("EyeLike", 9, {{"k", kMin64}}, {x})[0].to_vector<float>(), (std::vector<float>{0, 0, 0, 0}));
}

// hidden_size 2^62 made gates x hidden_size wrap to 0 for LSTM (4 gates), so
// empty W / R passed the shape checks and the state buffers were sized
// from the wrapped products.
TEST(HostileSizes, RecurrentHiddenSizeOverflowIsAnError) {
  const Tensor x = f32({1, 1, 1}, {1});
  const Tensor w(DataType::kFloat32, Shape{1, 0, 1});
  const Tensor r(DataType::kFloat32, Shape{1, 0, k2p62});
  expect_error("LSTM", 14, {{"hidden_size", k2p62}}, {x, w, r}, {"LSTM", "gates x hidden_size", "64-bit"});
  expect_error("GRU", 14, {{"hidden_size", k2p62}}, {x, w, r}, {"GRU", "hidden_size", "64-bit"});
}

// A huge sampling_ratio used to size the per-roi sample table with a
// wrapped product and write past it (segfault in Release).
TEST(HostileSizes, RoiAlignSamplingGridIsBounded) {
  const Tensor x(DataType::kFloat32, Shape{1, 1, 4, 4});
  const Tensor rois = f32({1, 4}, {0, 0, 3, 3});
  const Tensor bi = i64({0});
  for (int64_t ratio : {int64_t{1} << 31, int64_t{1} << 20, kMax64})
    expect_code("RoiAlign", 16, {{"sampling_ratio", ratio}}, {x, rois, bi}, StatusCode::kResourceExhausted,
                {"RoiAlign", "roi 0", "sampling_ratio"});
  expect_error("RoiAlign", 16, {{"output_height", k2p62}, {"output_width", int64_t{8}}}, {x, rois, bi},
               {"RoiAlign", "output_height x output_width", "64-bit"});
  // A roi of 1e30 pixels with sampling_ratio 0 asks for a grid of that size.
  expect_code("RoiAlign", 16, {}, {x, f32({1, 4}, {0, 0, 1e30f, 1e30f}), bi}, StatusCode::kResourceExhausted,
              {"RoiAlign", "roi 0"});
  // NaN and infinite rois sample nothing (zero output), without reading
  // outside the image.
  for (float bad : {kNaN, INFINITY, -INFINITY}) {
    auto y = run_kernel_once("RoiAlign", 16, {{"sampling_ratio", int64_t{2}}},
                             {f32({1, 1, 4, 4}, std::vector<float>(16, 1.0f)), f32({1, 4}, {bad, 0, 3, bad}), bi})[0];
    for (float v : y.to_vector<float>()) EXPECT_FALSE(v > 1.0f) << bad;
  }
}

// Attribute-driven windows and steps: used to multiply past int64 (UB).
TEST(HostileSizes, WindowsStepsAndScalesFromAttributes) {
  const Tensor x = f32({1, 1, 4}, {1, 2, 3, 4});
  expect_error("MaxPool", 12, {{"kernel_shape", std::vector<int64_t>{3}}, {"dilations", std::vector<int64_t>{k2p62}}},
               {x}, {"MaxPool", "(kernel - 1) x dilation", "64-bit"});
  expect_error("AveragePool", 11, {{"kernel_shape", std::vector<int64_t>{1}}, {"pads", std::vector<int64_t>{kMax64, 1}}},
               {x}, {"AveragePool", "padded input", "64-bit"});
  expect_error("MaxUnpool", 11,
               {{"kernel_shape", std::vector<int64_t>{2}}, {"strides", std::vector<int64_t>{k2p62}}},
               {f32({1, 1, 4}, {1, 2, 3, 4}), Tensor::from_vector<int64_t>({1, 1, 4}, {0, 1, 2, 3})},
               {"MaxUnpool", "64-bit"});
  expect_error("Resize", 13, {},
               {f32({1, 1, 2, 2}, {1, 2, 3, 4}), Tensor(), f32({4}, {1, 1, INFINITY, 1})},
               {"Resize", "scales", "64-bit"});
  // Steps past the dim select one element; kMin64 used to be negated (UB).
  const Tensor v = f32({4}, {1, 2, 3, 4});
  EXPECT_EQ(run_kernel_once("Slice", 13, {}, {v, i64({0}), i64({4}), i64({0}), i64({kMax64})})[0].to_vector<float>(),
            (std::vector<float>{1}));
  EXPECT_EQ(run_kernel_once("Slice", 13, {}, {v, i64({-1}), i64({kMin64}), i64({0}), i64({kMin64})})[0]
                .to_vector<float>(),
            (std::vector<float>{4}));
  EXPECT_EQ(run_kernel_once("Slice", 13, {}, {v, i64({kMin64}), i64({kMax64}), i64({0}), i64({2})})[0]
                .to_vector<float>(),
            (std::vector<float>{1, 3}));
}

// MelWeightMatrix sized its scratch from num_mel_bins and dft_length before
// the output was checked: 2^31 bins asked malloc for 16 GiB (fuzz_graph's
// out-of-memory finding). The output is now allocated first, so its size
// fails cleanly, naming the op and the output.
TEST(HostileSizes, MelWeightMatrixOutputIsCheckedBeforeAnyScratch) {
  const int64_t big = int64_t{1} << 31;
  expect_code("MelWeightMatrix", 17, {},
              {Tensor::scalar<int64_t>(big), Tensor::scalar<int64_t>(big), Tensor::scalar<int64_t>(16000),
               Tensor::scalar<float>(0.0f), Tensor::scalar<float>(8000.0f)},
              StatusCode::kResourceExhausted, {"MelWeightMatrix", "output 0"});
  // A real size still works: 8 bins over a 64-point DFT at 16 kHz.
  const Tensor w = run_kernel_once("MelWeightMatrix", 17, {},
                                   {Tensor::scalar<int64_t>(8), Tensor::scalar<int64_t>(64),
                                    Tensor::scalar<int64_t>(16000), Tensor::scalar<float>(0.0f),
                                    Tensor::scalar<float>(8000.0f)})[0];
  EXPECT_EQ(w.shape(), (Shape{33, 8}));
}

// Values a fuzzed graph chose (fuzz_graph, session 14): a MelWeightMatrix
// edge whose DFT bin is past int64 (3.7e21 at 2^40 Hz) and a Resize whose
// NaN region of interest makes NaN coordinates were converted to integers
// (UBSan); both are errors naming what is wrong.
TEST(HostileSizes, MelEdgesAndResizeCoordinatesPastIntegers) {
  expect_error("MelWeightMatrix", 17, {},
               {Tensor::scalar<int64_t>(8), Tensor::scalar<int64_t>(64), Tensor::scalar<int64_t>(16000),
                Tensor::scalar<float>(0.0f), Tensor::scalar<float>(1099511627776.0f)},
               {"MelWeightMatrix", "reaches DFT bin", "above what dft_length 64"});
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor roi = f32({8}, {0.0f, 0.0f, NAN, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f});
  const Tensor scales = f32({4}, {1.0f, 1.0f, 2.0f, 2.0f});
  expect_error("Resize", 13,
               {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}},
               {x, roi, scales}, {"Resize", "scales and roi must give finite coordinates"});
}

// Attributes a fuzzed graph chose, found by fuzz_graph in this session's
// longer runs (each used to overflow int64 or size scratch from them):
// errors name the op; where the values are legal the op runs.
TEST(HostileSizes, StridesBlocksizesAndWindowsFromAttributes) {
  const Tensor x = f32({1, 2, 4, 4}, std::vector<float>(32, 1.0f));
  expect_error("ConvTranspose", 11, {{"strides", std::vector<int64_t>{k2p62, 2}}},
               {x, f32({2, 1, 2, 2}, std::vector<float>(8, 1.0f))}, {"ConvTranspose", "64 bits"});
  expect_error("DepthToSpace", 13, {{"blocksize", int64_t{1} << 32}}, {x}, {"DepthToSpace", "blocksize^2"});
  // A stride past the input gives one window: the same output as stride 5.
  const Tensor wd = f32({2, 1, 3, 3}, std::vector<float>(18, 0.5f));
  const Attributes grouped{{"group", int64_t{2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  Attributes huge = grouped, five = grouped;
  huge.set("strides", std::vector<int64_t>{k2p62, k2p62});
  five.set("strides", std::vector<int64_t>{5, 5});
  EXPECT_EQ(run_kernel_once("Conv", 11, huge, {x, wd})[0].to_vector<float>(),
            run_kernel_once("Conv", 11, five, {x, wd})[0].to_vector<float>());
  // LRN over a size of 2^62 channels: every channel's window is all of them.
  const Tensor l = run_kernel_once("LRN", 13, {{"size", k2p62 + 1}}, {x})[0];
  EXPECT_EQ(l.shape(), x.shape());
}

// ---------------------------------------------------------------- indices from data

TEST(HostileIndices, OutOfRangeIndicesNameTheValueAndRange) {
  const Tensor data = f32({2, 2}, {1, 2, 3, 4});
  expect_error("Gather", 13, {}, {data, i64({100000})}, {"Gather", "100000", "[-2, 1]"});
  expect_error("Gather", 13, {}, {data, i64({-3})}, {"Gather", "-3", "[-2, 1]"});
  expect_error("GatherElements", 13, {}, {data, Tensor::from_vector<int64_t>({1, 1}, {kMin64})},
               {"GatherElements", std::to_string(kMin64)});
  expect_error("GatherND", 13, {}, {data, Tensor::from_vector<int64_t>({1, 2}, {0, 2})}, {"GatherND", "2", "[-2, 1]"});
  expect_error("ScatterElements", 13, {},
               {data, Tensor::from_vector<int64_t>({1, 1}, {100000}), f32({1, 1}, {9})},
               {"ScatterElements", "100000", "[-2, 1]"});
  expect_error("ScatterND", 13, {}, {data, Tensor::from_vector<int64_t>({1, 1}, {-5}), f32({1, 2}, {9, 9})},
               {"ScatterND", "-5"});
  // Negative indices wrap per the spec before the check.
  EXPECT_EQ(run_kernel_once("Gather", 13, {}, {data, i64({-1})})[0].to_vector<float>(), (std::vector<float>{3, 4}));
}

// ---------------------------------------------------------------- float -> integer

// onnxruntime-node 1.30 on x86-64, Cast from float32 of
// {NaN, 3e38, -3e38, 1e10, -1e10, 300.7, -300.7, -1.5}.
TEST(HostileConversions, CastMatchesOnnxRuntime) {
  const Tensor x = f32({8}, {kNaN, 3e38f, -3e38f, 1e10f, -1e10f, 300.7f, -300.7f, -1.5f});
  auto cast = [&](DataType to) { return run_kernel_once("Cast", 13, {{"to", static_cast<int64_t>(to)}}, {x})[0]; };
  const int32_t m32 = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(cast(DataType::kInt32).to_vector<int32_t>(), (std::vector<int32_t>{m32, m32, m32, m32, m32, 300, -300, -1}));
  EXPECT_EQ(cast(DataType::kInt64).to_vector<int64_t>(),
            (std::vector<int64_t>{kMin64, kMin64, kMin64, 10000000000, -10000000000, 300, -300, -1}));
  EXPECT_EQ(cast(DataType::kInt8).to_vector<int8_t>(), (std::vector<int8_t>{0, 0, 0, 0, 0, 44, -44, -1}));
  EXPECT_EQ(cast(DataType::kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 0, 0, 44, 212, 255}));
  EXPECT_EQ(cast(DataType::kInt16).to_vector<int16_t>(), (std::vector<int16_t>{0, 0, 0, 0, 0, 300, -300, -1}));
  EXPECT_EQ(cast(DataType::kUInt16).to_vector<uint16_t>(), (std::vector<uint16_t>{0, 0, 0, 0, 0, 300, 65236, 65535}));
  EXPECT_EQ(cast(DataType::kUInt32).to_vector<uint32_t>(),
            (std::vector<uint32_t>{2147483648u, 0, 2147483648u, 0, 2147483648u, 300, 4294966996u, 4294967295u}));
  EXPECT_EQ(cast(DataType::kUInt64).to_vector<uint64_t>(),
            (std::vector<uint64_t>{uint64_t{1} << 63, 0, uint64_t{1} << 63, 10000000000ull,
                                   static_cast<uint64_t>(-10000000000LL), 300, static_cast<uint64_t>(-300LL),
                                   ~uint64_t{0}}));
  EXPECT_EQ(cast(DataType::kBool).to_vector<bool>(), (std::vector<bool>(8, true)));
}

// Pow on integers used to convert an out-of-range double to int (UB).
TEST(HostileConversions, IntegerPowMatchesOnnxRuntime) {
  const int32_t m32 = std::numeric_limits<int32_t>::min();
  auto p32 = run_kernel_once("Pow", 15, {},
                             {Tensor::from_vector<int32_t>({6}, {2, 3, -2, 10, 2, 0}),
                              Tensor::from_vector<int32_t>({6}, {40, 30, 31, 10, -1, -1})})[0];
  EXPECT_EQ(p32.to_vector<int32_t>(), (std::vector<int32_t>{m32, m32, m32, m32, 0, m32}));
  auto p64 = run_kernel_once("Pow", 15, {},
                             {Tensor::from_vector<int64_t>({6}, {2, 3, -2, 10, 2, 0}),
                              Tensor::from_vector<int64_t>({6}, {70, 50, 63, 30, -1, -1})})[0];
  EXPECT_EQ(p64.to_vector<int64_t>(), (std::vector<int64_t>{kMin64, kMin64, kMin64, kMin64, 0, kMin64}));
  auto pf = run_kernel_once("Pow", 15, {},
                            {Tensor::from_vector<int32_t>({6}, {2, 3, -2, 10, 2, 0}),
                             f32({6}, {40, 0.5f, 31, kNaN, -1, -1})})[0];
  EXPECT_EQ(pf.to_vector<int32_t>(), (std::vector<int32_t>{m32, 1, m32, m32, 0, m32}));
}

// ---------------------------------------------------------------- NaN

const std::vector<float> kX5 = {kNaN, -1.0f, 1.0f, kNaN, -kNaN};

TEST(HostileNaN, ActivationsPropagateNaNLikeOnnxRuntime) {
  auto run = [](const std::string& op, Attributes a = {}) {
    return text_of(run_kernel_once(op, 14, std::move(a), {f32({5}, kX5)})[0]);
  };
  const std::vector<std::string> nan_keeping = {"Relu", "LeakyRelu", "HardSigmoid", "Sigmoid", "Tanh", "Elu", "Selu",
                                                "Softplus", "HardSwish", "Abs", "Sign", "Floor", "Celu", "Softsign"};
  for (const std::string& op : nan_keeping) {
    const auto y = run(op);
    EXPECT_EQ(y[0], "nan") << op;
    EXPECT_EQ(y[3], "nan") << op;
    EXPECT_EQ(y[4], "nan") << op;
  }
  EXPECT_EQ(run("Relu"), (std::vector<std::string>{"nan", "0.000000", "1.000000", "nan", "nan"}));
  // ThresholdedRelu: NaN > alpha is false, so 0 (ONNX Runtime agrees).
  EXPECT_EQ(run("ThresholdedRelu"), text_of(std::vector<float>{0, 0, 0, 0, 0}));
  auto clip = run_kernel_once("Clip", 13, {}, {f32({5}, kX5), Tensor::scalar<float>(0), Tensor::scalar<float>(6)})[0];
  EXPECT_EQ(text_of(clip), (std::vector<std::string>{"nan", "0.000000", "1.000000", "nan", "nan"}));
}

TEST(HostileNaN, FusedConvActivationsKeepNaN) {
  using A = kernels::Activation;
  for (A::Kind k : {A::kRelu, A::kLeakyRelu, A::kClip, A::kHardSigmoid, A::kSigmoid, A::kHardSwish, A::kTanh}) {
    A act;
    act.kind = k;
    act.a = k == A::kClip ? 0.0f : 0.2f;
    act.b = k == A::kClip ? 6.0f : 0.5f;
    std::vector<float> d = {kNaN, -1.0f, 7.0f, kNaN};
    act.apply(d.data(), static_cast<int64_t>(d.size()));
    EXPECT_TRUE(std::isnan(d[0]) && std::isnan(d[3])) << "kind " << static_cast<int>(k);
  }
}

TEST(HostileNaN, MaxMinAndSoftmax) {
  const Tensor a = f32({4}, {kNaN, 1, kNaN, 2}), b = f32({4}, {1, kNaN, kNaN, 3});
  EXPECT_EQ(text_of(run_kernel_once("Max", 13, {}, {a, b})[0]), (text_of(std::vector<float>{kNaN, kNaN, kNaN, 3})));
  EXPECT_EQ(text_of(run_kernel_once("Min", 13, {}, {a, b})[0]), (text_of(std::vector<float>{kNaN, kNaN, kNaN, 2})));
  const Tensor x = f32({3, 4}, {kNaN, 1, 2, 3, 1, kNaN, 3, 2, 5, 4, 3, kNaN});
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (const std::string& v : text_of(run_kernel_once(op, 13, {{"axis", int64_t{1}}}, {x})[0])) EXPECT_EQ(v, "nan") << op;
}

// ReduceMax / ArgMax: ONNX Runtime seeds with the first element, so a NaN
// there wins and later NaNs are skipped. spindle's ArgMax does the same;
// ReduceMax propagates every NaN (a documented, deliberate difference when
// the NaN is not first).
TEST(HostileNaN, ReductionsAndArgMax) {
  const Tensor x = f32({3, 4}, {kNaN, 1, 2, 3, 1, kNaN, 3, 2, 5, 4, 3, kNaN});
  const Attributes a = {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}};
  EXPECT_EQ(run_kernel_once("ArgMax", 13, a, {x})[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 0}));
  EXPECT_EQ(run_kernel_once("ArgMin", 13, a, {x})[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 2}));
  const Attributes r = {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}};
  EXPECT_EQ(text_of(run_kernel_once("ReduceMax", 13, r, {x})[0])[0], "nan");
  EXPECT_EQ(text_of(run_kernel_once("ReduceMin", 13, r, {x})[0])[0], "nan");
}

// MaxPool used to drop NaN even when the whole window was NaN (all-NaN
// input -> -inf / finite outputs, where ONNX Runtime returns NaN).
TEST(HostileNaN, MaxPoolWindowsOfNaNStayNaN) {
  const Tensor x = f32({1, 1, 8}, {kNaN, 1, 2, kNaN, kNaN, kNaN, -5, 3});
  const Attributes a = {{"kernel_shape", std::vector<int64_t>{2}}, {"strides", std::vector<int64_t>{2}}};
  EXPECT_EQ(text_of(run_kernel_once("MaxPool", 12, a, {x})[0]), (text_of(std::vector<float>{1, 2, kNaN, 3})));
  // With Indices: the first non-NaN maximum; an all-NaN window points at its first tap.
  auto yi = run_kernel_once("MaxPool", 12, a, {x}, 2);
  EXPECT_EQ(text_of(yi[0]), (text_of(std::vector<float>{1, 2, kNaN, 3})));
  EXPECT_EQ(yi[1].to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 4, 7}));
  // 2-D, and an all-NaN image (the PP-OCR classifier case).
  const Attributes a2 = {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}};
  auto y2 = run_kernel_once("MaxPool", 12, a2, {f32({1, 1, 2, 4}, std::vector<float>(8, kNaN))})[0];
  EXPECT_EQ(text_of(y2), (std::vector<std::string>{"nan", "nan"}));
  auto g = run_kernel_once("GlobalMaxPool", 1, {}, {f32({1, 3, 4}, {kNaN, 1, 2, 3, kNaN, kNaN, kNaN, kNaN, 5, kNaN, 3, 4})})[0];
  EXPECT_EQ(text_of(g), (text_of(std::vector<float>{3, kNaN, 5})));
}

}  // namespace
}  // namespace spindle
