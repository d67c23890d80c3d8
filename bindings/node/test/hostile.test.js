'use strict';
// Hostile input to a run: feeds whose conversion runs JavaScript (valueOf,
// getters) that detaches an earlier feed's buffer, detached buffers, sizes
// that ask for more memory than the data holds; and run options that end a
// run (timeoutMs, terminate). Each must reject clearly and leave the session
// usable.
const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const spindle = require('..');

// A minimal ONNX protobuf writer: enough for the model below.
function varint(n) {
  const out = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}
const field = (f, payload) => [...varint((f << 3) | 2), ...varint(payload.length), ...payload];
const num = (f, n) => [...varint(f << 3), ...varint(n)];
const str = (f, s) => field(f, [...Buffer.from(s)]);
const FLOAT = 1;
const INT64 = 7;
const BOOL = 9;
// ValueInfoProto { name, type { tensor_type { elem_type, shape { dim { dim_value | dim_param } } } } }
const dim = (d) => field(1, typeof d === 'string' ? str(2, d) : num(1, d));
const value = (name, elemType, dims) =>
  [...str(1, name), ...field(2, field(1, [...num(1, elemType), ...field(2, dims.flatMap(dim))]))];
// NodeProto { input, output, op_type, attribute }
const node = (op, inputs, outputs, attrs = []) =>
  [...inputs.flatMap((i) => str(1, i)), ...outputs.flatMap((o) => str(2, o)), ...str(4, op), ...attrs.flatMap((a) => field(5, a))];
// GraphProto { node, name, input, output }
const graph = (name, nodes, inputs, outputs) =>
  [...nodes.flatMap((n) => field(1, n)), ...str(2, name), ...inputs.flatMap((i) => field(11, i)),
    ...outputs.flatMap((o) => field(12, o))];

// ModelProto { ir_version 8, graph, opset_import { version 13 } }
const model = (g) => Uint8Array.from([...num(1, 8), ...field(7, g), ...field(8, num(2, 13))]);

// y = Identity(x), float32 [N].
const identityModel = () =>
  model(graph('identity', [node('Identity', ['x'], ['y'])], [value('x', FLOAT, ['N'])], [value('y', FLOAT, ['N'])]));

// sum = x + y, float32 [3, 4, 5].
const ADD = path.join('/usr/share/libonnx-testdata/data/node', 'test_add', 'model.onnx');
// y = upper(x) minus 'MONDAY', string [N].
const NORM = path.join('/usr/share/libonnx-testdata/data/node', 'test_strnormalizer_export_monday_casesensintive_upper',
  'model.onnx');

const DIMS = [3, 4, 5];
const ones = () => new Float32Array(60).fill(1);
const twos = () => new Float32Array(60).fill(2);
// Takes `ta`'s memory away from it (its buffer is detached, its length 0)
// and drops the copy, so the collector may free the memory.
const detach = (ta) => { structuredClone(ta.buffer, { transfer: [ta.buffer] }); };

// A session whose runs stay on the JavaScript thread (the path that reads
// feeds in place): one short run has timed it.
async function syncAddSession() {
  const s = await spindle.InferenceSession.create(ADD, { syncRunThresholdUs: 1e9 });
  await checkAdd(s);
  return s;
}

// The session still computes sum = x + y.
async function checkAdd(s) {
  const out = await s.run({ x: new spindle.Tensor('float32', ones(), DIMS), y: new spindle.Tensor('float32', twos(), DIMS) });
  assert.deepStrictEqual(Array.from(out.sum.data), new Array(60).fill(3));
}

