// limits_test.cpp — run limits (session.max_tensor_bytes, session.max_run_bytes,
// session.max_loop_iterations, RunOptions::timeout_ms), allocation and
// thread-creation failures: each is a clean error naming the node or pool
// and the size, and the session keeps working afterwards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <system_error>

#include "model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;

std::unique_ptr<InferenceSession> create(const ModelBuilder& b, SessionOptions o = {}) {
  o.intra_op_num_threads = 1;
  const auto bytes = b.bytes();
  return InferenceSession::create_from_bytes(bytes, o);
}

// y = ConstantOfShape(shape) (float zeros of the given shape).
ModelBuilder constant_of_shape() {
  ModelBuilder b;
  b.input("shape", {1}, onnx::TensorProto::INT64).output("y", {-1});
  b.node("ConstantOfShape", {"shape"}, {"y"}, "fill");
  return b;
}

Tensor shape_of(int64_t n) { return Tensor::from_vector<int64_t>({1}, {n}); }

StatusCode run_code(InferenceSession& s, const Feeds& feeds, std::string* message, RunOptions* ro = nullptr) {
  try {
    s.run(feeds, {}, ro);
    return StatusCode::kOk;
  } catch (const Error& e) {
    *message = e.status().message();
    return e.status().code();
  }
}

TEST(RunLimits, TensorOverTheLimitFailsNamingNodeAndSizeThenTheSessionRunsAgain) {
  SessionOptions o;
  o.add_config_entry(config_keys::kMaxTensorBytes, "4000");
  auto s = create(constant_of_shape(), o);
  std::string msg;
  EXPECT_EQ(run_code(*s, {{"shape", shape_of(1001)}}, &msg), StatusCode::kResourceExhausted);
  EXPECT_THAT(msg, HasSubstr("ConstantOfShape 'fill'"));
  EXPECT_THAT(msg, HasSubstr("4004 bytes"));
  EXPECT_THAT(msg, HasSubstr("session.max_tensor_bytes"));
  auto out = s->run({{"shape", shape_of(1000)}});
  EXPECT_EQ(out[0].numel(), 1000);
}

TEST(RunLimits, DefaultLimitStopsAHugeTensorBeforeAllocating) {
  auto s = create(constant_of_shape());
  std::string msg;
  EXPECT_EQ(run_code(*s, {{"shape", shape_of(int64_t{1} << 50)}}, &msg), StatusCode::kResourceExhausted);
  EXPECT_THAT(msg, HasSubstr("session.max_tensor_bytes"));
  EXPECT_EQ(s->run({{"shape", shape_of(3)}})[0].numel(), 3);
}

// A constant subgraph is folded while the session is created: its tensors
// are held to the same limits (a hostile model's ConstantOfShape of a
// constant 2^40 elements would otherwise allocate before any run).
TEST(RunLimits, ConstantFoldingAtCreationIsHeldToTheLimits) {
  ModelBuilder b;
  b.input("x", {1}).output("y", {-1});
  b.initializer_i64("shape", {1}, {1001});
  b.node("ConstantOfShape", {"shape"}, {"zeros"}, "fill");
  b.node("Add", {"zeros", "x"}, {"y"});
  SessionOptions o;
  o.add_config_entry(config_keys::kMaxTensorBytes, "4000");
  try {
    create(b, o);
    ADD_FAILURE() << "expected the folded 4004-byte constant to be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), StatusCode::kResourceExhausted);
    EXPECT_THAT(e.status().message(), HasSubstr("ConstantOfShape 'fill'"));
    EXPECT_THAT(e.status().message(), HasSubstr("4004 bytes"));
    EXPECT_THAT(e.status().message(), HasSubstr("session.max_tensor_bytes"));
  }
  o.add_config_entry(config_keys::kMaxTensorBytes, "4004");
  auto s = create(b, o);
  EXPECT_EQ(s->run({{"x", Tensor::from_vector<float>({1}, {2.0f})}})[0].numel(), 1001);
}

