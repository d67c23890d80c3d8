// options_test.cpp — SessionOptions' typed fields and the config-key table:
// every key round-trips through its field, a bad value names the key, an ONNX
// Runtime key spindle does not act on warns once and the session is created,
// options files round-trip the typed fields, ONNX Runtime's thread-count
// names alias the typed fields, validate() makes creation's checks without a
// model, and session.set_denormal_as_zero really
// flushes denormals on every thread of a run (and only during the run).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "model_builder.h"
#include "session/config_keys.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// A value other than the default for every key the table knows, and how the
// typed field gives it back.
struct Sample {
  std::string value, canonical;
};
std::map<std::string, Sample> samples() {
  const std::string dir = std::filesystem::temp_directory_path().string();
  return {
      {config_keys::kIntraOpAllowSpinning, {"false", "0"}},
      {config_keys::kInterOpAllowSpinning, {"0", "0"}},
      {config_keys::kIntraOpSpinDurationUs, {"250", "250"}},
      {config_keys::kInterOpSpinDurationUs, {"0", "0"}},
      {config_keys::kIntraOpSpinBackoffMax, {"8", "8"}},
      {config_keys::kInterOpSpinBackoffMax, {"16", "16"}},
      {config_keys::kIntraOpThreadAffinities, {"0,1;2-3", "0-1;2-3"}},
      {config_keys::kIntraOpNumaNode, {"0", "0"}},
      {config_keys::kMaxTensorBytes, {"4000", "4000"}},
      {config_keys::kMaxRunBytes, {"0", "0"}},
      {config_keys::kMaxLoopIterations, {"77", "77"}},
      {config_keys::kMaxGraphNodes, {"5000", "5000"}},
      {config_keys::kLoadTimeoutMs, {"2500", "2500"}},
      {config_keys::kDisableOptimizers, {"ConstantFolding, NchwcTransformer", "ConstantFolding,NchwcTransformer"}},
      {config_keys::kExternalDataDir, {dir, dir}},
      {config_keys::kDisablePrepacking, {"1", "1"}},
      {config_keys::kSetDenormalAsZero, {"True", "1"}},
      {config_keys::kForceSpinningStop, {"0", "0"}},
      {config_keys::kDynamicBlockBase, {"4", "4"}},
      {config_keys::kOptimizedModelExternalFile, {"weights.bin", "weights.bin"}},
      {config_keys::kOptimizedModelExternalMinBytes, {"4096", "4096"}},
  };
}

TEST(ConfigKeys, EveryKeyRoundTripsThroughItsTypedField) {
  const auto all = samples();
  ASSERT_EQ(config_keys::all().size(), all.size()) << "a key without a sample in this test";
  for (const std::string& key : config_keys::all()) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(all.count(key));
    SessionOptions o;
    EXPECT_EQ(o.config_entry(key), std::nullopt) << "at its default";
    o.add_config_entry(key, all.at(key).value);
    EXPECT_EQ(o.config_entry(key), all.at(key).canonical);
    EXPECT_EQ(o.config_entries(), (std::map<std::string, std::string>{{key, all.at(key).canonical}}))
        << "one key changes one field";
    // Through an options file and back: the same typed fields.
    const SessionOptions r = SessionOptions::from_json(o.to_json());
    EXPECT_EQ(r.config_entries(), o.config_entries());
  }
}

TEST(ConfigKeys, KeysSetTheTypedFields) {
  SessionOptions o;
  o.add_config_entry(config_keys::kIntraOpAllowSpinning, "0")
      .add_config_entry(config_keys::kInterOpSpinDurationUs, "40")
      .add_config_entry(config_keys::kIntraOpThreadAffinities, "1;2")
      .add_config_entry(config_keys::kMaxRunBytes, "123")
      .add_config_entry(config_keys::kDisablePrepacking, "1");
  EXPECT_FALSE(o.intra_op.allow_spinning);
  EXPECT_TRUE(o.inter_op.allow_spinning);
  EXPECT_EQ(o.inter_op.spin_duration, std::chrono::microseconds(40));
  EXPECT_EQ(o.intra_op.affinities, (std::vector<CpuSet>{CpuSet::single(1), CpuSet::single(2)}));
  EXPECT_EQ(o.max_run_bytes, 123);
  EXPECT_TRUE(o.disable_prepacking);
}

