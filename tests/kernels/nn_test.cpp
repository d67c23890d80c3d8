// nn_test.cpp — the kernels of src/kernels/nn: every matching ONNX backend
// node test, naive references (Conv, ConvTranspose, MatMul) on random
// shapes, bitwise determinism across thread counts, fused activations and
// error messages for bad inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/nn/nn_util.h"
#include "kernel_errors.h"
#include "onnx_node_runner.h"

namespace spindle {
namespace {

using kernels::NodeInfo;
using testing::error_of;

// ---------------------------------------------------------------- ONNX node tests

// Skipped on purpose (not listed below):
//   *_expanded                      many nodes; run by tests/conformance
//   test_basic_convinteger, test_convinteger_*, test_matmulinteger
//                                   integer ops, not float kernels (not needed)
//   test_batchnorm_*_training_mode  training_mode=1 (inference-only kernel;
//                                   it fails with kUnsupported, tested below)
//   test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn
//                                   two nodes (Constant + Resize); the runner
//                                   runs single-node tests only. The mode is
//                                   covered by NnResize.TfHalfPixelForNearest.
const char* const kNodeTests[] = {
    // Conv
    "test_basic_conv_with_padding",
    "test_basic_conv_without_padding",
    "test_conv_with_autopad_same",
    "test_conv_with_strides_and_asymmetric_padding",
    "test_conv_with_strides_no_padding",
    "test_conv_with_strides_padding",
    // ConvTranspose
    "test_convtranspose",
    "test_convtranspose_1d",
    "test_convtranspose_3d",
    "test_convtranspose_autopad_same",
    "test_convtranspose_dilations",
    "test_convtranspose_kernel_shape",
    "test_convtranspose_output_shape",
    "test_convtranspose_pad",
    "test_convtranspose_pads",
    "test_convtranspose_with_kernel",
    // Pools
    "test_averagepool_1d_default",
    "test_averagepool_2d_ceil",
    "test_averagepool_2d_default",
    "test_averagepool_2d_pads",
    "test_averagepool_2d_pads_count_include_pad",
    "test_averagepool_2d_precomputed_pads",
    "test_averagepool_2d_precomputed_pads_count_include_pad",
    "test_averagepool_2d_precomputed_same_upper",
    "test_averagepool_2d_precomputed_strides",
    "test_averagepool_2d_same_lower",
    "test_averagepool_2d_same_upper",
    "test_averagepool_2d_strides",
    "test_averagepool_3d_default",
    "test_maxpool_1d_default",
    "test_maxpool_2d_ceil",
    "test_maxpool_2d_default",
    "test_maxpool_2d_dilations",
    "test_maxpool_2d_pads",
    "test_maxpool_2d_precomputed_pads",
    "test_maxpool_2d_precomputed_same_upper",
    "test_maxpool_2d_precomputed_strides",
    "test_maxpool_2d_same_lower",
    "test_maxpool_2d_same_upper",
    "test_maxpool_2d_strides",
    "test_maxpool_2d_uint8",
    "test_maxpool_3d_default",
    "test_maxpool_with_argmax_2d_precomputed_pads",
    "test_maxpool_with_argmax_2d_precomputed_strides",
    "test_globalaveragepool",
    "test_globalaveragepool_precomputed",
    "test_globalmaxpool",
    "test_globalmaxpool_precomputed",
    // Norms
    "test_batchnorm_epsilon",
    "test_batchnorm_example",
    "test_instancenorm_epsilon",
    "test_instancenorm_example",
    "test_layer_normalization_2d_axis0",
    "test_layer_normalization_2d_axis1",
    "test_layer_normalization_2d_axis_negative_1",
    "test_layer_normalization_2d_axis_negative_2",
    "test_layer_normalization_3d_axis0_epsilon",
    "test_layer_normalization_3d_axis1_epsilon",
    "test_layer_normalization_3d_axis2_epsilon",
    "test_layer_normalization_3d_axis_negative_1_epsilon",
    "test_layer_normalization_3d_axis_negative_2_epsilon",
    "test_layer_normalization_3d_axis_negative_3_epsilon",
    "test_layer_normalization_4d_axis0",
    "test_layer_normalization_4d_axis1",
    "test_layer_normalization_4d_axis2",
    "test_layer_normalization_4d_axis3",
    "test_layer_normalization_4d_axis_negative_1",
    "test_layer_normalization_4d_axis_negative_2",
    "test_layer_normalization_4d_axis_negative_3",
    "test_layer_normalization_4d_axis_negative_4",
    "test_layer_normalization_default_axis",
    "test_lrn",
    "test_lrn_default",
    // MatMul / Gemm
    "test_matmul_2d",
    "test_matmul_3d",
    "test_matmul_4d",
    "test_gemm_all_attributes",
    "test_gemm_alpha",
    "test_gemm_beta",
    "test_gemm_default_matrix_bias",
    "test_gemm_default_no_bias",
    "test_gemm_default_scalar_bias",
    "test_gemm_default_single_elem_vector_bias",
    "test_gemm_default_vector_bias",
    "test_gemm_default_zero_bias",
    "test_gemm_transposeA",
    "test_gemm_transposeB",
    // Resize / Upsample
    "test_resize_downsample_scales_cubic",
    "test_resize_downsample_scales_cubic_A_n0p5_exclude_outside",
    "test_resize_downsample_scales_cubic_align_corners",
    "test_resize_downsample_scales_linear",
    "test_resize_downsample_scales_linear_align_corners",
    "test_resize_downsample_scales_nearest",
    "test_resize_downsample_sizes_cubic",
    "test_resize_downsample_sizes_linear_pytorch_half_pixel",
    "test_resize_downsample_sizes_nearest",
    "test_resize_tf_crop_and_resize",
    "test_resize_upsample_scales_cubic",
    "test_resize_upsample_scales_cubic_A_n0p5_exclude_outside",
    "test_resize_upsample_scales_cubic_align_corners",
    "test_resize_upsample_scales_cubic_asymmetric",
    "test_resize_upsample_scales_linear",
    "test_resize_upsample_scales_linear_align_corners",
    "test_resize_upsample_scales_nearest",
    "test_resize_upsample_sizes_cubic",
    "test_resize_upsample_sizes_nearest",
    "test_resize_upsample_sizes_nearest_ceil_half_pixel",
    "test_resize_upsample_sizes_nearest_floor_align_corners",
    "test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric",
    "test_upsample_nearest",
    "test_rnn_seq_length",
    "test_simple_rnn_batchwise",
    "test_simple_rnn_defaults",
    "test_simple_rnn_with_initial_bias",
    "test_gru_batchwise",
    "test_gru_defaults",
    "test_gru_seq_length",
    "test_gru_with_initial_bias",
    "test_lstm_batchwise",
    "test_lstm_defaults",
    "test_lstm_with_initial_bias",
    "test_lstm_with_peepholes",
    "test_matmulinteger",
    "test_qlinearmatmul_2D",
    "test_qlinearmatmul_3D",
    "test_basic_convinteger",
    "test_convinteger_with_padding",
    "test_convinteger_without_padding",
    "test_qlinearconv",
};

SPINDLE_ONNX_NODE_TEST_SUITE(NnOnnx, NnNodeTest, kNodeTests);

// ---------------------------------------------------------------- helpers

Tensor random_tensor(Shape shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(DataType::kFloat32, std::move(shape));
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

NodeInfo make_node(const std::string& op, int opset, Attributes attrs, int num_inputs, int num_outputs = 1) {
  NodeInfo n;
  n.op_type = op;
  n.opset = opset;
  n.attrs = std::move(attrs);
  n.num_inputs = num_inputs;
  n.num_outputs = num_outputs;
  return n;
}

::testing::AssertionResult bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    return ::testing::AssertionFailure() << a.describe() << " vs " << b.describe();
  if (std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) != 0) {
    const float* x = a.data<float>();
    const float* y = b.data<float>();
    for (int64_t i = 0; i < a.numel(); ++i)
      if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0)
        return ::testing::AssertionFailure() << "element " << i << " differs: " << x[i] << " vs " << y[i];
  }
  return ::testing::AssertionSuccess();
}

struct ConvCase {
  std::string name;
  Shape x;          // N x C x spatial
  Shape w;          // M x C/group x k
  int64_t group;
  std::vector<int64_t> strides, dilations, pads;
  bool bias;
};

// Naive Conv with explicit pads (any rank 3..5).
Tensor reference_conv(const Tensor& X, const Tensor& W, const Tensor* B, const ConvCase& c) {
  const int nd = static_cast<int>(X.rank() - 2);
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p[3] = {0, 0, 0}, out[3] = {1, 1, 1};
  Shape ys = {X.dim(0), W.dim(0)};
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    in[j] = X.dim(2 + i);
    k[j] = W.dim(2 + i);
    s[j] = c.strides[static_cast<size_t>(i)];
    d[j] = c.dilations[static_cast<size_t>(i)];
    p[j] = c.pads[static_cast<size_t>(i)];
    const int64_t pe = c.pads[static_cast<size_t>(i + nd)];
    out[j] = (in[j] + p[j] + pe - (k[j] - 1) * d[j] - 1) / s[j] + 1;
    ys.push_back(out[j]);
  }
  Tensor Y(DataType::kFloat32, ys);
  const int64_t N = X.dim(0), C = X.dim(1), M = W.dim(0), Cg = W.dim(1), G = c.group, Mg = M / G;
  const float* x = X.data<float>();
  const float* w = W.data<float>();
  float* y = Y.mutable_data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t g = m / Mg;
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = B ? B->data<float>()[m] : 0.0;
            for (int64_t cg = 0; cg < Cg; ++cg) {
              const int64_t ci = g * Cg + cg;
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t i0 = o0 * s[0] - p[0] + k0 * d[0];
                    const int64_t i1 = o1 * s[1] - p[1] + k1 * d[1];
                    const int64_t i2 = o2 * s[2] - p[2] + k2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                    const double xv = x[(((n * C + ci) * in[0] + i0) * in[1] + i1) * in[2] + i2];
                    const double wv = w[(((m * Cg + cg) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                    acc += xv * wv;
                  }
            }
            y[(((n * M + m) * out[0] + o0) * out[1] + o1) * out[2] + o2] = static_cast<float>(acc);
          }
    }
  (void)C;
  return Y;
}

