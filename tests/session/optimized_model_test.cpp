// optimized_model_test.cpp — SessionOptions::optimized_model_filepath: the
// optimized graph written as an ONNX file loads back with bitwise the same
// outputs and the same nodes; fused ONNX operators go in the spindle.ext
// domain and a tampered one is refused naming what is wrong; large
// initializers go to the external data file the config keys name; a path
// that cannot be written fails session creation naming it. (Real models:
// tests/models/optimized_model_test.cpp.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

namespace fs = std::filesystem;
using testing::ModelBuilder;

// x [1, 8, 10, 10] -> Conv (3x3, bias) -> Relu -> Conv (1x1) -> Add x ->
// HardSigmoid: ActivationFusion, ConvResidualAddFusion (extended level),
// NchwcTransformer (all) have something to do.
std::vector<uint8_t> conv_model() {
  ModelBuilder b(11);
  b.input("x", {1, 8, 10, 10}).output("y", {1, 8, 10, 10});
  std::vector<float> w(8 * 8 * 9), w2(8 * 8), bias(8);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i * 37 % 23) - 11) * 0.03f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = static_cast<float>(static_cast<int>(i * 13 % 19) - 9) * 0.05f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i) - 0.3f;
  b.initializer("w", {8, 8, 3, 3}, w).initializer("bias", {8}, bias).initializer("w2", {8, 8, 1, 1}, w2);
  ModelBuilder::attr_ints(b.node("Conv", {"x", "w", "bias"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"});
  b.node("Conv", {"r", "w2"}, {"c2"}, "conv2");
  b.node("Add", {"c2", "x"}, {"s"});
  b.node("HardSigmoid", {"s"}, {"y"});
  return b.bytes();
}

Feeds feeds() {
  std::vector<float> x(800);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 29) - 14) * 0.07f;
  return {{"x", Tensor::from_vector<float>({1, 8, 10, 10}, x)}};
}

// A file in this process's scratch folder, removed when the tests end.
fs::path scratch(const std::string& name) {
  struct Folder {
    fs::path path = fs::temp_directory_path() / fmt::format("spindle-optimized-model-test-{}", ::getpid());
    Folder() { fs::create_directories(path); }
    ~Folder() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Folder folder;
  return folder.path / name;
}

SessionOptions options(GraphOptimizationLevel level, const fs::path& out = {}) {
  SessionOptions o;
  o.intra_op_num_threads = 2;
  o.graph_optimization_level = level;
  o.optimized_model_filepath = out.string();
  return o;
}

onnx::ModelProto read_proto(const fs::path& p) {
  onnx::ModelProto m;
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&in)) << p;
  return m;
}

void write_proto(const onnx::ModelProto& m, const fs::path& p) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(m.SerializeToOstream(&out));
}

void expect_bitwise_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(0, std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()));
}

std::set<std::string> domains(const onnx::ModelProto& m) {
  std::set<std::string> d;
  for (const auto& n : m.graph().node()) d.insert(n.domain());
  return d;
}

TEST(OptimizedModel, EveryLevelLoadsBackWithTheSameOutputsAndNodes) {
  const std::vector<uint8_t> model = conv_model();
  for (GraphOptimizationLevel level : {GraphOptimizationLevel::kDisableAll, GraphOptimizationLevel::kBasic,
                                       GraphOptimizationLevel::kExtended, GraphOptimizationLevel::kAll}) {
    SCOPED_TRACE(std::string(optimization_level_name(level)));
    const fs::path out = scratch(fmt::format("conv-{}.onnx", optimization_level_name(level)));
    auto original = InferenceSession::create_from_bytes(model, options(level, out));
    ASSERT_TRUE(fs::exists(out));
    auto reloaded = InferenceSession::create(out.string(), options(level));
    EXPECT_EQ(original->num_nodes(), reloaded->num_nodes());
    const auto a = original->run(feeds()), b = reloaded->run(feeds());
    ASSERT_EQ(a.size(), 1u);
    expect_bitwise_equal(a[0], b[0]);
    const onnx::ModelProto proto = read_proto(out);
    const std::set<std::string> d = domains(proto);
    if (level <= GraphOptimizationLevel::kBasic) {
      EXPECT_EQ(d, std::set<std::string>{""});  // plain ONNX
    } else if (level == GraphOptimizationLevel::kExtended) {
      EXPECT_EQ(d, std::set<std::string>{"spindle.ext"});  // both Convs with fused activations (and the residual)
    } else {
      EXPECT_TRUE(d.count("spindle"));  // BlockedConv and the layout's reorders
    }
  }
}

