// fuzz_model.cpp — libFuzzer target: model bytes -> InferenceSession
// (protobuf parsing, the loader, every optimizer pass including constant
// folding) -> one run on small generated inputs when every declared input
// is small (fuzz_util.h: make_input, kMaxInputElements, the run deadline).
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spindle;
  fuzz::guarded([&] {
    auto session = InferenceSession::create_from_bytes(std::span<const uint8_t>(data, size), fuzz::fuzz_session_options());
    Feeds feeds;
    for (const TensorInfo& info : session->inputs()) {
      Tensor t = fuzz::make_input(info);
      if (!t.defined()) return;  // a declared input too large for the caps: load only
      feeds.emplace_back(info.name, std::move(t));
    }
    fuzz::run_capped(*session, feeds);
  });
  return 0;
}
