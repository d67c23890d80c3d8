// output_memory_test.cpp — a run's outputs, freed by the caller, leave their
// memory for the next run's outputs of the same size (common/buffer_cache.h):
// runs whose caller keeps other allocations between them (a profiler's
// events) take no fresh pages for their outputs, and what is kept is bounded
// and released on request.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/buffer_cache.h"
#include "model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using testing::ModelBuilder;

// AddressSanitizer builds free every buffer (use-after-free checks).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheOn = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCacheOn = false;
#else
constexpr bool kCacheOn = true;
#endif
#else
constexpr bool kCacheOn = true;
#endif

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

TEST(OutputMemory, FreedOutputsTakeNoFreshPagesInTheNextRun) {
  if (!kCacheOn) GTEST_SKIP() << "the buffer cache is off under AddressSanitizer";
  // 8 outputs of 512 KB (4 MB, 1024 pages) a run, each Concat(x, x).
  constexpr int kOutputs = 8;
  ModelBuilder b;
  b.input("x", {65536});
  for (int i = 0; i < kOutputs; ++i) {
    std::string y = "y";
    y += std::to_string(i);
    b.output(y, {131072});
    auto& n = b.node("Concat", {"x", "x"}, {y});
    ModelBuilder::attr_int(n, "axis", 0);
  }
  auto s = InferenceSession::create_from_bytes(b.bytes());
  const Feeds feeds = {{"x", Tensor(DataType::kFloat32, {65536})}};
  // Each profiled run's events are kept, as `spindle profile` keeps them:
  // small allocations made while the outputs come and go.
  std::vector<RunProfile> kept;
  for (int r = 0; r < 5; ++r) s->run_profiled(feeds, kept.emplace_back());
  constexpr int kRuns = 40;
  const long before = minor_faults();
  for (int r = 0; r < kRuns; ++r) {
    std::vector<Tensor> out = s->run_profiled(feeds, kept.emplace_back());
    ASSERT_EQ(out.size(), static_cast<size_t>(kOutputs));
  }
  const double per_run = static_cast<double>(minor_faults() - before) / kRuns;
  EXPECT_LT(per_run, 64.0) << "page faults per run; the outputs alone span " << kOutputs * 128 << " pages";
}

TEST(OutputMemory, AFreedBufferIsTakenBackBySameSizeAndTheCacheIsBounded) {
  if (!kCacheOn) GTEST_SKIP() << "the buffer cache is off under AddressSanitizer";
  release_cached_buffers();
  void* first = nullptr;
  {
    auto a = Buffer::allocate(300 << 10);
    first = a->data();
  }
  auto small = Buffer::allocate(100);  // below the cached sizes: from malloc
  auto again = Buffer::allocate((300 << 10) - 100);  // rounds to the same pages
  EXPECT_EQ(again->data(), first);
  again.reset();

  // 40 buffers of 1 MB freed: 32 MB are kept (the oldest 8 freed), and the
  // next 32 of that size are the kept ones.
  std::vector<std::shared_ptr<Buffer>> many;
  for (int i = 0; i < 40; ++i) many.push_back(Buffer::allocate(1 << 20));
  std::set<void*> kept;
  for (size_t i = 8; i < many.size(); ++i) kept.insert(many[i]->data());
  many.clear();
  EXPECT_EQ(cached_buffer_bytes(), size_t{32} << 20);
  for (int i = 0; i < 32; ++i) {
    many.push_back(Buffer::allocate(1 << 20));
    EXPECT_TRUE(kept.count(many.back()->data())) << "allocation " << i << " did not take a kept buffer";
  }
  EXPECT_EQ(cached_buffer_bytes(), size_t{0});
  many.clear();
  release_cached_buffers();
  EXPECT_EQ(cached_buffer_bytes(), size_t{0});
  auto fresh = Buffer::allocate(1 << 20);
  EXPECT_NE(fresh->data(), nullptr);
}

}  // namespace
}  // namespace spindle
