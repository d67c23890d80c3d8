// isa_levels_test.cpp — the real PP-OCR models at every ISA level this
// machine has (baseline, avx2, avx512 as detected): outputs must agree with
// each other and with ONNX Runtime's within tolerance.
//
// The level is chosen once per process, so each level runs in a child: this
// test program runs itself with SPINDLE_ISA=<level> and a filter selecting
// IsaLevelChild.WriteOutputs, which writes every model's outputs as .npy
// files plus the level it ran at. The parent then compares the files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../kernels/onnx_node_runner.h"
#include "spindle/io.h"
#include "references.h"
#include "spindle/cpu.h"
#include "spindle/session.h"

namespace spindle {
namespace {

namespace fs = std::filesystem;

const char* const kModels[] = {"ch_ppocr_mobile_v2.0_cls_infer", "ch_PP-OCRv4_rec_infer", "ch_PP-OCRv4_det_infer"};
constexpr const char* kOutEnv = "SPINDLE_ISA_TEST_OUT";

using testing::cache_dir;
using testing::load_reference;
using testing::Reference;

// The child: runs only when the parent set SPINDLE_ISA_TEST_OUT.
TEST(IsaLevelChild, WriteOutputs) {
  const char* out = std::getenv(kOutEnv);
  if (!out) GTEST_SKIP() << "run by IsaLevels.ModelsAgreeAtEveryLevel in a child process";
  const fs::path dir(out);
  fs::create_directories(dir);
  std::ofstream(dir / "level") << isa_level_name(active_isa_level());
  for (const char* stem : kModels) {
    Reference ref = load_reference(stem);
    SessionOptions opts;
    opts.intra_op_num_threads = 2;
    auto outputs = InferenceSession::create(ref.model.string(), opts)->run(ref.feeds);
    ASSERT_EQ(outputs.size(), ref.outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i)
      ASSERT_TRUE(io::write_npy(dir / fmt::format("{}.{}.npy", stem, i), outputs[i]).ok());
  }
}

TEST(IsaLevels, ModelsAgreeAtEveryLevel) {
  if (!fs::exists(cache_dir() / "refs" / kModels[0] / "manifest.json"))
    GTEST_SKIP() << "no references in " << cache_dir() << ": run scripts/fetch-models.sh and make-references.sh";
  const fs::path tmp = fs::temp_directory_path() / fmt::format("spindle-isa-test-{}", ::getpid());
  fs::create_directories(tmp);
  const fs::path self = fs::read_symlink("/proc/self/exe");
  std::vector<IsaLevel> levels;
  for (int l = 0; l <= static_cast<int>(detected_isa_level()); ++l) levels.push_back(static_cast<IsaLevel>(l));
  if (detected_isa_level() != IsaLevel::kAvx512)
    std::cout << "[ note     ] this CPU has no AVX-512: levels up to " << isa_level_name(detected_isa_level())
              << " are tested\n";
  for (IsaLevel level : levels) {
    const char* name = isa_level_name(level);
    const std::string cmd =
        fmt::format("SPINDLE_ISA={} {}='{}' '{}' --gtest_filter=IsaLevelChild.WriteOutputs > '{}' 2>&1", name, kOutEnv,
                    (tmp / name).string(), self.string(), (tmp / fmt::format("{}.log", name)).string());
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "child at level " << name << " failed; see " << tmp;
    std::ifstream in(tmp / name / "level");
    std::string ran;
    in >> ran;
    ASSERT_EQ(ran, name) << "the child did not run at the level SPINDLE_ISA asked for";
  }
  for (const char* stem : kModels) {
    Reference ref = load_reference(stem);
    for (size_t i = 0; i < ref.outputs.size(); ++i) {
      const std::string file = fmt::format("{}.{}.npy", stem, i);
      const Tensor base = io::read_npy(tmp / "baseline" / file).value();
      EXPECT_TRUE(testing::tensors_close(base, ref.outputs[i].second, 1e-3, 1e-4))
          << stem << " output " << i << " at baseline vs ONNX Runtime";
      for (IsaLevel level : levels) {
        if (level == IsaLevel::kBaseline) continue;
        const Tensor got = io::read_npy(tmp / isa_level_name(level) / file).value();
        EXPECT_TRUE(testing::tensors_close(got, base, 1e-3, 1e-4))
            << stem << " output " << i << " at " << isa_level_name(level) << " vs baseline";
      }
    }
  }
  if (!HasFailure()) fs::remove_all(tmp);
}

}  // namespace
}  // namespace spindle
