// fetches_test.cpp — a run asking for some of the outputs runs only the
// nodes those outputs depend on (sequential and parallel modes), gives the
// values a full run gives, and leaves the session and its frames reusable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/kernel_errors.h"
#include "model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::ModelBuilder;

// x: float [4], i: int64 [2].
//   s = x + c                    (shared by both branches)
//   cheap = s * two
//   picked = Gather(Exp(Neg(s)), i) + 1, which fails when i is out of range
std::vector<uint8_t> two_branch_model() {
  ModelBuilder b;
  b.input("x", {4}).input("i", {2}, onnx::TensorProto::INT64);
  b.output("cheap", {4}).output("picked", {2});
  b.initializer("c", {4}, {1, -1, 2, -2});
  b.initializer("two", {}, {2});
  b.initializer("one", {}, {1});
  b.node("Add", {"x", "c"}, {"s"}, "shared_add");
  b.node("Mul", {"s", "two"}, {"cheap"}, "cheap_mul");
  b.node("Neg", {"s"}, {"n"}, "other_neg");
  b.node("Exp", {"n"}, {"e"}, "other_exp");
  b.node("Gather", {"e", "i"}, {"g"}, "other_gather");
  b.node("Add", {"g", "one"}, {"picked"}, "other_add");
  return b.bytes();
}

const std::vector<float> kX = {0.5f, 1.5f, -2.0f, 3.0f};
const std::vector<float> kC = {1, -1, 2, -2};

std::vector<float> expected_cheap() {
  std::vector<float> r;
  for (size_t k = 0; k < 4; ++k) r.push_back((kX[k] + kC[k]) * 2.0f);
  return r;
}
std::vector<float> expected_picked(const std::vector<int64_t>& idx) {
  std::vector<float> r;
  for (int64_t k : idx) r.push_back(std::exp(-(kX[static_cast<size_t>(k)] + kC[static_cast<size_t>(k)])) + 1.0f);
  return r;
}

Feeds feeds(const std::vector<int64_t>& idx) {
  return {{"x", Tensor::from_vector<float>({4}, kX)}, {"i", Tensor::from_vector<int64_t>({2}, idx)}};
}

std::unique_ptr<InferenceSession> make_session(bool parallel, bool profiling = false, const std::string& prefix = "") {
  SessionOptions o;
  o.intra_op_num_threads = 1;
  if (parallel) {
    o.execution_mode = ExecutionMode::kParallel;
    o.inter_op_num_threads = 2;
  }
  o.enable_profiling = profiling;
  if (!prefix.empty()) o.profile_file_prefix = prefix;
  return InferenceSession::create_from_bytes(two_branch_model(), o);
}

class FetchesTest : public ::testing::TestWithParam<bool> {};

// The other branch's Gather throws on an out-of-range index: a run asking
// only for `cheap` succeeds because that branch does not run, and a full run
// reports the error. Alternating subsets on one session reuses its frames.
TEST_P(FetchesTest, SubsetRunSkipsTheOtherBranch) {
  auto s = make_session(GetParam());
  const std::vector<int64_t> bad = {0, 7}, good = {3, 1};
  for (int round = 0; round < 3; ++round) {
    auto cheap = s->run(feeds(bad), {"cheap"});
    ASSERT_EQ(cheap.size(), 1u);
    EXPECT_EQ(cheap[0].to_vector<float>(), expected_cheap());
    EXPECT_THAT(error_of([&] { s->run(feeds(bad)); }), HasSubstr("other_gather"));
    EXPECT_THAT(error_of([&] { s->run(feeds(bad), {"picked"}); }), HasSubstr("other_gather"));
    auto full = s->run(feeds(good));
    ASSERT_EQ(full.size(), 2u);
    EXPECT_EQ(full[0].to_vector<float>(), expected_cheap());
    EXPECT_EQ(full[1].to_vector<float>(), expected_picked(good));
    auto picked = s->run(feeds(good), {"picked"});
    ASSERT_EQ(picked.size(), 1u);
    EXPECT_EQ(picked[0].to_vector<float>(), full[1].to_vector<float>());
    // Both outputs named, in the other order: everything runs.
    auto both = s->run(feeds(good), {"picked", "cheap"});
    ASSERT_EQ(both.size(), 2u);
    EXPECT_EQ(both[0].to_vector<float>(), full[1].to_vector<float>());
    EXPECT_EQ(both[1].to_vector<float>(), full[0].to_vector<float>());
    EXPECT_EQ(s->run(feeds(good), {"cheap", "cheap"})[1].to_vector<float>(), expected_cheap());
  }
}

// The profile of a subset run lists exactly the nodes the requested output
// depends on.
TEST_P(FetchesTest, ProfileListsOnlyTheNeededNodes) {
  // A prefix of this process and mode: ctest runs the two modes at once, and
  // traces written within one second get the same name from one prefix.
  const std::string prefix = (std::filesystem::temp_directory_path() /
                              ("spindle_fetches_test_" + std::to_string(::getpid()) + (GetParam() ? "_p" : "_s")))
                                 .string();
  auto s = make_session(GetParam(), true, prefix);
  // Each trace is read (and removed) before the next is written: both may
  // get the same file name within one second.
  auto trace = [&s] {
    const std::string path = s->end_profiling();
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::filesystem::remove(path);
    return ss.str();
  };
  s->run(feeds({1, 2}), {"cheap"});
  const std::string subset = trace();
  s->run(feeds({1, 2}));
  const std::string full = trace();
  for (const char* name : {"shared_add", "cheap_mul"}) {
    EXPECT_THAT(subset, HasSubstr(name));
    EXPECT_THAT(full, HasSubstr(name));
  }
  for (const char* name : {"other_neg", "other_exp", "other_gather", "other_add"}) {
    EXPECT_THAT(subset, ::testing::Not(HasSubstr(name))) << name;
    EXPECT_THAT(full, HasSubstr(name)) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, FetchesTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "parallel" : "sequential"; });

}  // namespace
}  // namespace spindle