TEST(ConfigKeys, ABadValueNamesTheKeyAndTheValue) {
  for (const std::string& key : config_keys::all()) {
    SCOPED_TRACE(key);
    SessionOptions o;
    const std::string msg = error_of([&] { o.add_config_entry(key, "bogus!"); });
    EXPECT_THAT(msg, HasSubstr(key));
    EXPECT_THAT(msg, HasSubstr("bogus!"));
    EXPECT_EQ(o.config_entries(), (std::map<std::string, std::string>{})) << "nothing changed";
  }
  SessionOptions o;
  EXPECT_THAT(error_of([&] { o.add_config_entry("session.set_denormals_as_zero", "1"); }),
              HasSubstr("did you mean 'session.set_denormal_as_zero'?"));
  // There is no inter-op affinity key: the table refuses it, and the pool's
  // own error does not name it either.
  EXPECT_THAT(error_of([&] { o.add_config_entry("session.inter_op_thread_affinities", "1"); }),
              HasSubstr("unknown session config key 'session.inter_op_thread_affinities'"));
  o.inter_op.num_threads = 2;
  o.inter_op.affinities = {CpuSet::single(0)};
  o.execution_mode = ExecutionMode::kParallel;
  ModelBuilder b;
  b.input("x", {2}).output("y", {2});
  b.node("Relu", {"x"}, {"y"});
  const std::string msg = error_of([&] { InferenceSession::create_from_bytes(b.bytes(), o); });
  EXPECT_THAT(msg, HasSubstr("inter_op.affinities"));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("session.inter_op_thread_affinities")));
}

TEST(ConfigKeys, OnnxRuntimeKeysWithoutEffectWarnOnceAndTheSessionIsCreated) {
  detail::forget_config_warnings();  // earlier repeats of this test warned already
  ::testing::internal::CaptureStderr();
  SessionOptions o;
  o.add_config_entry("session.use_env_allocators", "1");
  o.add_config_entry("session.use_env_allocators", "1");
  SessionOptions other;
  other.add_config_entry("session.use_env_allocators", "0");
  other.add_config_entry("optimization.enable_gelu_approximation", "1");
  const std::string err = ::testing::internal::GetCapturedStderr();
  size_t count = 0;
  for (size_t at = err.find("'session.use_env_allocators'"); at != std::string::npos;
       at = err.find("'session.use_env_allocators'", at + 1))
    ++count;
  EXPECT_EQ(count, 1u) << err;
  EXPECT_THAT(err, HasSubstr("'optimization.enable_gelu_approximation'"));
  EXPECT_EQ(o.config_entry("session.use_env_allocators"), "1");  // kept as written
  ModelBuilder b;
  b.input("x", {2}).output("y", {2});
  b.node("Relu", {"x"}, {"y"});
  auto s = InferenceSession::create_from_bytes(b.bytes(), other);
  EXPECT_EQ(s->run({{"x", Tensor::from_vector<float>({2}, {-1, 2})}})[0].to_vector<float>(), (std::vector<float>{0, 2}));
  const std::vector<std::string> acted_on = config_keys::all();
  for (const std::string& key : config_keys::accepted_without_effect())
    EXPECT_EQ(std::count(acted_on.begin(), acted_on.end(), key), 0) << key << " is in both lists";
}

TEST(SessionOptionsFields, OnnxRuntimeThreadCountNamesAliasTheTypedFields) {
  SessionOptions o;
  o.intra_op_num_threads = 3;
  o.inter_op_num_threads = 2;
  EXPECT_EQ(o.intra_op.num_threads, 3);
  EXPECT_EQ(o.inter_op.num_threads, 2);
  SessionOptions copy = o;
  copy.intra_op_num_threads = 5;  // the copy's own field
  EXPECT_EQ(copy.intra_op.num_threads, 5);
  EXPECT_EQ(o.intra_op.num_threads, 3);
  o = copy;
  EXPECT_EQ(o.intra_op_num_threads, 5);
  o.intra_op.num_threads = 1;
  EXPECT_EQ(o.intra_op_num_threads, 1);
  EXPECT_EQ(copy.intra_op_num_threads, 5);
}

