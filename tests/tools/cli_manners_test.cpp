// cli_manners_test.cpp — the command-line tool's manners: --help shows
// defaults, an unknown command lists the real ones, a --shape naming an input
// the model lacks lists the model's inputs, `spindle info --json`, and
// `spindle bench` over several models and thread counts (the table of
// scripts/demo.sh), the threading flags reaching the session's options, and
// hostile files and folders: devices, FIFOs and endless or deeply nested
// files refused by name, output folders that cannot be created;
// --optimized-model and --log-level.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "spindle/io.h"
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
  for (const char* cmd : {"info", "run", "bench", "tune", "profile", "serve"}) EXPECT_THAT(out, HasSubstr(cmd));
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

// The load limits have flags of their own beside the run limits.
TEST(CliManners, LoadLimitFlagsBoundSessionCreation) {
  ModelBuilder b;
  b.input("x", {-1, 4}).output("y", {-1, 4});
  b.node("Relu", {"x"}, {"r"});
  b.node("Neg", {"r"}, {"y"});
  const fs::path model = temp_dir() / "relu_neg_limits.onnx";
  const auto bytes = b.bytes();
  std::ofstream(model, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                               static_cast<std::streamsize>(bytes.size()));
  std::string out;
  EXPECT_NE(run_cli(fmt::format("bench {} --shape x=2x4 --runs 1 --max-graph-nodes 1", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("the model has 2 nodes once its functions are expanded"));
  EXPECT_THAT(out, HasSubstr("session.max_graph_nodes = 1"));
  EXPECT_EQ(run_cli(fmt::format("bench {} --shape x=2x4 --runs 1 --max-graph-nodes 2 --load-timeout-ms 60000",
                                model.string()),
                    &out),
            0)
      << out;
  EXPECT_NE(run_cli(fmt::format("bench {} --runs 1 --load-timeout-ms -5", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("--load-timeout-ms"));
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

// bench reports its session's creation time and the process's resident
// memory: a 64 MB flush buffer, allocated and filled after creation, shows
// in the RSS after the runs and in the peak, not in the RSS after creation.
TEST(CliManners, BenchReportsCreationAndResidentMemory) {
  const fs::path model = relu_model("relu_memory");
  std::string out;
  ASSERT_EQ(run_cli(fmt::format("bench {} --shape x=2x4 --runs 2 --warmup 0 --json --flush-cache-mb 64", model.string()),
                    &out),
            0)
      << out;
  auto j = nlohmann::json::parse(out.substr(out.find('{')));
  const auto& m = j["memory_mb"];
  EXPECT_GT(j["create_ms"].get<double>(), 0.0);
  EXPECT_GT(m["rss_after_create"].get<double>(), 1.0);
  EXPECT_GT(m["rss_after_runs"].get<double>(), m["rss_after_create"].get<double>() + 60.0) << m.dump();
  EXPECT_GE(m["peak_rss"].get<double>(), m["rss_after_runs"].get<double>()) << m.dump();
  ASSERT_EQ(run_cli(fmt::format("bench {} --shape x=2x4 --runs 2 --warmup 0", model.string()), &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("MB after creation"));
}

// The plan on a machine described to hwloc: each worker's processor, core
// and node; a removed socket and a quota; bad inputs refused by name.
TEST(CliManners, InfoTopologyPrintsThePlanOfAnotherMachine) {
  std::string out;
  ASSERT_EQ(run_cli("info --topology 'package:2 numa:1 core:4 pu:2' --cpuset 0-7 --cpu-quota 3.5", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("8 physical cores, 16 logical processors 0-15, 2 NUMA node(s)"));
  EXPECT_THAT(out, HasSubstr("CPU quota: 3.50 CPUs (given), rounded up to 4"));
  EXPECT_THAT(out, HasSubstr("intra-op pool: 4 thread(s) = caller (not pinned) + 3 worker(s)"));
  EXPECT_THAT(out, HasSubstr("  worker 2 -> processor 6 (core 3 of 6-7, NUMA node 0)\n"));
  EXPECT_THAT(out, HasSubstr("intra_op.numa_node=1: this process may use no processor of that node"));
  EXPECT_NE(run_cli("info --topology 'package:2 bogus:1'", &out), 0);
  EXPECT_THAT(out, HasSubstr("neither an existing XML file nor an hwloc synthetic description"));
  EXPECT_NE(run_cli("info --topology 'package:1 core:2 pu:1' --json", &out), 0);
  EXPECT_THAT(out, HasSubstr("--json"));
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

// Files spindle reads whole are checked to be regular files of a bounded size
// before a byte is read: /dev/zero as the model (directly or through a
// symlink), as the options file or as an input, and a FIFO without a writer
// fail at once naming the file and what it is, instead of reading without end
// or waiting forever.
TEST(CliManners, EndlessAndSpecialFilesAreRefusedBeforeReading) {
  const fs::path model = relu_model("relu_endless");
  const fs::path link = temp_dir() / "model.onnx";
  fs::remove(link);
  fs::create_symlink("/dev/zero", link);
  const fs::path fifo = temp_dir() / "x.npy";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  struct Case {
    std::string args, expected;
  };
  for (const Case& c : {
           Case{"run /dev/zero", "model file /dev/zero is a character device, expected a regular file"},
           Case{"run /dev/urandom", "model file /dev/urandom is a character device, expected a regular file"},
           Case{"run " + link.string(), "model file " + link.string() + " is a character device, expected a regular file"},
           Case{"bench " + link.string() + " --runs 1", "is a character device, expected a regular file"},
           Case{"run " + temp_dir().string(), "is a directory, expected a regular file"},
           Case{"run " + model.string() + " --options /dev/zero",
                "options file /dev/zero is a character device, expected a regular file"},
           Case{"run " + model.string() + " --input x=" + fifo.string(),
                fifo.string() + " is a FIFO (named pipe), expected a regular file"},
       }) {
    std::string out;
    EXPECT_EQ(run_cli_bounded(c.args, &out), 1) << c.args << "\n" << out;
    EXPECT_THAT(out, HasSubstr(c.expected)) << c.args;
  }
  fs::remove(link);
  fs::remove(fifo);
}

// An options file over the 16 MiB cap is refused before it is read.
TEST(CliManners, OversizedOptionsFileIsRefused) {
  const fs::path model = relu_model("relu_big_options");
  const fs::path options = temp_dir() / "big.json";
  {
    std::ofstream out(options);
    out << "{" << std::string((16 << 20) + 1, ' ') << "}";
  }
  std::string out;
  EXPECT_EQ(run_cli_bounded(fmt::format("run {} --options {}", model.string(), options.string()), &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("RESOURCE_EXHAUSTED: options file " + options.string() + " holds 16777219 bytes, more "
                             "than the limit of 16 MiB"));
  fs::remove(options);
}

// An options file nested 200,000 deep is refused with the depth limit (it
// crashed printing the value); a bad value is shown cut short.
TEST(CliManners, DeeplyNestedOptionsFileIsRefused) {
  const fs::path model = relu_model("relu_deep_options");
  const fs::path options = temp_dir() / "deep.json";
  {
    std::ofstream out(options);
    out << "{\"intra_op_num_threads\": " << std::string(200000, '[') << std::string(200000, ']') << "}";
  }
  std::string out;
  EXPECT_EQ(run_cli_bounded(fmt::format("run {} --options {}", model.string(), options.string()), &out), 1) << out;
  EXPECT_THAT(out, HasSubstr(options.string() + ": arrays and objects nest more than 64 deep"));
  {
    std::ofstream out(options);
    out << "{\"intra_op_num_threads\": \"" << std::string(5000, 'x') << "\"}";
  }
  EXPECT_EQ(run_cli_bounded(fmt::format("run {} --options {}", model.string(), options.string()), &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("\"intra_op_num_threads\" is \"xxxx"));
  EXPECT_THAT(out, HasSubstr("..., expected an integer"));
  EXPECT_LT(out.size(), 400u) << out;
  fs::remove(options);
}

// An --output-dir that cannot be created says so in spindle's words, before
// the model runs; no "filesystem error" text of the C++ library.
TEST(CliManners, OutputFolderThatCannotBeCreated) {
  const fs::path model = relu_model("relu_output_dir");
  const fs::path file = temp_dir() / "a_file";
  std::ofstream(file) << "x";
  for (const fs::path& dir : {file, file / "sub"}) {
    std::string out;
    EXPECT_EQ(run_cli_bounded(fmt::format("run {} --output-dir {}", model.string(), dir.string()), &out), 1) << out;
    EXPECT_THAT(out, HasSubstr(fmt::format("cannot create the output folder '{}' (--output-dir)", dir.string())));
    EXPECT_THAT(out, Not(HasSubstr("filesystem error")));
  }
  fs::remove(file);
}

// A sequence output is written as a folder named after it; a name too long
// for a folder fails naming that folder.
TEST(CliManners, SequenceOutputFolderThatCannotBeCreated) {
  ModelBuilder b(13);
  b.initializer("c", {2}, {1, 2});
  const std::string name(300, 's');
  b.node("SequenceConstruct", {"c"}, {name});
  auto* o = b.proto().mutable_graph()->add_output();
  o->set_name(name);
  o->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  const fs::path model = temp_dir() / "seq_long_name.onnx";
  const auto bytes = b.bytes();
  std::ofstream(model, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                               static_cast<std::streamsize>(bytes.size()));
  const fs::path outdir = temp_dir() / "seq_out";
  std::string out;
  EXPECT_EQ(run_cli_bounded(fmt::format("run {} --output-dir {}", model.string(), outdir.string()), &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("for the items of a sequence output: File name too long"));
  EXPECT_THAT(out, Not(HasSubstr("filesystem error")));
  fs::remove_all(outdir);
}

// --optimized-model writes the graph after the optimizer (the constant Add
// folded away), which `spindle run` loads back to bitwise the same outputs;
// --log-level sets the session's severity: info shows the session's
// decisions, error hides them, and a bad level is refused by name.
TEST(CliManners, OptimizedModelAndLogLevelFlags) {
  ModelBuilder b;
  b.input("x", {2, 4}).output("y", {2, 4});
  b.initializer("c1", {4}, {1, -2, 3, -4});
  b.initializer("c2", {4}, {0.5f, 0.25f, -8, 2});
  b.node("Add", {"c1", "c2"}, {"c"});
  b.node("Add", {"x", "c"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  const fs::path model = temp_dir() / "folded.onnx";
  const auto bytes = b.bytes();
  std::ofstream(model, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                               static_cast<std::streamsize>(bytes.size()));
  const fs::path input = temp_dir() / "folded_x.npy";
  ASSERT_TRUE(io::write_npy(input, Tensor::from_vector<float>({2, 4}, {1, 2, -3, 4, -5, 6, 7, -8})).is_ok());
  const fs::path optimized = temp_dir() / "folded.opt.onnx";
  const fs::path out1 = temp_dir() / "folded_out1", out2 = temp_dir() / "folded_out2";
  std::string out;
  ASSERT_EQ(run_cli(fmt::format("run {} --input x={} --output-dir {} --optimized-model {} --log-level info",
                                model.string(), input.string(), out1.string(), optimized.string()),
                    &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("[I:spindle"));
  ASSERT_TRUE(fs::exists(optimized));
  std::ifstream written(optimized, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(written)), {});
  EXPECT_EQ(text.find("c1"), std::string::npos) << "the constant Add was not folded";
  ASSERT_EQ(run_cli(fmt::format("run {} --input x={} --output-dir {} --log-level error", optimized.string(),
                                input.string(), out2.string()),
                    &out),
            0)
      << out;
  EXPECT_THAT(out, Not(HasSubstr("[I:spindle")));
  auto y1 = io::read_tensor_file(out1 / "y.npy"), y2 = io::read_tensor_file(out2 / "y.npy");
  ASSERT_TRUE(y1.is_ok() && y2.is_ok());
  EXPECT_EQ(y1.value().to_vector<float>(), (std::vector<float>{2.5f, 0.25f, 0, 2, 0, 4.25f, 2, 0}));
  EXPECT_EQ(y2.value().to_vector<float>(), y1.value().to_vector<float>());
  EXPECT_NE(run_cli(fmt::format("run {} --log-level loud", model.string()), &out), 0);
  EXPECT_THAT(out, HasSubstr("--log-level"));
  fs::remove_all(out1);
  fs::remove_all(out2);
}

}  // namespace
}  // namespace spindle
