// attention_test_util.h — what the attention fusion tests share: seeded
// random inputs, a model run with or without the optimizer, and the check
// that the fused graph keeps the unfused graph's results at any thread count.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "../kernels/onnx_node_runner.h"
#include "spindle/session.h"

namespace spindle::testing {

inline std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2, 2);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline std::vector<Tensor> run_model(const std::vector<uint8_t>& bytes, const Feeds& feeds, int threads, bool optimize,
                                     std::string* summary = nullptr, int64_t* nodes = nullptr) {
  SessionOptions o;
  o.intra_op_num_threads = threads;
  if (!optimize) o.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  auto session = InferenceSession::create_from_bytes(bytes, o);
  if (summary) *summary = session->optimization_summary();
  if (nodes) *nodes = static_cast<int64_t>(session->num_nodes());
  return session->run(feeds);
}

// Runs the model unoptimized and optimized at 1, 2 and 3 threads: the
// optimized results have the same bits at every thread count and those of
// the unfused graph (the fused node does the unfused nodes' operations in
// their order, on the shared heads read in place), except for one query
// row, computed by dot products of its own: there within 1e-5. The
// optimized graph has `want_nodes`.
inline void expect_fused_bits(const std::vector<uint8_t>& bytes, const Feeds& feeds, int64_t want_nodes) {
  const auto want = run_model(bytes, feeds, 1, false);
  const bool one_row = feeds[0].second.dim(2) == 1;
  std::vector<Tensor> first;
  for (int threads : {1, 2, 3}) {
    std::string summary;
    int64_t nodes = 0;
    const auto got = run_model(bytes, feeds, threads, true, &summary, &nodes);
    EXPECT_THAT(summary, ::testing::HasSubstr("AttentionFusion 1"));
    EXPECT_EQ(nodes, want_nodes) << summary;
    ASSERT_EQ(got.size(), want.size());
    if (first.empty()) first = got;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].to_vector<float>(), first[i].to_vector<float>()) << "output " << i << ", " << threads << " threads";
      if (one_row)
        EXPECT_TRUE(testing::tensors_close(got[i], want[i], 1e-5, 1e-5)) << "output " << i;
      else
        EXPECT_EQ(got[i].to_vector<float>(), want[i].to_vector<float>()) << "output " << i << ", " << threads << " threads";
    }
  }
}

}  // namespace spindle::testing
