#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite:
#   build/         Release build: every test (threading, kernels, session,
#                  the models at every ISA level, tools, Python and Node
#                  bindings, ONNX Runtime's C API, ONNX backend conformance)
#   build-tsan/    ThreadSanitizer: the threading and session test programs
#   build-asan/    AddressSanitizer + UBSan: threading, kernel, session and
#                  conformance test programs
#   build-openmp/, build-tbb/   the threading tests on the other parallel backends
#   build-fuzz/    clang + libFuzzer + ASan/UBSan: a short run of every fuzz target
# The sanitizer and backend folders build only the test programs they run.
#
# Each suite prints its own output, then one line is recorded for it; the
# script ends with those lines and "N passed, M failed" over all suites.
# A failing suite does not stop the others; the exit status is 1 when any
# suite (or a build) failed.
#
# To add a suite: `suite NAME KIND COMMAND...`, KIND telling how to count
# its tests in its output: ctest, gtest, pytest, node, conformance or
# status (one test: the exit status). `build NAME COMMAND...` runs a step
# that later suites need and stops the script when it fails.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
jobs=$(nproc)
logs=$PWD/build/test-logs
mkdir -p "$logs"
summary=()
failed_tests=()
total_passed=0
total_failed=0
script_start=$SECONDS

elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# Counts of the last run from its log: sets passed / failed.
count_tests() {
  local kind=$1 log=$2 status=$3 line
  passed=""; failed=""
  case $kind in
    ctest)
      # "100% tests passed, 0 tests failed out of 42"
      line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
      if [ -n "$line" ]; then
        failed=$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"$line")
        passed=$(( $(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line") - failed ))
      fi ;;
    gtest)
      # run_gtest_programs' lines "gtest program NAME: T tests, F failed"
      if grep -qE '^gtest program .*: [0-9]+ tests, [0-9]+ failed$' "$log"; then
        passed=$(grep -E '^gtest program ' "$log" | awk '{ s += $(NF - 3) - $(NF - 1) } END { print s + 0 }')
        failed=$(grep -E '^gtest program ' "$log" | awk '{ s += $(NF - 1) } END { print s + 0 }')
      fi ;;
    pytest)
      # "12 passed, 1 failed, 2 skipped in 3.1s"
      line=$(grep -E '[0-9]+ (passed|failed)' "$log" | tail -1)
      if [ -n "$line" ]; then
        passed=$(grep -oE '[0-9]+ passed' <<<"$line" | awk '{ s += $1 } END { print s + 0 }')
        failed=$(grep -oE '[0-9]+ (failed|errors?)' <<<"$line" | awk '{ s += $1 } END { print s + 0 }')
      fi ;;
    node)
      # node --test's TAP summary: "# pass 10" / "# fail 0"
      passed=$(grep -oE '# pass [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+')
      failed=$(grep -oE '# fail [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+') ;;
    conformance)
      # the runner's closing "N passed, M failed"
      line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
      if [ -n "$line" ]; then
        passed=${line%% passed*}
        failed=$(sed -E 's/.*, ([0-9]+) failed/\1/' <<<"$line")
      fi ;;
  esac
  if [ -z "$passed" ] || [ -z "$failed" ]; then
    # No counts found (or KIND status): the suite counts as one test.
    if [ "$status" -eq 0 ]; then passed=1; failed=0; else passed=0; failed=1; fi
  elif [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1  # it failed without a failing test (a crash, a timeout): count it
  fi
}