Attributes conv_attrs(const ConvCase& c) {
  return Attributes{{"group", c.group}, {"strides", c.strides}, {"dilations", c.dilations}, {"pads", c.pads}};
}

std::vector<ConvCase> conv_cases() {
  return {
      {"general3x3", {2, 6, 11, 13}, {8, 6, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"general3x3_s2_asym", {1, 5, 17, 12}, {7, 5, 3, 3}, 1, {2, 2}, {1, 1}, {1, 0, 2, 1}, true},
      {"strides_2x1", {1, 4, 16, 20}, {6, 4, 3, 3}, 1, {2, 1}, {1, 1}, {1, 1, 1, 1}, false},
      {"dilated", {1, 3, 20, 19}, {5, 3, 3, 3}, 1, {1, 2}, {2, 3}, {2, 3, 1, 0}, true},
      {"grouped", {2, 8, 9, 10}, {12, 2, 3, 3}, 4, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"kernel1x3", {1, 6, 5, 40}, {10, 6, 1, 3}, 1, {1, 1}, {1, 1}, {0, 1, 0, 1}, true},
      {"pointwise", {2, 16, 7, 9}, {24, 16, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, true},
      {"pointwise_grouped", {1, 16, 6, 6}, {8, 4, 1, 1}, 4, {1, 1}, {1, 1}, {0, 0, 0, 0}, false},
      {"pointwise_strided", {1, 8, 9, 9}, {4, 8, 1, 1}, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}, true},
      {"pointwise_wide", {1, 20, 8, 45}, {13, 20, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, true},
      {"pointwise_1x1_input", {2, 37, 1, 1}, {19, 37, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, true},
      {"pointwise_1x1_input_grouped", {1, 16, 1, 1}, {8, 4, 1, 1}, 4, {1, 1}, {1, 1}, {0, 0, 0, 0}, false},
      {"implicit_wide_rows", {1, 5, 9, 70}, {11, 5, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"implicit_s2_dilated", {1, 4, 15, 90}, {9, 4, 3, 3}, 1, {2, 2}, {2, 1}, {2, 1, 0, 3}, true},
      {"implicit_grouped_1x3", {2, 6, 4, 64}, {8, 3, 1, 3}, 2, {1, 1}, {1, 1}, {0, 1, 0, 1}, false},
      {"conv1d_wide", {1, 3, 100}, {4, 3, 5}, 1, {1}, {1}, {2, 2}, true},
      {"implicit_k_blocked", {1, 50, 6, 40}, {10, 50, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"im2col_k_blocked", {1, 50, 5, 7}, {17, 50, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      // Few output positions, many rows: the im2col columns are packed once
      // and shared by row blocks (conv.cpp's two-pass path).
      {"im2col_shared_columns", {1, 64, 7, 7}, {96, 64, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"im2col_shared_columns_grouped", {2, 128, 6, 7}, {192, 64, 3, 3}, 2, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"pointwise_k_blocked", {1, 400, 4, 8}, {9, 400, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, true},
      // Output rows of <= 16 columns, column stride 1: the im2col from
      // zero-padded rows (row stride 2, dilation, asymmetric pads; pads wider
      // than the kernel, so some taps read only padding).
      {"im2col_short_rows_dilated", {1, 40, 13, 11}, {6, 40, 3, 3}, 1, {2, 1}, {2, 2}, {2, 1, 0, 3}, true},
      {"im2col_short_rows_wide_pads", {2, 30, 5, 4}, {5, 30, 3, 3}, 1, {1, 1}, {1, 1}, {3, 4, 2, 5}, true},
      // Three row blocks of 256 KB columns each: the 1x1 input is packed
      // once and shared by them (conv.cpp's two-pass path).
      {"pointwise_shared_input", {2, 1024, 10, 10}, {96, 1024, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, true},
      {"depthwise3x3", {2, 6, 15, 21}, {6, 1, 3, 3}, 6, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"depthwise3x3_s2", {1, 5, 16, 35}, {5, 1, 3, 3}, 5, {2, 2}, {1, 1}, {1, 1, 1, 1}, true},
      {"depthwise5x5", {1, 4, 19, 40}, {4, 1, 5, 5}, 4, {1, 1}, {1, 1}, {2, 2, 2, 2}, false},
      {"depthwise5x5_s2", {1, 3, 20, 41}, {3, 1, 5, 5}, 3, {2, 2}, {1, 1}, {2, 2, 2, 2}, true},
      {"depthwise5x5_s2x1", {1, 3, 12, 33}, {3, 1, 5, 5}, 3, {2, 1}, {1, 1}, {2, 2, 2, 2}, true},
      {"depthwise3x3_s1x2", {1, 3, 12, 33}, {3, 1, 3, 3}, 3, {1, 2}, {1, 1}, {1, 1, 1, 1}, true},
      {"depthwise_s3_dilated", {1, 3, 14, 50}, {3, 1, 3, 4}, 3, {3, 3}, {2, 2}, {3, 0, 1, 4}, true},
      {"depthwise_multiplier", {1, 3, 10, 10}, {6, 1, 3, 3}, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"depthwise_7x7", {1, 2, 20, 22}, {2, 1, 7, 7}, 2, {1, 1}, {1, 1}, {3, 3, 3, 3}, true},
      // 8 channels and more: blocks of 8 channels (depthwise.h), the rest one plane at a time.
      {"depthwise_blocks_3x3", {2, 11, 15, 21}, {11, 1, 3, 3}, 11, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"depthwise_blocks_5x5_s2", {1, 16, 20, 41}, {16, 1, 5, 5}, 16, {2, 2}, {1, 1}, {2, 2, 2, 2}, true},
      {"depthwise_blocks_dilated", {1, 8, 14, 50}, {8, 1, 3, 4}, 8, {3, 3}, {2, 2}, {3, 0, 1, 4}, false},
      {"depthwise_blocks_7x7_small", {1, 24, 7, 7}, {24, 1, 7, 7}, 24, {1, 1}, {1, 1}, {3, 3, 3, 3}, true},
      {"depthwise_blocks_1d", {1, 9, 37}, {9, 1, 5}, 9, {1}, {2}, {4, 4}, true},
      {"conv1d", {2, 4, 30}, {5, 4, 3}, 1, {2}, {1}, {1, 2}, true},
      {"depthwise1d", {1, 4, 37}, {4, 1, 5}, 4, {1}, {2}, {4, 4}, true},
      // One input channel into many (an audio front end): the GEMM path, not depthwise.
      {"conv1d_one_channel", {2, 1, 83}, {24, 1, 5}, 1, {4}, {1}, {2, 2}, true},
      {"conv1d_one_channel_dilated", {1, 1, 40}, {9, 1, 3}, 1, {1}, {3}, {0, 1}, false},
      // Stride 1, short outputs: the direct 1-D path (tails of rows and of vectors).
      {"conv1d_direct", {2, 6, 37}, {11, 6, 3}, 1, {1}, {1}, {1, 1}, true},
      {"conv1d_direct_dilated", {1, 5, 50}, {6, 5, 5}, 1, {1}, {2}, {3, 0}, true},
      {"conv1d_direct_one_output", {1, 3, 5}, {7, 3, 5}, 1, {1}, {1}, {0, 0}, false},
      {"conv1d_direct_24", {1, 64, 24}, {64, 64, 3}, 1, {1}, {1}, {1, 1}, true},
      {"conv1d_direct_128", {1, 9, 126}, {5, 9, 5}, 1, {1}, {1}, {2, 2}, true},
      {"conv3d", {1, 3, 5, 6, 7}, {4, 3, 2, 3, 3}, 1, {1, 2, 1}, {1, 1, 2}, {0, 1, 1, 1, 0, 2}, true},
      {"depthwise3d", {1, 3, 5, 6, 7}, {3, 1, 3, 3, 3}, 3, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, true},
  };
}

// ---------------------------------------------------------------- Conv vs reference

class NnConvReference : public ::testing::TestWithParam<ConvCase> {};

TEST_P(NnConvReference, MatchesNaiveLoops) {
  const ConvCase& c = GetParam();
  const Tensor X = random_tensor(c.x, 1), W = random_tensor(c.w, 2), B = random_tensor({c.w[0]}, 3);
  const Tensor want = reference_conv(X, W, c.bias ? &B : nullptr, c);
  std::vector<Tensor> inputs = {X, W};
  if (c.bias) inputs.push_back(B);
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
    // Run-time weights and constant (pre-packed) weights.
    NodeInfo node = make_node("Conv", 11, conv_attrs(c), static_cast<int>(inputs.size()));
    auto got = kernels::run_kernel_once(node, inputs, p);
    EXPECT_TRUE(testing::tensors_close(got[0], want, 1e-4, 1e-4)) << c.name;
    node.const_inputs = {nullptr, &W, c.bias ? &B : nullptr};
    got = kernels::run_kernel_once(node, inputs, p);
    EXPECT_TRUE(testing::tensors_close(got[0], want, 1e-4, 1e-4)) << c.name << " (constant W)";
  }
}

INSTANTIATE_TEST_SUITE_P(NnShapes, NnConvReference, ::testing::ValuesIn(conv_cases()),
                         [](const ::testing::TestParamInfo<ConvCase>& i) { return i.param.name; });

// Depthwise channels computed in blocks of 8 (one channel per vector lane)
// give the same bits as each channel computed alone (one plane at a time),
// with a fused activation (Relu, Clip, HardSigmoid and HardSwish applied as
// 3x3 and 5x5 rows are stored, Tanh as a pass), at any thread count. Widths 9-14 put 1-7 columns
// in the last partial group of 8 pixels on both the input and output side.
TEST(NnConv, DepthwiseChannelBlocksEqualSinglePlanesBitwise) {
  struct Case {
    Shape x;
    int64_t k, s, pad;
  };
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  for (const Case& c : {Case{{2, 16, 13, 13}, 3, 1, 1}, Case{{1, 12, 28, 30}, 5, 2, 2}, Case{{1, 8, 7, 7}, 3, 2, 1},
                        Case{{1, 8, 5, 9}, 3, 1, 1}, Case{{1, 8, 4, 10}, 3, 1, 1}, Case{{1, 8, 3, 11}, 3, 1, 1},
                        Case{{1, 9, 6, 12}, 5, 1, 2}, Case{{1, 8, 4, 14}, 5, 1, 2}})
    for (const char* act : {"Relu", "Clip", "HardSigmoid", "HardSwish", "Tanh"}) {
      const int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3];
      const Tensor X = random_tensor(c.x, 61, -3.0f, 3.0f), Wt = random_tensor({C, 1, c.k, c.k}, 62);
      const Tensor B = random_tensor({C}, 63);
      Attributes attrs{{"kernel_shape", std::vector<int64_t>{c.k, c.k}},
                       {"strides", std::vector<int64_t>{c.s, c.s}},
                       {"pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad}},
                       {"activation", std::string(act)},
                       {"activation_params", std::string(act) == "Clip"          ? std::vector<float>{-0.5f, 0.7f}
                                             : std::string(act) == "HardSigmoid" ? std::vector<float>{0.2f, 0.5f}
                                                                                 : std::vector<float>{}}};
      Attributes all = attrs;
      all.set("group", C);
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
        const Tensor Y = kernels::run_kernel_once("Conv", 11, all, {X, Wt, B}, 1, p)[0];
        const int64_t plane = Y.dim(2) * Y.dim(3);
        for (int64_t ch = 0; ch < C; ++ch) {
          std::vector<float> xc(static_cast<size_t>(N * H * W));
          for (int64_t n = 0; n < N; ++n)
            std::memcpy(&xc[static_cast<size_t>(n * H * W)], X.data<float>() + (n * C + ch) * H * W,
                        static_cast<size_t>(H * W) * sizeof(float));
          const Tensor Xc = Tensor::from_vector<float>({N, 1, H, W}, xc);
          const Tensor Wc = Tensor::from_vector<float>(
              {1, 1, c.k, c.k}, std::vector<float>(Wt.data<float>() + ch * c.k * c.k, Wt.data<float>() + (ch + 1) * c.k * c.k));
          const Tensor Bc = Tensor::from_vector<float>({1}, {B.data<float>()[ch]});
          const Tensor Yc = kernels::run_kernel_once("Conv", 11, attrs, {Xc, Wc, Bc})[0];
          for (int64_t n = 0; n < N; ++n)
            ASSERT_EQ(0, std::memcmp(Y.data<float>() + (n * C + ch) * plane, Yc.data<float>() + n * plane,
                                     static_cast<size_t>(plane) * sizeof(float)))
                << "channel " << ch << " image " << n << " k " << c.k << " s " << c.s << " " << act;
        }
      }
    }
}

TEST(NnBatchNorm, TrainingModeNormalizesWithBatchStatisticsAndMovesTheRunningOnes) {
  // X [3, 2, 5]: channel 0 ramps, channel 1 is constant (variance 0).
  std::vector<float> x(30);
  for (int n = 0; n < 3; ++n)
    for (int i = 0; i < 5; ++i) {
      x[static_cast<size_t>(n * 10 + i)] = static_cast<float>(n * 5 + i);
      x[static_cast<size_t>(n * 10 + 5 + i)] = 4.0f;
    }
  const Tensor X = Tensor::from_vector<float>({3, 2, 5}, x);
  const Tensor ones = Tensor::from_vector<float>({2}, {1, 1}), zeros = Tensor::from_vector<float>({2}, {0, 0});
  const Tensor mean = Tensor::from_vector<float>({2}, {10, 0}), var = Tensor::from_vector<float>({2}, {2, 2});
  std::vector<std::vector<float>> per_pool;
  for (int threads : {1, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    auto out = kernels::run_kernel_once("BatchNormalization", 15,
                               {{"training_mode", int64_t{1}}, {"momentum", 0.75f}},
                               {X, ones, zeros, mean, var}, 3, pool.get());
    // Channel 0: values 0..14, mean 7, population variance (15^2 - 1) / 12.
    const double var0 = (15.0 * 15.0 - 1.0) / 12.0;
    const auto y = out[0].to_vector<float>();
    EXPECT_NEAR(y[0], (0 - 7) / std::sqrt(var0), 1e-5);
    EXPECT_NEAR(y[24], (14 - 7) / std::sqrt(var0), 1e-5);
    EXPECT_EQ(y[5], 0.0f);  // a constant channel: x - mean is exactly 0
    EXPECT_EQ(out[1].to_vector<float>()[0], 10 * 0.75f + 7 * 0.25f);
    EXPECT_NEAR(out[2].to_vector<float>()[0], 2 * 0.75 + var0 * 0.25, 1e-5);
    EXPECT_EQ(out[1].to_vector<float>()[1], 4 * 0.25f);
    EXPECT_EQ(out[2].to_vector<float>()[1], 2 * 0.75f);
    per_pool.push_back(y);
  }
  EXPECT_EQ(per_pool[0], per_pool[1]);
}

TEST(NnConv, RandomConfigurationsMatchNaiveLoops) {
  // 80 random shapes across every path (depthwise, pointwise, implicit GEMM,
  // im2col, 1-D / 2-D / 3-D, groups, strides, dilations, asymmetric pads).
  std::mt19937 rng(2024);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  for (int iter = 0; iter < 80; ++iter) {
    ConvCase c;
    c.name = "random" + std::to_string(iter);
    const int nd = pick(0, 9) < 7 ? 2 : (pick(0, 1) ? 1 : 3);
    const int64_t group = pick(0, 3) == 0 ? pick(2, 4) : 1;
    const bool depthwise = pick(0, 3) == 0;
    const int64_t C = depthwise ? pick(1, 6) : group * pick(1, 5);
    const int64_t G = depthwise ? C : group;
    const int64_t M = G * (depthwise ? pick(1, 2) : pick(1, 6));
    c.group = G;
    c.x = {pick(1, 2), C};
    c.w = {M, C / G};
    for (int i = 0; i < nd; ++i) {
      const int64_t k = pick(0, 2) == 0 ? 1 : pick(2, 5), s = pick(1, 3), d = k > 1 && pick(0, 3) == 0 ? 2 : 1;
      const int64_t pb = pick(0, 2), pe = pick(0, 2);
      const int64_t dk = (k - 1) * d + 1;
      const int64_t in = std::max<int64_t>(dk - pb - pe, 1) + pick(0, nd == 3 ? 5 : 40);
      c.x.push_back(in);
      c.w.push_back(k);
      c.strides.push_back(s);
      c.dilations.push_back(d);
      c.pads.push_back(pb);
    }
    for (int i = 0; i < nd; ++i) c.pads.push_back(pick(0, 2));
    // Keep every output extent >= 1.
    for (int i = 0; i < nd; ++i) {
      const size_t si = static_cast<size_t>(i);
      const int64_t dk = (c.w[si + 2] - 1) * c.dilations[si] + 1;
      while (c.x[si + 2] + c.pads[si] + c.pads[si + static_cast<size_t>(nd)] < dk) ++c.x[si + 2];
    }
    c.bias = pick(0, 1) == 1;
    const Tensor X = random_tensor(c.x, 300 + iter), W = random_tensor(c.w, 400 + iter), B = random_tensor({M}, 500 + iter);
    const Tensor want = reference_conv(X, W, c.bias ? &B : nullptr, c);
    std::vector<Tensor> inputs = {X, W};
    if (c.bias) inputs.push_back(B);
    NodeInfo node = make_node("Conv", 11, conv_attrs(c), static_cast<int>(inputs.size()));
    node.const_inputs = {nullptr, &W, c.bias ? &B : nullptr};
    const Tensor got = kernels::run_kernel_once(node, inputs, pool.get())[0];
    EXPECT_TRUE(testing::tensors_close(got, want, 1e-4, 1e-4))
        << c.name << ": X " << shape_to_string(c.x) << " W " << shape_to_string(c.w) << " group " << G << " strides "
        << shape_to_string(c.strides) << " dilations " << shape_to_string(c.dilations) << " pads "
        << shape_to_string(c.pads);
  }
}

TEST(NnConv, DirectOneDimensionalPathGivesTheSameBitsForAnyThreadCount) {
  // A constant W, stride 1, 40 outputs: the direct 1-D path, split in blocks
  // of output channels across the pool; Relu fused as the optimizer would.
  const Tensor X = random_tensor({2, 48, 40}, 11), W = random_tensor({70, 48, 3}, 12), B = random_tensor({70}, 13);
  Attributes attrs;
  attrs.set("pads", std::vector<int64_t>{1, 1});
  attrs.set("activation", std::string("Relu"));
  NodeInfo node = make_node("Conv", 11, attrs, 3);
  node.const_inputs = {nullptr, &W, &B};
  const Tensor serial = kernels::run_kernel_once(node, {X, W, B}, nullptr)[0];
  ConvCase c{"", {2, 48, 40}, {70, 48, 3}, 1, {1}, {1}, {1, 1}, true};
  std::vector<float> want = reference_conv(X, W, &B, c).to_vector<float>();
  for (float& v : want) v = std::max(v, 0.0f);
  EXPECT_TRUE(testing::tensors_close(serial, Tensor::from_vector<float>({2, 70, 40}, want), 1e-4, 1e-4));
  for (int threads : {2, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    EXPECT_TRUE(bitwise_equal(serial, kernels::run_kernel_once(node, {X, W, B}, pool.get())[0])) << threads << " threads";
  }
}

// A Conv with bias, a fused residual R and Relu on random data (seeds from
// `seed`): its inputs, the reference Relu(conv + R) and the node with the
// attributes `attrs` (plus the Relu); the weights are left as run-time
// inputs (const_inputs to set them constant).
struct FusedConv {
  Tensor X, W, B, R, want;
  NodeInfo node;
  std::string label;
  FusedConv(const ConvCase& c, Attributes attrs, uint32_t& seed)
      : X(random_tensor(c.x, ++seed)), W(random_tensor(c.w, ++seed)), B(random_tensor({c.w[0]}, ++seed)) {
    const Tensor ref = reference_conv(X, W, &B, c);
    R = random_tensor(ref.shape(), ++seed);
    std::vector<float> v = ref.to_vector<float>();
    const float* r = R.data<float>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::max(v[i] + r[i], 0.0f);
    want = Tensor::from_vector<float>(ref.shape(), v);
    attrs.set("activation", std::string("Relu"));
    node = make_node("Conv", 11, attrs, 4);
    label = shape_to_string(c.x) + " -> " + std::to_string(c.w[0]);
  }
  Tensor run(ThreadPool* pool = nullptr) const { return kernels::run_kernel_once(node, {X, W, B, R}, pool)[0]; }
  // Constant W and B from here on.
  void constant_weights() { node.const_inputs = {nullptr, &W, &B, nullptr}; }
  // The node at each thread count gives `serial`'s bits.
  void expect_bits(const Tensor& serial, std::initializer_list<int> threads, const std::string& what) const {
    for (int t : threads) {
      auto pool = ThreadPool::create(ThreadingOptions{.num_threads = t}).value();
      EXPECT_TRUE(bitwise_equal(serial, run(pool.get()))) << label << ": " << what << ", " << t << " threads";
    }
  }
};

// 3x3 stride-1 convolutions with enough channels take the Winograd F(4x4,
// 3x3) path: ragged tiles (outputs not multiples of 4), asymmetric pads,
// batch 2, output channels in several blocks, output rows in several
// bands, with bias, a fused residual and Relu. Its error stays within 1e-5
// of the output's scale; constant (packed) and run-time weights, and any
// thread count, give the same bits.
TEST(NnConv, WinogradPathMatchesTheReferenceAndGivesTheSameBitsEverywhere) {
  struct Case {
    Shape x;
    int64_t m;
    std::vector<int64_t> pads;
  };
  const Case cases[] = {
      {{2, 16, 13, 14}, 32, {1, 1, 1, 1}},    // 13 x 14 outputs in 4 x 4 ragged tiles, batch 2
      {{1, 33, 18, 16}, 67, {0, 0, 0, 0}},    // 16 x 14 outputs, no pads, a short last channel block
      {{1, 20, 14, 14}, 70, {2, 1, 0, 2}},    // asymmetric pads (14 x 15 outputs)
      {{1, 24, 21, 21}, 40, {1, 1, 1, 1}},    // 36 tiles: a last panel of 4 (shared V)
      {{1, 16, 130, 130}, 64, {1, 1, 1, 1}},  // large image: three bands of tile rows, each with its own V
      {{2, 32, 66, 66}, 64, {1, 1, 1, 1}},    // large images: two bands per image, batch 2
  };
  uint32_t seed = 700;
  for (const Case& k : cases) {
    const int64_t C = k.x[1], M = k.m;
    Attributes attrs;
    attrs.set("pads", k.pads);
    FusedConv f(ConvCase{"", k.x, {M, C, 3, 3}, 1, {1, 1}, {1, 1}, k.pads, true}, attrs, seed);
    const Tensor runtime = f.run();
    double scale = 0.0, err = 0.0;
    const float* got = runtime.data<float>();
    const float* want = f.want.data<float>();
    for (int64_t i = 0; i < f.want.numel(); ++i) {
      scale = std::max(scale, std::abs(static_cast<double>(want[i])));
      err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
    }
    EXPECT_LE(err, 1e-5 * scale) << f.label << ": error " << err << " at output scale " << scale;
    f.constant_weights();
    f.node.prepack = false;
    EXPECT_TRUE(bitwise_equal(runtime, f.run())) << f.label << ": prepacking off";
    f.node.prepack = true;
    f.expect_bits(runtime, {1, 2, 3}, "packed weights");
  }
}

// A strided 1x1 convolution without pads runs the pointwise paths on its
// subsampled input: 2-D strides 2 and (2, 3) on odd sizes, 1-D and 3-D,
// few output channels (B read in place) and more (B packed), batch 2, with
// bias, a fused residual and Relu; it matches the reference and gives the
// same bits for any thread count.
TEST(NnConv, StridedPointwiseMatchesTheReferenceForAnyThreadCount) {
  struct Case {
    Shape x;
    int64_t m;
    std::vector<int64_t> strides;
  };
  const Case cases[] = {
      {{2, 32, 17, 23}, 48, {2, 2}},     // few rows: B read in place
      {{1, 40, 15, 29}, 70, {2, 3}},     // packed B, unequal strides
      {{1, 24, 37}, 64, {2}},            // 1-D
      {{1, 16, 5, 9, 11}, 40, {2, 2, 3}},  // 3-D
  };
  uint32_t seed = 900;
  for (const Case& k : cases) {
    Shape wshape{k.m, k.x[1]};
    for (size_t i = 2; i < k.x.size(); ++i) wshape.push_back(1);
    Attributes attrs;
    attrs.set("strides", k.strides);
    FusedConv f(ConvCase{"", k.x, wshape, 1, k.strides, std::vector<int64_t>(k.strides.size(), 1),
                         std::vector<int64_t>(2 * k.strides.size(), 0), true},
                attrs, seed);
    f.constant_weights();
    const Tensor serial = f.run();
    EXPECT_TRUE(testing::tensors_close(serial, f.want, 1e-4, 1e-4)) << f.label;
    f.expect_bits(serial, {2, 3}, "constant weights");
  }
}

// Groups of 8 output channels (RegNet's group width 8) take the direct
// grouped kernel (8 output channels in the vector lanes) when the weights
// are constant: 3x3 at stride 1 and 2 (its input-reuse loops) on rows of
// 5..30 columns (segments of up to 12 pixels), other kernels, strides and
// dilations (the general loop), 4 input channels a group, batch 2, pads,
// bias, a fused residual and Relu. It matches the reference, equals the
// same convolution with run-time weights (im2col and the SGEMM, the same
// sums) bit for bit, and any thread count gives the same bits.
TEST(NnConv, GroupedPathEqualsTheGemmPathBitwise) {
  struct Case {
    Shape x;
    int64_t m, group;
    std::vector<int64_t> k, strides, dilations, pads;
  };
  const Case cases[] = {
      {{1, 48, 15, 30}, 48, 6, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {{2, 40, 17, 9}, 40, 5, {3, 3}, {2, 2}, {1, 1}, {1, 0, 1, 1}},
      {{1, 24, 7, 5}, 48, 6, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},  // 4 input channels a group
      {{1, 32, 13, 14}, 32, 4, {5, 3}, {1, 2}, {2, 1}, {4, 1, 4, 2}},  // stride 2, dilated rows
      {{1, 32, 11, 20}, 32, 4, {3, 5}, {1, 3}, {2, 1}, {2, 2, 2, 1}},  // 5 taps a row, stride 3
      {{1, 16, 12, 16}, 16, 2, {5, 3}, {2, 1}, {1, 2}, {2, 2, 2, 2}},  // dilated taps along the row
  };
  uint32_t seed = 950;
  for (const Case& k : cases) {
    Attributes attrs;
    attrs.set("group", k.group);
    attrs.set("kernel_shape", k.k);
    attrs.set("strides", k.strides);
    attrs.set("dilations", k.dilations);
    attrs.set("pads", k.pads);
    FusedConv f(ConvCase{"", k.x, {k.m, k.x[1] / k.group, k.k[0], k.k[1]}, k.group, k.strides, k.dilations, k.pads,
                         true},
                attrs, seed);
    const Tensor runtime = f.run();
    EXPECT_TRUE(testing::tensors_close(runtime, f.want, 1e-4, 1e-4)) << f.label;
    f.constant_weights();
    f.expect_bits(runtime, {1, 2, 3}, "constant weights");
  }
}

TEST(NnConv, AutoPadSameMatchesExplicitPads) {
  const Tensor X = random_tensor({1, 3, 10, 11}, 4), W = random_tensor({4, 3, 3, 3}, 5);
  // Stride 2: out = ceil(in / 2); total pad = (out - 1) * 2 + 3 - in.
  // H: in 10, out 5, total 1 -> (0, 1) upper, (1, 0) lower; W: in 11, out 6, total 2 -> (1, 1).
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    ConvCase c{"", {1, 3, 10, 11}, {4, 3, 3, 3}, 1, {2, 2}, {1, 1}, {}, false};
    const std::string m = mode;
    c.pads = m == "SAME_UPPER" ? std::vector<int64_t>{0, 1, 1, 1}
             : m == "SAME_LOWER" ? std::vector<int64_t>{1, 1, 0, 1}
                                 : std::vector<int64_t>{0, 0, 0, 0};
    auto got = kernels::run_kernel_once("Conv", 11, {{"auto_pad", m}, {"strides", c.strides}}, {X, W});
    EXPECT_TRUE(testing::tensors_close(got[0], reference_conv(X, W, nullptr, c), 1e-4, 1e-4)) << mode;
  }
}

// ---------------------------------------------------------------- determinism

struct DeterminismCase {
  std::string name;
  std::string op;
  Attributes attrs;
  std::vector<Shape> shapes;
};

class NnDeterminism : public ::testing::TestWithParam<DeterminismCase> {};

TEST_P(NnDeterminism, BitwiseIdenticalForAnyThreadCount) {
  const DeterminismCase& c = GetParam();
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c.shapes.size(); ++i) inputs.push_back(random_tensor(c.shapes[i], 100 + static_cast<uint32_t>(i)));
  const Tensor serial = kernels::run_kernel_once(c.op, 13, c.attrs, inputs, 1, nullptr)[0];
  for (int threads : {1, 2, 3, 5}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    for (int rep = 0; rep < 2; ++rep) {
      const Tensor par = kernels::run_kernel_once(c.op, 13, c.attrs, inputs, 1, pool.get())[0];
      EXPECT_TRUE(bitwise_equal(serial, par)) << c.name << " with " << threads << " threads";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    NnOps, NnDeterminism,
    ::testing::Values(
        DeterminismCase{"conv_general", "Conv", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                        {{1, 24, 40, 44}, {32, 24, 3, 3}, {32}}},
        DeterminismCase{"conv_general_s2",
                        "Conv",
                        {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}},
                        {{1, 3, 160, 160}, {16, 3, 3, 3}}},
        DeterminismCase{"conv_depthwise",
                        "Conv",
                        {{"group", int64_t{48}}, {"pads", std::vector<int64_t>{2, 2, 2, 2}}},
                        {{1, 48, 40, 40}, {48, 1, 5, 5}, {48}}},
        DeterminismCase{"conv_depthwise_s2",
                        "Conv",
                        {{"group", int64_t{32}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}},
                        {{1, 32, 80, 80}, {32, 1, 3, 3}, {32}}},
        DeterminismCase{"conv_depthwise_one_big_plane",
                        "Conv",
                        {{"group", int64_t{1}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                        {{1, 1, 300, 300}, {1, 1, 3, 3}}},
        DeterminismCase{"conv_im2col_shared_columns", "Conv", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                        {{1, 128, 7, 7}, {256, 128, 3, 3}, {256}}},
        // Two passes on one thread, column tiles with their own im2col on several.
        DeterminismCase{"conv_im2col_column_tiles_by_threads",
                        "Conv",
                        {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}},
                        {{1, 128, 56, 56}, {128, 128, 3, 3}, {128}}},
        DeterminismCase{"conv_pointwise", "Conv", {}, {{1, 64, 40, 40}, {96, 64, 1, 1}, {96}}},
        DeterminismCase{"conv_pointwise_small_spatial", "Conv", {}, {{1, 480, 3, 20}, {480, 480, 1, 1}}},
        DeterminismCase{"conv_pointwise_shared_input", "Conv", {}, {{1, 1024, 10, 10}, {96, 1024, 1, 1}, {96}}},
        DeterminismCase{"conv_pointwise_few_rows", "Conv", {}, {{1, 72, 56, 56}, {24, 72, 1, 1}, {24}}},
        DeterminismCase{"convtranspose_2x2_s2",
                        "ConvTranspose",
                        {{"strides", std::vector<int64_t>{2, 2}}},
                        {{1, 96, 20, 20}, {96, 24, 2, 2}, {24}}},
        DeterminismCase{"matmul", "MatMul", {}, {{3, 128, 256}, {256, 192}}},
        DeterminismCase{"matmul_batched", "MatMul", {}, {{2, 3, 64, 200}, {3, 200, 150}}},
        DeterminismCase{"gemm", "Gemm", {{"transB", int64_t{1}}}, {{200, 300}, {250, 300}, {250}}}),
    [](const ::testing::TestParamInfo<DeterminismCase>& i) { return i.param.name; });

// ---------------------------------------------------------------- block counts

// One block per ~2M multiply-adds (two from 1.5M), from the work alone;
// counts below 16 are even, so two threads split a node's blocks evenly.
TEST(NnBlocks, SmallBlockCountsAreEven) {
  using kernels::nn::blocks_for_cost;
  using kernels::nn::fma_cost;
  constexpr double kBlock = 2.0 * 1024 * 1024;
  EXPECT_EQ(blocks_for_cost(0, fma_cost(kBlock)), 1);
  EXPECT_EQ(blocks_for_cost(1, fma_cost(0.5 * kBlock)), 1);
  EXPECT_EQ(blocks_for_cost(1, fma_cost(0.8 * kBlock)), 2);  // most of a block is two
  EXPECT_EQ(blocks_for_cost(3, fma_cost(0.5 * kBlock)), 2);
  EXPECT_EQ(blocks_for_cost(5, fma_cost(0.5 * kBlock)), 4);
  EXPECT_EQ(blocks_for_cost(1, fma_cost(4.0 * kBlock)), 4);
  EXPECT_EQ(blocks_for_cost(29, fma_cost(0.5 * kBlock)), 16);
  EXPECT_EQ(blocks_for_cost(33, fma_cost(0.5 * kBlock)), 17);  // larger counts as the work gives them
  // A GEMM's bytes count too: gemm_cost of a 1 x 1280 x 960 layer is mostly
  // reading its 4.9 MB of B (569K cycles), so it is split though its FMAs
  // are ~1.2M.
  EXPECT_EQ(blocks_for_cost(1, kernels::nn::gemm_cost(1, 1280, 960)), 6);  // 4.3 blocks
}

// ops_cost is the kernels' per-item cost for loops that are not a packed
// GEMM: grain_for_cost groups ~64K operations into a block, whatever the
// per-item size, and one item of 64K or more is a block of its own.
TEST(NnBlocks, OpsCostGrainHoldsAbout64KOperations) {
  using kernels::nn::ops_cost;
  EXPECT_EQ(grain_for_cost(ops_cost(1.0)), 65536);
  EXPECT_EQ(grain_for_cost(ops_cost(256.0)), 256);
  EXPECT_EQ(grain_for_cost(ops_cost(1000.0)), 66);  // ceil(65536 / 1000)
  EXPECT_EQ(grain_for_cost(ops_cost(65536.0)), 1);
  EXPECT_EQ(grain_for_cost(ops_cost(1e9)), 1);
}

// ---------------------------------------------------------------- fused activations

struct ActCase {
  std::string name;
  std::string kind;
  std::vector<float> params;
};

float apply_by_hand(const ActCase& a, float x) {
  if (a.kind == "Relu") return x > 0 ? x : 0.0f;
  if (a.kind == "Clip") return std::min(std::max(x, a.params[0]), a.params[1]);
  if (a.kind == "HardSigmoid") return std::max(0.0f, std::min(1.0f, a.params[0] * x + a.params[1]));
  ADD_FAILURE() << "unknown activation " << a.kind;
  return x;
}

class NnFusedActivation : public ::testing::TestWithParam<ActCase> {};

TEST_P(NnFusedActivation, EqualsConvThenActivation) {
  const ActCase& a = GetParam();
  struct Layer {
    std::string op;
    Attributes attrs;
    std::vector<Shape> shapes;
  };
  const std::vector<Layer> layers = {
      {"Conv", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, {{1, 8, 21, 23}, {16, 8, 3, 3}, {16}}},
      {"Conv", {{"group", int64_t{8}}, {"pads", std::vector<int64_t>{2, 2, 2, 2}}}, {{1, 8, 21, 40}, {8, 1, 5, 5}, {8}}},
      {"Conv", {}, {{1, 16, 12, 12}, {24, 16, 1, 1}, {24}}},
      {"ConvTranspose", {{"strides", std::vector<int64_t>{2, 2}}}, {{1, 8, 6, 7}, {8, 4, 2, 2}, {4}}},
      {"Gemm", {{"transB", int64_t{1}}}, {{9, 20}, {11, 20}, {11}}},
      {"MatMul", {}, {{2, 9, 20}, {20, 11}}},
  };
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  for (const Layer& l : layers) {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < l.shapes.size(); ++i)
      inputs.push_back(random_tensor(l.shapes[i], 7 + static_cast<uint32_t>(i), -4.0f, 4.0f));
    const Tensor plain = kernels::run_kernel_once(l.op, 13, l.attrs, inputs)[0];
    Attributes fused_attrs = l.attrs;
    fused_attrs.set("activation", a.kind);
    fused_attrs.set("activation_params", a.params);
    const Tensor fused = kernels::run_kernel_once(l.op, 13, fused_attrs, inputs, 1, pool.get())[0];
    ASSERT_EQ(fused.shape(), plain.shape());
    const float* p = plain.data<float>();
    const float* f = fused.data<float>();
    int bad = 0;
    for (int64_t i = 0; i < plain.numel(); ++i)
      if (std::fabs(f[i] - apply_by_hand(a, p[i])) > 1e-6f && bad++ < 3)
        ADD_FAILURE() << l.op << " element " << i << ": fused " << f[i] << ", expected " << apply_by_hand(a, p[i]);
    EXPECT_EQ(bad, 0) << l.op << " with " << a.kind;
  }
}

INSTANTIATE_TEST_SUITE_P(NnKinds, NnFusedActivation,
                         ::testing::Values(ActCase{"Relu", "Relu", {}}, ActCase{"Clip0to6", "Clip", {0.0f, 6.0f}},
                                           ActCase{"HardSigmoid", "HardSigmoid", {0.2f, 0.5f}}),
                         [](const ::testing::TestParamInfo<ActCase>& i) { return i.param.name; });

// ---------------------------------------------------------------- ConvTranspose vs reference

TEST(NnConvTranspose, MatchesNaiveScatterOnRandomShapes) {
  struct Case {
    Shape x, w;
    int64_t group;
    std::vector<int64_t> strides, dilations, pads, output_padding;
  };
  const std::vector<Case> cases = {
      {{1, 4, 5, 6}, {4, 3, 2, 2}, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}, {0, 0}},
      {{2, 6, 4, 5}, {6, 2, 3, 3}, 3, {2, 1}, {1, 2}, {1, 0, 0, 1}, {1, 0}},
      {{1, 3, 7, 3}, {3, 5, 3, 2}, 1, {3, 2}, {2, 1}, {2, 1, 1, 0}, {2, 1}},
      {{1, 2, 9}, {2, 4, 4}, 1, {3}, {1}, {1, 2}, {0}},
      // stride == kernel (the one-tap-per-output path): output padding, end pads, groups, 1-D.
      {{1, 3, 4, 5}, {3, 2, 2, 3}, 1, {2, 3}, {1, 1}, {0, 0, 1, 0}, {1, 2}},
      {{2, 4, 3, 6}, {4, 3, 2, 2}, 2, {2, 2}, {1, 1}, {0, 0, 0, 1}, {1, 0}},
      {{1, 3, 7}, {3, 2, 3}, 1, {3}, {1}, {0, 2}, {2}},
  };
  for (const Case& c : cases) {
    const Tensor X = random_tensor(c.x, 11), W = random_tensor(c.w, 12);
    const int nd = static_cast<int>(c.x.size() - 2);
    const int64_t N = c.x[0], C = c.x[1], G = c.group, Cg = C / G, Mg = c.w[1], M = Mg * G;
    // Naive: scatter every input through every tap (rank 3 or 4 only).
    const int64_t H = nd == 2 ? c.x[2] : 1, Wd = c.x[nd + 1], KH = nd == 2 ? c.w[2] : 1, KW = c.w[nd + 1];
    const int64_t sh = nd == 2 ? c.strides[0] : 1, sw = c.strides[static_cast<size_t>(nd - 1)];
    const int64_t dh = nd == 2 ? c.dilations[0] : 1, dw = c.dilations[static_cast<size_t>(nd - 1)];
    const int64_t ph = nd == 2 ? c.pads[0] : 0, pw = c.pads[static_cast<size_t>(nd - 1)];
    const int64_t peh = nd == 2 ? c.pads[2] : 0, pew = c.pads[static_cast<size_t>(2 * nd - 1)];
    const int64_t oph = nd == 2 ? c.output_padding[0] : 0, opw = c.output_padding[static_cast<size_t>(nd - 1)];
    const int64_t OH = sh * (H - 1) + oph + (KH - 1) * dh + 1 - ph - peh;
    const int64_t OW = sw * (Wd - 1) + opw + (KW - 1) * dw + 1 - pw - pew;
    std::vector<double> want(static_cast<size_t>(N * M * OH * OW), 0.0);
    const float* x = X.data<float>();
    const float* w = W.data<float>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ci = 0; ci < C; ++ci)
        for (int64_t ih = 0; ih < H; ++ih)
          for (int64_t iw = 0; iw < Wd; ++iw)
            for (int64_t co = 0; co < Mg; ++co)
              for (int64_t kh = 0; kh < KH; ++kh)
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int64_t oh = ih * sh - ph + kh * dh, ow = iw * sw - pw + kw * dw;
                  if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                  const int64_t m = (ci / Cg) * Mg + co;
                  want[static_cast<size_t>(((n * M + m) * OH + oh) * OW + ow)] +=
                      static_cast<double>(x[((n * C + ci) * H + ih) * Wd + iw]) *
                      w[((ci * Mg + co) * KH + kh) * KW + kw];
                }
    Attributes attrs{{"group", c.group},
                     {"strides", c.strides},
                     {"dilations", c.dilations},
                     {"pads", c.pads},
                     {"output_padding", c.output_padding}};
    const Tensor got = kernels::run_kernel_once("ConvTranspose", 11, attrs, {X, W})[0];
    Shape want_shape = {N, M};
    if (nd == 2) want_shape.push_back(OH);
    want_shape.push_back(OW);
    ASSERT_EQ(got.shape(), want_shape);
    std::vector<float> wf(want.begin(), want.end());
    EXPECT_TRUE(testing::tensors_close(got, Tensor::from_vector<float>(want_shape, wf), 1e-4, 1e-4))
        << shape_to_string(c.x) << " * " << shape_to_string(c.w);
  }
}

// ---------------------------------------------------------------- MatMul / Gemm

// Decode-shaped products (a few rows, constant packed B split over N by
// the shape): bitwise the same with run-time B, with constant B at 1..3
// threads, and with constant B absent at run time (the plan dropped the
// original: the kernel computes from its packed copy alone).
TEST(NnMatMul, DecodeShapedProductsAreBitwiseTheSameForAnyThreadsAndWithoutTheOriginal) {
  auto pool2 = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  auto pool3 = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  for (const int64_t M : {1, 3, 16, 17}) {
    for (const bool gemm : {false, true}) {
      const int64_t K = 384, N = 1000;  // 1.5 MB of B: six column blocks
      const Tensor A = random_tensor({M, K}, 31), B = random_tensor(gemm ? Shape{N, K} : Shape{K, N}, 32);
      Attributes attrs;
      if (gemm) attrs.set("transB", int64_t{1});
      const std::string op = gemm ? "Gemm" : "MatMul";
      const int opset = 13;
      const Tensor want = kernels::run_kernel_once(op, opset, attrs, {A, B})[0];
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool2.get(), pool3.get()}) {
        NodeInfo node = make_node(op, opset, attrs, 2);
        node.const_inputs = {nullptr, &B};
        for (const bool absent : {false, true}) {
          const Tensor got = kernels::run_kernel_once(node, {A, absent ? Tensor() : B}, p)[0];
          ASSERT_EQ(got.shape(), want.shape());
          EXPECT_EQ(0, std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()))
              << op << " M " << M << (absent ? " (B absent)" : "") << " threads " << (p ? p->dop() : 1);
        }
      }
    }
  }
}

TEST(NnMatMul, BroadcastsBatchesAndPromotesVectors) {
  struct Case {
    Shape a, b, y;
  };
  const std::vector<Case> cases = {
      {{2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6}},
      {{4}, {3, 4, 2}, {3, 2}},
      {{2, 3, 4}, {4}, {2, 3}},
      {{4}, {4}, {}},
      {{7, 5}, {5, 9}, {7, 9}},
      {{3, 17, 500}, {500, 40}, {3, 17, 40}},
  };
  for (const Case& c : cases) {
    const Tensor A = random_tensor(c.a, 21), B = random_tensor(c.b, 22);
    const Tensor Y = kernels::run_kernel_once("MatMul", 13, {}, {A, B})[0];
    ASSERT_EQ(Y.shape(), c.y) << shape_to_string(c.a) << " x " << shape_to_string(c.b);
    // numpy.matmul semantics, element by element.
    const bool av = c.a.size() == 1, bv = c.b.size() == 1;
    const Shape as = av ? Shape{1, c.a[0]} : c.a, bs = bv ? Shape{c.b[0], 1} : c.b;
    const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    const size_t r = std::max(ab.size(), bb.size());
    Shape batch(r, 1);
    for (size_t i = 0; i < r; ++i) {
      const int64_t da = i + ab.size() >= r ? ab[i + ab.size() - r] : 1;
      const int64_t db = i + bb.size() >= r ? bb[i + bb.size() - r] : 1;
      batch[i] = std::max(da, db);
    }
    const int64_t nb = shape_numel(batch);
    const float* y = Y.data<float>();
    for (int64_t bi = 0; bi < nb; ++bi) {
      std::vector<int64_t> pos(r);
      int64_t rem = bi;
      for (size_t i = r; i-- > 0;) {
        pos[i] = rem % batch[i];
        rem /= batch[i];
      }
      auto offset = [&](const Shape& s) {
        int64_t o = 0;
        for (size_t i = 0; i < s.size(); ++i) o = o * s[i] + (s[i] == 1 ? 0 : pos[i + r - s.size()]);
        return o;
      };
      const int64_t oa = offset(ab) * M * K, ob = offset(bb) * K * N;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += static_cast<double>(A.data<float>()[oa + m * K + k]) * B.data<float>()[ob + k * N + n];
          EXPECT_NEAR(y[(bi * M + m) * N + n], acc, 1e-4) << shape_to_string(c.a) << " x " << shape_to_string(c.b);
        }
    }
  }
}

TEST(NnGemm, ConstantPrepackedBMatchesRuntimeB) {
  for (int64_t trans_b : {0, 1}) {
    const Tensor A = random_tensor({5, 7}, 31);
    const Tensor B = random_tensor(trans_b ? Shape{6, 7} : Shape{7, 6}, 32);
    const Tensor C = random_tensor({1, 6}, 33);
    Attributes attrs{{"transB", trans_b}, {"alpha", 0.5f}, {"beta", 2.0f}};
    NodeInfo node = make_node("Gemm", 13, attrs, 3);
    const Tensor runtime = kernels::run_kernel_once(node, {A, B, C})[0];
    node.const_inputs = {nullptr, &B, nullptr};
    const Tensor packed = kernels::run_kernel_once(node, {A, B, C})[0];
    EXPECT_TRUE(testing::tensors_close(packed, runtime, 1e-5, 1e-6)) << "transB " << trans_b;
    // Spot-check one element by hand.
    double acc = 0;
    for (int64_t k = 0; k < 7; ++k)
      acc += static_cast<double>(A.data<float>()[2 * 7 + k]) * B.data<float>()[trans_b ? 3 * 7 + k : k * 6 + 3];
    EXPECT_NEAR(runtime.data<float>()[2 * 6 + 3], 0.5 * acc + 2.0 * C.data<float>()[3], 1e-5);
  }
}

// ---------------------------------------------------------------- pools and norms

TEST(NnPool, LpPoolAndGlobalLpPoolMatchHandComputation) {
  const Tensor X = Tensor::from_vector<float>({1, 1, 2, 3}, {1, -2, 3, 4, 5, -6});
  // p = 2, kernel 2x2, stride 1: windows {1,-2,4,5} and {-2,3,5,-6}.
  const Tensor Y = kernels::run_kernel_once(
      "LpPool", 11, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"p", int64_t{2}}}, {X})[0];
  ASSERT_EQ(Y.shape(), (Shape{1, 1, 1, 2}));
  EXPECT_NEAR(Y.data<float>()[0], std::sqrt(1.0 + 4 + 16 + 25), 1e-5);
  EXPECT_NEAR(Y.data<float>()[1], std::sqrt(4.0 + 9 + 25 + 36), 1e-5);
  const Tensor G = kernels::run_kernel_once("GlobalLpPool", 2, {{"p", int64_t{1}}}, {X})[0];
  ASSERT_EQ(G.shape(), (Shape{1, 1, 1, 1}));
  EXPECT_NEAR(G.data<float>()[0], 21.0, 1e-5);
}

// Float MaxPool and AveragePool against a per-window reference of their
// documented rule, bit for bit: taps in row-major order; MaxPool skips NaN
// unless the whole window is NaN and keeps the first of equal values with a
// strict > (so -0 / +0 ties keep the first); AveragePool sums from 0 in that
// order and divides by the taps inside the input (or, with
// count_include_pad, inside the padded input). Strides, pads and ceil_mode of
// the fast 2-D path (vectors of 4 or 8 columns and a last overlapping one) and
// of the generic one (stride 3), with NaNs, -inf, signed zeros and repeats.
TEST(NnPool, MaxAndAveragePoolMatchThePerWindowRuleBitwise) {
  struct Case {
    int64_t k, s, pad, ceil;
  };
  const Case cases[] = {{3, 2, 0, 1}, {3, 2, 1, 0}, {3, 1, 1, 0}, {2, 2, 0, 0}, {3, 3, 1, 1}, {5, 2, 2, 1}, {1, 2, 0, 0}};
  std::mt19937 rng(77);
  for (const char* op : {"MaxPool", "AveragePool", "AveragePool+pad"})
    for (const Case& c : cases) {
      const bool max = std::string(op) == "MaxPool", include_pad = std::string(op) == "AveragePool+pad";
      for (int64_t W : {9, 10, 17, 40}) {
        const int64_t H = W - 1;
        std::vector<float> v(static_cast<size_t>(2 * H * W));
        for (float& x : v) {
          const unsigned r = rng() % 16;
          x = r == 0 && max   ? NAN
              : r == 3 && max ? -INFINITY
              : r == 1        ? 0.0f
              : r == 2        ? -0.0f
                              : static_cast<float>(static_cast<int>(rng() % 5) - 2) / 3.0f;
        }
        if (max) {
          for (int64_t i = 0; i < W; ++i) v[static_cast<size_t>(i)] = NAN;  // whole windows of NaN
          // Plane 1: the first two columns NaN, the last two -inf or NaN, so
          // windows clipped by the padding hold nothing else.
          for (int64_t r = 0; r < H; ++r) {
            float* row = v.data() + (H + r) * W;
            row[0] = row[1] = NAN;
            row[W - 2] = -INFINITY;
            row[W - 1] = r % 2 ? NAN : -INFINITY;
          }
        }
        const Tensor X = Tensor::from_vector<float>({1, 2, H, W}, v);
        Attributes attrs{{"kernel_shape", std::vector<int64_t>{c.k, c.k}},
                         {"strides", std::vector<int64_t>{c.s, c.s}},
                         {"pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad}},
                         {"ceil_mode", c.ceil}};
        if (!max) attrs.set("count_include_pad", int64_t{include_pad});
        const Tensor Y = kernels::run_kernel_once(max ? "MaxPool" : "AveragePool", 12, attrs, {X})[0];
        const int64_t OH = Y.dim(2), OW = Y.dim(3);
        for (int64_t p = 0; p < 2; ++p)
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
              float m = max ? NAN : 0.0f;
              int64_t inside = 0, padded = 0;
              for (int64_t kh = 0; kh < c.k; ++kh)
                for (int64_t kw = 0; kw < c.k; ++kw) {
                  const int64_t ih = oh * c.s - c.pad + kh, iw = ow * c.s - c.pad + kw;
                  if (ih < H + c.pad && iw < W + c.pad) ++padded;
                  if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                  const float x = v[static_cast<size_t>((p * H + ih) * W + iw)];
                  ++inside;
                  m = max ? ((x > m || m != m) ? x : m) : m + x;
                }
              if (!max) m /= static_cast<float>(include_pad ? padded : inside);
              const float got = Y.data<float>()[(p * OH + oh) * OW + ow];
              EXPECT_EQ(std::memcmp(&got, &m, sizeof(float)), 0)
                  << op << " k " << c.k << " s " << c.s << " pad " << c.pad << " ceil " << c.ceil << " W " << W
                  << " at " << p << "," << oh << "," << ow << ": " << got << " vs " << m;
            }
      }
    }
}

TEST(NnPool, AveragePoolExcludesPaddingUnlessAsked) {
  const Tensor X = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 0, 0}}};
  const Tensor a = kernels::run_kernel_once("AveragePool", 11, attrs, {X})[0];
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1, 1.5f, 2, 2.5f}));
  attrs.set("count_include_pad", int64_t{1});
  const Tensor b = kernels::run_kernel_once("AveragePool", 11, attrs, {X})[0];
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{0.25f, 0.75f, 1, 2.5f}));
}

