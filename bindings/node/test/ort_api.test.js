'use strict';
// onnxruntime-node 1.30's API surface on spindle's package: env,
// listSupportedBackends, input/output metadata, Tensor's getData / dispose /
// reshape / location, create() from a slice of an ArrayBuffer, release(),
// endProfiling() without profiling, option checks with ORT's messages.
// (tests/compat/ runs a whole onnxruntime-node program against both.)
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const spindle = require('..');

const CACHE = process.env.SPINDLE_CACHE || path.join(os.homedir(), '.cache', 'spindle');
const CLS = path.join(CACHE, 'models', 'ch_ppocr_mobile_v2.0_cls_infer.onnx');
// A small model with a named dynamic dimension: x float32 [N], y = upper(x) for strings.
const NORM = path.join('/usr/share/libonnx-testdata/data/node', 'test_strnormalizer_export_monday_casesensintive_upper',
  'model.onnx');
const ADD = path.join('/usr/share/libonnx-testdata/data/node', 'test_add', 'model.onnx');

const addFeeds = () => ({
  x: new spindle.Tensor('float32', Float32Array.from({ length: 60 }, (_, i) => i), [3, 4, 5]),
  y: new spindle.Tensor('float32', new Float32Array(60).fill(0.5), [3, 4, 5]),
});

