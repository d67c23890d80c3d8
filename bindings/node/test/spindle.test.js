'use strict';
// The Node.js package against real models and ONNX Runtime's outputs for
// them (the model cache that scripts/make-references.sh fills: SPINDLE_CACHE,
// default ~/.cache/spindle).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const spindle = require('..');

const CACHE = process.env.SPINDLE_CACHE || path.join(os.homedir(), '.cache', 'spindle');

// A little-endian float32 C-order .npy file: { data, dims }.
function readNpyF32(file) {
  const buf = fs.readFileSync(file);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  assert.match(header, /'descr': '<f4'/);
  assert.match(header, /'fortran_order': False/);
  const dims = header.match(/'shape': \(([^)]*)\)/)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const bytes = buf.subarray(start);
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  return { data, dims };
}

function reference(stem, t) {
  const manifestFile = path.join(CACHE, 'refs', stem, 'manifest.json');
  if (!fs.existsSync(manifestFile)) {
    t.skip(`${manifestFile} is missing: run scripts/make-references.sh`);
    return null;
  }
  const m = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
  const dir = path.dirname(manifestFile);
  const feeds = {};
  for (const i of m.inputs) {
    const { data, dims } = readNpyF32(path.join(dir, i.file));
    feeds[i.name] = { data, dims };
  }
  const outputs = {};
  for (const o of m.outputs) outputs[o.name] = readNpyF32(path.join(dir, o.file));
  return { model: m.model, feeds, outputs };
}

function assertClose(got, want) {
  assert.deepStrictEqual(got.dims, want.dims);
  for (let i = 0; i < want.data.length; i++) {
    const tol = 1e-4 + 1e-3 * Math.abs(want.data[i]);
    if (Math.abs(got.data[i] - want.data[i]) > tol) {
      assert.fail(`element ${i}: got ${got.data[i]}, expected ${want.data[i]}`);
    }
  }
}

test('the onnxruntime-node snippet runs as written and matches ONNX Runtime', async (t) => {
  const ref = reference('ch_ppocr_mobile_v2.0_cls_infer', t);
  if (!ref) return;
  const modelPath = ref.model;
  const { data, dims } = ref.feeds.x;
  // The snippet of the issue (its feed is named `input`; this model's is `x`).
  const session = await spindle.InferenceSession.create(modelPath, {
    executionMode: 'parallel', intraOpNumThreads: 4, interOpNumThreads: 2 });
  const results = await session.run({ x: new spindle.Tensor('float32', data, dims) });
  assert.deepStrictEqual(session.inputNames, ['x']);
  const [name] = Object.keys(ref.outputs);
  assert.deepStrictEqual(Object.keys(results), [name]);
  assert.strictEqual(results[name].type, 'float32');
  assertClose(results[name], ref.outputs[name]);
});

test('a model from a Buffer, config entries through `extra`', async (t) => {
  const ref = reference('ch_ppocr_mobile_v2.0_cls_infer', t);
  if (!ref) return;
  const session = await spindle.InferenceSession.create(fs.readFileSync(ref.model), {
    extra: { session: { intra_op: { allow_spinning: '0' } } } });
  const [name] = Object.keys(ref.outputs);
  const results = await session.run({ x: new spindle.Tensor('float32', ref.feeds.x.data, ref.feeds.x.dims) }, [name]);
  assertClose(results[name], ref.outputs[name]);
  // Optimizer passes are turned off by name through ONNX Runtime's key.
  const fewer = await spindle.InferenceSession.create(ref.model, {
    extra: { optimization: { disable_specified_optimizers: 'NchwcTransformer,ActivationFusion' } } });
  const again = await fewer.run({ x: new spindle.Tensor('float32', ref.feeds.x.data, ref.feeds.x.dims) }, [name]);
  assertClose(again[name], ref.outputs[name]);
  await assert.rejects(spindle.InferenceSession.create(ref.model, {
    extra: { optimization: { disable_specified_optimizers: 'NoSuchPass' } } }),
    /no optimizer pass is named NoSuchPass; the passes are: ConstantFolding/);
});

