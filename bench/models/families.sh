#!/usr/bin/env bash
# spindle vs ONNX Runtime on the benchmark families, both through Node.js in
# one process (bench/models/side_by_side.js: A B A B, outputs checked first),
# at intra-op 1 and 2, sequential. Models are exported once with Debian's
# PyTorch (bench/models/export_models.py) into $SPINDLE_CACHE/bench-models;
# bench/models/setup.sh installs python3-torch / python3-torchvision first
# when they are missing.
# models.tsv: a model per line, its name and its inputs NAME=DIMS separated
# by spaces.
# Prints a markdown table: p50 of each side (median over rounds), the ratio
# spindle/ORT (< 1: spindle faster), CPU ms per inference of each side, and
# each side's intra2/intra1 scaling.
#
#   bench/models/families.sh [BUILD_DIR] [MODEL...]      (ROUNDS, RUNS from the environment)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shift || true
cache=${SPINDLE_CACHE:-$HOME/.cache/spindle}
dir=$cache/bench-models
rounds=${ROUNDS:-5}
runs=${RUNS:-20}
scripts/fetch-models.sh >/dev/null
if [ ! -s "$dir/models.tsv" ]; then
  echo "families: exporting models into $dir (once)" >&2
  bench/models/setup.sh
  rm -rf "$dir.part" && mkdir -p "$dir.part"
  /usr/bin/python3 bench/models/export_models.py "$dir.part" >&2
  rm -rf "$dir" && mv "$dir.part" "$dir"
fi
addon=$build/bindings/node/spindle.node
[ -f "$addon" ] || { echo "families: $addon missing (build the spindle_node target)" >&2; exit 1; }
want=("$@")
results=$(mktemp)
trap 'rm -f "$results"' EXIT
while read -r name shape; do
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " == *" $name "* ]]; then continue; fi
  for intra in 1 2; do
    echo "families: $name intra $intra" >&2
    SPINDLE_NODE_ADDON=$addon node bench/models/side_by_side.js "$dir/$name.onnx" --shape $shape \
      --intra "$intra" --rounds "$rounds" --runs "$runs" 2>/dev/null >>"$results" ||
      echo "families: $name intra $intra failed" >&2
  done
done <"$dir/models.tsv"
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").filter(Boolean).map(JSON.parse);
const by = {};
for (const r of rows) (by[r.model] ??= {})[r.intra] = r;
console.log("| model | ORT ms intra 1 | spindle ms | ratio | ORT ms intra 2 | spindle ms | ratio | spindle CPU ms 1 / 2 | ORT CPU ms 1 / 2 | spindle 2/1 | ORT 2/1 |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
const f = (x) => (x === undefined ? "-" : x.toFixed(x < 1 ? 3 : 2));
for (const [m, r] of Object.entries(by)) {
  const a = r[1] ?? {}, b = r[2] ?? {};
  console.log(`| ${m.replace(/\.onnx$/, "")} | ${f(a.ort_p50_ms)} | ${f(a.spindle_p50_ms)} | **${f(a.ratio)}** | ${f(b.ort_p50_ms)} | ${f(b.spindle_p50_ms)} | **${f(b.ratio)}** | ${f(a.spindle_cpu_ms)} / ${f(b.spindle_cpu_ms)} | ${f(a.ort_cpu_ms)} / ${f(b.ort_cpu_ms)} | ${f(b.spindle_p50_ms / a.spindle_p50_ms)} | ${f(b.ort_p50_ms / a.ort_p50_ms)} |`);
}' "$results"
