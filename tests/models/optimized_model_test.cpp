// optimized_model_test.cpp — optimized_model_filepath on real models (PP-OCR
// and the benchmark models, from the model cache): the model written at the
// basic, extended and all levels loads back with the same node count and
// bitwise the same outputs as the session that wrote it. (onnxruntime-node
// running the basic level's file: bindings/node/test/optimized_model.test.js.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "references.h"
#include "spindle/session.h"

namespace spindle {
namespace {

namespace fs = std::filesystem;
using testing::cache_dir;

struct Case {
  std::string file;  // under the cache directory
  std::map<std::string, Shape> shapes;
  GraphOptimizationLevel level;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = fs::path(info.param.file).stem().string() + "_" + std::string(optimization_level_name(info.param.level));
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::vector<Case> cases() {
  const std::vector<std::pair<std::string, std::map<std::string, Shape>>> models = {
      {"models/ch_ppocr_mobile_v2.0_cls_infer.onnx", {{"x", {1, 3, 48, 192}}}},
      {"models/ch_PP-OCRv4_rec_infer.onnx", {{"x", {1, 3, 48, 320}}}},
      {"bench-models/mobilenet_v3_large.onnx", {{"input", {1, 3, 224, 224}}}},
      {"bench-models/densenet121.onnx", {{"input", {1, 3, 224, 224}}}},
      {"bench-models/efficientnet_b0.onnx", {{"input", {1, 3, 224, 224}}}},
      {"bench-models/resnet18.onnx", {{"input", {1, 3, 224, 224}}}},
      {"bench-models/encoder_small.onnx", {{"x", {1, 128, 256}}}},
      {"bench-models/lstm_tagger.onnx", {{"tokens", {1, 48}}}},
      {"bench-models/if_model.onnx", {{"x", {1, 1, 512}}}},
  };
  std::vector<Case> out;
  for (const auto& [file, shapes] : models)
    for (GraphOptimizationLevel level :
         {GraphOptimizationLevel::kBasic, GraphOptimizationLevel::kExtended, GraphOptimizationLevel::kAll})
      out.push_back({file, shapes, level});
  return out;
}

Feeds feeds_for(const InferenceSession& s, const std::map<std::string, Shape>& shapes) {
  Feeds feeds;
  for (const TensorInfo& in : s.inputs()) {
    const Shape& shape = shapes.at(in.name);
    Tensor t(in.dtype, shape);
    const int64_t n = t.numel();
    if (in.dtype == DataType::kInt64) {
      auto* p = t.mutable_data<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = (i * 7) % 11;
    } else {
      auto* p = t.mutable_data<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
    }
    feeds.emplace_back(in.name, std::move(t));
  }
  return feeds;
}

class OptimizedModel : public ::testing::TestWithParam<Case> {};
INSTANTIATE_TEST_SUITE_P(RealModels, OptimizedModel, ::testing::ValuesIn(cases()), case_name);

TEST_P(OptimizedModel, LoadsBackWithBitwiseTheSameOutputs) {
  const Case& c = GetParam();
  const fs::path model = cache_dir() / c.file;
  if (!fs::exists(model)) GTEST_SKIP() << model << " missing (scripts/fetch-models.sh)";
  const fs::path dir = fs::temp_directory_path() / fmt::format("spindle-optimized-{}", ::getpid());
  fs::create_directories(dir);
  const fs::path out = dir / (case_name({c, 0}) + ".onnx");
  SessionOptions o;
  o.intra_op_num_threads = 2;
  o.graph_optimization_level = c.level;
  o.optimized_model_filepath = out.string();
  auto original = InferenceSession::create(model.string(), o);
  o.optimized_model_filepath.clear();
  auto reloaded = InferenceSession::create(out.string(), o);
  EXPECT_EQ(original->num_nodes(), reloaded->num_nodes());
  const Feeds feeds = feeds_for(*original, c.shapes);
  const std::vector<Tensor> a = original->run(feeds), b = reloaded->run(feeds);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].dtype(), b[i].dtype()) << original->outputs()[i].name;
    ASSERT_EQ(a[i].shape(), b[i].shape()) << original->outputs()[i].name;
    EXPECT_EQ(0, std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].nbytes())) << original->outputs()[i].name;
  }
  fs::remove(out);
  std::error_code ec;
  fs::remove(dir, ec);  // once empty
}

}  // namespace
}  // namespace spindle