// Pools size their outputs as ONNX Runtime does ((in + pads - kernel) /
// stride + 1, rounded toward zero), so an input narrower than the kernel gets
// clipped windows or an empty output; Conv refuses it, as both ONNX Runtime
// and the specification do. The shapes are what ONNX Runtime 1.30 gives.
TEST(NnPool, InputsNarrowerThanTheKernelGiveClippedWindowsOrNoOutput) {
  const Tensor X = Tensor::from_vector<float>({1, 1, 2, 1}, {1, 5});
  const auto pool = [&](const char* op, int64_t k, int64_t s, const char* auto_pad = "NOTSET") {
    return kernels::run_kernel_once(op, 18, {{"kernel_shape", std::vector<int64_t>{1, k}},
                                             {"strides", std::vector<int64_t>{1, s}},
                                             {"auto_pad", std::string(auto_pad)}},
                                    {X})[0];
  };
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
    for (auto [k, s] : {std::pair<int64_t, int64_t>{2, 2}, {3, 3}, {4, 4}, {2, 4}}) {
      const Tensor y = pool(op, k, s);
      ASSERT_EQ(y.shape(), (Shape{1, 1, 2, 1})) << op << " k " << k << " s " << s;
      EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 5})) << op << " k " << k << " s " << s;
    }
    for (auto [k, s] : {std::pair<int64_t, int64_t>{2, 1}, {3, 2}, {4, 3}})
      EXPECT_EQ(pool(op, k, s).shape(), (Shape{1, 1, 2, 0})) << op << " k " << k << " s " << s;
    EXPECT_EQ(pool(op, 3, 3, "VALID").shape(), (Shape{1, 1, 2, 1})) << op;
    testing::expect_error(op, 18, {{"kernel_shape", std::vector<int64_t>{1, 3}}}, {X}, {"smaller than the"});
  }
  const Tensor W = Tensor::from_vector<float>({1, 1, 1, 2}, {1, 1});
  testing::expect_error("Conv", 18, {{"strides", std::vector<int64_t>{1, 2}}}, {X, W}, {"smaller than the"});
}