TEST(RunLimits, RunBytesCountEveryTensorAliveInTheRun) {
  // y = Concat(ConstantOfShape(shape), ConstantOfShape(shape)): three tensors alive at the end.
  ModelBuilder b;
  b.input("shape", {1}, onnx::TensorProto::INT64).output("y", {-1});
  b.node("ConstantOfShape", {"shape"}, {"a"});
  b.node("ConstantOfShape", {"shape"}, {"c"});
  auto& cat = b.node("Concat", {"a", "c"}, {"y"}, "cat");
  ModelBuilder::attr_int(cat, "axis", 0);
  SessionOptions o;
  o.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  o.add_config_entry(config_keys::kMaxTensorBytes, "0");
  o.add_config_entry(config_keys::kMaxRunBytes, "10000");
  auto s = create(b, o);
  std::string msg;
  EXPECT_EQ(run_code(*s, {{"shape", shape_of(1000)}}, &msg), StatusCode::kResourceExhausted);  // 4000 + 4000 + 8000
  EXPECT_THAT(msg, HasSubstr("Concat 'cat'"));
  EXPECT_THAT(msg, HasSubstr("session.max_run_bytes"));
  EXPECT_EQ(s->run({{"shape", shape_of(500)}})[0].numel(), 1000);  // 2000 + 2000 + 4000
}

// y = Loop(M absent, cond)(x): the body passes cond and x through, so a
// true cond never ends.
ModelBuilder endless_loop() {
  ModelBuilder body;
  body.input("i", {}, onnx::TensorProto::INT64).input("c", {}, onnx::TensorProto::BOOL).input("x", {1});
  body.output("c_out", {}, onnx::TensorProto::BOOL).output("x_out", {1});
  body.node("Identity", {"c"}, {"c_out"});
  body.node("Identity", {"x"}, {"x_out"});
  ModelBuilder b;
  b.input("cond", {}, onnx::TensorProto::BOOL).input("x", {1}).output("y", {1});
  auto& loop = b.node("Loop", {"", "cond", "x"}, {"y"}, "forever");
  ModelBuilder::attr_graph(loop, "body", body);
  return b;
}

Feeds loop_feeds(bool cond) { return {{"cond", Tensor::scalar<bool>(cond)}, {"x", Tensor::from_vector<float>({1}, {2.0f})}}; }

TEST(RunLimits, LoopWithoutTripCountStopsAtTheCap) {
  SessionOptions o;
  o.add_config_entry(config_keys::kMaxLoopIterations, "100");
  auto s = create(endless_loop(), o);
  std::string msg;
  EXPECT_EQ(run_code(*s, loop_feeds(true), &msg), StatusCode::kResourceExhausted);
  EXPECT_THAT(msg, HasSubstr("Loop 'forever'"));
  EXPECT_THAT(msg, HasSubstr("session.max_loop_iterations = 100"));
  EXPECT_EQ(s->run(loop_feeds(false))[0].data<float>()[0], 2.0f);
}

TEST(RunLimits, TimeoutEndsAnEndlessLoop) {
  SessionOptions o;
  o.add_config_entry(config_keys::kMaxLoopIterations, "0");  // no cap: only the deadline stops it
  auto s = create(endless_loop(), o);
  RunOptions ro;
  ro.timeout_ms = 50;
  std::string msg;
  EXPECT_EQ(run_code(*s, loop_feeds(true), &msg, &ro), StatusCode::kResourceExhausted);
  EXPECT_THAT(msg, HasSubstr("time limit of 50 ms"));
  EXPECT_EQ(s->run(loop_feeds(false), {}, &ro)[0].data<float>()[0], 2.0f);
}

// run_async takes the same RunOptions: the deadline and terminate end an
// endless request, which then calls back with the error.
TEST(RunLimits, RunAsyncAppliesItsRunOptions) {
  SessionOptions o;
  o.add_config_entry(config_keys::kMaxLoopIterations, "0");
  auto s = create(endless_loop(), o);
  for (bool by_terminate : {false, true}) {
    RunOptions ro;
    if (!by_terminate) ro.timeout_ms = 50;
    std::promise<Status> done;
    s->run_async(loop_feeds(true), {}, [&](Status st, std::vector<Tensor>) { done.set_value(st); }, &ro);
    if (by_terminate) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ro.terminate = true;
    }
    std::future<Status> f = done.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the run was not bounded";
    const Status st = f.get();
    EXPECT_EQ(st.code(), by_terminate ? StatusCode::kCancelled : StatusCode::kResourceExhausted);
    EXPECT_THAT(st.message(), HasSubstr(by_terminate ? "cancelled by RunOptions::terminate" : "time limit of 50 ms"));
  }
  EXPECT_EQ(s->run(loop_feeds(false))[0].data<float>()[0], 2.0f);
}

