// cli_manners_test.cpp — the command-line tool's manners: --help shows
// defaults, an unknown command lists the real ones, a --shape naming an input
// the model lacks lists the model's inputs, `spindle info --json`, and
// `spindle bench` over several models and thread counts (the table of
// scripts/demo.sh), and the threading flags reaching the session's options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "session/model_builder.h"

namespace spindle {
namespace {

namespace fs = std::filesystem;
using testing::ModelBuilder;
using ::testing::HasSubstr;
using ::testing::Not;

// y = Relu(x), x of shape [N, 4] (N dynamic).
fs::path relu_model(const std::string& stem) {
  ModelBuilder b;
  b.input("x", {-1, 4}).output("y", {-1, 4});
  b.node("Relu", {"x"}, {"y"});
  const fs::path path = temp_dir() / (stem + ".onnx");
  const auto bytes = b.bytes();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST(CliManners, HelpShowsDefaults) {
  std::string out;
  ASSERT_EQ(run_cli("bench --help", &out), 0) << out;
  EXPECT_THAT(out, ::testing::ContainsRegex("--runs[^\n]*20"));
  EXPECT_THAT(out, ::testing::ContainsRegex("--warmup[^\n]*3"));
  EXPECT_THAT(out, ::testing::ContainsRegex("--opt-level[^\n]*all"));
}

TEST(CliManners, UnknownCommandListsTheCommands) {
  std::string out;
  EXPECT_NE(run_cli("bnech model.onnx", &out), 0);
  EXPECT_THAT(out, HasSubstr("unknown command 'bnech'"));
  for (const char* cmd : {"info", "run", "bench", "tune", "profile"}) EXPECT_THAT(out, HasSubstr(cmd));
}

TEST(CliManners, BenchShapeForAMissingInputNamesTheInputs) {
  const fs::path model = relu_model("relu_shape");
  std::string out;
  EXPECT_EQ(run_cli(fmt::format("bench {} --shape images=1x4 --runs 1", model.string()), &out), 1);
  EXPECT_THAT(out, HasSubstr("no input 'images'"));
  EXPECT_THAT(out, HasSubstr("x (float32 Nx4)"));
  // A name the model has works.
  ASSERT_EQ(run_cli(fmt::format("bench {} --shape x=2x4 --runs 1 --warmup 0", model.string()), &out), 0) << out;
}

TEST(CliManners, ThreadingFlagsSetTheTypedOptions) {
  const fs::path model = relu_model("relu_flags");
  std::string out;
  ASSERT_EQ(run_cli(fmt::format("bench {} --shape x=2x4 --runs 1 --warmup 0 --json --intra 2 --spin 0 --config "
                                "session.set_denormal_as_zero=1 --config session.force_spinning_stop=0",
                                model.string()),
                    &out),
            0)
      << out;
  auto j = nlohmann::json::parse(out.substr(std::min(out.find('{'), out.find('['))));
  if (j.is_array()) j = j[0];
  const std::string threading = j["threading"].get<std::string>();
  EXPECT_THAT(threading, HasSubstr("intra-op: 2 thread(s) including the caller, spinning off"));
  EXPECT_THAT(threading, HasSubstr("denormals: flushed to zero"));
  EXPECT_THAT(threading, HasSubstr("not stopped when runs end"));
  // Bad values fail naming the flag or the key.
  EXPECT_NE(run_cli(fmt::format("bench {} --runs 1 --spin 2", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("--spin"));
  EXPECT_NE(run_cli(fmt::format("bench {} --runs 1 --affinity '1,;2'", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("--affinity=\"1,;2\""));
  EXPECT_NE(run_cli(fmt::format("bench {} --runs 1 --config session.intra_op.alow_spinning=0", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("did you mean 'session.intra_op.allow_spinning'"));
}

// --pause-every N sleeps --pause-ms before every N-th timed run (runs in
// series after idle gaps) and --flush-cache-mb reads a buffer before every
// run: neither is timed (3 pauses of 200 ms around 6 tiny runs leave the
// throughput far above 5 runs a second), the JSON says so, and bad values or
// several callers are refused by name.
TEST(CliManners, BenchPausesAndFlushesAreNotTimed) {
  const fs::path model = relu_model("relu_pause");
  std::string out;
  ASSERT_EQ(run_cli(fmt::format("bench {} --shape x=2x4 --runs 6 --warmup 0 --json --pause-every 2 --pause-ms 200",
                                model.string()),
                    &out),
            0)
      << out;
  auto j = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_EQ(j["pause"]["every"], 2);
  EXPECT_EQ(j["pause"]["ms"], 200);
  EXPECT_GT(j["throughput_per_s"].get<double>(), 50.0);
  EXPECT_LT(j["latency_ms"]["p99"].get<double>(), 100.0);
  EXPECT_NE(run_cli(fmt::format("bench {} --runs 2 --pause-every 1 --concurrency 2", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("--pause-every / --flush-cache-mb with --concurrency 2"));
  EXPECT_NE(run_cli(fmt::format("bench {} --runs 2 --pause-every 1 --pause-ms -5", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("--pause-ms -5"));
  ASSERT_EQ(run_cli(fmt::format("bench {} --shape x=2x4 --runs 2 --warmup 0 --json --flush-cache-mb 8", model.string()),
                    &out),
            0)
      << out;
  EXPECT_EQ(nlohmann::json::parse(out.substr(out.find('{')))["flush_mb"], 8);
  EXPECT_NE(run_cli(fmt::format("bench {} --runs 2 --flush-cache-mb 5000", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("--flush-cache-mb 5000"));
}

TEST(CliManners, InfoJsonNamesTheIsaLevel) {
  std::string out;
  ASSERT_EQ(run_cli("info --json", &out), 0) << out;
  const auto j = nlohmann::json::parse(out);
  const std::string active = j["isa"]["active"].get<std::string>();
  EXPECT_TRUE(active == "baseline" || active == "avx2" || active == "avx512") << active;
  EXPECT_GE(j["topology"]["default_num_threads"].get<int>(), 1);
  EXPECT_TRUE(j.contains("backend"));
  ASSERT_EQ(std::system(fmt::format("SPINDLE_ISA=baseline {} info --json > {}", SPINDLE_CLI,
                                    (temp_dir() / "info.json").string())
                            .c_str()),
            0);
  std::ifstream in(temp_dir() / "info.json");
  const auto capped = nlohmann::json::parse(in);
  EXPECT_EQ(capped["isa"]["active"], "baseline");
  EXPECT_EQ(capped["isa"]["SPINDLE_ISA"], "baseline");
}

TEST(CliManners, BenchTableOverModelsAndThreadCounts) {
  const fs::path a = relu_model("relu_a"), b = relu_model("relu_b");
  std::string out;
  const std::string args = fmt::format("bench {} {} --threads 1,2 --runs 2 --warmup 0 --shape relu_a:x=3x4 --shape relu_b:x=5x4",
                                       a.string(), b.string());
  ASSERT_EQ(run_cli(args, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("median latency (ms)"));
  EXPECT_THAT(out, ::testing::ContainsRegex("model +inputs +1 thread +2 threads"));
  EXPECT_THAT(out, ::testing::ContainsRegex("relu_a +x=3x4"));
  EXPECT_THAT(out, ::testing::ContainsRegex("relu_b +x=5x4"));

  ASSERT_EQ(run_cli(args + " --json", &out), 0) << out;
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[0]["intra"], 1);
  EXPECT_EQ(j[1]["intra"], 2);
  EXPECT_EQ(j[0]["inputs"]["x"], "3x4");
  EXPECT_EQ(j[3]["inputs"]["x"], "5x4");

  // A --shape no model can use is an error listing every model's inputs.
  EXPECT_EQ(run_cli(fmt::format("bench {} {} --threads 1 --runs 1 --shape images=1x4", a.string(), b.string()), &out),
            1);
  EXPECT_THAT(out, HasSubstr("no model has that input"));
  EXPECT_THAT(out, HasSubstr("relu_b: x (float32 Nx4)"));
  EXPECT_THAT(out, Not(HasSubstr("median latency")));
}

}  // namespace
}  // namespace spindle
