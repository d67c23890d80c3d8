// loader_safety_test.cpp — hostile models meet the loader: no libonnx shape
// inference (it crashed), external data confined to the model's directory,
// sizes checked before allocating, protobuf's nesting limit named. Cases that
// crashed or allocated gigabytes run in a child process, so a crash fails
// the test instead of ending the test program.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <onnx/onnx_pb.h>

#include "graph/graph.h"
#include "session/model_builder.h"

namespace spindle::graph {
namespace {

namespace fs = std::filesystem;
using spindle::testing::ModelBuilder;

// Runs `body` in a child process; returns its exit code, or -signal when a
// signal killed it.
int in_child(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

Result<Graph> load(const ModelBuilder& b, const fs::path& base_dir) {
  const auto bytes = b.bytes();
  return load_model_bytes(bytes, "test.onnx", base_dir);
}

// A directory of its own under the temp dir, removed afterwards.
class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("spindle_loader_" + std::to_string(getpid()) + "_" + std::to_string(next_++))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  static inline int next_ = 0;
};

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

// y = x + w, w (float, [n]) kept in external data.
ModelBuilder external_model(const std::string& location, int64_t n = 4, const std::string& offset = "",
                            const std::string& length = "") {
  ModelBuilder b;
  b.input("x", {n}).output("y", {n});
  auto* w = b.proto().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(n);
  w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (!offset.empty()) add("offset", offset);
  if (!length.empty()) add("length", length);
  b.node("Add", {"x", "w"}, {"y"});
  return b;
}

const std::string kFourFloats(16, '\0');

// The crash: a ConvTranspose whose weight is declared rank 1, in a
// model with a map-typed output, made libonnx's shape inference segfault.
TEST(LoaderSafety, ConvTransposeRankOneWeightWithMapOutputIsACleanError) {
  ModelBuilder b(13);
  b.input("x", {1, 1, 4, 4}).input("w", {3});
  auto* out = b.proto().mutable_graph()->add_output();
  out->set_name("y");
  auto* map = out->mutable_type()->mutable_map_type();
  map->set_key_type(onnx::TensorProto::INT64);
  map->mutable_value_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  b.node("ConvTranspose", {"x", "w"}, {"y"});
  const int code = in_child([&] {
    auto g = load(b, "");
    if (g.is_ok()) return 1;
    return g.status().code() == StatusCode::kUnsupported &&
                   g.status().message().find("'y' is a map") != std::string::npos
               ? 0
               : 2;
  });
  EXPECT_EQ(code, 0) << "0 = clean kUnsupported error, 1 = loaded, 2 = another error, <0 = killed by that signal";
}

// Untyped outputs get spindle's own types (no libonnx inference).
TEST(LoaderSafety, UndeclaredOutputTypesComeFromSpindlesRules) {
  ModelBuilder b(13);
  b.input("x", {2, 3});
  for (const char* name : {"s", "c", "e", "f"}) b.proto().mutable_graph()->add_output()->set_name(name);
  b.node("Shape", {"x"}, {"s"});
  auto& cast = b.node("Cast", {"x"}, {"c"});
  ModelBuilder::attr_int(cast, "to", onnx::TensorProto::INT32);
  b.node("Equal", {"x", "x"}, {"e"});
  b.node("Relu", {"x"}, {"f"});
  // libonnx's checker wants main-graph outputs typed; subgraph outputs may be untyped.
  LoadOptions no_checker;
  no_checker.run_checker = false;
  const auto bytes = b.bytes();
  auto g = load_model_bytes(bytes, "test.onnx", "", no_checker);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  ASSERT_EQ(g.value().output_info.size(), 4u);
  EXPECT_EQ(g.value().output_info[0].dtype, DataType::kInt64);
  EXPECT_EQ(g.value().output_info[1].dtype, DataType::kInt32);
  EXPECT_EQ(g.value().output_info[2].dtype, DataType::kBool);
  EXPECT_EQ(g.value().output_info[3].dtype, DataType::kFloat32);
}

TEST(LoaderSafety, ExternalDataLoadsRelativeToTheModelNotTheCurrentDirectory) {
  TempDir dir;
  write_file(dir.path() / "weights.bin", std::string("\0\0\x80\x3f", 4) + std::string(12, '\0'));  // 1.0f, 0, 0, 0
  const auto bytes = external_model("weights.bin").bytes();
  write_file(dir.path() / "m.onnx", std::string(bytes.begin(), bytes.end()));
  const fs::path cwd = fs::current_path();
  fs::current_path(fs::temp_directory_path());  // not the model's directory
  auto g = load_model_file(dir.path() / "m.onnx");
  fs::current_path(cwd);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const Tensor& w = g.value().initializers.begin()->second;
  EXPECT_EQ(w.data<float>()[0], 1.0f);
}

TEST(LoaderSafety, ExternalDataOutsideTheModelDirectoryIsRefused) {
  TempDir outer;
  fs::create_directories(outer.path() / "model");
  write_file(outer.path() / "secret.bin", kFourFloats);
  const fs::path model_dir = outer.path() / "model";
  fs::create_symlink(outer.path() / "secret.bin", model_dir / "link.bin");
  struct Case {
    std::string location, expected;
  };
  for (const Case& c : {Case{(outer.path() / "secret.bin").string(), "absolute path"},
                        Case{"/etc/passwd", "absolute path"},
                        Case{"../secret.bin", "outside the model's directory"},
                        Case{"../../../../../../../../etc/passwd", "outside the model's directory"},
                        Case{"link.bin", "outside the model's directory"}}) {
    auto g = load(external_model(c.location), model_dir);
    ASSERT_FALSE(g.is_ok()) << c.location << " was read";
    EXPECT_NE(g.status().message().find(c.expected), std::string::npos) << g.status().message();
  }
}

TEST(LoaderSafety, ConstantNodeExternalDataIsConfinedToo) {
  TempDir outer;
  fs::create_directories(outer.path() / "model");
  write_file(outer.path() / "secret.bin", kFourFloats);
  ModelBuilder b;
  b.output("y", {4});
  auto& n = b.node("Constant", {}, {"y"});
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  auto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* e = t->add_external_data();
  e->set_key("location");
  e->set_value("../secret.bin");
  auto g = load(b, outer.path() / "model");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("outside the model's directory"), std::string::npos) << g.status().message();
}

TEST(LoaderSafety, ExternalDataFromBytesNeedsABaseDirectory) {
  auto g = load(external_model("weights.bin"), "");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("without a directory"), std::string::npos) << g.status().message();
}

