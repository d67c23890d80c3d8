// random_seed_test.cpp — set_random_seed (Python's set_seed): random
// operators without a `seed` attribute in sessions created after it give
// the same numbers in every such session, at any thread count; another seed
// gives other numbers; nodes of one model get streams of their own.
#include <gtest/gtest.h>

#include <cstring>

#include "model_builder.h"
#include "spindle/random.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using testing::ModelBuilder;

// Two unseeded RandomNormal nodes of one shape, and a Bernoulli of a
// RandomUniform: a = RandomNormal, b = RandomNormal, c = Bernoulli(u).
std::vector<uint8_t> random_model() {
  ModelBuilder b(15);
  b.output("a", {64, 64}).output("b", {64, 64}).output("c", {64, 64});
  for (const char* name : {"a", "b"})
    ModelBuilder::attr_ints(b.node("RandomNormal", {}, {name}, std::string("normal_") + name), "shape", {64, 64});
  ModelBuilder::attr_ints(b.node("RandomUniform", {}, {"u"}, "uniform"), "shape", {64, 64});
  b.node("Bernoulli", {"u"}, {"c"}, "bernoulli");
  return b.bytes();
}

std::vector<Tensor> run(int threads, int runs = 1) {
  SessionOptions o;
  o.intra_op_num_threads = threads;
  auto s = InferenceSession::create_from_bytes(random_model(), o);
  std::vector<Tensor> out;
  for (int r = 0; r < runs; ++r) out = s->run({});
  return out;
}

bool same(const Tensor& x, const Tensor& y) {
  return x.dtype() == y.dtype() && x.shape() == y.shape() && std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

TEST(RandomSeed, SessionsCreatedAfterTheSeedDrawTheSameNumbers) {
  set_random_seed(5);
  ASSERT_EQ(random_seed(), 5);
  const std::vector<Tensor> first = run(1);
  ASSERT_EQ(first.size(), 3u);
  for (int threads : {1, 3}) {
    const std::vector<Tensor> again = run(threads);
    for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(same(first[i], again[i])) << i << ", " << threads << " threads";
  }
  // Each node has its own stream, and a session's second run its next numbers.
  EXPECT_FALSE(same(first[0], first[1]));
  const std::vector<Tensor> second_run = run(2, 2);
  EXPECT_FALSE(same(first[0], second_run[0]));
  EXPECT_TRUE(same(second_run[0], run(1, 2)[0]));
  // Another seed, other numbers.
  set_random_seed(6);
  const std::vector<Tensor> other = run(1);
  EXPECT_FALSE(same(first[0], other[0]));
  EXPECT_FALSE(same(first[2], other[2]));
}

}  // namespace
}  // namespace spindle
