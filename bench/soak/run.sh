#!/usr/bin/env bash
# Runs the soak benchmark on the PP-OCR classifier and recognizer
# (~/.cache/spindle/models, scripts/fetch-models.sh), one after the other.
#
#   bench/soak/run.sh [BUILD_DIR] [SECONDS_EACH] [THREADS]
#
# BUILD_DIR defaults to `build`; SECONDS_EACH to 120; THREADS (runner
# threads on the shared session) to 16. Each run prints its counts and RSS;
# the script fails when either run does (wrong output, error, RSS growth).
set -euo pipefail
build=${1:-build}
seconds=${2:-120}
threads=${3:-16}
bin=$build/bench/soak/spindle_soak
if [ ! -x "$bin" ]; then
  echo "run.sh: $bin not found; build it first: cmake --build $build --target spindle_soak" >&2
  exit 1
fi
models=~/.cache/spindle/models
status=0
"$bin" --model "$models/ch_ppocr_mobile_v2.0_cls_infer.onnx" --threads "$threads" --seconds "$seconds" --intra 2 || status=1
"$bin" --model "$models/ch_PP-OCRv4_rec_infer.onnx" --threads "$threads" --seconds "$seconds" --intra 2 \
  --mode parallel --dyn 160 || status=1
exit $status