// The scheduler state letter of each of this process's threads but the main
// one: 'R' is running or waiting for a CPU, 'S' asleep.
function otherThreadStates() {
  const states = [];
  for (const tid of fs.readdirSync('/proc/self/task')) {
    if (Number(tid) === process.pid) continue;
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      states.push(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]);
    } catch { /* the thread has ended */ }
  }
  return states;
}

test('runs on one session are correct and really execute at the same time', async (t) => {
  // Observed, not timed: while the main thread is busy (so no promise can
  // settle), most samples of the scheduler's view must show two or more
  // threads other than it runnable at once. 8 runs keep the 4 libuv workers
  // busy longer than the 20 ms window. A synchronous run, or runs serialised
  // on one thread or by a lock, shows one runnable thread (two only at a
  // hand-over) however loaded the machine is, since 'R' counts threads
  // waiting for a CPU too.
  const ref = reference('ch_PP-OCRv4_rec_infer', t);
  if (!ref) return;
  // syncRunThresholdUs 0: every run goes to a worker (by default a run this
  // short stays on the JavaScript thread, as onnxruntime-node's all do).
  const session = await spindle.InferenceSession.create(ref.model, {
    intraOpNumThreads: 1, syncRunThresholdUs: 0, extra: { session: { intra_op: { allow_spinning: '0' } } } });
  const feeds = { x: new spindle.Tensor('float32', ref.feeds.x.data, ref.feeds.x.dims) };
  const [name] = Object.keys(ref.outputs);
  await session.run(feeds);  // warm up
  const pending = Promise.all(Array.from({ length: 8 }, () => session.run(feeds)));
  const pause = new Int32Array(new SharedArrayBuffer(4));
  Atomics.wait(pause, 0, 0, 2);  // let the workers pick the runs up
  let samples = 0, overlapping = 0;
  for (const end = performance.now() + 20; performance.now() < end; samples++) {
    if (otherThreadStates().filter((s) => s === 'R').length >= 2) overlapping++;
    Atomics.wait(pause, 0, 0, 0.25);
  }
  for (const res of await pending) assertClose(res[name], ref.outputs[name]);
  t.diagnostic(`${overlapping} of ${samples} samples saw two or more runs executing at once`);
  assert.ok(overlapping >= samples / 2, `only ${overlapping} of ${samples} samples saw two runs executing at once`);
});

test('fetches as an array or an object of output names; other objects are run options', async (t) => {
  const ref = reference('ch_PP-OCRv4_det_infer_logits', t);
  if (!ref) return;
  const session = await spindle.InferenceSession.create(ref.model);
  const feeds = { x: new spindle.Tensor('float32', ref.feeds.x.data, ref.feeds.x.dims) };
  const [first, second] = session.outputNames;
  assert.deepStrictEqual(Object.keys(await session.run(feeds, [second])), [second]);
  const picked = await session.run(feeds, { [first]: null });
  assert.deepStrictEqual(Object.keys(picked), [first]);
  assertClose(picked[first], ref.outputs[first]);
  const all = await session.run(feeds, { logSeverityLevel: 3, tag: 'det' });
  assert.deepStrictEqual(Object.keys(all).sort(), [first, second].sort());
  assertClose(all[second], ref.outputs[second]);
});