test('a dim whose valueOf detaches an earlier feed is refused, not coerced', async () => {
  const s = await syncAddSession();
  for (const via of ['index.js', 'addon']) {
    const x = ones();
    let called = false;
    const dim = { valueOf() { called = true; detach(x); globalThis.gc?.(); return 3; } };
    const feeds = { x: { type: 'float32', data: x, dims: DIMS }, y: { type: 'float32', data: twos(), dims: [dim, 4, 5] } };
    const run = via === 'addon' ? s._native.run(feeds, ['sum']) : s.run(feeds);
    await assert.rejects(run, { name: 'TypeError', message: /feed 'y' has dims\[0\] that is an object, expected a non-negative integer number/ });
    assert.strictEqual(called, false, 'valueOf must not be called');
    await checkAdd(s);
  }
  // Strings and BigInts are not numbers either (onnxruntime-node refuses them too).
  for (const bad of ['3', 3n]) {
    await assert.rejects(s._native.run({ x: { type: 'float32', data: ones(), dims: [bad, 4, 5] }, y: { type: 'float32', data: twos(), dims: DIMS } }),
                         { name: 'TypeError', message: /feed 'x' has dims\[0\] that is a (string|BigInt), expected a non-negative integer number/ });
  }
  await assert.rejects(s._native.run({ x: { type: 'float32', data: ones(), dims: [3, 4, 5.5] }, y: { type: 'float32', data: twos(), dims: DIMS } }),
                       /feed 'x' has dims\[2\] = 5.5, expected a non-negative integer/);
  await assert.rejects(s._native.run({ x: { type: 'float32', data: ones(), dims: [Infinity, 4, 5] }, y: { type: 'float32', data: twos(), dims: DIMS } }),
                       /feed 'x' has dims\[0\] = Infinity, expected a non-negative integer/);
  await checkAdd(s);
});

test('a getter that detaches an earlier feed mid-conversion gives a clear error', async () => {
  const s = await syncAddSession();
  // Straight into the addon (no snapshot by index.js), then through index.js;
  // the getter on `type`, on `data`, on `dims` and on the feeds object itself.
  const makers = [
    (x) => ({ get type() { detach(x); return 'float32'; }, data: twos(), dims: DIMS }),
    (x) => ({ type: 'float32', get data() { detach(x); return twos(); }, dims: DIMS }),
    (x) => ({ type: 'float32', data: twos(), get dims() { detach(x); return DIMS; } }),
  ];
  for (const via of ['addon', 'index.js']) {
    for (const make of makers) {
      const x = ones();
      const feeds = { x: new spindle.Tensor('float32', x, DIMS), y: make(x) };
      const run = via === 'addon' ? s._native.run({ x: { type: 'float32', data: x, dims: DIMS }, y: feeds.y }) : s.run(feeds);
      await assert.rejects(run, /feed 'x' has data whose ArrayBuffer is detached/);
      await checkAdd(s);
    }
    const x = ones();
    const feeds = { x: { type: 'float32', data: x, dims: DIMS } };
    Object.defineProperty(feeds, 'y', { enumerable: true, get() { detach(x); return { type: 'float32', data: twos(), dims: DIMS }; } });
    await assert.rejects(via === 'addon' ? s._native.run(feeds) : s.run(feeds), /feed 'x' has data whose ArrayBuffer is detached/);
    await checkAdd(s);
  }
  // An output name's toString is not called: output names must be strings.
  const x = ones();
  const name = { toString() { detach(x); return 'sum'; } };
  await assert.rejects(s._native.run({ x: { type: 'float32', data: x, dims: DIMS }, y: { type: 'float32', data: twos(), dims: DIMS } }, [name]),
                       { name: 'TypeError', message: /output name 0 is an object, expected a string/ });
  assert.strictEqual(x.length, 60);
  // Nor a type's toString.
  const type = { toString() { detach(x); return 'float32'; } };
  await assert.rejects(s._native.run({ x: { type: 'float32', data: x, dims: DIMS }, y: { type, data: twos(), dims: DIMS } }),
                       { name: 'TypeError', message: /feed 'y' has a `type` that is an object, expected a string/ });
  assert.strictEqual(x.length, 60);
  await checkAdd(s);
});

