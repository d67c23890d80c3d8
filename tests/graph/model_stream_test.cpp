// model_stream_test.cpp — a model file loaded with its weights read straight
// from the file (model_stream.h) gives the graph a whole parse gives, and
// the same errors for bad weights.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <onnx/onnx_pb.h>

#include "graph/graph.h"
#include "graph/model_stream.h"
#include "session/model_builder.h"

namespace spindle::graph {
namespace {

namespace fs = std::filesystem;
using spindle::testing::ModelBuilder;

// A model file of its own under the temp dir, removed afterwards.
class TempModel {
 public:
  explicit TempModel(const ModelBuilder& b)
      : path_(fs::temp_directory_path() / ("spindle_stream_" + std::to_string(getpid()) + "_" + std::to_string(next_++) +
                                           ".onnx")) {
    const auto bytes = b.bytes();
    std::ofstream(path_, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                 static_cast<std::streamsize>(bytes.size()));
  }
  ~TempModel() { fs::remove(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  static inline int next_ = 0;
};

std::string float_bytes(size_t n, float start) {
  std::string s(n * sizeof(float), '\0');
  for (size_t i = 0; i < n; ++i) {
    const float v = start + static_cast<float>(i) * 0.25f;
    std::memcpy(s.data() + i * sizeof(float), &v, sizeof(float));
  }
  return s;
}

onnx::TensorProto* raw_initializer(ModelBuilder& b, const std::string& name, int64_t n, const std::string& bytes,
                                   int elem = onnx::TensorProto::FLOAT) {
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  t->add_dims(n);
  t->set_raw_data(bytes);
  return t;
}

// y = ((x + big) + small) + typed + big2: weights held as large and small
// raw_data and as float_data.
ModelBuilder mixed_model(int64_t n) {
  ModelBuilder b;
  b.input("x", {n}).output("y", {n});
  raw_initializer(b, "big", n, float_bytes(static_cast<size_t>(n), 1.0f));
  raw_initializer(b, "small", 1, float_bytes(1, -3.0f));
  b.initializer("typed", {1}, {0.5f});
  raw_initializer(b, "big2", n, float_bytes(static_cast<size_t>(n), -7.0f));
  b.node("Add", {"x", "big"}, {"a"});
  b.node("Add", {"a", "small"}, {"b"});
  b.node("Add", {"b", "typed"}, {"c"});
  b.node("Add", {"c", "big2"}, {"y"});
  return b;
}

TEST(ModelStream, LargePayloadsAreLeftOutAndLocated) {
  const int64_t n = 4096;
  ModelBuilder b = mixed_model(n);
  TempModel file(b);
  auto opened = io::RegularFile::open(file.path(), "model file");
  ASSERT_TRUE(opened.is_ok()) << opened.status().message();
  auto stripped = strip_initializer_payloads(opened.value());
  ASSERT_TRUE(stripped.has_value());
  ASSERT_EQ(stripped->payloads.size(), 4u);
  EXPECT_TRUE(stripped->payloads[0].has_value());
  EXPECT_FALSE(stripped->payloads[1].has_value());  // small: kept inline
  EXPECT_FALSE(stripped->payloads[2].has_value());  // float_data
  EXPECT_TRUE(stripped->payloads[3].has_value());
  EXPECT_LT(stripped->bytes.size(), static_cast<size_t>(n) * sizeof(float));
  std::string read(static_cast<size_t>(n) * sizeof(float), '\0');
  ASSERT_TRUE(opened.value().read_at(stripped->payloads[3]->offset, read.data(), read.size()).is_ok());
  EXPECT_EQ(read, float_bytes(static_cast<size_t>(n), -7.0f));
  onnx::ModelProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(stripped->bytes));
  EXPECT_FALSE(parsed.graph().initializer(0).has_raw_data());
  EXPECT_EQ(parsed.graph().initializer(1).raw_data(), float_bytes(1, -3.0f));
  EXPECT_EQ(parsed.graph().node_size(), 4);
}

TEST(ModelStream, FileLoadGivesTheSameInitializersAsBytes) {
  ModelBuilder b = mixed_model(5000);
  TempModel file(b);
  auto from_file = load_model_file(file.path());
  ASSERT_TRUE(from_file.is_ok()) << from_file.status().message();
  const auto bytes = b.bytes();
  auto from_bytes = load_model_bytes(bytes, "test.onnx", "");
  ASSERT_TRUE(from_bytes.is_ok()) << from_bytes.status().message();
  const Graph& f = from_file.value();
  const Graph& m = from_bytes.value();
  ASSERT_EQ(f.initializers.size(), 4u);
  ASSERT_EQ(m.initializers.size(), 4u);
  for (const char* name : {"big", "small", "typed", "big2"}) {
    const Tensor* a = f.initializer(f.value_id(name));
    const Tensor* e = m.initializer(m.value_id(name));
    ASSERT_TRUE(a && e) << name;
    EXPECT_EQ(a->shape(), e->shape()) << name;
    ASSERT_EQ(a->nbytes(), e->nbytes()) << name;
    EXPECT_EQ(std::memcmp(a->raw_data(), e->raw_data(), a->nbytes()), 0) << name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a->raw_data()) % kTensorAlignment, 0u) << name;
  }
  EXPECT_EQ(f.nodes.size(), m.nodes.size());
}

// A payload of the wrong size, or raw bytes for a string tensor, fail as
// they fail when the model is parsed whole.
TEST(ModelStream, BadPayloadsGiveTheWholeParsesErrors) {
  auto same_error = [](ModelBuilder& b) {
    TempModel file(b);
    auto from_file = load_model_file(file.path());
    const auto bytes = b.bytes();
    auto from_bytes = load_model_bytes(bytes, file.path().string(), "");
    ASSERT_FALSE(from_file.is_ok());
    ASSERT_FALSE(from_bytes.is_ok());
    EXPECT_EQ(from_file.status().code(), from_bytes.status().code());
    EXPECT_EQ(from_file.status().message(), from_bytes.status().message());
  };
  {
    ModelBuilder b;
    b.input("x", {1024}).output("y", {1024});
    raw_initializer(b, "w", 1024, float_bytes(1025, 0.0f));  // one float too many
    b.node("Add", {"x", "w"}, {"y"});
    same_error(b);
  }
  {
    ModelBuilder b;
    b.input("x", {1}).output("y", {1});
    raw_initializer(b, "s", 1, std::string(8192, 'a'), onnx::TensorProto::STRING);
    b.node("Identity", {"x"}, {"y"});
    same_error(b);
  }
}

// A truncated file is not stripped; the whole parse reports it.
TEST(ModelStream, TruncatedFileIsReportedByTheWholeParse) {
  ModelBuilder b = mixed_model(4096);
  TempModel file(b);
  const auto size = fs::file_size(file.path());
  fs::resize_file(file.path(), size - 100);
  auto opened = io::RegularFile::open(file.path(), "model file");
  ASSERT_TRUE(opened.is_ok());
  EXPECT_FALSE(strip_initializer_payloads(opened.value()).has_value());
  auto g = load_model_file(file.path());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("not a valid ONNX model"), std::string::npos) << g.status().message();
}

