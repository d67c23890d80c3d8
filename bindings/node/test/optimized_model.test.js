'use strict';
// optimizedModelFilePath: the model spindle writes at the basic level is
// plain ONNX, which onnxruntime-node 1.30 loads and runs with the outputs
// of spindle's session (within float tolerance); the extended level's file
// holds spindle's fused operators and loads back in spindle only. Models and
// onnxruntime-node come from the cache scripts/fetch-models.sh fills
// (SPINDLE_CACHE, default ~/.cache/spindle); without them the test skips.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const spindle = require('..');

const CACHE = process.env.SPINDLE_CACHE || path.join(os.homedir(), '.cache', 'spindle');
const ORT = path.join(CACHE, 'ort', 'node_modules', 'onnxruntime-node');

// Model file -> input shapes (float inputs get a fixed pattern, int64 small ids).
const MODELS = [
  ['models/ch_ppocr_mobile_v2.0_cls_infer.onnx', { x: [1, 3, 48, 192] }],
  ['models/ch_PP-OCRv4_rec_infer.onnx', { x: [1, 3, 48, 320] }],
  ['bench-models/mobilenet_v3_large.onnx', { input: [1, 3, 224, 224] }],
  ['bench-models/efficientnet_b0.onnx', { input: [1, 3, 224, 224] }],
  ['bench-models/encoder_small.onnx', { x: [1, 128, 256] }],
  ['bench-models/lstm_tagger.onnx', { tokens: [1, 48] }],
  ['bench-models/if_model.onnx', { x: [1, 1, 512] }],
];

function feedsFor(session, shapes, Tensor) {
  const feeds = {};
  for (const name of session.inputNames) {
    const dims = shapes[name];
    assert.ok(dims, `no shape for input ${name}`);
    const n = dims.reduce((a, b) => a * b, 1);
    const meta = session.inputMetadata ? session.inputMetadata.find((m) => m.name === name) : undefined;
    const type = meta && meta.type ? meta.type : 'float32';
    if (type === 'int64') {
      feeds[name] = new Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt((i * 7) % 11)), dims);
    } else {
      feeds[name] = new Tensor('float32', Float32Array.from({ length: n }, (_, i) => ((i * 37) % 101) / 50 - 1), dims);
    }
  }
  return feeds;
}

function assertClose(got, want, label) {
  assert.deepStrictEqual(got.dims, want.dims, label);
  let worst = 0;
  for (let i = 0; i < want.data.length; ++i) {
    const g = Number(got.data[i]), w = Number(want.data[i]);
    const excess = Math.abs(g - w) - (1e-4 + 1e-3 * Math.abs(w));
    if (excess > worst) worst = excess;
  }
  assert.ok(worst <= 0, `${label}: differs from spindle's output beyond 1e-4 + 1e-3 * |value| (by ${worst})`);
}

const missing = [ORT, ...MODELS.map(([m]) => path.join(CACHE, m))].filter((p) => !fs.existsSync(p));

test('the basic level\'s optimized model runs in onnxruntime-node with spindle\'s outputs',
  { skip: missing.length ? `missing: ${missing.join(', ')}` : false }, async () => {
    const ort = require(ORT);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spindle-optimized-'));
    try {
      for (const [file, shapes] of MODELS) {
        const out = path.join(dir, path.basename(file));
        const s = await spindle.InferenceSession.create(path.join(CACHE, file), {
          graphOptimizationLevel: 'basic', optimizedModelFilePath: out, intraOpNumThreads: 2,
        });
        const feeds = feedsFor(s, shapes, spindle.Tensor);
        const want = await s.run(feeds);
        const o = await ort.InferenceSession.create(out, { graphOptimizationLevel: 'disabled', logSeverityLevel: 3 });
        const got = await o.run(feedsFor(s, shapes, ort.Tensor));
        for (const name of s.outputNames) assertClose(got[name], want[name], `${file} output ${name}`);
        // spindle reads its own file back with bitwise the same outputs.
        const again = await spindle.InferenceSession.create(out, { graphOptimizationLevel: 'basic' });
        const back = await again.run(feeds);
        for (const name of s.outputNames) assert.deepStrictEqual(back[name].data, want[name].data, `${file} ${name}`);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
