// npy_safety_test.cpp — hostile .npy and .pb input files: headers parsed
// strictly (negative or garbage dimensions, over-long numbers), sizes compared
// with the file before anything is allocated, .pb files read as the kind of
// value they hold; numpy unicode strings round-trip; devices, FIFOs,
// directories and files over a size cap refused before a byte is read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <onnx/onnx-data_pb.h>

#include "io/regular_file.h"
#include "io/tensor_proto.h"
#include "spindle/io.h"

namespace spindle {
namespace {

namespace fs = std::filesystem;

class NpySafety : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(dir_); }
  void TearDown() override { fs::remove_all(dir_); }

  // A version-1 .npy file with this header dict and `data_bytes` zero bytes.
  fs::path npy(const std::string& dict, size_t data_bytes) {
    std::string header = dict;
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header.push_back('\n');
    const fs::path p = dir_ / "t.npy";
    std::ofstream out(p, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
    out.write(len, 2);
    out << header << std::string(data_bytes, '\0');
    return p;
  }

  std::string error_of(const fs::path& p) {
    auto t = io::read_npy(p);
    return t.is_ok() ? std::string("<read ") + t.value().describe() + ">" : t.status().message();
  }

  fs::path dir_ = fs::temp_directory_path() / ("spindle_npy_safety_" + std::to_string(::getpid()));
};

TEST_F(NpySafety, HeadersAreParsedStrictly) {
  struct Case {
    std::string shape;
    size_t bytes;
    std::string expected;
  };
  for (const Case& c : {Case{"(1, 3, -48, 192)", 1 * 3 * 48 * 192 * 4, "other than non-negative integers"},
                        Case{"(1x3;48,,192 )", 1 * 3 * 48 * 192 * 4, "malformed .npy header"},
                        Case{"(99999999999999999999999999, )", 16, "is too large"},
                        Case{"(1000000, 1000000)", 64, "holds 64 bytes of data, expected 4000000000000"},
                        Case{"(4611686018427387905, 4)", 64, "overflows 64 bits"}}) {
    const std::string msg =
        error_of(npy("{'descr': '<f4', 'fortran_order': False, 'shape': " + c.shape + ", }", c.bytes));
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.shape << ": " << msg;
  }
  EXPECT_NE(error_of(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", 8)).find("unexpected key"),
            std::string::npos);
  EXPECT_NE(error_of(npy("{'descr': '<f4', 'shape': (2,)}", 8)).find("missing"), std::string::npos);
  // The well-formed file still reads.
  auto ok = io::read_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24));
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(ok.value().shape(), (Shape{2, 3}));
}

TEST_F(NpySafety, StringsRoundTripAsNumpyUnicode) {
  const Tensor s = Tensor::from_vector<std::string>({3}, {"a", "", "grüße ☃"});
  ASSERT_TRUE(io::write_npy(dir_ / "s.npy", s).is_ok());
  std::ifstream in(dir_ / "s.npy", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("'descr': '<U7'"), std::string::npos);
  auto back = io::read_npy(dir_ / "s.npy");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back.value().to_vector<std::string>(), s.to_vector<std::string>());
}

// Strings of no width ('<U0') take no data, so the file cannot bound the
// element count a shape claims: refused, naming the count; an empty array
// of them still reads.
TEST_F(NpySafety, ZeroWidthStringsAreRefused) {
  const std::string msg = error_of(npy("{'descr': '=U0', 'fortran_order': False, 'shape': (5277525, 1), }", 0));
  EXPECT_NE(msg.find("5277525 strings of no width"), std::string::npos) << msg;
  auto empty = io::read_npy(npy("{'descr': '<U0', 'fortran_order': False, 'shape': (0, 3), }", 0));
  ASSERT_TRUE(empty.is_ok()) << empty.status().message();
  EXPECT_EQ(empty.value().shape(), (Shape{0, 3}));
}