TEST(NnNorm, BatchNormSpatialZeroUsesPerFeatureParameters) {
  // Opset 7, spatial = 0: parameters have shape C x H x W.
  const Tensor X = random_tensor({2, 2, 1, 3}, 51);
  const Tensor scale = random_tensor({2, 1, 3}, 52), bias = random_tensor({2, 1, 3}, 53);
  const Tensor mean = random_tensor({2, 1, 3}, 54), var = random_tensor({2, 1, 3}, 55, 0.5f, 2.0f);
  const Tensor Y = kernels::run_kernel_once("BatchNormalization", 7, {{"spatial", int64_t{0}}, {"epsilon", 1e-3f}},
                                            {X, scale, bias, mean, var})[0];
  for (int64_t i = 0; i < X.numel(); ++i) {
    const int64_t f = i % 6;
    const double want = (X.data<float>()[i] - mean.data<float>()[f]) / std::sqrt(var.data<float>()[f] + 1e-3) *
                            scale.data<float>()[f] +
                        bias.data<float>()[f];
    EXPECT_NEAR(Y.data<float>()[i], want, 1e-5) << i;
  }
}

// ---------------------------------------------------------------- Resize

TEST(NnResize, NearestAsymmetricFloorReplicatesPixels) {
  // The OCR detector's upsampling: 4-D, constant integer scales on H and W.
  for (float s : {2.0f, 4.0f, 8.0f}) {
    const Tensor X = random_tensor({1, 3, 5, 7}, 41);
    const Tensor scales = Tensor::from_vector<float>({4}, {1.0f, 1.0f, s, s});
    Attributes attrs{{"mode", std::string("nearest")},
                     {"coordinate_transformation_mode", std::string("asymmetric")},
                     {"nearest_mode", std::string("floor")}};
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
    const Tensor Y = kernels::run_kernel_once("Resize", 11, attrs, {X, Tensor(), scales}, 1, pool.get())[0];
    const int64_t k = static_cast<int64_t>(s);
    ASSERT_EQ(Y.shape(), (Shape{1, 3, 5 * k, 7 * k}));
    const float* x = X.data<float>();
    const float* y = Y.data<float>();
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t h = 0; h < 5 * k; ++h)
        for (int64_t w = 0; w < 7 * k; ++w)
          ASSERT_EQ(y[(c * 5 * k + h) * 7 * k + w], x[(c * 5 + h / k) * 7 + w / k]) << s;
  }
}

