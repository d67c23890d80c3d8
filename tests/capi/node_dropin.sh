#!/usr/bin/env bash
# node_dropin.sh — spindle's libonnxruntime.so.1 as a drop-in for
# onnxruntime-node's. Copies the onnxruntime-node package (and
# onnxruntime-common) into a temp folder, replaces its
# bin/napi-v6/linux/x64/libonnxruntime.so.1 with spindle's, runs
# node_dropin.js there and on the untouched package (separate processes), and
# compares: names, metadata, shapes, types and integer/bool/string values
# exactly; floats within |a - b| <= 1e-4 + 1e-4 * |b| (det, rec, cls).
#
#   tests/capi/node_dropin.sh LIBONNXRUNTIME TYPES_MODEL
#
# Exits 77 (ctest: skipped) with a message when the ONNX Runtime cache
# (~/.cache/spindle/ort, SPINDLE_ORT_MODULES) or the PP-OCR models
# (~/.cache/spindle/models, SPINDLE_MODELS_DIR) are absent.
set -euo pipefail
lib=$1
types=$2
here=$(cd "$(dirname "$0")" && pwd)
modules=${SPINDLE_ORT_MODULES:-$HOME/.cache/spindle/ort/node_modules}
models=${SPINDLE_MODELS_DIR:-$HOME/.cache/spindle/models}
if [[ ! -f $modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1 || ! -d $modules/onnxruntime-common ]]; then
  echo "skipped: onnxruntime-node not found under $modules"
  exit 77
fi
for m in ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx; do
  if [[ ! -f $models/$m ]]; then
    echo "skipped: $models/$m not found"
    exit 77
  fi
done
if ! command -v node > /dev/null; then
  echo "skipped: node not found"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/node_modules"
cp -r "$modules/onnxruntime-node" "$modules/onnxruntime-common" "$tmp/node_modules/"
cp -L "$lib" "$tmp/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"

node "$here/node_dropin.js" "$modules" "$models" "$types" > "$tmp/onnxruntime.json"
node "$here/node_dropin.js" "$tmp/node_modules" "$models" "$types" > "$tmp/spindle.json"

node - "$tmp/onnxruntime.json" "$tmp/spindle.json" <<'JS'
const fs = require('fs');
const ort = JSON.parse(fs.readFileSync(process.argv[2]));
const sp = JSON.parse(fs.readFileSync(process.argv[3]));
let failures = 0;
const fail = (msg) => { console.error('MISMATCH ' + msg); ++failures; };
for (const model of Object.keys(ort)) {
  const a = ort[model], b = sp[model];
  for (const key of ['inputNames', 'outputNames', 'inputMetadata', 'outputMetadata', 'subset', 'badFeed']) {
    if (JSON.stringify(a[key]) !== JSON.stringify(b[key]))
      fail(`${model}.${key}: onnxruntime ${JSON.stringify(a[key])}, spindle ${JSON.stringify(b[key])}`);
  }
  for (const name of Object.keys(a.outputs)) {
    const x = a.outputs[name], y = b.outputs[name];
    if (!y) { fail(`${model}.${name} missing`); continue; }
    if (x.type !== y.type || JSON.stringify(x.dims) !== JSON.stringify(y.dims)) {
      fail(`${model}.${name}: ${x.type} [${x.dims}] vs ${y.type} [${y.dims}]`);
      continue;
    }
    let worst = 0;
    for (let i = 0; i < x.data.length; ++i) {
      if (x.type === 'float32' || x.type === 'float64') {
        const d = Math.abs(x.data[i] - y.data[i]);
        if (!(d <= 1e-4 + 1e-4 * Math.abs(x.data[i]))) { fail(`${model}.${name}[${i}]: ${x.data[i]} vs ${y.data[i]}`); break; }
        worst = Math.max(worst, d);
      } else if (x.data[i] !== y.data[i]) {
        fail(`${model}.${name}[${i}]: ${x.data[i]} vs ${y.data[i]}`);
        break;
      }
    }
    console.log(`${model}.${name}: ${x.type} [${x.dims}] agrees (max abs diff ${worst.toExponential(2)})`);
  }
}
if (failures) { console.error(`${failures} mismatch(es)`); process.exit(1); }
console.log('spindle as libonnxruntime.so.1 agrees with ONNX Runtime');
JS