test('making the result objects runs no JavaScript while an output still points into a feed', async () => {
  // Identity's output is its feed's memory, read in place on the JavaScript
  // thread. A setter on Object.prototype runs while the result objects are
  // made; it detaches the feed and collects its memory: the output must have
  // been copied before.
  require('v8').setFlagsFromString('--expose-gc');
  const gc = require('vm').runInNewContext('gc');
  const s = await spindle.InferenceSession.create(identityModel(), { syncRunThresholdUs: 1e9 });
  const [name] = s.inputNames;
  const n = 4 << 20;  // 16 MiB: its own mapping, unmapped when freed
  await s.run({ [name]: new spindle.Tensor('float32', new Float32Array(n), [n]) });  // timed once
  const data = Float32Array.from({ length: n }, (_, i) => i % 1000);
  let calls = 0;
  Object.defineProperty(Object.prototype, 'dims', {
    configurable: true,
    set(v) {
      calls++;
      if (data.length) { detach(data); gc(); }
      Object.defineProperty(this, 'dims', { value: v, writable: true, enumerable: true, configurable: true });
    },
  });
  let out;
  try {
    out = await s.run({ [name]: { type: 'float32', data, dims: [n] } });
  } finally {
    delete Object.prototype.dims;
  }
  assert.ok(calls > 0);
  assert.strictEqual(data.length, 0);
  const y = out[s.outputNames[0]].data;
  assert.strictEqual(y.length, n);
  for (let i = 0; i < n; i += 4099) assert.strictEqual(y[i], i % 1000);
});

test('a detached buffer fed directly is refused, naming the feed', async () => {
  for (const syncRunThresholdUs of [1e9, 0]) {
    const s = await spindle.InferenceSession.create(ADD, { syncRunThresholdUs });
    await checkAdd(s);
    const x = ones();
    detach(x);
    await assert.rejects(s.run({ x: { type: 'float32', data: x, dims: DIMS }, y: new spindle.Tensor('float32', twos(), DIMS) }),
                         /feed 'x' has data whose ArrayBuffer is detached \(transferred away\)/);
    await checkAdd(s);
  }
});

test('a feed misaligned for its type is read correctly (copied, not borrowed)', async () => {
  const s = await syncAddSession();
  // (x86 reads misaligned floats anyway: this checks the result, not a crash.)
  const bytes = new Uint8Array(241);
  bytes.set(new Uint8Array(new Float32Array(60).fill(1).buffer), 1);
  const x = bytes.subarray(1);  // float32 data at byte offset 1
  const out = await s.run({ x: { type: 'float32', data: x, dims: DIMS }, y: new spindle.Tensor('float32', twos(), DIMS) });
  assert.deepStrictEqual(Array.from(out.sum.data), new Array(60).fill(3));
});

test('session options are not coerced through user code', async (t) => {
  // index.js checks the types itself; the addon must not rely on it.
  if (!process.env.SPINDLE_NODE_ADDON) return t.skip('SPINDLE_NODE_ADDON is not set');
  const addon = require(path.resolve(process.env.SPINDLE_NODE_ADDON));
  let called = false;
  const sneaky = { toString() { called = true; return 'parallel'; } };
  for (const options of [{ executionMode: sneaky }, { graphOptimizationLevel: sneaky }, { profileFilePrefix: sneaky },
    { config: { 'session.intra_op.allow_spinning': sneaky } }]) {
    await assert.rejects(addon.createSession(ADD, options), { name: 'TypeError', message: /is an object, expected a string/ });
  }
  await assert.rejects(addon.createSession(ADD, { config: 'x' }), { name: 'TypeError', message: /config is a string, expected an object/ });
  assert.strictEqual(called, false);
});

test('a string feed whose dims ask for more strings than its data has fails before allocating', async () => {
  for (const syncRunThresholdUs of [1e9, 0]) {
    const s = await spindle.InferenceSession.create(NORM, { syncRunThresholdUs });
    const sparse = [];
    sparse[2 ** 25 - 1] = 'a';  // a dictionary: costs JavaScript next to nothing
    const peak = () => process.resourceUsage().maxRSS * 1024;
    const before = peak();
    const t0 = Date.now();
    await assert.rejects(s.run({ x: { type: 'string', data: [], dims: [2 ** 25] } }),
                         /feed 'x' has 0 strings, expected 33554432 for dims 33554432/);
    const grew0 = peak() - before;
    assert.ok(grew0 < 64 * 2 ** 20, `peak RSS grew by ${(grew0 / 2 ** 20).toFixed(1)} MiB`);
    await assert.rejects(s.run({ x: { type: 'string', data: sparse, dims: [2 ** 25] } }),
                         { name: 'TypeError', message: /feed 'x': data\[0\] is undefined, expected a string/ });
    await assert.rejects(s.run({ x: { type: 'string', data: ['a'], dims: [2 ** 40, 2 ** 40] } }),
                         /feed 'x' has dims 1099511627776x1099511627776: shape \[1099511627776, 1099511627776\] has more elements than fit/);
    const grew = peak() - before;
    assert.ok(grew < 64 * 2 ** 20, `peak RSS grew by ${(grew / 2 ** 20).toFixed(1)} MiB`);
    assert.ok(Date.now() - t0 < 2000, `took ${Date.now() - t0} ms`);
    const out = await s.run({ x: new spindle.Tensor('string', ['a', 'monday', 'b', 'c'], [4]) });
    assert.deepStrictEqual(out.y.data, ['A', 'B', 'C']);
  }
});