TEST_F(NpySafety, PbFilesAreReadAsWhatTheInputIs) {
  onnx::SequenceProto seq;
  seq.set_name("xs");  // read as a TensorProto, these bytes become packed dims
  seq.set_elem_type(onnx::SequenceProto::TENSOR);
  for (float v : {1.0f, 2.0f}) {
    auto* t = seq.add_tensor_values();
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(1);
    t->add_float_data(v);
  }
  const fs::path p = dir_ / "seq.pb";
  {
    std::ofstream out(p, std::ios::binary);
    seq.SerializeToOstream(&out);
  }
  // Read as a tensor: a clean error, never std::bad_alloc.
  auto as_tensor = io::read_tensor_file(p);
  EXPECT_FALSE(as_tensor.is_ok());
  // Read for a sequence input: the sequence.
  TensorInfo info;
  info.name = "xs";
  info.is_sequence = true;
  info.dtype = DataType::kFloat32;
  auto v = io::read_value_file(p, info);
  ASSERT_TRUE(v.is_ok()) << v.status().message();
  ASSERT_TRUE(v.value().is_sequence());
  EXPECT_EQ(v.value().sequence_items().size(), 2u);
  // A sequence input needs a .pb file.
  auto npy_for_sequence = io::read_value_file(dir_ / "xs.npy", info);
  ASSERT_FALSE(npy_for_sequence.is_ok());
  EXPECT_NE(npy_for_sequence.status().message().find("SequenceProto"), std::string::npos);
}

// Every tensor file is opened and the opened file checked: a character device
// (read directly or through a symlink), a FIFO without a writer (opening it
// does not wait) and a directory are refused naming the path and what it is.
TEST_F(NpySafety, SpecialFilesAreRefusedAsWhatTheyAre) {
  const fs::path link = dir_ / "zero.npy";
  fs::create_symlink("/dev/zero", link);
  const fs::path fifo = dir_ / "fifo.pb";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  onnx::TypeProto seq_type;
  seq_type.mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  struct Case {
    Status status;
    std::string expected;
  };
  for (const Case& c : {
           Case{io::read_npy("/dev/zero").status(), ".npy file /dev/zero is a character device, expected a regular file"},
           Case{io::read_npy(link).status(), link.string() + " is a character device, expected a regular file"},
           Case{io::read_npy(dir_).status(), dir_.string() + " is a directory, expected a regular file"},
           Case{io::read_tensor_pb("/dev/zero").status(), "tensor file /dev/zero is a character device"},
           Case{io::read_tensor_pb(fifo).status(), fifo.string() + " is a FIFO (named pipe), expected a regular file"},
           Case{io::read_value_pb("/dev/urandom", seq_type).status(), "value file /dev/urandom is a character device"},
       }) {
    EXPECT_EQ(c.status.code(), StatusCode::kInvalidArgument) << c.status.to_string();
    EXPECT_NE(c.status.message().find(c.expected), std::string::npos) << c.status.message();
  }
  const auto missing = io::read_npy(dir_ / "missing.npy");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing.npy does not exist"), std::string::npos) << missing.status().message();
}

// A file over the cap is refused before it is read; one at the cap is read
// to its exact size.
TEST_F(NpySafety, FilesOverTheCapAreRefused) {
  const fs::path p = dir_ / "eleven.bin";
  std::ofstream(p, std::ios::binary) << "0123456789X";
  const auto over = io::read_whole_file(p, "test file", 10);
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(over.status().message(), "test file " + p.string() + " holds 11 bytes, more than the limit of 10 bytes");
  const auto at = io::read_whole_file(p, "test file", 11);
  ASSERT_TRUE(at.is_ok()) << at.status().message();
  EXPECT_EQ(at.value(), "0123456789X");
  EXPECT_EQ(io::describe_bytes(io::kMaxProtoFileBytes), "2 GiB - 1 byte");
  EXPECT_EQ(io::describe_bytes(io::kMaxOptionsFileBytes), "16 MiB");
}

// Format 2.0 and 3.0 files (a 4-byte header length) read like 1.0.
TEST_F(NpySafety, Versions2And3Read) {
  for (const char version : {'\x02', '\x03'}) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    header.append((64 - (12 + header.size() + 1) % 64) % 64, ' ');
    header.push_back('\n');
    const fs::path p = dir_ / "v2.npy";
    {
      std::ofstream out(p, std::ios::binary);
      out.write("\x93NUMPY", 6);
      out.put(version);
      out.put('\0');
      const char len[4] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8), 0, 0};
      out.write(len, 4);
      const float v[2] = {1.5f, -2.0f};
      out << header;
      out.write(reinterpret_cast<const char*>(v), sizeof v);
    }
    auto t = io::read_npy(p);
    ASSERT_TRUE(t.is_ok()) << t.status().message();
    EXPECT_EQ(t.value().to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
  }
}

}  // namespace
}  // namespace spindle
