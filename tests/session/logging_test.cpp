// logging_test.cpp — the session log: what creation and failed runs log at
// each severity, the log id, SPINDLE_LOG_LEVEL, the sink and the stderr format.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "model_builder.h"
#include "spindle/cpu.h"
#include "spindle/logging.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;

struct Captured {
  LogSeverity severity;
  std::string category, log_id, location, message;
};

// Installs a sink for the test's lifetime and clears SPINDLE_LOG_LEVEL.
class LogCapture {
 public:
  LogCapture() {
    unsetenv("SPINDLE_LOG_LEVEL");
    set_log_sink([this](const LogMessage& m) {
      std::lock_guard<std::mutex> lock(mu_);
      messages_.push_back({m.severity, std::string(m.category), std::string(m.log_id), std::string(m.code_location),
                           std::string(m.message)});
    });
  }
  ~LogCapture() {
    set_log_sink(nullptr);
    set_default_log_severity(LogSeverity::kWarning);
    unsetenv("SPINDLE_LOG_LEVEL");
  }
  std::vector<Captured> messages() {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_;
  }
  // The messages containing `text`.
  std::vector<Captured> with(const std::string& text) {
    std::vector<Captured> out;
    for (auto& m : messages())
      if (m.message.find(text) != std::string::npos) out.push_back(m);
    return out;
  }
  std::string all() {
    std::string s;
    for (auto& m : messages()) s += std::string(log_severity_name(m.severity)) + " [" + m.log_id + "] " + m.message + "\n";
    return s;
  }

 private:
  std::mutex mu_;
  std::vector<Captured> messages_;
};

std::vector<uint8_t> matmul_add_model() {
  ModelBuilder b;
  b.input("x", {2, 3}).output("y", {2, 2});
  b.initializer("w", {3, 2}, {1, 2, 3, 4, 5, 6}).initializer("bias", {2}, {0.5f, -0.5f});
  b.node("MatMul", {"x", "w"}, {"xw"}, "mm");
  b.node("Relu", {"xw"}, {"r"}, "relu");
  b.node("Add", {"r", "bias"}, {"y"}, "add");
  return b.bytes();
}

SessionOptions options_at(int severity, const std::string& id) {
  SessionOptions o;
  o.intra_op_num_threads = 2;
  o.log_severity_level = severity;
  o.log_id = id;
  return o;
}

TEST(Logging, VerboseLogsThreadsOptimizerAndKernelsWithTheLogId) {
  LogCapture log;
  auto s = InferenceSession::create_from_bytes(matmul_add_model(), options_at(0, "my-model"));
  const auto threads = log.with("intra-op: 2 thread(s) including the caller (from option)");
  ASSERT_EQ(threads.size(), 1u) << log.all();
  EXPECT_EQ(threads[0].severity, LogSeverity::kInfo);
  EXPECT_EQ(threads[0].log_id, "my-model");
  EXPECT_EQ(threads[0].category, "spindle");
  EXPECT_THAT(threads[0].location, HasSubstr("session.cpp:"));
  const auto opt = log.with("optimizer (all): 3 nodes -> " + std::to_string(s->num_nodes()));
  ASSERT_EQ(opt.size(), 1u) << log.all();
  const auto kernels = log.with(": kernel ");
  ASSERT_EQ(static_cast<int>(kernels.size()), s->num_nodes()) << log.all();
  for (const auto& k : kernels) {
    EXPECT_EQ(k.severity, LogSeverity::kVerbose);
    EXPECT_EQ(k.log_id, "my-model");
    EXPECT_THAT(k.message, HasSubstr(std::string("ISA ") + isa_level_name(active_isa_level())));
    EXPECT_THAT(k.message, HasSubstr("up to 2 intra-op thread(s)"));
  }
  // Runs log nothing in the normal case.
  const size_t before = log.messages().size();
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  s->run({{"x", x}});
  EXPECT_EQ(log.messages().size(), before) << log.all();
}