// ------------------------------------------------------------ run options

// y = Loop(no trip count, cond)(x): the body passes cond and x through, so a
// true cond never ends (as tests/session/limits_test.cpp's endless_loop).
function endlessLoopModel() {
  const body = graph('body', [node('Identity', ['c'], ['c_out']), node('Identity', ['x'], ['x_out'])],
    [value('i', INT64, []), value('c', BOOL, []), value('x', FLOAT, [1])],
    [value('c_out', BOOL, []), value('x_out', FLOAT, [1])]);
  const bodyAttr = [...str(1, 'body'), ...field(6, body), ...num(20, 5)];  // AttributeProto type GRAPH
  const main = graph('endless', [node('Loop', ['', 'cond', 'x'], ['y'], [bodyAttr])],
    [value('cond', BOOL, []), value('x', FLOAT, [1])], [value('y', FLOAT, [1])]);
  return model(main);
}

const loopFeeds = (cond) => ({
  cond: new spindle.Tensor('bool', Uint8Array.of(cond ? 1 : 0), []),
  x: new spindle.Tensor('float32', Float32Array.of(2), [1]),
});

// The cap on Loop iterations is high enough that without a working timeout
// the endless run would take far longer than the limit tested below (and
// still end, rather than hang the test).
const LOOP_OPTIONS = { extra: { session: { max_loop_iterations: '20000000' } } };

test('run options: timeoutMs ends an endless Loop, on the JavaScript thread and on a worker', async () => {
  for (const syncRunThresholdUs of [1e9, 0]) {
    const s = await spindle.InferenceSession.create(endlessLoopModel(), { ...LOOP_OPTIONS, syncRunThresholdUs });
    assert.deepStrictEqual(Array.from((await s.run(loopFeeds(false))).y.data), [2]);
    const t0 = Date.now();
    await assert.rejects(s.run(loopFeeds(true), { timeoutMs: 200 }), /exceeded its time limit of 200 ms/);
    const took = Date.now() - t0;
    assert.ok(took >= 150 && took < 5000, `took ${took} ms`);
    // The limit applies to that run only; later runs work.
    assert.deepStrictEqual(Array.from((await s.run(loopFeeds(false), { timeoutMs: 0 })).y.data), [2]);
    assert.deepStrictEqual(Array.from((await s.run(loopFeeds(false))).y.data), [2]);
    // terminate: true cancels the run, as in onnxruntime-node.
    await assert.rejects(s.run(loopFeeds(true), s.outputNames, { terminate: true }), /cancelled/);
    assert.deepStrictEqual(Array.from((await s.run(loopFeeds(false), { terminate: false })).y.data), [2]);
  }
});

