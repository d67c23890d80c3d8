// session_test.cpp — InferenceSession: bad input, concurrency, cancel,
// async runs, pools really created, config keys, optimizer equivalence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <thread>

#include "../threading/test_util.h"
#include "kernels/kernel_errors.h"
#include "model_builder.h"
#include "spindle/session.h"

#include <cblas.h>

extern "C" bool bli_info_get_enable_threading();

namespace spindle {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::ModelBuilder;

// y = relu(x + c) * 2 with x: float [N, 4]
std::vector<uint8_t> small_model() {
  ModelBuilder b;
  b.input("x", {-1, 4}).output("y", {-1, 4});
  b.initializer("c", {4}, {1, -1, 2, -2});
  b.initializer("two", {}, {2});
  b.node("Add", {"x", "c"}, {"s"});
  b.node("Relu", {"s"}, {"r"});
  b.node("Identity", {"r"}, {"r2"});
  b.node("Mul", {"r2", "two"}, {"y"});
  return b.bytes();
}

std::vector<float> expected_small(const std::vector<float>& x) {
  const float c[4] = {1, -1, 2, -2};
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = std::max(0.0f, x[i] + c[i % 4]) * 2;
  return y;
}

Tensor input(int rows, float base = 0.0f) {
  std::vector<float> v(static_cast<size_t>(rows) * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i % 7) - 3.0f;
  return Tensor::from_vector<float>({rows, 4}, v);
}

TEST(Session, RunsAndReportsMetadata) {
  auto s = InferenceSession::create_from_bytes(small_model(), {});
  ASSERT_EQ(s->inputs().size(), 1u);
  EXPECT_EQ(s->inputs()[0].name, "x");
  EXPECT_EQ(s->inputs()[0].shape, (Shape{-1, 4}));
  EXPECT_EQ(s->outputs()[0].name, "y");
  Tensor x = input(3);
  auto out = s->run({{"x", x}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_vector<float>(), expected_small(x.to_vector<float>()));
  // Identity removed by the optimizer.
  EXPECT_EQ(s->num_nodes(), 3);
}

TEST(Session, ModelMetadataComesFromTheFile) {
  testing::ModelBuilder b;
  b.input("x", {2}).output("y", {2});
  b.node("Relu", {"x"}, {"y"});
  auto& m = b.proto();
  m.set_domain("ai.spindle.tests");
  m.set_model_version(7);
  m.set_doc_string("a model to read back");
  m.mutable_graph()->set_doc_string("one Relu");
  auto* prop = m.add_metadata_props();
  prop->set_key("author");
  prop->set_value("spindle");
  auto s = InferenceSession::create_from_bytes(b.bytes(), {});
  const ModelMetadata& md = s->model_metadata();
  EXPECT_EQ(md.producer_name, "spindle-tests");
  EXPECT_EQ(md.graph_name, "test");
  EXPECT_EQ(md.domain, "ai.spindle.tests");
  EXPECT_EQ(md.version, 7);
  EXPECT_EQ(md.description, "a model to read back");
  EXPECT_EQ(md.graph_description, "one Relu");
  EXPECT_EQ(md.custom_metadata_map, (std::map<std::string, std::string>{{"author", "spindle"}}));
}

TEST(SessionBadInput, ModelFiles) {
  StatusCode code{};
  EXPECT_THAT(error_of([] { InferenceSession::create("/no/such/model.onnx"); }, &code), HasSubstr("/no/such/model.onnx"));
  EXPECT_EQ(code, StatusCode::kNotFound);
  auto bytes = small_model();
  std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() / 2));
  EXPECT_THAT(error_of([&] { InferenceSession::create_from_bytes(truncated); }, &code), HasSubstr("not a valid ONNX model"));
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  std::vector<uint8_t> garbage(300, 0xAB);
  EXPECT_THAT(error_of([&] { InferenceSession::create_from_bytes(garbage); }), HasSubstr("not a valid ONNX model"));
  EXPECT_THAT(error_of([&] { InferenceSession::create_from_bytes({}); }), HasSubstr("empty"));
  const std::string path = ::testing::TempDir() + "/garbage.onnx";
  std::ofstream(path) << "this is not a model";
  EXPECT_THAT(error_of([&] { InferenceSession::create(path); }), HasSubstr(path));
}