// Hostile files: seeded mutations of a model with large payloads (bytes
// overwritten, inserted or dropped, the file cut short; the varints of field
// headers and lengths are where they do most harm). The file path, which
// strips the payloads first, and the bytes path, which parses the model
// whole, must agree: both fail, or both give the same initializers bit for
// bit and the same node count.
TEST(ModelStream, MutatedFilesLoadAsTheirBytesDo) {
  const auto original = mixed_model(1500).bytes();
  std::mt19937 rng(20261128);
  TempModel file(mixed_model(1));
  int both_loaded = 0, both_failed = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<uint8_t> bytes = original;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      // Mostly near the start and around the payloads' headers.
      const size_t at = rng() % 2 ? rng() % std::min<size_t>(bytes.size(), 200) : rng() % bytes.size();
      switch (rng() % 4) {
        case 0: bytes[at] = static_cast<uint8_t>(rng()); break;
        case 1: bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(rng())); break;
        case 2: bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(at)); break;
        default: bytes.resize(at); break;
      }
    }
    std::ofstream(file.path(), std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    auto from_file = load_model_file(file.path());
    auto from_bytes = load_model_bytes(bytes, file.path().string(), "");
    ASSERT_EQ(from_file.is_ok(), from_bytes.is_ok())
        << "trial " << trial << ": file " << (from_file.is_ok() ? "loaded" : from_file.status().message()) << "; bytes "
        << (from_bytes.is_ok() ? "loaded" : from_bytes.status().message());
    if (!from_file.is_ok()) {
      ++both_failed;
      continue;
    }
    ++both_loaded;
    const Graph& f = from_file.value();
    const Graph& m = from_bytes.value();
    ASSERT_EQ(f.nodes.size(), m.nodes.size()) << "trial " << trial;
    ASSERT_EQ(f.initializers.size(), m.initializers.size()) << "trial " << trial;
    for (const auto& [id, t] : m.initializers) {
      const Tensor* a = f.initializer(f.value_id(m.value_name(id)));
      ASSERT_TRUE(a) << "trial " << trial << ": " << m.value_name(id);
      ASSERT_EQ(a->shape(), t.shape()) << "trial " << trial;
      ASSERT_EQ(a->nbytes(), t.nbytes()) << "trial " << trial;
      if (t.dtype() != DataType::kString && t.nbytes())
        EXPECT_EQ(std::memcmp(a->raw_data(), t.raw_data(), t.nbytes()), 0) << "trial " << trial;
    }
  }
  // Both outcomes occur, so both paths were exercised.
  EXPECT_GT(both_loaded, 10);
  EXPECT_GT(both_failed, 10);
}

}  // namespace
}  // namespace spindle::graph