TEST(OptimizedModel, ReloadedModelSkipsTheAppliedPassesAndHidesTheirList) {
  const fs::path out = scratch("conv-applied.onnx");
  auto original = InferenceSession::create_from_bytes(conv_model(), options(GraphOptimizationLevel::kExtended, out));
  const onnx::ModelProto proto = read_proto(out);
  std::string applied;
  for (const auto& p : proto.metadata_props())
    if (p.key() == "spindle.optimizer.applied_passes") applied = p.value();
  EXPECT_THAT(applied, ::testing::HasSubstr("ActivationFusion"));
  EXPECT_THAT(applied, ::testing::Not(::testing::HasSubstr("NchwcTransformer")));
  // Reloaded at all: only the passes above extended run.
  auto reloaded = InferenceSession::create(out.string(), options(GraphOptimizationLevel::kAll));
  EXPECT_EQ(reloaded->model_metadata().custom_metadata_map.count("spindle.optimizer.applied_passes"), 0u);
  EXPECT_THAT(reloaded->optimization_summary(), ::testing::HasSubstr("NchwcTransformer"));
  EXPECT_THAT(reloaded->optimization_summary(), ::testing::Not(::testing::HasSubstr("ActivationFusion")));
  auto direct = InferenceSession::create_from_bytes(conv_model(), options(GraphOptimizationLevel::kAll));
  EXPECT_EQ(reloaded->num_nodes(), direct->num_nodes());
  expect_bitwise_equal(direct->run(feeds())[0], reloaded->run(feeds())[0]);
}

TEST(OptimizedModel, PathThatCannotBeWrittenFailsCreationNamingIt) {
  const std::string bad = "/nonexistent-spindle-dir/optimized.onnx";
  try {
    InferenceSession::create_from_bytes(conv_model(), options(GraphOptimizationLevel::kAll, bad));
    FAIL() << "no error for " << bad;
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(e.what(), ::testing::HasSubstr(bad));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("No such file or directory"));
  }
}

// The extended-domain Conv of an optimized file.
onnx::NodeProto* fused_conv(onnx::ModelProto& m) {
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.domain() == "spindle.ext" && n.op_type() == "Conv" && n.name() == "conv") return &n;
  return nullptr;
}

