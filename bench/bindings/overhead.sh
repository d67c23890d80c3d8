#!/usr/bin/env bash
# Per-call cost of one run of a tiny model (bench/bindings/tiny_model.py,
# ~20 nodes, a few microseconds of compute) through C++ (`spindle bench`),
# Python and Node.js, with onnxruntime-node timed in the same Node.js process
# (A B A B). One intra-op thread everywhere.
#
#   bench/bindings/overhead.sh [BUILD_DIR] [ROUNDS] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
rounds=${2:-5}
runs=${3:-2000}
cache=${SPINDLE_CACHE:-$HOME/.cache/spindle}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$here/tiny_model.py" "$tmp/tiny.onnx"
for r in $(seq "$rounds"); do
  "$build/spindle" bench "$tmp/tiny.onnx" --shape x=16x40 --intra 1 --runs "$runs" --warmup 200 --json
done | /usr/bin/python3 -c '
import json, statistics, sys
p = [json.loads(l)["latency_ms"]["p50"] * 1000 for l in sys.stdin]
print(json.dumps({"side": "spindle", "binding": "c++ (spindle bench)", "p50_us": round(statistics.median(p), 1),
                  "rounds": [round(v, 1) for v in p]}))'
PYTHONPATH="$build/bindings/python" /usr/bin/python3 "$here/overhead.py" "$tmp/tiny.onnx" "$rounds" "$runs"
SPINDLE_NODE_ADDON="$build/bindings/node/spindle.node" NODE_PATH="$cache/ort/node_modules" \
  node "$here/overhead.js" "$tmp/tiny.onnx" "$rounds" "$runs" 2>/dev/null