TEST(LoaderSafety, BadExternalOffsetsAndLengthsAreCleanErrors) {
  TempDir dir;
  write_file(dir.path() / "w.bin", kFourFloats);
  struct Case {
    std::string offset, length, expected;
  };
  for (const Case& c : {Case{"12abc", "", "expected a non-negative integer"},
                        Case{"99999999999999999999999", "", "expected a non-negative integer"},
                        Case{"-4", "", "expected a non-negative integer"},
                        Case{"8", "", "holds 16 bytes, fewer than offset 8 + 16 bytes"},
                        Case{"", "1000000000000", "does not match the 16 bytes"}}) {
    auto g = load(external_model("w.bin", 4, c.offset, c.length), dir.path());
    ASSERT_FALSE(g.is_ok()) << c.offset << " " << c.length;
    EXPECT_NE(g.status().message().find(c.expected), std::string::npos) << g.status().message();
  }
}

// A ~100-byte model claiming a 1.2 GB initializer: the size check comes
// before the allocation (a child under a 512 MiB address-space limit would
// otherwise fail with std::bad_alloc).
TEST(LoaderSafety, InitializerSizeIsCheckedBeforeAllocating) {
  ModelBuilder b;
  b.input("x", {1}).output("y", {1});
  auto* w = b.proto().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(300'000'000);
  w->set_raw_data(std::string(16, '\0'));
  b.node("Add", {"x", "w"}, {"y"});
  const int code = in_child([&] {
    rlimit lim{512u << 20, 512u << 20};
    setrlimit(RLIMIT_AS, &lim);
    try {
      auto g = load(b, "");
      return !g.is_ok() && g.status().message().find("holds 16 bytes of data, expected 1200000000") != std::string::npos ? 0 : 1;
    } catch (...) {
      return 2;
    }
  });
  EXPECT_EQ(code, 0) << "1 = wrong or no error, 2 = an exception escaped";

  auto* huge = b.proto().mutable_graph()->mutable_initializer(0);
  huge->clear_dims();
  huge->add_dims((int64_t{1} << 62) + 1);
  huge->add_dims(4);
  auto g = load(b, "");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("overflows 64 bits"), std::string::npos) << g.status().message();
}

// `depth` nested If nodes: then_branch holds the next If, else_branch (and
// the innermost then_branch) is y = Identity(x).
ModelBuilder nested_ifs(int depth) {
  ModelBuilder leaf;
  leaf.proto().mutable_graph()->add_output()->set_name("y");
  leaf.node("Identity", {"x"}, {"y"});
  ModelBuilder inner = leaf;
  for (int d = 0; d < depth; ++d) {
    ModelBuilder outer;
    outer.proto().mutable_graph()->add_output()->set_name("y");
    auto& n = outer.node("If", {"c"}, {"y"});
    ModelBuilder::attr_graph(n, "then_branch", inner);
    ModelBuilder::attr_graph(n, "else_branch", leaf);
    inner = std::move(outer);
  }
  ModelBuilder b;
  b.input("x", {1}).input("c", {}, onnx::TensorProto::BOOL).output("y", {1});
  *b.proto().mutable_graph()->add_node() = inner.proto().graph().node(0);
  return b;
}

TEST(LoaderSafety, DeepNestingIsNamedAsProtobufsLimit) {
  auto ok = load(nested_ifs(60), "");  // beyond protobuf's default limit (~30 levels)
  EXPECT_TRUE(ok.is_ok()) << ok.status().message();
  auto deep = load(nested_ifs(400), "");
  ASSERT_FALSE(deep.is_ok());
  EXPECT_NE(deep.status().message().find("levels deep, more than the limit of 1000"), std::string::npos)
      << deep.status().message();
}

}  // namespace
}  // namespace spindle::graph