onnx::AttributeProto* find_attr(onnx::NodeProto& n, const std::string& name) {
  for (auto& a : *n.mutable_attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// Writes the extended-level file, lets `tamper` change its fused Conv, and
// returns the error of loading the result.
template <class F>
std::string reload_error(F tamper) {
  const fs::path out = scratch("conv-tampered.onnx");
  InferenceSession::create_from_bytes(conv_model(), options(GraphOptimizationLevel::kExtended, out));
  onnx::ModelProto m = read_proto(out);
  onnx::NodeProto* conv = fused_conv(m);
  if (!conv) return "no fused Conv in the file";
  tamper(*conv);
  write_proto(m, out);
  try {
    InferenceSession::create(out.string(), options(GraphOptimizationLevel::kExtended));
  } catch (const Error& e) {
    return e.what();
  }
  return "loaded";
}

TEST(OptimizedModel, TamperedFusedNodeIsRefusedNamingTheProblem) {
  using ::testing::HasSubstr;
  EXPECT_THAT(reload_error([](onnx::NodeProto& n) { find_attr(n, "activation")->set_s("Bogus"); }),
              HasSubstr("fused activation 'Bogus' is not supported"));
  EXPECT_THAT(reload_error([](onnx::NodeProto& n) {
                onnx::AttributeProto* a = find_attr(n, "activation_params");
                a->clear_floats();
                a->set_type(onnx::AttributeProto::INT);
                a->set_i(3);
              }),
              HasSubstr("attribute 'activation_params' is of type int, expected list of floats"));
  EXPECT_THAT(reload_error([](onnx::NodeProto& n) { ModelBuilder::attr_int(n, "surprise", 1); }),
              HasSubstr("has the attribute 'surprise', which neither Conv-11 nor spindle's fused form of it defines"));
  EXPECT_THAT(reload_error([](onnx::NodeProto& n) { find_attr(n, "spindle_opset")->set_i(99); }),
              HasSubstr("attribute 'spindle_opset' is 99, expected an opset from 1 to 23"));
  EXPECT_THAT(reload_error([](onnx::NodeProto& n) {
                onnx::AttributeProto* d = n.add_attribute();
                d->set_name("spindle_domain");
                d->set_type(onnx::AttributeProto::STRING);
                d->set_s("com.example");
              }),
              HasSubstr("attribute 'spindle_domain' is 'com.example', expected the default domain or com.microsoft"));
  EXPECT_THAT(reload_error([](onnx::NodeProto& n) {
                for (int i = 0; i < 8; ++i) n.add_input("x");
              }),
              HasSubstr("has 11 input(s), expected 2 to 9"));
  EXPECT_THAT(reload_error([](onnx::NodeProto& n) {
                auto* attrs = n.mutable_attribute();
                for (int i = 0; i < attrs->size(); ++i)
                  if (attrs->Get(i).name() == "spindle_opset") attrs->DeleteSubrange(i, 1);
              }),
              HasSubstr("lacks the attribute 'spindle_opset'"));
}

TEST(OptimizedModel, LargeInitializersGoToTheExternalFile) {
  const fs::path out = scratch("conv-external.onnx");
  SessionOptions o = options(GraphOptimizationLevel::kBasic, out);
  o.add_config_entry("session.optimized_model_external_initializers_file_name", "conv-external.bin");
  o.add_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "256");
  auto original = InferenceSession::create_from_bytes(conv_model(), o);
  const onnx::ModelProto proto = read_proto(out);
  int external = 0, inline_ = 0;
  for (const auto& t : proto.graph().initializer())
    (t.data_location() == onnx::TensorProto::EXTERNAL ? external : inline_) += 1;
  EXPECT_EQ(external, 2);  // w (2304 bytes), w2 (256 bytes)
  EXPECT_EQ(inline_, 1);   // bias (32 bytes)
  EXPECT_EQ(fs::file_size(out.parent_path() / "conv-external.bin"), 2304u + 256u);
  auto reloaded = InferenceSession::create(out.string(), options(GraphOptimizationLevel::kBasic));
  expect_bitwise_equal(original->run(feeds())[0], reloaded->run(feeds())[0]);
}

TEST(OptimizedModel, FoldedConstantSequenceIsWrittenAsSequenceConstruct) {
  // SequenceConstruct of two initializers folds into a constant sequence;
  // SequenceAt reads it at a fed position.
  ModelBuilder b(13);
  b.input("i", {}, onnx::TensorProto::INT64).output("y", {2});
  b.initializer("c0", {2}, {1.5f, 2.5f}).initializer("c1", {2}, {-3.0f, 4.0f});
  b.node("SequenceConstruct", {"c0", "c1"}, {"seq"});
  b.node("SequenceAt", {"seq", "i"}, {"y"});
  const fs::path out = scratch("sequence.onnx");
  auto original = InferenceSession::create_from_bytes(b.bytes(), options(GraphOptimizationLevel::kBasic, out));
  auto reloaded = InferenceSession::create(out.string(), options(GraphOptimizationLevel::kBasic));
  for (int64_t i : {0, 1}) {
    const Feeds f{{"i", Tensor::scalar<int64_t>(i)}};
    const Tensor y = reloaded->run(f)[0];
    expect_bitwise_equal(original->run(f)[0], y);
    EXPECT_EQ(y.to_vector<float>(), i == 0 ? (std::vector<float>{1.5f, 2.5f}) : (std::vector<float>{-3.0f, 4.0f}));
  }
}

TEST(OptimizedModel, ExternalFileNameMustBeAPlainName) {
  SessionOptions o;
  for (const char* bad : {"../w.bin", "/tmp/w.bin", "sub/w.bin", ""}) {
    try {
      o.add_config_entry("session.optimized_model_external_initializers_file_name", bad);
      ADD_FAILURE() << "no error for '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("expected a file name without a directory")) << bad;
    }
  }
}

}  // namespace
}  // namespace spindle
