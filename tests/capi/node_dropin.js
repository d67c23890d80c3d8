// node_dropin.js — one onnxruntime-node program, run twice by node_dropin.sh:
// on the untouched package and on a copy whose libonnxruntime.so.1 is
// spindle's. Prints everything it saw as JSON on stdout.
//
//   node node_dropin.js PACKAGE_DIR MODELS_DIR TYPES_MODEL
'use strict';
const path = require('path');
const [pkgDir, modelsDir, typesModel] = process.argv.slice(2);
const ort = require(path.join(pkgDir, 'onnxruntime-node'));

// A fixed pattern in [-1, 1).
function pattern(n, seed) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; ++i) a[i] = (((i + seed) * 37) % 101) / 50 - 1;
  return a;
}
const plain = (t) => ({ type: t.type, dims: Array.from(t.dims), data: Array.from(t.data, (v) => (typeof v === 'bigint' ? v.toString() : v)) });

async function runModel(file, shape, options, seed) {
  const session = await ort.InferenceSession.create(path.join(modelsDir, file), options);
  const n = shape.reduce((a, b) => a * b, 1);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', pattern(n, seed), shape) };
  const out = await session.run(feeds);
  const result = {
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    inputMetadata: session.inputMetadata,
    outputs: Object.fromEntries(Object.entries(out).map(([k, v]) => [k, plain(v)])),
  };
  await session.release();
  return result;
}

(async () => {
  const report = {};
  report.det = await runModel('ch_PP-OCRv4_det_infer.onnx', [1, 3, 64, 96],
    { intraOpNumThreads: 2, executionMode: 'sequential', graphOptimizationLevel: 'all' }, 1);
  report.rec = await runModel('ch_PP-OCRv4_rec_infer.onnx', [1, 3, 48, 96],
    { intraOpNumThreads: 1, interOpNumThreads: 2, executionMode: 'parallel', graphOptimizationLevel: 'extended' }, 2);
  report.cls = await runModel('ch_ppocr_mobile_v2.0_cls_infer.onnx', [2, 3, 48, 192],
    { intraOpNumThreads: 2, graphOptimizationLevel: 'basic', logSeverityLevel: 3, logVerbosityLevel: 0, logId: 'cls',
      enableCpuMemArena: false, enableMemPattern: false, freeDimensionOverrides: { 'p2o.DynamicDimension.0': 2 },
      extra: { session: { intra_op: { allow_spinning: '0' } } } }, 3);

  // From bytes, two runs at once on one session.
  {
    const bytes = require('fs').readFileSync(path.join(modelsDir, 'ch_ppocr_mobile_v2.0_cls_infer.onnx'));
    const session = await ort.InferenceSession.create(new Uint8Array(bytes), { intraOpNumThreads: 2 });
    const feed = (seed) => ({ [session.inputNames[0]]: new ort.Tensor('float32', pattern(3 * 48 * 192, seed), [1, 3, 48, 192]) });
    const [a, b] = await Promise.all([session.run(feed(4)), session.run(feed(5))]);
    report.clsFromBytes = {
      inputNames: session.inputNames,
      outputs: { a: plain(a[session.outputNames[0]]), b: plain(b[session.outputNames[0]]) },
    };
    await session.release();
  }

  // Every element type the bindings move, through a small model.
  const types = await ort.InferenceSession.create(typesModel, { graphOptimizationLevel: 'disabled' });
  const feeds = {
    f: new ort.Tensor('float32', Float32Array.from([-1.5, 0, 2.25, 3, -0, 1e-3]), [2, 3]),
    i64: new ort.Tensor('int64', BigInt64Array.from([1n, -2n, 3n, 1n << 40n, -7n, 0n]), [2, 3]),
    i32: new ort.Tensor('int32', Int32Array.from([1, -2, 3, 1000000, -7, 0]), [2, 3]),
    u8: new ort.Tensor('uint8', Uint8Array.from([0, 1, 254, 255, 7, 128]), [2, 3]),
    b: new ort.Tensor('bool', Uint8Array.from([1, 0, 1, 1, 0, 0]), [2, 3]),
    s: new ort.Tensor('string', ['hello', 'spindle \u2713'], [2]),
  };
  const out = await types.run(feeds);
  const subset = await types.run(feeds, ['s_out', 'i32_out'], { tag: 'subset', logSeverityLevel: 2 });
  // A pre-allocated output is filled in place.
  const fetch = new ort.Tensor('int64', new BigInt64Array(6), [2, 3]);
  await types.run(feeds, { i64_out: fetch });
  report.types = {
    inputNames: types.inputNames,
    outputNames: types.outputNames,
    inputMetadata: types.inputMetadata,
    outputMetadata: types.outputMetadata,
    outputs: Object.fromEntries(Object.entries(out).map(([k, v]) => [k, plain(v)])),
    subset: Object.keys(subset).sort(),
    fetched: Array.from(fetch.data, (v) => v.toString()),
  };
  // A bad feed is an error, not a crash.
  try {
    await types.run({ ...feeds, f: new ort.Tensor('float32', new Float32Array(4), [4]) });
    report.types.badFeed = 'accepted';
  } catch (e) {
    report.types.badFeed = 'rejected';
  }
  await types.release();
  process.stdout.write(JSON.stringify(report));
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