TEST(SessionBadInput, AllUnsupportedOperatorsListedAtOnce) {
  ModelBuilder b;
  b.input("x", {2}).output("y", {2});
  b.node("FancyOpA", {"x"}, {"a"});
  b.node("Relu", {"a"}, {"b"});
  b.node("FancyOpB", {"b"}, {"y"});
  b.proto().mutable_opset_import(0)->set_domain("");
  auto* d = b.proto().add_opset_import();
  d->set_domain("custom.domain");
  d->set_version(1);
  b.proto().mutable_graph()->mutable_node(0)->set_domain("custom.domain");
  b.proto().mutable_graph()->mutable_node(2)->set_domain("custom.domain");
  StatusCode code{};
  std::string msg = error_of([&] { InferenceSession::create_from_bytes(b.bytes()); }, &code);
  EXPECT_EQ(code, StatusCode::kUnsupported) << msg;
  EXPECT_THAT(msg, HasSubstr("2 operator(s) not supported"));
  EXPECT_THAT(msg, HasSubstr("FancyOpA"));
  EXPECT_THAT(msg, HasSubstr("FancyOpB"));
}

TEST(SessionBadInput, FeedsAreCheckedAndTheSessionStaysUsable) {
  auto s = InferenceSession::create_from_bytes(small_model(), {});
  StatusCode code{};
  EXPECT_THAT(error_of([&] { s->run({{"nope", input(1)}}); }, &code), HasSubstr("unknown input name 'nope'"));
  EXPECT_EQ(code, StatusCode::kNotFound);
  EXPECT_THAT(error_of([&] { s->run({}); }), HasSubstr("missing input(s): x"));
  EXPECT_THAT(error_of([&] { s->run({{"x", Tensor::from_vector<int64_t>({1, 4}, {1, 2, 3, 4})}}); }),
              HasSubstr("input 'x' is int64 1x4, expected element type float32"));
  EXPECT_THAT(error_of([&] { s->run({{"x", Tensor::from_vector<float>({4}, {1, 2, 3, 4})}}); }),
              HasSubstr("input 'x' has shape 4, expected [N,4]"));
  EXPECT_THAT(error_of([&] { s->run({{"x", Tensor::from_vector<float>({1, 3}, {1, 2, 3})}}); }), HasSubstr("expected [N,4]"));
  EXPECT_THAT(error_of([&] { s->run({{"x", input(1)}}, {"zzz"}); }), HasSubstr("unknown output name 'zzz'"));
  Tensor x = input(2);
  EXPECT_EQ(s->run({{"x", x}})[0].to_vector<float>(), expected_small(x.to_vector<float>()));
}

TEST(SessionBadInput, OptionsNameTheKeyAndValue) {
  auto bytes = small_model();
  auto create = [&](SessionOptions o) { InferenceSession::create_from_bytes(bytes, o); };
  SessionOptions o;
  o.intra_op_num_threads = -3;
  EXPECT_THAT(error_of([&] { create(o); }), HasSubstr("intra_op_num_threads = -3"));
  o = {};
  // Config entries are parsed when added: the error names the key the user wrote.
  EXPECT_THAT(error_of([&] { o.add_config_entry("session.intra_op.spin_duration_us", "fast"); }),
              HasSubstr("session.intra_op.spin_duration_us"));
  EXPECT_THAT(error_of([&] { o.add_config_entry("session.intra_op.allow_spining", "1"); }),
              HasSubstr("unknown session config key 'session.intra_op.allow_spining'"));
  EXPECT_THAT(error_of([&] { o.add_config_entry("session.intra_op.allow_spining", "1"); }),
              HasSubstr("did you mean 'session.intra_op.allow_spinning'?"));
  EXPECT_THAT(error_of([&] { o.add_config_entry("session.intra_op_thread_affinities", "1,;2"); }), HasSubstr("1,;2"));
  o = {};
  o.use_per_session_threads = false;
  o.intra_op_num_threads = 2;
  EXPECT_THAT(error_of([&] { create(o); }), HasSubstr("use_per_session_threads = false"));
}

TEST(SessionThreads, PerSessionPoolsAreReallyCreatedAndJoined) {
  SPINDLE_REQUIRE_NATIVE_BACKEND();
  const std::set<int> before = testing::process_thread_ids();
  {
    SessionOptions o;
    o.intra_op_num_threads = 3;
    o.inter_op_num_threads = 2;
    o.execution_mode = ExecutionMode::kParallel;
    auto s = InferenceSession::create_from_bytes(small_model(), o);
    EXPECT_EQ(testing::settled_new_threads(before, 2 + 2), 2 + 2);
    EXPECT_THAT(s->threading_info(), HasSubstr("intra-op: 3 thread(s)"));
    EXPECT_THAT(s->threading_info(), HasSubstr("inter-op: 2 thread(s)"));
  }
  EXPECT_EQ(testing::settled_new_threads(before, 0), 0);  // joined threads can linger in /proc for a moment
  {
    SessionOptions o;
    o.intra_op_num_threads = 2;
    o.inter_op_num_threads = 4;  // ignored in sequential mode, and said so
    auto s = InferenceSession::create_from_bytes(small_model(), o);
    EXPECT_EQ(testing::settled_new_threads(before, 1), 1);
    EXPECT_THAT(s->threading_info(), HasSubstr("inter_op_num_threads = 4 is ignored in sequential mode"));
  }
}

