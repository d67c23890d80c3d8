#!/usr/bin/env node
'use strict';
// ort_program.js — a typical onnxruntime-node program, written once and run
// unchanged against onnxruntime-node 1.30 and against spindle's Node package
// (only the module differs), on PaddleOCR's text-direction classifier and
// recognizer (the models scripts/fetch-models.sh caches).
//
//   node tests/compat/ort_program.js ort|spindle       (or ORT_PROGRAM_MODULE=ort|spindle)
//
// Every step prints one line: `pass|fail STEP JSON`, the JSON being what the
// step produced (tensor summaries, names, metadata) or, for a step that
// expects an error, the error's class and message. compare_node.test.js runs
// both sides and compares them step by step.
const fs = require('fs');
const os = require('os');
const path = require('path');

const which = process.argv[2] || process.env.ORT_PROGRAM_MODULE;
const cache = process.env.SPINDLE_CACHE || path.join(os.homedir(), '.cache', 'spindle');
const modulePath = which === 'ort' ? path.join(cache, 'ort', 'node_modules', 'onnxruntime-node')
  : which === 'spindle' ? path.join(__dirname, '..', '..', 'bindings', 'node')
    : (() => { console.error('usage: ort_program.js ort|spindle'); process.exit(2); })();
const ort = require(modulePath);

const CLS = path.join(cache, 'models', 'ch_ppocr_mobile_v2.0_cls_infer.onnx');
const REC = path.join(cache, 'models', 'ch_PP-OCRv4_rec_infer.onnx');
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), `ort-program-${which}-`));

// Deterministic pixels in [-1, 1), as PaddleOCR's preprocessing produces.
function image(dims, seed) {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = s / 2 ** 31 - 1;
  }
  return new ort.Tensor('float32', data, dims);
}

// A tensor as the driver compares it: type, dims and at most 64 sampled
// values (every element of a small tensor) plus the sum.
function summary(t) {
  const step = Math.max(1, Math.floor(t.data.length / 64));
  const sample = [];
  let sum = 0;
  for (let i = 0; i < t.data.length; i++) {
    const v = Number(t.data[i]);
    sum += v;
    if (i % step === 0 && sample.length < 64) sample.push(v);
  }
  return { type: t.type, dims: Array.from(t.dims), sample, sum };
}
const summaries = (outputs) => Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, summary(v)]));

let failed = 0;
async function step(name, fn) {
  try {
    const value = await fn();
    console.log(`pass ${name} ${JSON.stringify(value ?? null)}`);
  } catch (e) {
    failed++;
    console.log(`fail ${name} ${JSON.stringify({ error: e?.constructor?.name, message: String(e?.message ?? e) })}`);
  }
}
// A step that must throw (or reject): it passes with the error's class and message.
async function fails(name, fn) {
  await step(name, async () => {
    try {
      await fn();
    } catch (e) {
      return { error: e.constructor.name, message: e.message };
    }
    throw new Error('expected an error, got none');
  });
}