// spindle's pool threads in this process (named spindle-*).
const poolThreads = () => fs.readdirSync('/proc/self/task')
  .filter((t) => { try { return fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').startsWith('spindle-'); } catch { return false; } })
  .length;
// Joined threads linger in /proc for a moment: polls until the count is at most `target`.
async function poolThreadsSettleTo(target) {
  for (let i = 0; i < 200 && poolThreads() > target; i++) await new Promise((r) => setTimeout(r, 10));
  return poolThreads();
}

// First in this file (its own process), so no other session's threads come and go.
test('release() stops the session\'s own threads', async () => {
  const before = poolThreads();
  const s = await spindle.InferenceSession.create(ADD, { intraOpNumThreads: 3 });
  await s.run(addFeeds());
  assert.strictEqual(poolThreads(), before + 2);  // the caller is the third
  await s.release();
  assert.strictEqual(await poolThreadsSettleTo(before), before);
});

test('env and listSupportedBackends have onnxruntime-node\'s shape', () => {
  assert.strictEqual(spindle.env.versions.common, '1.30.0');
  assert.strictEqual(spindle.env.versions.node, spindle.version);
  assert.strictEqual(spindle.env.logLevel, 'warning');
  spindle.env.logLevel = 'error';
  assert.strictEqual(spindle.env.logLevel, 'error');
  spindle.env.logLevel = 'warning';
  assert.throws(() => { spindle.env.logLevel = 'loud'; }, { name: 'Error', message: 'Unsupported logging level: loud' });
  assert.deepStrictEqual(Object.keys(spindle.env), ['wasm', 'webgl', 'webgpu', 'versions', 'logLevel']);
  assert.deepStrictEqual(spindle.listSupportedBackends(), [{ name: 'cpu', bundled: true }]);
});

test('ES modules import the names, as from onnxruntime-node', async () => {
  const m = await import(require('url').pathToFileURL(require.resolve('..')).href);
  for (const name of ['InferenceSession', 'Tensor', 'env', 'listSupportedBackends', 'version']) {
    assert.strictEqual(m[name], spindle[name], name);
  }
});

test('inputMetadata and outputMetadata: type and shape, dynamic dimensions by name', async () => {
  const s = await spindle.InferenceSession.create(ADD);
  assert.deepStrictEqual(s.inputMetadata, [
    { name: 'x', isTensor: true, type: 'float32', shape: [3, 4, 5] },
    { name: 'y', isTensor: true, type: 'float32', shape: [3, 4, 5] },
  ]);
  assert.deepStrictEqual(s.outputMetadata, [{ name: 'sum', isTensor: true, type: 'float32', shape: [3, 4, 5] }]);
  const cls = await spindle.InferenceSession.create(CLS);
  assert.deepStrictEqual(cls.inputMetadata[0].shape,
    ['p2o.DynamicDimension.0', 3, 'p2o.DynamicDimension.1', 'p2o.DynamicDimension.2']);
  const seq = await spindle.InferenceSession.create(
    path.join('/usr/share/libonnx-testdata/data/node', 'test_identity_sequence', 'model.onnx'));
  assert.deepStrictEqual(seq.inputMetadata, [{ name: 'x', isTensor: false }]);
});

test('Tensor: location, getData, reshape shares the data, dispose', async () => {
  const t = new spindle.Tensor('float32', new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
  assert.strictEqual(t.location, 'cpu');
  assert.strictEqual(await t.getData(), t.data);
  const r = t.reshape([3, 2]);
  assert.deepStrictEqual(r.dims, [3, 2]);
  assert.strictEqual(r.data, t.data);
  assert.throws(() => t.reshape([4]), { name: 'Error', message: "Tensor's size(4) does not match data length(6)." });
  t.dispose();
  assert.strictEqual(t.location, 'none');
  assert.throws(() => t.data, { message: 'The tensor is disposed.' });
  await assert.rejects(t.getData(), { message: 'The tensor is disposed.' });
  assert.deepStrictEqual(new spindle.Tensor('int64', [1, 2]).data, new BigInt64Array([1n, 2n]));
  assert.strictEqual(new spindle.Tensor([true, false]).type, 'bool');
  assert.throws(() => new spindle.Tensor('complex64', [1]), { name: 'TypeError', message: 'Unsupported tensor type: complex64.' });
  assert.throws(() => new spindle.Tensor('float32', new Float32Array(4), [2, -2]),
                { name: 'RangeError', message: 'dims[1] must be a non-negative integer, got: -2' });
  const s = await spindle.InferenceSession.create(ADD);
  const feeds = addFeeds();
  feeds.x.dispose();
  await assert.rejects(s.run(feeds), { name: 'RangeError', message: 'Tensor.location is not supported.' });
});

test('create(arrayBuffer, byteOffset, byteLength) loads the model from that slice', async () => {
  const bytes = fs.readFileSync(ADD);
  const ab = new ArrayBuffer(bytes.length + 64);
  new Uint8Array(ab, 37, bytes.length).set(bytes);
  const s = await spindle.InferenceSession.create(ab, 37, bytes.length, { graphOptimizationLevel: 'basic' });
  const out = await s.run(addFeeds());
  assert.strictEqual(out.sum.data[59], 59.5);
  // Offset only: the rest of the buffer (here 27 garbage bytes after the model) is the model.
  await assert.rejects(spindle.InferenceSession.create(ab, 37), /ONNX/);
  await assert.rejects(spindle.InferenceSession.create(ab, ab.byteLength),
                       { name: 'RangeError', message: `'byteOffset' is out of range [0, ${ab.byteLength}).` });
  await assert.rejects(spindle.InferenceSession.create(ab, 37, bytes.length + 28),
                       { name: 'RangeError', message: `'byteLength' is out of range (0, ${ab.byteLength - 37}].` });
  const shared = new SharedArrayBuffer(bytes.length + 8);
  new Uint8Array(shared, 8).set(bytes);
  assert.deepStrictEqual((await spindle.InferenceSession.create(shared, 8, bytes.length)).inputNames, ['x', 'y']);
  assert.deepStrictEqual((await spindle.InferenceSession.create(new Uint8Array(shared, 8))).inputNames, ['x', 'y']);
  const exact = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
  assert.deepStrictEqual((await spindle.InferenceSession.create(exact, {})).inputNames, ['x', 'y']);
});

test('release() frees the session: later calls fail with onnxruntime-node\'s message', async () => {
  const s = await spindle.InferenceSession.create(ADD);
  const pending = s.run(addFeeds());  // a run in flight keeps the session until it ends
  await s.release();
  assert.strictEqual((await pending).sum.data[0], 0.5);
  await assert.rejects(s.run(addFeeds()), { name: 'Error', message: 'Session already disposed.' });
  await assert.rejects(s.release(), { name: 'Error', message: 'Session already disposed.' });
  assert.throws(() => s.endProfiling(), { name: 'Error', message: 'Session already disposed.' });
  assert.deepStrictEqual(s.inputNames, ['x', 'y']);  // still readable, as in ORT
});

test('session options: ORT\'s names and values, ORT\'s messages for bad ones', async () => {
  for (const level of ['disabled', 'basic', 'extended', 'layout', 'all']) {
    const s = await spindle.InferenceSession.create(ADD, { graphOptimizationLevel: level });
    assert.strictEqual((await s.run(addFeeds())).sum.data[1], 1.5);
  }
  const warnings = [];
  const warn = console.warn;
  console.warn = (m) => warnings.push(m);
  const optimized = path.join(os.tmpdir(), `spindle-opt-${process.pid}.onnx`);
  try {
    const s = await spindle.InferenceSession.create(ADD, {
      executionProviders: ['cuda', { name: 'cpu', useArena: false }], freeDimensionOverrides: { N: 1 },
      logSeverityLevel: 2, logId: 'test', enableCpuMemArena: false, enableMemPattern: false,
      optimizedModelFilePath: optimized,
    });
    assert.strictEqual((await s.run(addFeeds())).sum.data[2], 2.5);
    // The optimized graph is written and loads back.
    const again = await spindle.InferenceSession.create(optimized);
    assert.strictEqual((await again.run(addFeeds())).sum.data[2], 2.5);
    await spindle.InferenceSession.create(ADD, { executionProviders: ['cuda', 'cpu'], logSeverityLevel: 3 });
  } finally {
    console.warn = warn;
  }
  assert.strictEqual(warnings.length, 1, warnings.join('\n'));  // logSeverityLevel 3 silenced the second session's
  assert.match(warnings[0], /removing requested execution provider "cuda"/);
  await assert.rejects(spindle.InferenceSession.create(ADD, { executionProviders: ['cuda'] }),
                       { name: 'Error', message: 'no available backend found. ERR: [cuda] backend not found.' });
  await assert.rejects(spindle.InferenceSession.create(ADD, { graphOptimizationLevel: 'max' }),
                       { name: 'TypeError', message: "'graphOptimizationLevel' is not supported: max" });
  await assert.rejects(spindle.InferenceSession.create(ADD, { intraOpNumThreads: 'two' }),
                       { name: 'TypeError', message: 'Invalid argument: sessionOptions.intraOpNumThreads must be a number.' });
  await assert.rejects(spindle.InferenceSession.create(ADD, { enableMemPattern: 1 }),
                       { name: 'TypeError', message: 'Invalid argument: sessionOptions.enableMemPattern must be a boolean value.' });
  await assert.rejects(spindle.InferenceSession.create(ADD, { logSeverityLevel: 7 }), { name: 'RangeError' });
  await assert.rejects(spindle.InferenceSession.create(ADD, 5), { name: 'TypeError', message: "'options' must be an object." });
  await assert.rejects(spindle.InferenceSession.create(42),
                       { name: 'TypeError', message: "Unexpected argument[0]: must be 'path' or 'buffer'." });
});

test('run: fetches, pre-allocated outputs, run options and argument checks as onnxruntime-node', async () => {
  const s = await spindle.InferenceSession.create(ADD);
  const pre = new spindle.Tensor('float32', new Float32Array(60), [3, 4, 5]);
  const out = await s.run(addFeeds(), { sum: pre });
  assert.strictEqual(out.sum.data, pre.data);
  assert.strictEqual(pre.data[3], 3.5);
  await assert.rejects(s.run(addFeeds(), { sum: new spindle.Tensor('float32', new Float32Array(2), [2]) }),
                       /output 'sum' is float32 \[3,4,5\] but the tensor given for it in 'fetches' is float32 \[2\]/);
  assert.strictEqual((await s.run(addFeeds(), ['sum'], { tag: 'a', logSeverityLevel: 3 })).sum.data[0], 0.5);
  await assert.rejects(s.run(addFeeds(), { logSeverityLevel: 9 }), { name: 'RangeError' });
  await assert.rejects(s.run(addFeeds(), []), { name: 'TypeError', message: "'fetches' cannot be an empty array." });
  await assert.rejects(s.run(addFeeds(), ['nope']),
                       { name: 'RangeError', message: "'fetches' contains invalid output name: nope." });
  await assert.rejects(s.run([1]), { name: 'TypeError' });
  await assert.rejects(s.run({ x: 5, y: 5 }), { name: 'TypeError', message: 'Tensor must be an object.' });
  // Data in a SharedArrayBuffer (onnxruntime-node: a bare 'Invalid argument').
  const shared = new Float32Array(new SharedArrayBuffer(240)).fill(2);
  const sharedFeeds = { x: new spindle.Tensor('float32', shared, [3, 4, 5]), y: new spindle.Tensor('float32', shared, [3, 4, 5]) };
  assert.strictEqual((await s.run(sharedFeeds)).sum.data[7], 4);
});

test('logSeverityLevel and logId reach spindle\'s log of session creation (stderr)', () => {
  const { spawnSync } = require('child_process');
  const script = `const s = require(${JSON.stringify(path.join(__dirname, '..'))});
    (async () => {
      await s.InferenceSession.create(${JSON.stringify(ADD)}, { intraOpNumThreads: 2, logSeverityLevel: 1, logId: 'node-log' });
      await s.InferenceSession.create(${JSON.stringify(ADD)}, { intraOpNumThreads: 2, logId: 'quiet' });
    })();`;
  const env = { ...process.env };
  delete env.SPINDLE_LOG_LEVEL;
  const r = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8' });
  assert.strictEqual(r.status, 0, r.stderr);
  assert.match(r.stderr, /\[I:spindle:node-log\] intra-op: 2 thread\(s\) including the caller \(from option\)/);
  assert.doesNotMatch(r.stderr, /\[V:/);
  assert.doesNotMatch(r.stderr, /:quiet\]/);  // env.logLevel 'warning': nothing at creation
});

test('runOptions.logSeverityLevel and tag set what a failed run logs (stderr)', () => {
  const { spawnSync } = require('child_process');
  const script = `const s = require(${JSON.stringify(path.join(__dirname, '..'))});
    (async () => {
      const sess = await s.InferenceSession.create(${JSON.stringify(ADD)}, { logSeverityLevel: 4, logId: 'node-session' });
      const bad = { x: new s.Tensor('float32', new Float32Array(2), [2]), y: new s.Tensor('float32', new Float32Array(2), [2]) };
      await sess.run(bad).catch(() => console.error('first failed'));
      await sess.run(bad, { logSeverityLevel: 0, tag: 'node-run' }).catch(() => console.error('second failed'));
    })();`;
  const env = { ...process.env };
  delete env.SPINDLE_LOG_LEVEL;
  const r = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8' });
  assert.strictEqual(r.status, 0, r.stderr);
  assert.match(r.stderr, /first failed/);
  assert.match(r.stderr, /second failed/);
  assert.doesNotMatch(r.stderr, /:node-session\]/);  // the session's level (fatal) silenced the first
  assert.match(r.stderr, /\[E:spindle:node-run\] run /);
});
