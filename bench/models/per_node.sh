#!/usr/bin/env bash
# Per-node times of spindle and ONNX Runtime on one model, worst differences
# first (bench/models/per_node.py): spindle through `spindle profile`, ORT
# through its own profiler (bench/models/ort_profile.js), same runs, intra
# and inputs. Tells which kernels a model-level ratio comes from.
#
#   bench/models/per_node.sh [BUILD_DIR] MODEL.onnx "NAME=DIMS [NAME=DIMS...]" INTRA [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build
if [ -d "${1:-}" ]; then build=$1; shift; fi
model=$1 shape=$2 intra=$3 runs=${4:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
read -r -a shapes <<<"$shape"
# one --shape per input, for both sides (the ORT script takes one value per flag)
spindle_shapes=()
for s in "${shapes[@]}"; do spindle_shapes+=(--shape "$s"); done
"$build/spindle" profile "$model" --runs "$runs" --intra "$intra" "${spindle_shapes[@]}" --trace "$tmp/spindle.json" >/dev/null
node bench/models/ort_profile.js "$model" "${spindle_shapes[@]}" --intra "$intra" --runs "$runs" --out "$tmp/ort.json"
/usr/bin/python3 bench/models/per_node.py "$model" "$tmp/spindle.json" "$tmp/ort.json"
