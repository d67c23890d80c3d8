#!/usr/bin/env bash
# run.sh — spindle against ONNX Runtime on one-node models at opsets 18-23.
#
#   tests/opsets/run.sh BUILD_DIR [conformance_runner options...]
#
# Generates the cases into BUILD_DIR/opsets-cases when they are missing
# (tests/opsets/gen_cases.py with Debian's python3-onnx, then
# tests/opsets/ort_expected.js with onnxruntime-node 1.30 from
# scripts/fetch-models.sh for the expected outputs), then runs them through
# BUILD_DIR/tests/conformance_runner, whose report ends "N passed, M failed".
# Delete BUILD_DIR/opsets-cases to regenerate.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:?usage: tests/opsets/run.sh BUILD_DIR [conformance_runner options]}" && pwd)"
shift
cases="$build/opsets-cases"
if [[ ! -f "$cases/refused-by-ort.txt" ]]; then
  rm -rf "$cases"
  /usr/bin/python3 "$here/gen_cases.py" "$cases"
  node "$here/ort_expected.js" "$cases"
fi
exec "$build/tests/conformance_runner" --data "$cases" "$@"
