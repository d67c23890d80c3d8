// npy_test.cpp — .npy files: a round trip keeps dtype, shape and values;
// values that are not one tensor (sequences, optionals) are refused with an error naming the file and the value, nothing written.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

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

}  // namespace
}  // namespace spindle
