#!/usr/bin/env bash
# dispatch.sh — what runtime ISA dispatch costs: the PP-OCR models timed at 1
# intra-op thread with three binaries of the same source, in A B C A B C order
# (ROUNDS rounds), same inputs, same machine, one run:
#   portable   BUILD_DIR/spindle: no -march flag; the *.isa.cpp kernels are
#              chosen at start-up (AVX2 on an AVX2 machine)
#   native     NATIVE_DIR/spindle: every file compiled with -march=native
#   baseline   BUILD_DIR/spindle with SPINDLE_ISA=baseline (SSE2 kernels)
# Prints a markdown table: the median over rounds of each binary's p50
# latency, and the ratios portable/native and baseline/portable.
#
#   cmake -S . -B build-native -G Ninja -DCMAKE_BUILD_TYPE=Release \
#     -DCMAKE_CXX_FLAGS=-march=native -DSPINDLE_BUILD_TESTS=OFF -DSPINDLE_BUILD_BENCH=OFF
#   cmake --build build-native --target spindle_cli
#   bench/models/dispatch.sh build build-native      (ROUNDS, RUNS: 5, 10)
# Without NATIVE_BUILD_DIR only the portable and baseline columns are timed.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
native=${2:-}
variants=(portable baseline)
[ -n "$native" ] && variants=(portable native baseline)
cache=${SPINDLE_CACHE:-$HOME/.cache/spindle}
rounds=${ROUNDS:-5}
runs=${RUNS:-10}
scripts/fetch-models.sh --models-only >/dev/null
stems=(ch_ppocr_mobile_v2.0_cls_infer ch_PP-OCRv4_rec_infer ch_PP-OCRv4_det_infer)
args=("$cache/models/${stems[0]}.onnx" "$cache/models/${stems[1]}.onnx" "$cache/models/${stems[2]}.onnx"
      --threads 1 --runs "$runs" --warmup 3 --json
      --shape "${stems[0]}:x=1x3x48x192" --shape "${stems[1]}:x=1x3x48x320" --shape "${stems[2]}:x=1x3x320x320")
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq "$rounds"); do
  for variant in "${variants[@]}"; do
    echo "bench/models/dispatch: round $round/$rounds $variant" >&2
    case $variant in
      portable) out=$("$build/spindle" bench "${args[@]}") ;;
      native) out=$("$native/spindle" bench "${args[@]}") ;;
      baseline) out=$(SPINDLE_ISA=baseline "$build/spindle" bench "${args[@]}") ;;
    esac
    # one p50 per model, in the order of the models
    grep -oE '"p50":[0-9.eE+-]+' <<<"$out" | cut -d: -f2 | paste -sd' ' | sed "s/^/$variant /" >>"$results"
  done
done
echo
echo "1 intra-op thread, median of $rounds rounds of p50 ($runs runs each), $(nproc) CPUs," \
     "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo
if [ -n "$native" ]; then
  echo "| model | portable (dispatch) ms | -march=native ms | portable / native | SPINDLE_ISA=baseline ms | baseline / portable |"
  echo "|---|---:|---:|---:|---:|---:|"
else
  echo "| model | portable (dispatch, $("$build/spindle" info --json | grep -oE '"active": "[a-z0-9]+"' | cut -d'"' -f4)) ms | SPINDLE_ISA=baseline ms | baseline / portable |"
  echo "|---|---:|---:|---:|"
fi
for i in 0 1 2; do
  col=$((i + 2))
  med() { grep "^$1 " "$results" | awk -v c="$col" '{ print $c }' | sort -g |
          awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  p=$(med portable); b=$(med baseline)
  if [ -n "$native" ]; then
    n=$(med native)
    awk -v s="${stems[$i]}" -v p="$p" -v n="$n" -v b="$b" \
      'BEGIN { printf "| %s | %.2f | %.2f | %.3f | %.2f | %.2f |\n", s, p, n, p / n, b, b / p }'
  else
    awk -v s="${stems[$i]}" -v p="$p" -v b="$b" 'BEGIN { printf "| %s | %.2f | %.2f | %.2f |\n", s, p, b, b / p }'
  fi
done