TEST(SessionThreads, GlobalPoolsAreSharedAndNoneAreCreated) {
  SPINDLE_REQUIRE_NATIVE_BACKEND();
  auto env = Environment::create(ThreadingOptions{.num_threads = 2}, ThreadingOptions{.num_threads = 1}).value();
  env->intra_op_pool();
  env->inter_op_pool();
  const std::set<int> before = testing::process_thread_ids();
  SessionOptions o;
  o.use_per_session_threads = false;
  o.execution_mode = ExecutionMode::kParallel;
  auto a = InferenceSession::create_from_bytes(small_model(), o, env.get());
  auto b = InferenceSession::create_from_bytes(small_model(), o, env.get());
  EXPECT_EQ(testing::settled_new_threads(before, 0), 0);  // joined threads can linger in /proc for a moment
  EXPECT_EQ(a->intra_op_pool(), b->intra_op_pool());
  Tensor x = input(5);
  EXPECT_EQ(a->run({{"x", x}})[0].to_vector<float>(), expected_small(x.to_vector<float>()));
}

TEST(SessionThreads, SerialBlasStartsNoThreadsAndIsReentrant) {
  // The BLAS linked is a build without threading: it starts no threads.
  EXPECT_FALSE(bli_info_get_enable_threading());
  const std::set<int> before = testing::process_thread_ids();
  // Two threads calling sgemm at once get exact results (kernels call GEMM
  // from intra-op blocks and from concurrent runs).
  const int M = 64, N = 150, K = 200;
  std::vector<float> a(M * K), b(K * N), want(M * N);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 13) * 0.1f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 7) * 0.2f;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, a.data(), K, b.data(), N, 0, want.data(), N);
  EXPECT_EQ(testing::settled_new_threads(before, 0), 0);  // joined threads can linger in /proc for a moment
  std::atomic<int> wrong{0};
  auto work = [&] {
    std::vector<float> c(M * N);
    for (int r = 0; r < 500; ++r) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, a.data(), K, b.data(), N, 0, c.data(), N);
      if (c != want) ++wrong;
    }
  };
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(SessionConcurrency, ManyThreadsRunOneSessionAtOnce) {
  for (ExecutionMode mode : {ExecutionMode::kSequential, ExecutionMode::kParallel}) {
    SessionOptions o;
    o.intra_op_num_threads = 2;
    o.inter_op_num_threads = 2;
    o.execution_mode = mode;
    auto s = InferenceSession::create_from_bytes(small_model(), o);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 50; ++i) {
          Tensor x = input(1 + (t + i) % 5, static_cast<float>(t));
          if (s->run({{"x", x}})[0].to_vector<float>() != expected_small(x.to_vector<float>())) ++wrong;
        }
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
  }
}

// A wide graph: 6 independent chains joined by a Sum.
std::vector<uint8_t> wide_model() {
  ModelBuilder b;
  b.input("x", {64}).output("y", {64});
  std::vector<std::string> ends;
  for (int c = 0; c < 6; ++c) {
    std::string prev = "x";
    for (int k = 0; k < 5; ++k) {
      std::string out = "c" + std::to_string(c) + "_" + std::to_string(k);
      b.node(k % 2 ? "Sigmoid" : "Tanh", {prev}, {out});
      prev = out;
    }
    ends.push_back(prev);
  }
  b.node("Sum", ends, {"y"});
  return b.bytes();
}

TEST(SessionParallel, WideGraphMatchesSequentialBitwise) {
  std::vector<float> xs(64);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) / 10.0f - 3.0f;
  Tensor x = Tensor::from_vector<float>({64}, xs);
  SessionOptions seq;
  auto want = InferenceSession::create_from_bytes(wide_model(), seq)->run({{"x", x}})[0].to_vector<float>();
  for (int inter : {1, 2, 4}) {
    SessionOptions par;
    par.execution_mode = ExecutionMode::kParallel;
    par.inter_op_num_threads = inter;
    auto s = InferenceSession::create_from_bytes(wide_model(), par);
    for (int r = 0; r < 20; ++r) EXPECT_EQ(s->run({{"x", x}})[0].to_vector<float>(), want) << "inter " << inter;
  }
}