TEST(SessionOptionsFields, ValidateMakesCreationsChecksWithoutAModel) {
  EXPECT_TRUE(SessionOptions{}.validate().is_ok());

  SessionOptions threads;
  threads.intra_op_num_threads = -1;
  const Status s = threads.validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("intra_op_num_threads = -1"));
  // The message create() throws (it checks the options before the model is read).
  EXPECT_THAT(error_of([&] { InferenceSession::create("no-such-model.onnx", threads); }), HasSubstr(s.message()));

  SessionOptions half;
  half.custom_create_thread_fn = [](void*, void (*)(void*), void*) -> void* { return nullptr; };
  EXPECT_THAT(half.validate().message(), HasSubstr("must be set together"));

  SessionOptions limits;
  limits.max_run_bytes = -5;
  EXPECT_THAT(limits.validate().message(), HasSubstr("max_run_bytes = -5"));
}

TEST(SessionOptionsFields, OptionsFilesRoundTripTheTypedFields) {
  SessionOptions o;
  o.intra_op.num_threads = 3;
  o.inter_op.num_threads = 2;
  o.execution_mode = ExecutionMode::kParallel;
  o.graph_optimization_level = GraphOptimizationLevel::kExtended;
  o.intra_op.allow_spinning = false;
  o.inter_op.spin_duration = std::chrono::microseconds(30);
  o.inter_op.spin_backoff_max = 4;
  o.intra_op.affinities = {CpuSet({0, 1}), CpuSet::single(3)};
  o.max_tensor_bytes = 1 << 20;
  o.max_loop_iterations = 0;
  o.set_denormal_as_zero = true;
  o.force_spinning_stop = false;
  o.dynamic_block_base = 2;
  o.add_config_entry("session.load_model_format", "ONNX");
  const SessionOptions r = SessionOptions::from_json(o.to_json(), "t.json");
  EXPECT_EQ(r.intra_op.num_threads, 3);
  EXPECT_EQ(r.inter_op.num_threads, 2);
  EXPECT_EQ(r.execution_mode, ExecutionMode::kParallel);
  EXPECT_EQ(r.graph_optimization_level, GraphOptimizationLevel::kExtended);
  EXPECT_FALSE(r.intra_op.allow_spinning);
  EXPECT_TRUE(r.inter_op.allow_spinning);
  EXPECT_EQ(r.inter_op.spin_duration, std::chrono::microseconds(30));
  EXPECT_EQ(r.intra_op.spin_duration, std::nullopt);
  EXPECT_EQ(r.inter_op.spin_backoff_max, 4);
  EXPECT_EQ(r.intra_op.affinities, o.intra_op.affinities);
  EXPECT_EQ(r.max_tensor_bytes, 1 << 20);
  EXPECT_EQ(r.max_run_bytes, std::nullopt);
  EXPECT_EQ(r.max_loop_iterations, 0);
  EXPECT_TRUE(r.set_denormal_as_zero);
  EXPECT_FALSE(r.force_spinning_stop);
  EXPECT_EQ(r.dynamic_block_base, 2);
  EXPECT_EQ(r.config_entry("session.load_model_format"), "ONNX");
  EXPECT_EQ(r.to_json(), o.to_json());
  EXPECT_THAT(error_of([] { SessionOptions::from_json(R"({"config": {"session.max_run_bytes": "-5"}})", "t.json"); }),
              HasSubstr("t.json: session.max_run_bytes=-5"));
}

// An options file nests at most 64 deep (checked before parsing: printing a
// value nested 200,000 deep overflowed the stack), brackets inside strings do
// not count, and a bad value is shown cut to 80 characters.
TEST(SessionOptionsJson, NestingIsBoundedAndValuesAreShownShort) {
  auto nested = [](int depth) {
    return "{\"intra_op_num_threads\": " + std::string(depth, '[') + std::string(depth, ']') + "}";
  };
  EXPECT_THAT(error_of([&] { SessionOptions::from_json(nested(64), "t.json"); }),
              HasSubstr("t.json: arrays and objects nest more than 64 deep (at byte 88)"));
  EXPECT_THAT(error_of([&] { SessionOptions::from_json(nested(63), "t.json"); }),
              HasSubstr("\"intra_op_num_threads\" is [[[[[[[[[[[[[[[["));
  EXPECT_THAT(error_of([&] { SessionOptions::from_json(nested(200000), "t.json"); }), HasSubstr("nest more than 64 deep"));
  const std::string brackets = "{\"execution_mode\": \"" + std::string(100, '[') + "\"}";
  const std::string msg = error_of([&] { SessionOptions::from_json(brackets, "t.json"); });
  EXPECT_THAT(msg, HasSubstr("\"execution_mode\" is \"[[[["));
  EXPECT_THAT(msg, HasSubstr("[[[..., expected \"sequential\" or \"parallel\""));
  EXPECT_LT(msg.size(), 200u) << msg;
}