// A single node that runs for a long time (a cubic Resize of four axes:
// 256 taps per output, ~1G taps here, 0.3-0.5 s in a release build) is stopped by the deadline inside it,
// not after it: the kernel checks the run's limits as it goes. Without that
// check this one-node run would end with kOk. The session keeps working.
TEST(RunLimits, TimeoutStopsALongResizeInsideTheNode) {
  ModelBuilder b(13);
  b.input("x", {-1, -1, -1, -1}).output("y", {-1, -1, -1, -1});
  b.initializer("scales", {4}, {2.0f, 8.0f, 8.0f, 8.0f});
  auto& resize = b.node("Resize", {"x", "", "scales"}, {"y"}, "upsample");
  ModelBuilder::attr_string(resize, "mode", "cubic");
  auto s = create(b);
  RunOptions ro;
  ro.timeout_ms = 50;
  std::string msg;
  const Tensor big = Tensor::from_vector<float>({8, 8, 8, 8}, std::vector<float>(8 * 8 * 8 * 8, 1.0f));
  EXPECT_EQ(run_code(*s, {{"x", big}}, &msg, &ro), StatusCode::kResourceExhausted);
  EXPECT_THAT(msg, HasSubstr("upsample"));
  EXPECT_THAT(msg, HasSubstr("time limit of 50 ms"));
  const Tensor small = Tensor::from_vector<float>({1, 1, 1, 2}, {3.0f, 3.0f});
  const Tensor y = s->run({{"x", small}}, {}, &ro)[0];
  EXPECT_EQ(y.shape(), (Shape{2, 8, 8, 16}));
  EXPECT_FLOAT_EQ(y.data<float>()[0], 3.0f);
}

TEST(RunLimits, LimitKeysAreValidated) {
  for (const char* key : {config_keys::kMaxTensorBytes, config_keys::kMaxRunBytes, config_keys::kMaxLoopIterations}) {
    SessionOptions o;
    try {
      o.add_config_entry(key, "-1");  // parsed when added
      ADD_FAILURE() << key << " = -1 was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
      EXPECT_THAT(e.status().message(), HasSubstr(key));
    }
  }
}

// A thread the system refuses names the pool and the count.
void* refuse_thread(void*, ThreadWorkFn, void*) { throw std::system_error(EAGAIN, std::generic_category()); }
void join_nothing(void*) {}

TEST(RunLimits, RefusedThreadNamesThePool) {
  SessionOptions o;
  o.intra_op_num_threads = 3;
  o.custom_create_thread_fn = &refuse_thread;
  o.custom_join_thread_fn = &join_nothing;
  try {
    const auto bytes = constant_of_shape().bytes();
    InferenceSession::create_from_bytes(bytes, o);
    FAIL() << "created";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), StatusCode::kResourceExhausted);
    EXPECT_THAT(e.status().message(), HasSubstr("intra-op pool with 3 threads"));
  }
}

TEST(ExternalDataFromBytes, NeedsTheDirectoryKeyAndStaysInside) {
  const auto dir = std::filesystem::temp_directory_path() / ("spindle_ext_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream w(dir / "w.bin", std::ios::binary);
    const float v[2] = {1.5f, -2.0f};
    w.write(reinterpret_cast<const char*>(v), sizeof v);
  }
  ModelBuilder b;
  b.input("x", {2}).output("y", {2});
  auto* w = b.proto().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  b.node("Add", {"x", "w"}, {"y"});
  try {
    create(b);
    ADD_FAILURE() << "external data read without a directory";
  } catch (const Error& err) {
    EXPECT_THAT(err.status().message(), HasSubstr(config_keys::kExternalDataDir));
  }
  SessionOptions o;
  o.add_config_entry(config_keys::kExternalDataDir, dir.string());
  auto s = create(b, o);
  auto y = s->run({{"x", Tensor::from_vector<float>({2}, {1.0f, 1.0f})}});
  EXPECT_EQ(y[0].data<float>()[0], 2.5f);
  EXPECT_EQ(y[0].data<float>()[1], -1.0f);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spindle