TEST(NnResize, AntialiasWidensTheTriangleFilterWhenShrinking) {
  // 1 x 8 -> 1 x 4 (scale 0.5, half_pixel): output o is centered at input
  // 2o + 0.5; the triangle stretched to half-width 2 weighs samples 2o - 1 ..
  // 2o + 2 by 0.25, 0.75, 0.75, 0.25 (sum 2, normalized by it); sample -1
  // is the edge sample 0, sample 8 the edge sample 7.
  const std::vector<float> xv = {3, -1, 4, 1, -5, 9, 2, 6};
  const Tensor X = Tensor::from_vector<float>({1, 8}, xv);
  const Tensor scales = Tensor::from_vector<float>({2}, {1.0f, 0.5f});
  const Attributes attrs{{"mode", std::string("linear")}, {"antialias", int64_t{1}}};
  std::vector<Tensor> results;
  for (int threads : {1, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    results.push_back(kernels::run_kernel_once("Resize", 18, attrs, {X, Tensor(), scales}, 1, pool.get())[0]);
  }
  EXPECT_TRUE(bitwise_equal(results[0], results[1]));
  ASSERT_EQ(results[0].shape(), (Shape{1, 4}));
  auto x = [&](int i) { return static_cast<double>(xv[static_cast<size_t>(std::clamp(i, 0, 7))]); };
  for (int o = 0; o < 4; ++o) {
    const double want = (0.25 * x(2 * o - 1) + 0.75 * x(2 * o) + 0.75 * x(2 * o + 1) + 0.25 * x(2 * o + 2)) / 2.0;
    EXPECT_NEAR(results[0].data<float>()[o], want, 1e-6) << o;
  }
  // Without antialias the same resize reads two samples per output.
  const Tensor plain = kernels::run_kernel_once("Resize", 18, {{"mode", std::string("linear")}}, {X, Tensor(), scales}, 1)[0];
  EXPECT_NEAR(plain.data<float>()[0], 0.5 * (x(0) + x(1)), 1e-6);
  testing::expect_error("Resize", 18, {{"mode", std::string("linear")}, {"antialias", int64_t{2}}},
                        {X, Tensor(), scales}, {"antialias", "expected 0 or 1"});
}

TEST(NnResize, TfHalfPixelForNearest) {
  // Data and expectation of ONNX's test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn.
  std::vector<float> xv(16);
  for (int i = 0; i < 16; ++i) xv[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  const Tensor X = Tensor::from_vector<float>({1, 1, 4, 4}, xv);
  const Tensor sizes = Tensor::from_vector<int64_t>({4}, {1, 1, 3, 2});
  Attributes attrs{{"mode", std::string("nearest")},
                   {"coordinate_transformation_mode", std::string("tf_half_pixel_for_nearest")}};
  const Tensor Y = kernels::run_kernel_once("Resize", 13, attrs, {X, Tensor(), Tensor(), sizes})[0];
  EXPECT_EQ(Y.to_vector<float>(), (std::vector<float>{6, 8, 10, 12, 14, 16}));
}

TEST(NnResize, UpsampleOpset7ScalesAttribute) {
  const Tensor X = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  Attributes attrs{{"mode", std::string("nearest")}, {"scales", std::vector<float>{1, 1, 2, 3}}};
  const Tensor Y = kernels::run_kernel_once("Upsample", 7, attrs, {X})[0];
  EXPECT_EQ(Y.shape(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(Y.to_vector<float>(), (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                                      3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

TEST(NnResize, UpsampleLinearIsAsymmetricAndClampsAtTheEdge) {
  const Tensor X = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor scales = Tensor::from_vector<float>({4}, {1, 1, 2, 2});
  const Tensor Y = kernels::run_kernel_once("Upsample", 9, {{"mode", std::string("linear")}}, {X, scales})[0];
  EXPECT_EQ(Y.to_vector<float>(), (std::vector<float>{1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4}));
}

TEST(NnResize, Opset10NearestFloorsWhenEnlargingAndCeilsWhenShrinking) {
  const Tensor X = Tensor::from_vector<float>({1, 1, 1, 5}, {1, 2, 3, 4, 5});
  // Enlarge x1.5: x = o / 1.5 -> floor: 0, 0, 1, 2, 2, 3, 4.
  Tensor Y = kernels::run_kernel_once("Resize", 10, {}, {X, Tensor::from_vector<float>({4}, {1, 1, 1, 1.5f})})[0];
  EXPECT_EQ(Y.to_vector<float>(), (std::vector<float>{1, 1, 2, 3, 3, 4, 5}));
  // Shrink x0.6: out 3, x = o / 0.6 = 0, 1.67, 3.33 -> ceil: 0, 2, 4.
  Y = kernels::run_kernel_once("Resize", 10, {}, {X, Tensor::from_vector<float>({4}, {1, 1, 1, 0.6f})})[0];
  EXPECT_EQ(Y.to_vector<float>(), (std::vector<float>{1, 3, 5}));
}

// ---------------------------------------------------------------- bad inputs

TEST(NnErrors, ConvWeightChannelsMismatchNamesOpAndShapes) {
  const Tensor X = random_tensor({1, 3, 8, 8}, 1), W = random_tensor({8, 4, 3, 3}, 2);
  const std::string msg = error_of([&] { kernels::run_kernel_once("Conv", 11, {}, {X, W}); });
  EXPECT_NE(msg.find("Conv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("8x4x3x3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1x3x8x8"), std::string::npos) << msg;
}

TEST(NnErrors, MatMulIncompatibleInnerDimsNamesOpAndShapes) {
  const Tensor A = random_tensor({2, 3, 4}, 1), B = random_tensor({5, 6}, 2);
  const std::string msg = error_of([&] { kernels::run_kernel_once("MatMul", 13, {}, {A, B}); });
  EXPECT_NE(msg.find("MatMul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2x3x4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("5x6"), std::string::npos) << msg;
}

TEST(NnErrors, MatMulIncompatibleBatchDimsNamesShapes) {
  const Tensor A = random_tensor({2, 3, 4}, 1), B = random_tensor({3, 4, 6}, 2);
  const std::string msg = error_of([&] { kernels::run_kernel_once("MatMul", 13, {}, {A, B}); });
  EXPECT_NE(msg.find("MatMul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot be broadcast"), std::string::npos) << msg;
}

TEST(NnErrors, NonFloatInputNamesOpInputAndDtype) {
  const Tensor X = Tensor::from_vector<int64_t>({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor W = random_tensor({1, 1, 1, 1}, 2);
  const std::string msg = error_of([&] { kernels::run_kernel_once("Conv", 11, {}, {X, W}); });
  EXPECT_NE(msg.find("Conv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("input X"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int64"), std::string::npos) << msg;
  const std::string mm = error_of([&] {
    kernels::run_kernel_once("MatMul", 13, {}, {random_tensor({2, 2}, 1), Tensor::from_vector<int32_t>({2}, {1, 2})});
  });
  EXPECT_NE(mm.find("input B is int32"), std::string::npos) << mm;
}

TEST(NnErrors, BatchNormTrainingOutputsBeforeOpset14AreUnsupported) {
  // Opsets 9..13 express training by asking for the mean / var outputs;
  // spindle computes training mode only as opset 14+ defines it.
  try {
    kernels::run_kernel_once("BatchNormalization", 9, {},
                             {random_tensor({1, 2, 2, 2}, 1), random_tensor({2}, 2), random_tensor({2}, 3),
                              random_tensor({2}, 4), random_tensor({2}, 5, 0.5f, 1.0f)},
                             5);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("5 outputs requested"), std::string::npos) << e.what();
  }
}

// MatMul's fused fourth input (MatMulBinaryFusion): r added to or multiplied
// with the product after the fused bias, bitwise as MatMul, Add(bias) and
// the Add / Mul as separate kernels; an r that only broadcasts to the output
// takes the separate Add's path; an unknown fused_op is refused by name.
TEST(NnKernels, MatMulFusedAddOrMulOfATensorMatchesSeparateNodesBitwise) {
  const Tensor A = random_tensor({3, 5, 20}, 61), B = random_tensor({20, 33}, 62), bias = random_tensor({33}, 63);
  const Tensor product = kernels::run_kernel_once("MatMul", 13, {}, {A, B})[0];
  const Tensor with_bias = kernels::run_kernel_once("Add", 14, {}, {product, bias})[0];
  for (const char* op : {"Add", "Mul"}) {
    for (const Shape& r_shape : {Shape{3, 5, 33}, Shape{5, 33}}) {
      const Tensor R = random_tensor(r_shape, 64);
      Attributes attrs;
      attrs.set("fused_op", std::string(op));
      const Tensor got = kernels::run_kernel_once("MatMul", 13, attrs, {A, B, bias, R})[0];
      const Tensor want = kernels::run_kernel_once(op, 14, {}, {with_bias, R})[0];
      ASSERT_EQ(got.shape(), (Shape{3, 5, 33})) << op;
      EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>()) << op << " r " << shape_to_string(r_shape);
    }
  }
  Attributes bad;
  bad.set("fused_op", std::string("Sub"));
  const std::string msg =
      error_of([&] { kernels::run_kernel_once("MatMul", 13, bad, {A, B, bias, random_tensor({3, 5, 33}, 65)}); });
  EXPECT_NE(msg.find("fused_op is 'Sub', expected Add or Mul"), std::string::npos) << msg;
}

}  // namespace
}  // namespace spindle