// One table of names and one thread-count limit serve every front end: the
// JSON file, SessionOptions::validate (Python's setters), session creation.
TEST(SessionOptionsNames, OneTableAndOneLimit) {
  for (const std::string& name : execution_mode_names())
    EXPECT_EQ(execution_mode_name(parse_execution_mode(name).value()), name);
  for (const std::string& name : optimization_level_names())
    EXPECT_EQ(optimization_level_name(parse_optimization_level(name).value()), name);
  EXPECT_EQ(parse_optimization_level("disabled"), std::nullopt);
  EXPECT_EQ(parse_execution_mode("Parallel"), std::nullopt);
  EXPECT_EQ(SessionOptions::from_json("{\"graph_optimization_level\": \"extended\"}", "t.json").graph_optimization_level,
            GraphOptimizationLevel::kExtended);
  EXPECT_THAT(error_of([&] { SessionOptions::from_json("{\"graph_optimization_level\": 2}", "t.json"); }),
              HasSubstr("expected \"disable\", \"basic\", \"extended\" or \"all\""));

  const std::string limit = std::to_string(kMaxThreadCount);
  EXPECT_THAT(error_of([&] { SessionOptions::from_json("{\"intra_op_num_threads\": " + std::to_string(kMaxThreadCount + 1) + "}", "t.json"); }),
              HasSubstr("expected an integer from 0 (default) to " + limit));
  SessionOptions o;
  o.inter_op.num_threads = kMaxThreadCount + 1;
  EXPECT_THAT(o.validate().message(),
              HasSubstr("inter_op_num_threads = " + std::to_string(kMaxThreadCount + 1) +
                        ": expected 0 (automatic) or a thread count in [1, " + limit + "]"));
  o.inter_op.num_threads = kMaxThreadCount;
  EXPECT_TRUE(o.validate().is_ok());
}

// y = a * b over enough elements that the intra-op workers run blocks too.
constexpr int64_t kN = 1 << 17;
std::vector<uint8_t> mul_model() {
  ModelBuilder b;
  b.input("a", {kN}).input("b", {kN}).output("y", {kN});
  b.node("Mul", {"a", "b"}, {"y"});
  return b.bytes();
}

std::vector<float> run_mul(bool flush, float a, float b) {
  SessionOptions o;
  o.intra_op_num_threads = 2;
  if (flush) o.add_config_entry(config_keys::kSetDenormalAsZero, "1");
  auto s = InferenceSession::create_from_bytes(mul_model(), o);
  const Tensor ta = Tensor::from_vector<float>({kN}, std::vector<float>(kN, a));
  const Tensor tb = Tensor::from_vector<float>({kN}, std::vector<float>(kN, b));
  return s->run({{"a", ta}, {"b", tb}})[0].to_vector<float>();
}

bool is_denormal(float v) { return std::fpclassify(v) == FP_SUBNORMAL; }

TEST(DenormalAsZero, ADenormalResultIsZeroOnEveryThreadOfTheRun) {
  const float tiny = 1e-20f;  // tiny * tiny = 1e-40, below the smallest normal float
  const std::vector<float> kept = run_mul(false, tiny, tiny);
  ASSERT_TRUE(is_denormal(kept.front()) && is_denormal(kept.back())) << "without the key the product is denormal";
  const std::vector<float> flushed = run_mul(true, tiny, tiny);
  EXPECT_EQ(std::count(flushed.begin(), flushed.end(), 0.0f), kN) << "every block, on every thread, flushed";
  // Denormal inputs read as zero.
  const float denormal = std::numeric_limits<float>::denorm_min() * 1000;
  const std::vector<float> daz = run_mul(true, denormal, 1.0f);
  EXPECT_EQ(std::count(daz.begin(), daz.end(), 0.0f), kN);
  // The calling thread's mode is restored after the run.
  volatile float x = tiny;
  EXPECT_TRUE(is_denormal(x * x));
}

TEST(DenormalAsZero, RefusedOnTheSharedGlobalPools) {
  SessionOptions o;
  o.use_per_session_threads = false;
  o.add_config_entry(config_keys::kSetDenormalAsZero, "1");
  EXPECT_THAT(error_of([&] { InferenceSession::create_from_bytes(mul_model(), o); }),
              HasSubstr("session.set_denormal_as_zero"));
}

}  // namespace
}  // namespace spindle