# suite NAME KIND COMMAND...: runs COMMAND, shows its output, records a line.
suite() {
  local name=$1 kind=$2; shift 2
  local log start=$SECONDS status
  log=$logs/$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.-' '_').log
  printf '\n===== %s\n' "$name"
  "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  count_tests "$kind" "$log" "$status"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  summary+=("$(printf '%-34s %6d passed %5d failed  %8s  %s' "$name" "$passed" "$failed" \
                "$(elapsed $((SECONDS - start)))" "$([ "$failed" -eq 0 ] && echo ok || echo "FAILED (log: $log)")")")
  [ "$failed" -eq 0 ] || failed_tests+=("$name:" "$(failed_names "$log")")
  local retried
  retried=$(grep -oE 'Test +#[0-9]+: [^ ]+ [.]+[*]{3}(Failed|Timeout)' "$log" | sed -E 's/Test +#[0-9]+: ([^ ]+) .*/\1/' | sort -u)
  [ "$failed" -ne 0 ] || [ -z "$retried" ] || failed_tests+=("$name: failed once, passed when run again:" "$(sed 's/^/  /' <<<"$retried")")
}

# The names of the failed tests in a suite's log (ctest, gtest, pytest,
# Python unittest, node --test), at most 20 lines: the summary closes with
# them, so the end of the output says what failed, not only where the log is.
failed_names() {
  grep -E '^[[:space:]]*[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Child aborted|Not Run)\)|^\[  FAILED  \] [A-Za-z]|^FAILED |^(FAIL|ERROR): |^not ok ' "$1" |
    sort -u | head -20 | sed 's/^[[:space:]]*/  /'
}

