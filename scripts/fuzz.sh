#!/usr/bin/env bash
# Builds one libFuzzer target and fuzzes it for a bounded time:
#
#   scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_FLAG...]
#     TARGET: model | npy | pb | graph (or fuzz_model, ...; see fuzz/)
#
# The build goes to build-fuzz/ (clang, ASan + UBSan + libFuzzer coverage,
# only the library and the target). The run works on a fresh copy of
# fuzz/corpus/TARGET in build-fuzz/runs/TARGET/corpus (FUZZ_KEEP_CORPUS=1
# continues from the previous run's copy instead, for long runs in slices),
# in libFuzzer's fork mode so that one crash does not end the run: every
# crash, timeout and out-of-memory input is kept in fuzz/crashes/TARGET/
# (not in git), replayed once for its stack, and named by a signature (the
# error kind and the first frame in spindle's src/). The last line is a
# summary: executions, coverage, corpus, crashes.
#
# Exit status: 1 when a finding's signature is not listed for TARGET in
# fuzz/known-crashes.txt (bugs being fixed elsewhere; FUZZ_STRICT=1 counts
# those too), 0 otherwise.
#
# Caps per execution (change with care; docs/reliability.md): -timeout=10 s,
# -rss_limit_mb=2048, -malloc_limit_mb=1024; the harnesses add a 1 s run
# deadline (RunOptions::terminate) and 16384 elements per generated input.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ $# -lt 2 ]; then
  echo "usage: scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_FLAG...]  (TARGET: model, npy, pb or graph)" >&2
  exit 2
fi
name=${1#fuzz_}
seconds=$2
shift 2
case "$name" in
  model | npy | pb | graph) ;;
  *) echo "scripts/fuzz.sh: unknown target '$1' (expected model, npy, pb or graph)" >&2; exit 2 ;;
esac
case "$seconds" in
  '' | *[!0-9]*) echo "scripts/fuzz.sh: SECONDS must be a positive whole number, not '$seconds'" >&2; exit 2 ;;
esac
target=fuzz_$name
jobs=${FUZZ_BUILD_JOBS:-$(nproc)}

build_start=$(date +%s)
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSPINDLE_BUILD_FUZZ=ON -DSPINDLE_BUILD_TESTS=OFF -DSPINDLE_BUILD_BENCH=OFF \
    -DSPINDLE_BUILD_PYTHON=OFF -DSPINDLE_BUILD_NODE=OFF -DSPINDLE_ISA_BASELINE_ONLY=ON >/dev/null
fi
cmake --build build-fuzz -j "$jobs" --target "$target" >/dev/null
echo "$target: built in $(($(date +%s) - build_start)) s"

run=build-fuzz/runs/$name
crashes=fuzz/crashes/$name
mkdir -p "$run" "$crashes"
rm -f "$run"/replay-*.txt
if [ "${FUZZ_KEEP_CORPUS:-0}" != 1 ] || [ ! -d "$run/corpus" ]; then
  rm -rf "$run/corpus"
  cp -r "fuzz/corpus/$name" "$run/corpus"
fi
caps=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rm -rf "$run/artifacts"
mkdir -p "$run/artifacts"
set +e
"build-fuzz/fuzz/$target" -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
  -max_total_time="$seconds" "${caps[@]}" -artifact_prefix="$run/artifacts/" -print_final_stats=1 "$@" \
  "$run/corpus" >"$run/log.txt" 2>&1
status=$?
set -e

# Fork mode's status lines: "#N: cov: C ft: F corp: K exec/s: E oom/timeout/crash: a/b/c time: Ts ..."
last=$(grep -E '^#[0-9]+: cov:' "$run/log.txt" | tail -n 1 || true)
if [ -z "$last" ]; then
  tail -n 30 "$run/log.txt" >&2
  echo "$target: FAILED (libFuzzer exited with status $status before its first status line; log: $run/log.txt)"
  exit 1
fi
execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
field() { sed -E "s|.* $1: ([^ ]+).*|\\1|" <<<"$last"; }

# Replays each new finding once and names it: kind + first frame in src/.
signature() {
  local log=$1 kind frame
  kind=$(grep -m1 -oE "(AddressSanitizer|LeakSanitizer|libFuzzer): (deadly signal|detected memory leaks|[a-z-]+)|runtime error: [a-z -]+|throwing an instance of '[^']+'|ALARM: working on the last Unit" "$log" |
    head -n 1 || true)
  frame=$(grep -m1 -E "^ +#[0-9]+ 0x[0-9a-f]+ in .* /[^ ]*/src/[^ ]+:[0-9]+" "$log" | grep -v " /usr/" |
    sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ in (.*) \/[^ ]*\/(src\/[^: ]+):.*/\1 \2/' || true)
  # Function names only (no parameter lists), so that signatures stay short.
  frame=$(sed -E 's/\(anonymous namespace\)/{anon}/g; s/\(.*\) / /' <<<"$frame")
  echo "${kind:-unknown}|${frame:-no frame in src/}"
}
new=0 known=0 total=0
declare -A seen=()
: >"$run/findings.txt"
for f in $(ls "$run/artifacts"); do
  total=$((total + 1))
  cp "$run/artifacts/$f" "$crashes/"
  replay="$run/replay-$f.txt"
  timeout 120 "build-fuzz/fuzz/$target" "${caps[@]}" "$run/artifacts/$f" >"$replay" 2>&1 || true
  sig=$(signature "$replay")
  [ -n "${seen[$sig]:-}" ] && continue
  seen[$sig]=1
  is_known=0
  while IFS=$'\t' read -r t pattern _; do
    [ "$t" = "$name" ] && [ -n "$pattern" ] && [[ "$sig" == *"$pattern"* ]] && is_known=1
  done < <(grep -v '^#' fuzz/known-crashes.txt 2>/dev/null || true)
  if [ $is_known = 1 ] && [ "${FUZZ_STRICT:-0}" != 1 ]; then
    known=$((known + 1)); echo "  known: $sig  ($crashes/$f)" | tee -a "$run/findings.txt"
  else
    new=$((new + 1)); echo "  NEW:   $sig  ($crashes/$f; stack: $replay)" | tee -a "$run/findings.txt"
  fi
done

echo "$target: ${execs} executions in ${seconds} s, coverage $(field cov) (features $(field ft)), corpus $(field corp)," \
  "oom/timeout/crash $(field 'oom/timeout/crash'), findings $total ($((new + known)) unique: $new new, $known known)"
[ "$new" -eq 0 ]