test('bad input rejects with the C++ message and the session stays usable', async (t) => {
  const ref = reference('ch_ppocr_mobile_v2.0_cls_infer', t);
  if (!ref) return;
  const session = await spindle.InferenceSession.create(ref.model);
  const good = { x: new spindle.Tensor('float32', ref.feeds.x.data, ref.feeds.x.dims) };
  await assert.rejects(session.run({ x: new spindle.Tensor('float64', new Float64Array(ref.feeds.x.data), ref.feeds.x.dims) }),
                       /input 'x' is float64 .* expected element type float32/);
  await assert.rejects(session.run({ x: new spindle.Tensor('float32', new Float32Array(6), [2, 3]) }),
                       /input 'x' has shape 2x3/);
  await assert.rejects(session.run({}), { name: 'Error', message: "input 'x' is missing in 'feeds'." });
  // onnxruntime-node ignores feeds that are not inputs.
  assertClose((await session.run({ ...good, y: good.x }))[Object.keys(ref.outputs)[0]], Object.values(ref.outputs)[0]);
  await assert.rejects(spindle.InferenceSession.create(Buffer.from('garbage')), /not a valid ONNX model/);
  await assert.rejects(spindle.InferenceSession.create('/nonexistent/model.onnx'), /nonexistent/);
  await assert.rejects(spindle.InferenceSession.create(ref.model, { intraOpNumThreads: -2 }),
                       { name: 'RangeError', message: "'intraOpNumThreads' is invalid: -2" });
  await assert.rejects(spindle.InferenceSession.create(ref.model, { intraOpNumThread: 2 }),
                       /unknown session option 'intraOpNumThread'; did you mean 'intraOpNumThreads'/);
  await assert.rejects(spindle.InferenceSession.create(ref.model, { extra: { session: { intra_op: { allow_spining: '0' } } } }),
                       /did you mean 'session.intra_op.allow_spinning'/);
  assert.throws(() => new spindle.Tensor('float32', new Float32Array(5), [2, 3]), 
                { name: 'Error', message: "Tensor's size(6) does not match data length(5)." });
  const [name] = Object.keys(ref.outputs);
  assertClose((await session.run(good))[name], ref.outputs[name]);
});