print_summary() {
  printf '\n===== summary (%s)\n' "$(elapsed $((SECONDS - script_start)))"
  printf '%s\n' "${summary[@]}"
  [ ${#failed_tests[@]} -eq 0 ] || printf 'failed tests\n%s\n' "$(printf '%s\n' "${failed_tests[@]}")"
  echo "scripts/test.sh: $total_passed passed, $total_failed failed"
}

# build NAME COMMAND...: a step the suites need; stops everything on failure.
build() {
  local name=$1; shift
  local start=$SECONDS
  printf '\n===== %s\n' "$name"
  if ! "$@"; then
    summary+=("$(printf '%-34s build FAILED after %s' "$name" "$(elapsed $((SECONDS - start)))")")
    total_failed=$((total_failed + 1))
    print_summary
    exit 1
  fi
  summary+=("$(printf '%-34s built in %s' "$name" "$(elapsed $((SECONDS - start)))")")
}

build "dependencies" scripts/setup-deps.sh
# The real models (npm) and ONNX Runtime's reference outputs for them.
build "models and references" scripts/make-references.sh
# node-addon-api for the Node.js addon (built by CMake below).
build "node-addon-api" bash -c 'cd bindings/node && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error'

build "Release build" bash -c "cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build -j $jobs"
# Threading tests measure CPU time and spinning: one at a time.
suite "C++ threading (Release)" ctest ctest --test-dir build --output-on-failure -j 1 -L threading
suite "C++ graph/exec/kernels/session/io/models (Release)" ctest \
  ctest --test-dir build --output-on-failure -j "$jobs" -LE 'threading|conformance|tools|python|node|opsets|capi'
# ctest runs each test in its own process; the tests must also hold all in
# one process, repeated (no test may depend on a fresh default Environment).
for t in test_threading test_exec test_session; do
  suite "$t x3 in one process" status build/tests/$t --gtest_repeat=3 --gtest_brief=1
done
# spindle tune picks settings by timing them, and serve's tests time
# queues and deadlines: alone on the machine, and a test that fails is run
# once more (its failed try stays in the log and the summary names it).
suite "C++ tools (Release)" ctest ctest --test-dir build --output-on-failure -j 1 -L tools --repeat until-pass:2
suite "pytest (Python bindings)" pytest ctest --test-dir build --verbose -L python
suite "node --test (Node bindings)" node ctest --test-dir build --verbose -L node
# ONNX Runtime's C API: the C program on spindle's libonnxruntime.so.1 and on
# ONNX Runtime's, the exports, and the library dropped into onnxruntime-node.
suite "C API (libonnxruntime.so.1)" ctest ctest --test-dir build --output-on-failure -j 1 -L capi
# The ONNX backend test suite, with its report (per-operator table, counts).
suite "ONNX conformance (Release)" conformance build/tests/conformance_runner
# Opsets 18-23 against ONNX Runtime 1.30 as the oracle (one-node cases,
# generated when missing).
suite "opsets 18-23 vs ONNX Runtime (Release)" conformance tests/opsets/run.sh build

build "ThreadSanitizer build" bash -c "cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSPINDLE_SANITIZE=thread -DSPINDLE_BUILD_BENCH=OFF && cmake --build build-tsan -j $jobs --target test_threading test_session"
suite "ThreadSanitizer threading+session" ctest env TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir build-tsan --output-on-failure -j 1 -L 'threading|session'

build "AddressSanitizer build" bash -c "cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSPINDLE_SANITIZE=address -DSPINDLE_BUILD_BENCH=OFF && cmake --build build-asan -j $jobs \
  --target test_threading test_session test_kernels conformance_runner"
# run_gtest_programs DIR PROGRAM...: each program once, all its tests in one
# process, each closing with a line of counts from its JSON report (the
# programs' own output also holds that of child processes some tests start).
run_gtest_programs() {
  local dir=$1 status=0 t report tests failures; shift
  for t in "$@"; do
    report=$logs/$t-report.json
    rm -f "$report"
    (cd "$dir" && "./$t" --gtest_brief=1 --gtest_output="json:$report") || status=1
    tests=$(grep -m1 -oE '"tests": [0-9]+' "$report" 2>/dev/null | grep -oE '[0-9]+')
    failures=$(grep -m1 -oE '"failures": [0-9]+' "$report" 2>/dev/null | grep -oE '[0-9]+')
    [ -n "$tests" ] && echo "gtest program $t: $tests tests, ${failures:-0} failed"
  done
  return $status
}
# Under ASan a process start costs ~0.5 s, which ctest's process per test
# paid 1700 times: the programs run once each instead, the threading one
# first and alone (it measures CPU time).
asan_programs() {
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_gtest_programs build-asan/tests test_threading test_kernels test_session
}
suite "ASan+UBSan threading/session/kernels" gtest asan_programs
suite "ASan+UBSan ONNX conformance" conformance env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  build-asan/tests/conformance_runner

# The same threading tests on the OpenMP and TBB backends (knobs those
# backends do not own are skipped there and listed by parallel_info).
for backend in openmp tbb; do
  build "$backend build" bash -c "cmake -S . -B build-$backend -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DSPINDLE_PARALLEL_BACKEND=$backend -DSPINDLE_THREADING_ONLY=ON -DSPINDLE_BUILD_BENCH=OFF && \
    cmake --build build-$backend -j $jobs --target test_threading"
  suite "C++ threading ($backend)" ctest ctest --test-dir "build-$backend" --output-on-failure -j 1
done

# What users install, from its installed form: cmake --install + examples/cpp,
# the .deb (built, inspected, dependencies resolved by apt-get -s, not
# installed), the pip-installed Python package with the pytest suite, and the
# npm-packed Node package in a scratch project with tsc --noEmit.
suite "packaging (install, .deb, pip, npm)" status scripts/check-packaging.sh build

# Fuzzing (fuzz/, scripts/fuzz.sh): every libFuzzer target for a short,
# bounded time (SPINDLE_FUZZ_SECONDS, default 25 s each) on a copy of its
# seed corpus. A crash, sanitizer report, timeout or out-of-memory input whose
# signature is not listed in fuzz/known-crashes.txt fails the suite.
# build-fuzz/ compiles the library once more with clang (ASan + UBSan +
# coverage); docs/reliability.md says how long that takes.
for target in model npy pb graph; do
  suite "fuzz $target (${SPINDLE_FUZZ_SECONDS:-25} s)" status scripts/fuzz.sh "$target" "${SPINDLE_FUZZ_SECONDS:-25}"
done

print_summary
[ "$total_failed" -eq 0 ]