// log_severity_level filters as ONNX Runtime's does: a session at level L
// writes exactly the messages of severity >= L. Creation logs at verbose and
// info, a cancelled run (RunOptions::terminate) at warning and a failed run
// at error, with the session's log id; fatal (4) writes none of them.
TEST(Logging, EachSeverityLevelWritesThatSeverityAndAbove) {
  for (int level = 0; level <= 4; ++level) {
    LogCapture log;
    const std::string id = "level-" + std::to_string(level);
    auto s = InferenceSession::create_from_bytes(matmul_add_model(), options_at(level, id));
    const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
    s->run({{"x", x}});
    RunOptions cancelled;
    cancelled.terminate = true;
    EXPECT_THROW(s->run({{"x", x}}, {}, &cancelled), Error);
    EXPECT_THROW(s->run({{"x", Tensor::from_vector<float>({3}, {1, 2, 3})}}), Error);
    EXPECT_EQ(s->run({{"x", x}}).size(), 1u);  // still usable
    std::set<LogSeverity> seen;
    for (const auto& m : log.messages()) {
      seen.insert(m.severity);
      EXPECT_GE(static_cast<int>(m.severity), level) << log.all();
      EXPECT_EQ(m.log_id, id);
    }
    for (int sev = 0; sev <= 3; ++sev)
      EXPECT_EQ(seen.count(static_cast<LogSeverity>(sev)), sev >= level ? 1u : 0u)
          << "level " << level << ", severity " << sev << ":\n" << log.all();
    if (level <= 3) {
      const auto failed = log.with("run <model bytes>: ");
      ASSERT_EQ(failed.size(), level <= 2 ? 2u : 1u) << log.all();
      EXPECT_EQ(failed.back().severity, LogSeverity::kError);
      EXPECT_THAT(failed.back().message, HasSubstr("INVALID_ARGUMENT"));
      if (level <= 2) EXPECT_EQ(failed.front().severity, LogSeverity::kWarning);
    }
  }
}

// RunOptions::log_severity_level filters what one run logs, over the
// session's level either way, and run_tag names it; -1 keeps the session's.
TEST(Logging, RunOptionsSeverityAndTagOverrideTheSessions) {
  LogCapture log;
  auto quiet = InferenceSession::create_from_bytes(matmul_add_model(), options_at(4, "quiet-session"));
  auto loud = InferenceSession::create_from_bytes(matmul_add_model(), options_at(0, "loud-session"));
  const Tensor bad = Tensor::from_vector<float>({3}, {1, 2, 3});
  RunOptions verbose_run;
  verbose_run.log_severity_level = 0;
  verbose_run.run_tag = "run-7";
  EXPECT_THROW(quiet->run({{"x", bad}}, {}, &verbose_run), Error);
  auto failed = log.with("run <model bytes>: ");
  ASSERT_EQ(failed.size(), 1u) << log.all();
  EXPECT_EQ(failed[0].severity, LogSeverity::kError);
  EXPECT_EQ(failed[0].log_id, "run-7");

  RunOptions fatal_run;
  fatal_run.log_severity_level = 4;
  EXPECT_THROW(loud->run({{"x", bad}}, {}, &fatal_run), Error);
  EXPECT_EQ(log.with("run <model bytes>: ").size(), 1u) << log.all();  // nothing new

  RunOptions session_level;  // -1: the session's (0 here), under its log id
  EXPECT_THROW(loud->run({{"x", bad}}, {}, &session_level), Error);
  failed = log.with("run <model bytes>: ");
  ASSERT_EQ(failed.size(), 2u) << log.all();
  EXPECT_EQ(failed[1].log_id, "loud-session");

  RunOptions out_of_range;
  out_of_range.log_severity_level = 5;
  try {
    loud->run({{"x", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})}}, {}, &out_of_range);
    ADD_FAILURE() << "a run log severity of 5 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(e.status().message(), HasSubstr("log_severity_level is 5, expected -1"));
  }
  EXPECT_EQ(loud->run({{"x", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})}}).size(), 1u);
}

TEST(Logging, WarningLogsNothingWhenASessionIsCreated) {
  LogCapture log;
  auto s = InferenceSession::create_from_bytes(matmul_add_model(), options_at(2, "quiet"));
  s->run({{"x", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})}});
  EXPECT_TRUE(log.messages().empty()) << log.all();
}

TEST(Logging, InfoLogsThreadsAndOptimizerButNotKernels) {
  LogCapture log;
  auto s = InferenceSession::create_from_bytes(matmul_add_model(), options_at(1, "info"));
  EXPECT_EQ(log.with("intra-op: 2 thread(s)").size(), 1u) << log.all();
  EXPECT_EQ(log.with("optimizer (all)").size(), 1u) << log.all();
  EXPECT_TRUE(log.with(": kernel ").empty()) << log.all();
}

