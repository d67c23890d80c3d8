#!/usr/bin/env bash
# check-includes.sh — fails when a file includes a header of a layer above its
# own (ctest runs it as the test `include_layers`; docs/design.md explains
# the layers).
#
# Usage: scripts/check-includes.sh [REPO_ROOT]   (default: this script's repository)
#
# The layers, lowest first; a file may include headers of its own layer and
# of the layers below it, never above:
#   0 public     include/spindle/  and src/common/ (the value types behind it)
#   1 threading  src/threading/    topology, pools, spinning, env variables
#   2 io         src/io/           tensor files: .npy, onnx TensorProto .pb
#   3 primitives src/primitives/   compute on raw buffers: GEMM, convolution
#                                  and recurrent loops, per-ISA dispatch
#   4 kernels    src/kernels/      operators, their registry and schemas
#   5 graph      src/graph/        loader, graph IR, optimizer
#   6 exec       src/exec/         executors, frames, memory plan
#   7 session    src/session/      InferenceSession, options
#   8 capi       src/capi/         ONNX Runtime's C API (libonnxruntime.so.1)
# Outside src/:
#   tools/, bindings/, examples/  the public API only (include/spindle/*.h);
#   tests/, fuzz/, bench/         anything: they test and measure layers
#                                 from inside.
# Public headers (include/spindle/) also include nothing but the standard
# library, so an installed copy compiles on its own.
#
# A header is named by its path under src/ ("graph/graph.h") or include/
# ("spindle/session.h"); a bare name ("commands.h") is a file beside the
# includer and belongs to its layer.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# Rank of a src/ or include/ layer name; empty when it is not one.
rank_of() {
  case $1 in
    spindle | common) echo 0 ;;
    threading) echo 1 ;;
    io) echo 2 ;;
    primitives) echo 3 ;;
    kernels) echo 4 ;;
    graph) echo 5 ;;
    exec) echo 6 ;;
    session) echo 7 ;;
    capi) echo 8 ;;
    *) echo "" ;;
  esac
}

failures=0
report() {
  echo "$1" >&2
  failures=$((failures + 1))
}

# Files and the layer each belongs to ("public-only" for the API's users).
while IFS= read -r file; do
  case $file in
    include/spindle/*) layer=spindle ;;
    src/*/*) layer=${file#src/}; layer=${layer%%/*} ;;
    tools/* | bindings/* | examples/*) layer=public-only ;;
    *) continue ;;
  esac
  if [[ $layer != public-only && -z $(rank_of "$layer") ]]; then
    report "$file: src/$layer/ is not a known layer (add it to scripts/check-includes.sh and docs/design.md)"
    continue
  fi
  own=$(rank_of "$layer")
  while IFS=: read -r line text; do
    if [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
      target=${BASH_REMATCH[1]}
    elif [[ $layer == spindle && $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<([^\>]+)\> ]]; then
      # A standard library header has no extension and no folder.
      target=${BASH_REMATCH[1]}
      [[ $target == */* || $target == *.* ]] &&
        report "$file:$line: public header includes <$target>; public headers include only the standard library"
      continue
    else
      continue
    fi
    [[ $target != */* ]] && continue  # beside the includer
    top=${target%%/*}
    if [[ $top == .. ]]; then
      report "$file:$line: includes \"$target\" by a relative path; name it from src/ or include/"
      continue
    fi
    theirs=$(rank_of "$top")
    [[ -z $theirs ]] && continue  # a third-party or generated header
    if [[ $layer == public-only ]]; then
      [[ $top == spindle ]] ||
        report "$file:$line: includes \"$target\", an internal header; tools, bindings and examples use include/spindle/ only"
    elif ((theirs > own)); then
      report "$file:$line: $layer (layer $own) includes \"$target\" of $top (layer $theirs), a layer above it"
    fi
  done < <(grep -n '#[[:space:]]*include' "$file" || true)
done < <(find include src tools bindings examples -name node_modules -prune -o -type f \
  \( -name '*.h' -o -name '*.hpp' -o -name '*.c' -o -name '*.cc' -o -name '*.cpp' -o -name '*.inc' \) -print | sort)

if ((failures > 0)); then
  echo "check-includes: $failures wrong-way include(s); the layer order is in scripts/check-includes.sh and docs/design.md" >&2
  exit 1
fi
echo "check-includes: every include points down or sideways"
