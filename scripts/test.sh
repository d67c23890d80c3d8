#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test through ctest:
#   build/         Release build: every test (threading, kernels, session,
#                  ONNX backend conformance, real models vs ONNX Runtime)
#   build-tsan/    ThreadSanitizer: threading and session tests
#   build-asan/    AddressSanitizer + UBSan: threading, kernel, session and
#                  conformance tests
#   build-openmp/, build-tbb/   the threading tests on the other parallel backends
#   build-fuzz/    clang + libFuzzer + ASan/UBSan: a short run of every fuzz target
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
# The real models (npm) and ONNX Runtime's reference outputs for them.
scripts/make-references.sh
# node-addon-api for the Node.js addon (built by CMake below).
(cd bindings/node && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
# Threading tests measure CPU time and spinning: one at a time.
ctest --test-dir build --output-on-failure -j 1 -L threading
ctest --test-dir build --output-on-failure -j "$jobs" -LE 'threading|conformance|tools'
# spindle tune picks settings by timing them: alone on the machine.
ctest --test-dir build --output-on-failure -j 1 -L tools
# The ONNX backend test suite, with its report (per-operator table, counts,
# and the closing "N passed, M failed" line).
ctest --test-dir build --verbose -L conformance

cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPINDLE_SANITIZE=thread -DSPINDLE_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j "$jobs"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir build-tsan --output-on-failure -j 1 -L 'threading|session'

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPINDLE_SANITIZE=address -DSPINDLE_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -L 'threading|session|kernels|conformance'

# The same threading tests on the OpenMP and TBB backends (knobs those
# backends do not own are skipped there and listed by parallel_info).
for backend in openmp tbb; do
  dir=build-$backend
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPINDLE_PARALLEL_BACKEND=$backend \
    -DSPINDLE_THREADING_ONLY=ON -DSPINDLE_BUILD_BENCH=OFF >/dev/null
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure -j 1
done
# Fuzzing (fuzz/, scripts/fuzz.sh): every libFuzzer target for a short,
# bounded time (SPINDLE_FUZZ_SECONDS, default 25 s each) on a copy of its
# seed corpus, with a summary line per target. A crash, sanitizer report,
# timeout or out-of-memory input whose signature is not listed in
# fuzz/known-crashes.txt fails the script. build-fuzz/ compiles the library
# once more with clang (ASan + UBSan + coverage); docs/reliability.md says
# how long that takes.
fuzz_failed=()
for target in model npy pb graph; do
  scripts/fuzz.sh "$target" "${SPINDLE_FUZZ_SECONDS:-25}" || fuzz_failed+=("$target")
done
if [ ${#fuzz_failed[@]} -gt 0 ]; then
  echo "scripts/test.sh: fuzzing found new crashes in: ${fuzz_failed[*]} (inputs in fuzz/crashes/, stacks in build-fuzz/runs/)"
  exit 1
fi
echo "scripts/test.sh: all test suites passed"