test('run options: timeoutMs and terminate are checked', async () => {
  const s = await spindle.InferenceSession.create(ADD);
  const feeds = { x: new spindle.Tensor('float32', ones(), DIMS), y: new spindle.Tensor('float32', twos(), DIMS) };
  for (const bad of [-1, 1.5, NaN, Infinity]) {
    await assert.rejects(s.run(feeds, { timeoutMs: bad }),
                         { name: 'RangeError', message: /runOptions.timeoutMs must be a non-negative integer number of milliseconds/ });
  }
  await assert.rejects(s.run(feeds, { timeoutMs: '200' }),
                       { name: 'TypeError', message: 'Invalid argument: runOptions.timeoutMs must be a number, got string.' });
  await assert.rejects(s.run(feeds, { terminate: 1 }),
                       { name: 'TypeError', message: 'Invalid argument: runOptions.terminate must be a boolean.' });
  // The addon checks the same without index.js.
  const raw = { x: { type: 'float32', data: ones(), dims: DIMS }, y: { type: 'float32', data: twos(), dims: DIMS } };
  await assert.rejects(s._native.run(raw, undefined, { timeoutMs: -5 }), /runOptions.timeoutMs is -5, expected a non-negative integer/);
  await assert.rejects(s._native.run(raw, undefined, { timeoutMs: { valueOf: () => 5 } }), /runOptions.timeoutMs is an object/);
  await assert.rejects(s._native.run(raw, undefined, { terminate: 'yes' }), { name: 'TypeError', message: /runOptions.terminate is a string/ });
  await checkAdd(s);
});

// y = x + x, float32 [N]: a computed output of any size.
const doubleModel = () =>
  model(graph('double', [node('Add', ['x', 'x'], ['y'])], [value('x', FLOAT, ['N'])], [value('y', FLOAT, ['N'])]));
const ramp = (n, k) => Float32Array.from({ length: n }, (_, i) => (i % 977) + k);

test('outputs held across runs keep their values, shapes changing', async () => {
  require('v8').setFlagsFromString('--expose-gc');
  const gc = require('vm').runInNewContext('gc');
  const sizes = [16, 65536, 3, 65536, 16];
  for (const syncRunThresholdUs of [1e9, 0]) {
    const s = await spindle.InferenceSession.create(doubleModel(), { syncRunThresholdUs });
    await s.run({ x: new spindle.Tensor('float32', ramp(4, 0), [4]) });  // timed once
    const held = [];
    for (let k = 0; k < sizes.length; k++) {
      const n = sizes[k];
      const y = (await s.run({ x: new spindle.Tensor('float32', ramp(n, k), [n]) })).y;
      assert.deepStrictEqual(y.dims, [n]);
      held.push({ y, k });
      // A failed run in between (a feed whose data and dims disagree) changes nothing held.
      await assert.rejects(s.run({ x: { type: 'float32', data: new Float32Array(5), dims: [6] } }), /feed 'x' has 20 bytes/);
      gc();
    }
    // Overlapping runs of one session (on workers when syncRunThresholdUs is 0).
    const many = await Promise.all(sizes.map((n, k) => s.run({ x: new spindle.Tensor('float32', ramp(n, 10 + k), [n]) })));
    many.forEach((r, k) => assert.deepStrictEqual(r.y.data, ramp(sizes[k], 10 + k).map((v) => 2 * v)));
    for (const { y, k } of held) assert.deepStrictEqual(y.data, ramp(sizes[k], k).map((v) => 2 * v));
    held[0].y.data.fill(-1);  // writing into a held output changes no later run
    const again = (await s.run({ x: new spindle.Tensor('float32', ramp(16, 0), [16]) })).y;
    assert.deepStrictEqual(again.data, ramp(16, 0).map((v) => 2 * v));
  }
});

test('an output larger than 64 MiB is handed over, not copied, and keeps its values while held', async () => {
  require('v8').setFlagsFromString('--expose-gc');
  const gc = require('vm').runInNewContext('gc');
  const s = await spindle.InferenceSession.create(doubleModel());
  const big = (16 << 20) + 5;  // floats: just over the copy limit
  const x = new Float32Array(big);
  for (let i = 0; i < big; i += 4099) x[i] = i;
  const y = (await s.run({ x: new spindle.Tensor('float32', x, [big]) })).y;
  x.fill(0);
  // Later runs, failed and overlapping ones, and collections do not touch it.
  await assert.rejects(s.run({ x: { type: 'float32', data: new Float32Array(5), dims: [6] } }), /feed 'x' has 20 bytes/);
  await Promise.all([1, 2].map((k) => s.run({ x: new spindle.Tensor('float32', ramp(65536, k), [65536]) })));
  gc();
  const again = (await s.run({ x: new spindle.Tensor('float32', x, [big]) })).y;
  for (let i = 0; i < big; i += 4099) {
    assert.strictEqual(y.data[i], 2 * i);
    assert.strictEqual(again.data[i], 0);
  }
  y.data[0] = -1;  // writable, and its own
  assert.strictEqual(again.data[0], 0);
});