// S: seq(float), x: float [2]; T = SequenceInsert(S, x); n = SequenceLength(T);
// outputs T (a sequence) and n.
std::vector<uint8_t> sequence_model() {
  ModelBuilder b;
  b.input("S", {}).input("x", {2}).output("T", {}).output("n", {}, onnx::TensorProto::INT64);
  for (auto* v : {b.proto().mutable_graph()->mutable_input(0), b.proto().mutable_graph()->mutable_output(0)}) {
    onnx::TypeProto elem;
    elem.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    *v->mutable_type()->mutable_sequence_type()->mutable_elem_type() = elem;
  }
  b.node("SequenceInsert", {"S", "x"}, {"T"});
  b.node("SequenceLength", {"T"}, {"n"});
  return b.bytes();
}

TEST(SessionSequences, SequenceInputsAndOutputsRoundTripAndMisfeedsAreClearErrors) {
  for (ExecutionMode mode : {ExecutionMode::kSequential, ExecutionMode::kParallel}) {
    SessionOptions o;
    o.execution_mode = mode;
    auto s = InferenceSession::create_from_bytes(sequence_model(), o);
    ASSERT_TRUE(s->inputs()[0].is_sequence);
    EXPECT_EQ(s->inputs()[0].dtype, DataType::kFloat32);
    EXPECT_FALSE(s->inputs()[1].is_sequence);
    EXPECT_TRUE(s->outputs()[0].is_sequence);
    const Tensor a = Tensor::from_vector<float>({3}, {1, 2, 3});
    const Tensor x = Tensor::from_vector<float>({2}, {7, 8});
    auto out = s->run({{"S", Tensor::sequence(DataType::kFloat32, {a})}, {"x", x}});
    ASSERT_TRUE(out[0].is_sequence());
    ASSERT_EQ(out[0].sequence_items().size(), 2u);
    EXPECT_EQ(out[0].sequence_items()[0].to_vector<float>(), a.to_vector<float>());
    EXPECT_EQ(out[0].sequence_items()[1].to_vector<float>(), x.to_vector<float>());
    EXPECT_EQ(out[1].data<int64_t>()[0], 2);
    // A tensor where the sequence goes, a sequence where the tensor goes,
    // a sequence of the wrong element type.
    EXPECT_THAT(error_of([&] { s->run({{"S", a}, {"x", x}}); }),
                HasSubstr("input 'S' is a float32 3, expected a sequence of float32 tensors"));
    EXPECT_THAT(error_of([&] { s->run({{"S", Tensor::sequence(DataType::kFloat32, {})}, {"x", Tensor::sequence(DataType::kFloat32, {})}}); }),
                HasSubstr("input 'x' is a sequence of 0 float32 tensor(s), expected a tensor of float32"));
    EXPECT_THAT(error_of([&] { s->run({{"S", Tensor::sequence(DataType::kInt64, {})}, {"x", x}}); }),
                HasSubstr("expected float32 tensors"));
    // Still usable, and an empty sequence is a valid feed.
    out = s->run({{"S", Tensor::sequence(DataType::kFloat32, {})}, {"x", x}});
    EXPECT_EQ(out[1].data<int64_t>()[0], 1);
  }
}

TEST(SessionControl, TerminateCancelsAndTheSessionStaysUsable) {
  for (ExecutionMode mode : {ExecutionMode::kSequential, ExecutionMode::kParallel}) {
    SessionOptions o;
    o.execution_mode = mode;
    auto s = InferenceSession::create_from_bytes(wide_model(), o);
    Tensor x = Tensor::from_vector<float>({64}, std::vector<float>(64, 0.5f));
    RunOptions ro;
    ro.terminate = true;
    StatusCode code{};
    EXPECT_THAT(error_of([&] { s->run({{"x", x}}, {}, &ro); }, &code), HasSubstr("RunOptions::terminate"));
    EXPECT_EQ(code, StatusCode::kCancelled);
    EXPECT_EQ(s->run({{"x", x}})[0].numel(), 64);
  }
}

TEST(SessionControl, RunAsyncDeliversOutputsAndErrors) {
  auto s = InferenceSession::create_from_bytes(small_model(), {});
  Tensor x = input(2);
  std::promise<std::pair<Status, std::vector<Tensor>>> done;
  s->run_async({{"x", x}}, {}, [&](Status st, std::vector<Tensor> out) { done.set_value({st, out}); });
  auto [status, out] = done.get_future().get();
  ASSERT_TRUE(status.is_ok()) << status.to_string();
  EXPECT_EQ(out[0].to_vector<float>(), expected_small(x.to_vector<float>()));
  std::promise<Status> failed;
  s->run_async({{"bad", x}}, {}, [&](Status st, std::vector<Tensor>) { failed.set_value(st); });
  Status st = failed.get_future().get();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("'bad'"));
}

}  // namespace
}  // namespace spindle
