// corrupt_model_test.cpp — damaged models are errors, never crashes: bytes of
// the ONNX backend test models (node/, Debian libonnx-testdata) are
// overwritten at random (two fixed seeds each), then each is loaded and run on its
// test inputs in a child process. A child may end with a spindle::Error;
// one killed by a signal (a crash, a sanitizer report) or ending with any
// other exception fails the test, naming the model and the seed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include <onnx/onnx_pb.h>

#include "io/tensor_proto.h"
#include "spindle/session.h"

namespace spindle {
namespace {

namespace fs = std::filesystem;

// Runs in the child: 0 = fine (outputs or a spindle::Error), 3 = another exception.
int load_and_run(const std::string& bytes, const onnx::ModelProto& original, const fs::path& data) {
  try {
    SessionOptions o;
    o.intra_op_num_threads = 2;
    auto s = InferenceSession::create_from_bytes(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), o);
    Feeds feeds;
    int i = 0;
    for (const auto& in : original.graph().input()) {
      const fs::path p = data / ("input_" + std::to_string(i++) + ".pb");
      if (!fs::exists(p)) break;
      auto v = io::read_value_pb(p, in.type());
      if (v.is_ok()) feeds.emplace_back(in.name(), std::move(v).value());
    }
    s->run(feeds);
  } catch (const Error&) {
  } catch (...) {
    return 3;
  }
  return 0;
}

TEST(CorruptModels, DamagedBytesGiveErrorsNotCrashes) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "forks a child per model; ThreadSanitizer does not support fork in a threaded process";
#endif
  const fs::path root = "/usr/share/libonnx-testdata/data/node";
  if (!fs::exists(root)) GTEST_SKIP() << root << " is missing (Debian package libonnx-testdata)";
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  int runs = 0;
  std::vector<std::string> bad;
  for (size_t d = 0; d < dirs.size(); ++d) {
    std::ifstream in(dirs[d] / "model.onnx", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    onnx::ModelProto original;
    if (bytes.empty() || !original.ParseFromString(bytes)) continue;
    for (uint32_t seed = 0; seed < 2; ++seed) {
      std::mt19937 rng(static_cast<uint32_t>(d) * 100 + seed);
      std::string damaged = bytes;
      const int writes = 1 + static_cast<int>(rng() % 4);
      for (int w = 0; w < writes; ++w) damaged[rng() % damaged.size()] = static_cast<char>(rng());
      std::fflush(nullptr);
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) _exit(load_and_run(damaged, original, dirs[d] / "test_data_set_0"));
      int status = 0;
      waitpid(pid, &status, 0);
      ++runs;
      if (WIFSIGNALED(status) || WEXITSTATUS(status) != 0)
        bad.push_back(dirs[d].filename().string() + " seed " + std::to_string(seed) +
                      (WIFSIGNALED(status) ? " signal " + std::to_string(WTERMSIG(status))
                                           : " exit " + std::to_string(WEXITSTATUS(status))));
    }
  }
  EXPECT_GT(runs, 1800);
  EXPECT_TRUE(bad.empty()) << bad.size() << " of " << runs << " damaged models crashed, first: " << bad[0];
}

}  // namespace
}  // namespace spindle
