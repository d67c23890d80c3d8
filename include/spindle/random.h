// spindle/random.h — the process-wide seed of the random operators
// (RandomNormal, RandomUniform, their *Like forms, Bernoulli, Multinomial,
// training-mode Dropout) whose node has no `seed` attribute: ONNX Runtime's
// onnxruntime.set_seed.
#pragma once

#include <cstdint>
#include <optional>

namespace spindle {

// Kernels created after the call (those of sessions created after it) whose
// node has no `seed` draw from a stream keyed by `seed` and the node (its
// name and operator): two sessions of one model created after
// set_random_seed(s) give the same numbers, run for run, at any thread
// count. Before any call, each such node takes a fresh random key. The
// numbers are spindle's own generator's, not ONNX Runtime's.
void set_random_seed(int64_t seed);
// The seed set_random_seed set, or nullopt.
std::optional<int64_t> random_seed();

}  // namespace spindle