(async () => {
  const x = image([1, 3, 48, 192], 1);
  let session;

  await step('exports', () => ['InferenceSession', 'Tensor', 'env', 'listSupportedBackends']
    .map((k) => `${k}:${typeof ort[k]}`));
  await step('esm-named-imports', async () => {
    const m = await import(require('url').pathToFileURL(require.resolve(modulePath)).href);
    return ['InferenceSession', 'Tensor', 'env', 'listSupportedBackends'].map((k) => `${k}:${typeof m[k]}`);
  });
  await step('env.versions', () => ({ common: typeof ort.env.versions.common, node: typeof ort.env.versions.node }));
  await step('env.logLevel', () => {
    const before = ort.env.logLevel;
    ort.env.logLevel = 'error';
    const after = ort.env.logLevel;
    ort.env.logLevel = before;
    return [before, after];
  });
  await fails('env.logLevel-invalid', () => { ort.env.logLevel = 'loud'; });
  await step('env.wasm-webgpu-present', () => [typeof ort.env.wasm, typeof ort.env.webgpu]);
  await step('listSupportedBackends-has-cpu', () => ort.listSupportedBackends().some((b) => b.name === 'cpu'));

  await step('create-from-path', async () => {
    session = await ort.InferenceSession.create(CLS);
    return { inputs: session.inputNames, outputs: session.outputNames };
  });
  await step('inputMetadata', () => session.inputMetadata);
  await step('outputMetadata', () => session.outputMetadata);
  await step('tensor-properties', () => ({ type: x.type, dims: x.dims, size: x.size, location: x.location }));
  await step('run', async () => summaries(await session.run({ x })));
  await step('run-fetches-array', async () => summaries(await session.run({ x }, [session.outputNames[0]])));
  await step('run-fetches-object', async () => summaries(await session.run({ x }, { [session.outputNames[0]]: null })));
  await step('run-options', async () => summaries(await session.run({ x }, { logSeverityLevel: 3, tag: 'compat' })));
  await step('run-extra-feed-ignored', async () => summaries(await session.run({ x, unused: x })));
  await step('run-batch-of-3', async () => summaries(await session.run({ x: image([3, 3, 48, 192], 2) })));
  await step('run-preallocated-output', async () => {
    const pre = new ort.Tensor('float32', new Float32Array(2), [1, 2]);
    await session.run({ x }, { [session.outputNames[0]]: pre });
    return summary(pre);
  });
  await step('run-concurrent', async () => {
    const all = await Promise.all([1, 2, 3].map((k) => session.run({ x: image([1, 3, 48, 192], k) })));
    return all.map(summaries);
  });
  await step('tensor-getData', async () => (await x.getData()) === x.data);
  await step('tensor-reshape', () => {
    const r = x.reshape([3, 48, 192]);
    return { dims: r.dims, sameData: r.data === x.data };
  });
  await fails('tensor-reshape-wrong-size', () => x.reshape([5]));
  await step('tensor-dispose', () => {
    const t = image([2, 2], 3);
    t.dispose();
    return t.location;
  });
  await fails('tensor-data-after-dispose', () => {
    const t = image([2, 2], 3);
    t.dispose();
    return t.data;
  });
  await step('tensor-int64-from-numbers', () => Array.from(new ort.Tensor('int64', [1, 2, 3]).data, String));
  await step('tensor-bool-from-booleans', () => {
    const t = new ort.Tensor([true, false, true]);
    return { type: t.type, data: Array.from(t.data) };
  });
  await step('tensor-string', () => {
    const t = new ort.Tensor('string', ['a', 'b'], [2]);
    return { type: t.type, data: t.data, dims: t.dims };
  });
  await fails('tensor-size-mismatch', () => new ort.Tensor('float32', new Float32Array(5), [2, 3]));
  await fails('tensor-unknown-type', () => new ort.Tensor('complex64', [1, 2]));
  await fails('tensor-wrong-array', () => new ort.Tensor('float32', new Int32Array(2)));
  await fails('tensor-fromImage-in-node', () => ort.Tensor.fromImage({ data: new Uint8ClampedArray(16), width: 2, height: 2 }));

  const bytes = fs.readFileSync(CLS);
  await step('create-from-buffer', async () => summaries(await (await ort.InferenceSession.create(bytes)).run({ x })));
  await step('create-from-arraybuffer-offset-length', async () => {
    const ab = new ArrayBuffer(bytes.length + 128);
    new Uint8Array(ab, 64, bytes.length).set(bytes);
    const s = await ort.InferenceSession.create(ab, 64, bytes.length, { graphOptimizationLevel: 'basic' });
    return summaries(await s.run({ x }));
  });
  await step('create-from-arraybuffer', async () => {
    const ab = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
    return summaries(await (await ort.InferenceSession.create(ab)).run({ x }));
  });
  await fails('create-arraybuffer-offset-out-of-range', () => ort.InferenceSession.create(new ArrayBuffer(8), 9));
  await fails('create-options-not-object', () => ort.InferenceSession.create(CLS, 5));
  await fails('create-bad-argument', () => ort.InferenceSession.create(42));
  await fails('create-missing-file', () => ort.InferenceSession.create(path.join(scratch, 'missing.onnx')));
  await fails('create-garbage-bytes', () => ort.InferenceSession.create(new Uint8Array([1, 2, 3, 4])));

  await step('options-threads-and-mode', async () => {
    const s = await ort.InferenceSession.create(CLS, {
      intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
    });
    return summaries(await s.run({ x }));
  });
  await step('options-parallel-mode', async () => {
    const s = await ort.InferenceSession.create(CLS, { executionMode: 'parallel', interOpNumThreads: 2 });
    return summaries(await s.run({ x }));
  });
  for (const level of ['disabled', 'basic', 'extended', 'layout']) {
    await step(`options-graphOptimizationLevel-${level}`, async () => {
      const s = await ort.InferenceSession.create(CLS, { graphOptimizationLevel: level });
      return summaries(await s.run({ x }));
    });
  }
  await step('options-executionProviders-cpu', async () => {
    const s = await ort.InferenceSession.create(CLS, { executionProviders: ['cpu'] });
    const t = await ort.InferenceSession.create(CLS, { executionProviders: [{ name: 'cpu', useArena: false }] });
    return [summaries(await s.run({ x })), summaries(await t.run({ x }))];
  });
  await step('options-executionProviders-cuda-then-cpu', async () => {
    const s = await ort.InferenceSession.create(CLS, { executionProviders: ['cuda', 'cpu'] });
    return summaries(await s.run({ x }));
  });
  await step('options-executionProviders-unknown-then-cpu', async () => {
    const s = await ort.InferenceSession.create(CLS, { executionProviders: ['someNpu', 'cpu'] });
    return summaries(await s.run({ x }));
  });
  await fails('options-executionProviders-none-available', () =>
    ort.InferenceSession.create(CLS, { executionProviders: ['someNpu'] }));
  await step('options-logging-and-memory', async () => {
    const s = await ort.InferenceSession.create(CLS, {
      logSeverityLevel: 3, logVerbosityLevel: 0, logId: 'compat', enableCpuMemArena: false, enableMemPattern: false,
    });
    return summaries(await s.run({ x }));
  });
  await step('options-freeDimensionOverrides', async () => {
    const s = await ort.InferenceSession.create(CLS, { freeDimensionOverrides: { 'p2o.DynamicDimension.0': 1 } });
    return summaries(await s.run({ x }));
  });
  await step('options-optimizedModelFilePath', async () => {
    const s = await ort.InferenceSession.create(CLS, {
      optimizedModelFilePath: path.join(scratch, 'optimized.onnx'), logSeverityLevel: 3,
    });
    await s.run({ x });
    // The file written loads back (each runtime reads its own).
    const again = await ort.InferenceSession.create(path.join(scratch, 'optimized.onnx'));
    return summaries(await again.run({ x }));
  });
  await step('options-extra-config', async () => {
    const s = await ort.InferenceSession.create(CLS, { extra: { session: { intra_op: { allow_spinning: '0' } } } });
    return summaries(await s.run({ x }));
  });
  await fails('options-bad-graphOptimizationLevel', () => ort.InferenceSession.create(CLS, { graphOptimizationLevel: 'max' }));
  await fails('options-bad-intraOpNumThreads', () => ort.InferenceSession.create(CLS, { intraOpNumThreads: -1 }));
  await fails('options-bad-enableCpuMemArena', () => ort.InferenceSession.create(CLS, { enableCpuMemArena: 'no' }));

  await step('profiling', async () => {
    const prefix = path.join(scratch, 'profile');
    const s = await ort.InferenceSession.create(CLS, { enableProfiling: true, profileFilePrefix: prefix });
    s.startProfiling();
    await s.run({ x });
    s.endProfiling();
    return fs.readdirSync(scratch).some((f) => f.startsWith('profile') && f.endsWith('.json'));
  });
  await step('endProfiling-without-profiling', () => {
    session.startProfiling();
    session.endProfiling();
    return 'no-op';
  });

  await fails('run-missing-input', () => session.run({ y: x }));
  await fails('run-wrong-type', () => session.run({ x: new ort.Tensor('int32', new Int32Array(x.size), x.dims) }));
  await fails('run-wrong-rank', () => session.run({ x: image([3, 48, 192], 4) }));
  await fails('run-invalid-fetch', () => session.run({ x }, ['nope']));
  await fails('run-feeds-not-object', () => session.run([x]));
  await step('run-still-usable-after-errors', async () => summaries(await session.run({ x })));

  await step('recognizer', async () => {
    const rec = await ort.InferenceSession.create(REC, { graphOptimizationLevel: 'all' });
    return { inputs: rec.inputMetadata, outputs: summaries(await rec.run({ x: image([1, 3, 48, 320], 5) })) };
  });

  await step('release', async () => {
    await session.release();
    return 'released';
  });
  await fails('run-after-release', () => session.run({ x }));
  await fails('release-twice', () => session.release());

  fs.rmSync(scratch, { recursive: true, force: true });
  console.log(`# ${which}: ${failed} step(s) failed`);
})();