TEST(Logging, TheProcessDefaultAppliesToSessionsWithoutTheirOwnLevel) {
  LogCapture log;
  InferenceSession::create_from_bytes(matmul_add_model(), options_at(-1, "dflt"));
  EXPECT_TRUE(log.messages().empty()) << log.all();  // warning unless set
  set_default_log_severity(LogSeverity::kInfo);
  EXPECT_EQ(default_log_severity(), LogSeverity::kInfo);
  InferenceSession::create_from_bytes(matmul_add_model(), options_at(-1, "dflt"));
  EXPECT_EQ(log.with("intra-op: 2 thread(s)").size(), 1u) << log.all();
  // A session's own level wins over the process default.
  const size_t before = log.messages().size();
  InferenceSession::create_from_bytes(matmul_add_model(), options_at(3, "own"));
  EXPECT_EQ(log.messages().size(), before) << log.all();
}

TEST(Logging, SpindleLogLevelOverridesTheLevelsSetInCode) {
  LogCapture log;
  setenv("SPINDLE_LOG_LEVEL", "verbose", 1);
  InferenceSession::create_from_bytes(matmul_add_model(), options_at(3, "env"));
  EXPECT_FALSE(log.with(": kernel ").empty()) << log.all();
  setenv("SPINDLE_LOG_LEVEL", "1", 1);
  const size_t before = log.messages().size();
  InferenceSession::create_from_bytes(matmul_add_model(), options_at(4, "env"));
  const auto after = log.messages();
  ASSERT_GT(after.size(), before);
  for (size_t i = before; i < after.size(); ++i) EXPECT_EQ(after[i].severity, LogSeverity::kInfo) << after[i].message;
}

TEST(Logging, BadSpindleLogLevelIsRefusedWithTheAcceptedValues) {
  LogCapture log;
  setenv("SPINDLE_LOG_LEVEL", "loud", 1);
  try {
    InferenceSession::create_from_bytes(matmul_add_model(), options_at(-1, ""));
    FAIL() << "created with SPINDLE_LOG_LEVEL=loud";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("SPINDLE_LOG_LEVEL='loud'"));
    EXPECT_THAT(e.what(), HasSubstr("verbose, info, warning, error, fatal or 0 to 4"));
  }
  unsetenv("SPINDLE_LOG_LEVEL");
  EXPECT_NO_THROW(InferenceSession::create_from_bytes(matmul_add_model(), options_at(-1, "")));
}

TEST(Logging, BadSessionSeverityIsRefused) {
  LogCapture log;
  try {
    InferenceSession::create_from_bytes(matmul_add_model(), options_at(5, ""));
    FAIL() << "created with log_severity_level 5";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("log_severity_level = 5"));
  }
  EXPECT_FALSE(options_at(-2, "").validate().is_ok());
  EXPECT_TRUE(options_at(-1, "").validate().is_ok());
  EXPECT_TRUE(options_at(4, "").validate().is_ok());
}

TEST(Logging, ParsesSeverityNamesAndDigits) {
  EXPECT_EQ(parse_log_severity("verbose"), LogSeverity::kVerbose);
  EXPECT_EQ(parse_log_severity("0"), LogSeverity::kVerbose);
  EXPECT_EQ(parse_log_severity("warning"), LogSeverity::kWarning);
  EXPECT_EQ(parse_log_severity("4"), LogSeverity::kFatal);
  EXPECT_EQ(parse_log_severity("fatal"), LogSeverity::kFatal);
  EXPECT_FALSE(parse_log_severity("5").has_value());
  EXPECT_FALSE(parse_log_severity("Warning ").has_value());
  EXPECT_FALSE(parse_log_severity("").has_value());
  EXPECT_EQ(log_severity_name(LogSeverity::kError), "error");
}

TEST(Logging, StderrLinesCarryTimeSeverityLetterAndLogId) {
  unsetenv("SPINDLE_LOG_LEVEL");
  set_log_sink(nullptr);
  ::testing::internal::CaptureStderr();
  InferenceSession::create_from_bytes(matmul_add_model(), options_at(1, "fmt-id"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::regex line(R"((^|\n)\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \[I:spindle:fmt-id\] intra-op: 2 thread\(s\))");
  EXPECT_TRUE(std::regex_search(err, line)) << err;
  EXPECT_EQ(err.find("[V:"), std::string::npos) << err;
}

}  // namespace
}  // namespace spindle