test('the package in worker threads (an environment each) runs next to the main thread', async () => {
  const { Worker } = require('worker_threads');
  const bytes = doubleModel();
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const spindle = require(workerData.pkg);
    (async () => {
      const s = await spindle.InferenceSession.create(workerData.bytes);
      let ok = true;
      for (let i = 0; i < 200; i++) {
        const n = i % 2 ? 65536 : 16;
        const x = Float32Array.from({ length: n }, (_, j) => j + i);
        const y = (await s.run({ x: new spindle.Tensor('float32', x, [n]) })).y.data;
        for (let j = 0; j < n; j += 97) if (y[j] !== 2 * x[j]) ok = false;
      }
      parentPort.postMessage(ok);
    })().catch((e) => parentPort.postMessage(String(e)));`;
  const pkg = path.join(__dirname, '..');
  const workers = [0, 1].map(() => new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { pkg, bytes } });
    w.once('message', resolve);
    w.once('error', reject);
  }));
  const s = await spindle.InferenceSession.create(doubleModel());
  for (let i = 0; i < 200; i++) {
    const y = (await s.run({ x: new spindle.Tensor('float32', ramp(16, i), [16]) })).y;
    assert.deepStrictEqual(y.data, ramp(16, i).map((v) => 2 * v));
  }
  assert.deepStrictEqual(await Promise.all(workers), [true, true]);
});

// ------------------------------------------------------------ outputs of a run

// flag = Cast<bool>(x), asInt = Cast<int64>(x), sum = x + x for x float32 [N]:
// outputs of 1, 8 and 4 bytes an element, the narrowest first.
function mixedModel() {
  const to = (t) => [...str(1, 'to'), ...num(3, t), ...num(20, 2)];  // AttributeProto type INT
  return model(graph('mixed', [node('Cast', ['x'], ['flag'], [to(BOOL)]), node('Cast', ['x'], ['asInt'], [to(INT64)]),
    node('Add', ['x', 'x'], ['sum'])], [value('x', FLOAT, ['N'])],
  [value('flag', BOOL, ['N']), value('asInt', INT64, ['N']), value('sum', FLOAT, ['N'])]));
}

const mixedFeeds = (n, start) => ({ x: new spindle.Tensor('float32', Float32Array.from({ length: n }, (_, i) => (start + i) % 7), [n]) });

// The outputs of mixedModel for mixedFeeds(n, start), computed here.
function checkMixed(out, n, start, names = ['flag', 'asInt', 'sum']) {
  assert.deepStrictEqual(Object.keys(out), names);
  const x = Array.from({ length: n }, (_, i) => (start + i) % 7);
  const want = { flag: ['bool', Uint8Array, x.map((v) => (v ? 1 : 0))], asInt: ['int64', BigInt64Array, x.map(BigInt)],
    sum: ['float32', Float32Array, x.map((v) => 2 * v)] };
  for (const name of names) {
    const [type, Typed, values] = want[name];
    const t = out[name];
    assert.ok(t instanceof spindle.Tensor);
    assert.strictEqual(t.type, type);
    assert.deepStrictEqual(t.dims, [n]);
    assert.ok(t.data instanceof Typed, `${name} is a ${t.data.constructor.name}`);
    // Its own ArrayBuffer, as onnxruntime-node's outputs: data.buffer is this output only.
    assert.strictEqual(t.data.byteOffset, 0);
    assert.strictEqual(t.data.buffer.byteLength, n * Typed.BYTES_PER_ELEMENT);
    assert.deepStrictEqual(Array.from(t.data), values);
  }
}

test('outputs of several types: values, shapes changing between runs, held outputs keep their values', async () => {
  for (const syncRunThresholdUs of [1e9, 0]) {
    const s = await spindle.InferenceSession.create(mixedModel(), { syncRunThresholdUs });
    const held = [];
    // 3 and 5 elements: offsets that need alignment; 0: empty outputs;
    // 40000: outputs of hundreds of KB next to a small one.
    const sizes = [3, 5, 1, 0, 40000, 3, 17];
    for (const [k, n] of sizes.entries()) {
      const out = await s.run(mixedFeeds(n, k));
      checkMixed(out, n, k);
      held.push(out);
    }
    held.forEach((out, k) => checkMixed(out, sizes[k], k));
    held[0].sum.data.fill(-1);  // writing into a held output changes no other
    held.slice(1).forEach((out, k) => checkMixed(out, sizes[k + 1], k + 1));
    checkMixed(await s.run(mixedFeeds(3, 0)), 3, 0);
  }
});

test('requested outputs changing between runs, wrong names after right ones, errors then success', async () => {
  for (const syncRunThresholdUs of [1e9, 0]) {
    const s = await spindle.InferenceSession.create(mixedModel(), { syncRunThresholdUs });
    checkMixed(await s.run(mixedFeeds(5, 1), ['sum']), 5, 1, ['sum']);
    checkMixed(await s.run(mixedFeeds(6, 2), ['asInt', 'flag']), 6, 2, ['asInt', 'flag']);
    checkMixed(await s.run(mixedFeeds(4, 3)), 4, 3);
    await assert.rejects(s.run(mixedFeeds(4, 3), ['sum', 'nope']), /invalid output name: nope/);
    await assert.rejects(s._native.run({ x: mixedFeeds(4, 3).x }, ['sum', 'nope']), /nope/);
    checkMixed(await s.run(mixedFeeds(4, 3), ['flag']), 4, 3, ['flag']);
    await assert.rejects(s.run({ x: { type: 'float32', data: new Float32Array(3), dims: [4] } }),
                         /feed 'x' has 12 bytes of data, expected 16/);
    await assert.rejects(s.run({ x: { type: 'int64', data: new BigInt64Array(4), dims: [4] } }), /x/);
    checkMixed(await s.run(mixedFeeds(9, 4)), 9, 4);
    checkMixed(await s.run(mixedFeeds(2, 5), { tag: 'after' }), 2, 5);
    // Straight into the addon: the same result object ({ type, data, dims }).
    const raw = await s._native.run({ x: mixedFeeds(3, 6).x }, ['sum', 'flag']);
    assert.deepStrictEqual(Object.keys(raw), ['sum', 'flag']);
    assert.deepStrictEqual(Array.from(raw.sum.data), [12, 0, 2]);  // x = [6, 0, 1]
  }
});

test('concurrent runs of one session on libuv workers each get their own outputs', async () => {
  const s = await spindle.InferenceSession.create(mixedModel(), { syncRunThresholdUs: 0 });
  const sizes = Array.from({ length: 16 }, (_, k) => (k % 2 ? 20000 : 3 + k));
  const outs = await Promise.all(sizes.map((n, k) => s.run(mixedFeeds(n, k), k % 3 ? undefined : ['sum', 'flag'])));
  outs.forEach((out, k) => checkMixed(out, sizes[k], k, k % 3 ? undefined : ['sum', 'flag']));
});

test('the addon checks the flat feeds array index.js passes', async () => {
  const s = await spindle.InferenceSession.create(mixedModel());
  const x = Float32Array.of(1, 0, 3);
  const raw = await s._native.run(['x', 'float32', x, [3]], undefined, undefined, true);
  assert.deepStrictEqual(raw.length, 9);
  assert.deepStrictEqual([raw[0], Array.from(raw[1]), raw[2]], ['bool', [1, 0, 1], [3]]);
  assert.deepStrictEqual([raw[6], Array.from(raw[7]), raw[8]], ['float32', [2, 0, 6], [3]]);
  await assert.rejects(s._native.run(['x', 'float32', x]), { name: 'TypeError', message: /feeds array has 3 elements/ });
  await assert.rejects(s._native.run([7, 'float32', x, [3]]), { name: 'TypeError', message: /feed name 0 is a number/ });
  await assert.rejects(s._native.run(['x', 'float32', x, [{ valueOf: () => 3 }]]), { name: 'TypeError', message: /dims\[0\]/ });
  await assert.rejects(s._native.run(['x', 'float32', x, [4]]), /feed 'x' has 12 bytes of data, expected 16/);
  checkMixed(await s.run(mixedFeeds(3, 0)), 3, 0);
});
