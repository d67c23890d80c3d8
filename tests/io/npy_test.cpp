// npy_test.cpp — .npy files: a round trip keeps dtype, shape and values;
// values that are not one tensor (sequences, optionals) are refused with an error naming the file and the value, nothing written;
// a header over 65,535 bytes (rank ~22,000 and up) is written as format 2.0, as numpy does.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "spindle/io.h"

namespace spindle {
namespace {

TEST(Npy, RoundTripAndRefusalsOfWhatNpyCannotHold) {
  const auto dir = std::filesystem::temp_directory_path() / ("spindle_npy_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const Tensor x = Tensor::from_vector<int64_t>({2, 2}, {1, -2, 3, 1LL << 40});
  ASSERT_TRUE(io::write_npy(dir / "x.npy", x).is_ok());
  auto back = io::read_npy(dir / "x.npy");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back.value().shape(), x.shape());
  EXPECT_EQ(back.value().to_vector<int64_t>(), x.to_vector<int64_t>());
  const Tensor values[] = {Tensor::sequence(DataType::kFloat32, {Tensor::from_vector<float>({1}, {1})}),
                           Tensor::optional(DataType::kFloat32, false)};
  for (const Tensor& v : values) {
    const Status s = io::write_npy(dir / "v.npy", v);
    EXPECT_EQ(s.code(), StatusCode::kUnsupported) << v.describe();
    EXPECT_NE(s.message().find(v.describe()), std::string::npos) << s.message();
    EXPECT_FALSE(std::filesystem::exists(dir / "v.npy"));
  }
  std::filesystem::remove_all(dir);
}

// Rank 30,000 (dimensions of 1): the header is longer than the 2-byte length
// of format 1.0 can say, so the file is format 2.0 with a 4-byte length, and
// it reads back; a small tensor stays format 1.0. numpy reads its header too
// when python3 with numpy is installed.
TEST(Npy, LongHeaderIsWrittenAsFormat2) {
  const auto dir = std::filesystem::temp_directory_path() / ("spindle_npy_v2_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto magic_of = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return bytes.substr(0, 12);
  };
  const Shape shape(30000, 1);
  Tensor big(DataType::kFloat32, shape);
  big.mutable_data<float>()[0] = 7.25f;
  ASSERT_TRUE(io::write_npy(dir / "big.npy", big).is_ok());
  const std::string head = magic_of(dir / "big.npy");
  EXPECT_EQ(head.substr(0, 8), std::string("\x93NUMPY\x02\x00", 8));
  const uint32_t len = static_cast<unsigned char>(head[8]) | static_cast<unsigned char>(head[9]) << 8 |
                       static_cast<unsigned char>(head[10]) << 16 | static_cast<uint32_t>(static_cast<unsigned char>(head[11])) << 24;
  EXPECT_GT(len, 65535u);
  EXPECT_EQ((12 + len) % 64, 0u);
  EXPECT_EQ(std::filesystem::file_size(dir / "big.npy"), 12 + len + sizeof(float));
  auto back = io::read_npy(dir / "big.npy");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back.value().shape(), shape);
  EXPECT_EQ(back.value().to_vector<float>(), std::vector<float>{7.25f});

  ASSERT_TRUE(io::write_npy(dir / "small.npy", Tensor::from_vector<float>({2}, {1, 2})).is_ok());
  EXPECT_EQ(magic_of(dir / "small.npy").substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));

  if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") == 0) {
    // numpy arrays hold at most 32 (numpy 2: 64) dimensions, so numpy reads
    // the header only: format 2.0, rank 30000, data right after it. numpy >=
    // 1.24 wants headers over 10,000 bytes allowed explicitly.
    const std::string cmd = "/usr/bin/python3 -c \"import sys, os, inspect, numpy.lib.format as f\n"
                            "fp = open(sys.argv[1], 'rb'); assert f.read_magic(fp) == (2, 0)\n"
                            "r = f.read_array_header_2_0\n"
                            "kw = {'max_header_size': 10**6} if 'max_header_size' in inspect.signature(r).parameters else {}\n"
                            "shape, fortran, dtype = r(fp, **kw)\n"
                            "ok = shape == (1,) * 30000 and not fortran and dtype == 'float32'\n"
                            "sys.exit(0 if ok and fp.tell() + 4 == os.path.getsize(sys.argv[1]) else 3)\" " +
                            (dir / "big.npy").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << "numpy cannot read the rank-30000 file's header";
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spindle
