// scratch.cpp — the per-thread scratch buffers of scratch.h.
#include "primitives/scratch.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "spindle/status.h"
#include "spindle/tensor.h"

namespace spindle::kernels::nn {

namespace {

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

struct ScratchSlot {
  std::unique_ptr<float, FreeDeleter> data;
  size_t capacity = 0;
};

constexpr int kScratchSlots = 7;

// Largest per-thread scratch buffer (scratch_floats).
constexpr size_t kMaxScratchBytes = size_t{1} << 30;

}  // namespace

float* scratch_floats(int slot, size_t n) {
  thread_local ScratchSlot slots[kScratchSlots];
  ScratchSlot& s = slots[slot];
  // Scratch sizes follow the model's shapes and attributes: a dilation of
  // 2^40 on a small plane asked for 2^47 floats of phase planes (fuzz_graph).
  // Legitimate scratch is tiles and bands of MBs (docs/gemm.md).
  if (n > kMaxScratchBytes / sizeof(float))
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("a kernel needs {} floats of scratch, more than the {} bytes scratch may take (the "
                            "model's shapes, strides or dilations are too large)",
                            n, kMaxScratchBytes));
  if (n > s.capacity) {
    const size_t cap = std::max<size_t>(n + n / 4, 1024);
    const size_t bytes = (cap * sizeof(float) + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    float* p = static_cast<float*>(std::aligned_alloc(kTensorAlignment, bytes));
    if (!p) throw Error(StatusCode::kRuntimeError, fmt::format("cannot allocate {} bytes of scratch", bytes));
    s.data.reset(p);
    s.capacity = cap;
  }
  return s.data.get();
}

}  // namespace spindle::kernels::nn
