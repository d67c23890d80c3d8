// winograd_pack_test.cpp — Winograd's U, computed and packed a block of
// output channels at a time, is the same panels, bit for bit, as the whole
// U = G g G^T packed at once.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/nn/conv/conv_algorithms.h"
#include "primitives/conv/winograd.h"
#include "primitives/isa/dispatch.h"

namespace spindle::kernels::nn {
namespace {

void expect_same_panels(int64_t M, int64_t C) {
  std::mt19937 rng(static_cast<uint32_t>(M * 1000 + C));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> wd(static_cast<size_t>(M * C * 9));
  for (float& v : wd) v = dist(rng);
  static const auto weights_fn = SPINDLE_ISA_SELECT(winograd_weights);
  std::vector<float> u(static_cast<size_t>(36 * M * C));
  weights_fn(wd.data(), M, C, u.data());
  const PackedMatrix whole = PackedMatrix::pack_a(false, M, C, 1.0f, u.data(), C, 36, M * C);
  conv::WinogradWeights blocks;
  conv::prepare_winograd(wd.data(), M, C, blocks);
  ASSERT_EQ(blocks.u.bytes(), whole.bytes()) << M << " x " << C;
  EXPECT_EQ(std::memcmp(blocks.u.panel(0, 0), whole.panel(0, 0), whole.bytes()), 0) << M << " x " << C;
}

TEST(WinogradPack, BlocksOfChannelsPackAsTheWholeU) {
  expect_same_panels(5, 3);      // one partial panel
  expect_same_panels(70, 300);   // several blocks, the last one partial
  expect_same_panels(64, 64);    // one block of whole panels
  expect_same_panels(129, 512);  // one panel per block
}

}  // namespace
}  // namespace spindle::kernels::nn