test('Tensor types: int64 as BigInt64Array, int32, bool and uint8', () => {
  assert.strictEqual(new spindle.Tensor('int64', new BigInt64Array([1n, 2n]), [2]).type, 'int64');
  assert.strictEqual(new spindle.Tensor(new Int32Array([1, 2, 3]), [3]).type, 'int32');
  assert.strictEqual(new spindle.Tensor('bool', [true, false], [2]).data[0], 1);
  assert.strictEqual(new spindle.Tensor('uint8', new Uint8Array([7]), [1]).size, 1);
  assert.throws(() => new spindle.Tensor('int64', new Float32Array(1), [1]), /A int64 tensor's data must be type of function BigInt64Array/);
});

test('string tensors as arrays of strings, as onnxruntime-node passes them; sequences refused clearly', async () => {
  const data = '/usr/share/libonnx-testdata/data/node';
  const norm = await spindle.InferenceSession.create(
    path.join(data, 'test_strnormalizer_export_monday_casesensintive_upper', 'model.onnx'));
  const out = await norm.run({ x: new spindle.Tensor('string', ['monday', 'tuesday', 'Ünïcode', 'monday'], [4]) });
  assert.strictEqual(out.y.type, 'string');
  assert.deepStrictEqual(out.y.data, ['TUESDAY', 'ÜNÏCODE']);
  assert.deepStrictEqual(out.y.dims, [2]);
  assert.throws(() => new spindle.Tensor('string', ['a', 1], [2]), /A string tensor's data must be a string array/);
  await assert.rejects(norm.run({ x: new spindle.Tensor('float32', new Float32Array(2), [2]) }),
                       /input 'x' is float32 2, expected element type string/);
  const seq = await spindle.InferenceSession.create(path.join(data, 'test_identity_sequence', 'model.onnx'));
  await assert.rejects(seq.run({ x: new spindle.Tensor('float32', new Float32Array(2), [2]) }),
                       /input 'x' is a float32 2, expected a sequence of float32 tensors/);
  // Still usable.
  assert.deepStrictEqual((await norm.run({ x: new spindle.Tensor('string', ['a', 'b', 'monday', 'c'], [4]) })).y.data,
                         ['A', 'B', 'C']);
});

test('outputs come without a copy yet never alias the model or a later run', async (t) => {
  // An output that is a constant of the model is copied: writing into it
  // must not change what the next run returns.
  const data = '/usr/share/libonnx-testdata/data/node';
  const constant = await spindle.InferenceSession.create(path.join(data, 'test_constant', 'model.onnx'));
  const first = (await constant.run({}))[constant.outputNames[0]];
  const original = Float32Array.from(first.data);
  first.data.fill(42);
  const second = (await constant.run({}))[constant.outputNames[0]];
  assert.deepStrictEqual(Array.from(second.data), Array.from(original));
  // A computed output is the runtime's own buffer: a later run (synchronous
  // or on a worker) must not reuse it while JavaScript holds it.
  const ref = reference('ch_ppocr_mobile_v2.0_cls_infer', t);
  if (!ref) return;
  for (const syncRunThresholdUs of [0, 1e9]) {
    const s = await spindle.InferenceSession.create(ref.model, { syncRunThresholdUs });
    const [name] = s.inputNames;
    const feed = ref.feeds[name];
    const r1 = await s.run({ [name]: new spindle.Tensor('float32', feed.data, feed.dims) });
    const out = s.outputNames[0];
    const kept = Float32Array.from(r1[out].data);
    for (let i = 0; i < 3; i++) {
      await s.run({ [name]: new spindle.Tensor('float32', new Float32Array(feed.data.length), feed.dims) });
    }
    assert.deepStrictEqual(Array.from(r1[out].data), Array.from(kept));
    assertClose(r1[out], ref.outputs[out]);
  }
});

test('feeds: read in place by runs on the JavaScript thread, copied for runs on a worker', async () => {
  // Identity: the output would be the feed's own memory; it comes as a copy,
  // so neither array changes the other.
  const model = '/usr/share/libonnx-testdata/data/node/test_identity/model.onnx';
  for (const syncRunThresholdUs of [0, 1e9]) {
    const s = await spindle.InferenceSession.create(model, { syncRunThresholdUs });
    const [name] = s.inputNames;
    await s.run({ [name]: new spindle.Tensor('float32', new Float32Array(4), [1, 1, 2, 2]) });  // timed once
    const data = Float32Array.from({ length: 4 }, (_, i) => i);
    const pending = s.run({ [name]: new spindle.Tensor('float32', data, [1, 1, 2, 2]) });
    data.fill(-1);  // after run() returned: a worker run must not see it
    const y = (await pending)[s.outputNames[0]].data;
    // Either the run ended before fill() (on the JavaScript thread; its
    // output was copied out of the feed) or it read a copy made by run().
    assert.deepStrictEqual(Array.from(y), Array.from({ length: 4 }, (_, i) => i));
    y.fill(7);
    assert.deepStrictEqual(Array.from(data), Array.from({ length: 4 }, () => -1));
  }
});

test('short runs resolve on the JavaScript thread; syncRunThresholdUs 0 sends every run to a worker', async (t) => {
  const ref = reference('ch_ppocr_mobile_v2.0_cls_infer', t);
  if (!ref) return;
  // Settled within a few microtask turns (no macrotask, so no worker's result,
  // can come in between), or still waiting for a worker.
  const settledAtOnce = async (p) => {
    let done = false;
    p.then(() => { done = true; });
    for (let i = 0; i < 20; i++) await null;
    return done;
  };
  for (const [threshold, sync] of [[1e9, true], [0, false]]) {
    const s = await spindle.InferenceSession.create(ref.model, { syncRunThresholdUs: threshold });
    const [name] = s.inputNames;
    const feeds = { [name]: new spindle.Tensor('float32', ref.feeds[name].data, ref.feeds[name].dims) };
    // The first run always goes to a worker: the session has no run time yet.
    const first = s.run(feeds);
    assert.strictEqual(await settledAtOnce(first), false);
    await first;
    const p = s.run(feeds);
    assert.strictEqual(await settledAtOnce(p), sync, `syncRunThresholdUs ${threshold}`);
    assertClose((await p)[s.outputNames[0]], ref.outputs[s.outputNames[0]]);
  }
  await assert.rejects(spindle.InferenceSession.create(ref.model, { syncRunThresholdUs: -1 }),
                       /syncRunThresholdUs must be a number of microseconds >= 0/);
});

test('enableProfiling records runs and endProfiling writes a Chrome trace, as onnxruntime-node', async () => {
  const model = path.join('/usr/share/libonnx-testdata/data/node', 'test_strnormalizer_export_monday_casesensintive_upper', 'model.onnx');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spindle-prof-'));
  const session = await spindle.InferenceSession.create(model, { enableProfiling: true, profileFilePrefix: path.join(dir, 'p') });
  session.startProfiling();
  for (let i = 0; i < 2; i++) await session.run({ x: new spindle.Tensor('string', ['a', 'b', 'monday', 'c'], [4]) });
  const file = session.endProfiling();
  assert.ok(file.startsWith(path.join(dir, 'p_')) && file.endsWith('.json'), file);
  const trace = JSON.parse(fs.readFileSync(file, 'utf8'));
  const events = Array.isArray(trace) ? trace : trace.traceEvents;
  assert.ok(events.filter((e) => e.name === 'StringNormalizer' || e.args?.op_type === 'StringNormalizer').length >= 2,
            JSON.stringify(events).slice(0, 400));
  fs.rmSync(dir, { recursive: true });
  const plain = await spindle.InferenceSession.create(model);
  assert.strictEqual(plain.endProfiling(), undefined);  // a no-op, as onnxruntime-node's
});

test('bfloat16 tensors as Uint16Array bits, both ways; float32 -> bfloat16 rounds to nearest even', async () => {
  const data = '/usr/share/libonnx-testdata/data/node';
  const toBf16 = await spindle.InferenceSession.create(path.join(data, 'test_cast_FLOAT_to_BFLOAT16', 'model.onnx'));
  const x = new Float32Array([0.47892547, 0.48033667, 0.49968487, 0.81910545, 0.47031248, 0.816468, 0.21087195,
    0.7229038, NaN, Infinity, 1 + 2 ** -8, -Infinity]);
  const y = (await toBf16.run({ input: new spindle.Tensor('float32', x, [3, 4]) })).output;
  assert.strictEqual(y.type, 'bfloat16');
  assert.ok(y.data instanceof Uint16Array);
  assert.deepStrictEqual(y.dims, [3, 4]);
  // Expected bits from torch's float32 -> bfloat16 (round to nearest even);
  // 1 + 2^-8 is a tie that rounds to even 1.0; NaN stays a NaN.
  const want = [0x3ef5, 0x3ef6, 0x3f00, 0x3f52, 0x3ef1, 0x3f51, 0x3e58, 0x3f39, null, 0x7f80, 0x3f80, 0xff80];
  want.forEach((w, i) => {
    if (w === null) assert.ok((y.data[i] & 0x7f80) === 0x7f80 && (y.data[i] & 0x7f) !== 0, `NaN at ${i}`);
    else assert.strictEqual(y.data[i], w, `element ${i}`);
  });
  const toFloat = await spindle.InferenceSession.create(path.join(data, 'test_cast_BFLOAT16_to_FLOAT', 'model.onnx'));
  const back = (await toFloat.run({ input: new spindle.Tensor('bfloat16', y.data, [3, 4]) })).output;
  assert.strictEqual(back.type, 'float32');
  assert.strictEqual(back.data[2], 0.5);
  assert.strictEqual(back.data[10], 1);
  assert.ok(Number.isNaN(back.data[8]));
  assert.throws(() => new spindle.Tensor('bfloat16', [1, 2], [2]), /Creating a bfloat16 tensor from number array is not supported/);
  await assert.rejects(toFloat.run({ input: new spindle.Tensor('uint16', y.data, [3, 4]) }),
                       /input 'input' is uint16 3x4, expected element type bfloat16/);
});
