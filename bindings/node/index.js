'use strict';
// spindle for Node.js, with onnxruntime-node's API shape:
//
//   const spindle = require('spindle');
//   const session = await spindle.InferenceSession.create('model.onnx', {
//     executionMode: 'parallel', intraOpNumThreads: 2, interOpNumThreads: 2,
//     extra: { session: { intra_op: { allow_spinning: '0' } } } });
//   const results = await session.run({ x: new spindle.Tensor('float32', data, [1, 3, 48, 192]) });
//
// The native addon (addon.cpp): `npm install` of the package builds it
// against an installed spindle into ./build/spindle.node (build.js); in the
// checkout the project's CMake builds it as the target spindle_node into
// <build>/bindings/node/spindle.node. SPINDLE_NODE_ADDON overrides where it
// is loaded from. Types: index.d.ts.
const fs = require('fs');
const path = require('path');

function loadAddon() {
  // The repository's own build folder only when this is the checkout's copy.
  const checkout = fs.existsSync(path.join(__dirname, '..', '..', 'include', 'spindle', 'session.h'));
  const candidates = [
    process.env.SPINDLE_NODE_ADDON,
    path.join(__dirname, 'build', 'spindle.node'),
    checkout && path.join(__dirname, '..', '..', 'build', 'bindings', 'node', 'spindle.node'),
  ].filter(Boolean);
  for (const c of candidates) if (fs.existsSync(c)) return require(path.resolve(c));
  throw new Error(`spindle: native addon not found (looked in ${candidates.join(', ')}); ` +
                  'build it with `npm rebuild spindle` (needs an installed spindle: docs/packaging.md) ' +
                  'or, in the checkout, `cmake --build build --target spindle_node`');
}
const addon = loadAddon();

const TYPED = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array, float16: Uint16Array,
};

class Tensor {
  // new Tensor(type, data, dims) or new Tensor(data, dims) (type from the array).
  constructor(a, b, c) {
    let type, data, dims;
    if (typeof a === 'string') [type, data, dims] = [a, b, c];
    else {
      [data, dims] = [a, b];
      type = Object.keys(TYPED).find((t) => t !== 'bool' && t !== 'float16' && data instanceof TYPED[t]);
      if (!type) throw new TypeError('Tensor: cannot infer the type of the data; pass the type first');
    }
    const Typed = TYPED[type];
    if (type === 'string') {
      // onnxruntime-node's string tensors: a plain array of strings.
      if (!Array.isArray(data) || data.some((s) => typeof s !== 'string')) {
        throw new TypeError('Tensor: data for type \'string\' must be an array of strings');
      }
    } else if (!Typed) {
      throw new TypeError(`Tensor: type '${type}' is not supported (expected one of ${[...Object.keys(TYPED), 'string'].join(', ')})`);
    } else if (Array.isArray(data)) {
      data = Typed.from(type === 'bool' ? data.map((v) => (v ? 1 : 0)) : data);
    }
    if (type !== 'string' && !(data instanceof Typed)) {
      throw new TypeError(`Tensor: data for type '${type}' must be a ${Typed.name}, got ${data?.constructor?.name}`);
    }
    dims = dims ?? [data.length];
    const size = dims.reduce((p, d) => p * d, 1);
    if (size !== data.length) {
      throw new RangeError(`Tensor: dims [${dims}] hold ${size} elements but data has ${data.length}`);
    }
    this.type = type;
    this.data = data;
    this.dims = dims.slice();
    this.size = size;
  }
}

const OPTION_NAMES = ['executionMode', 'intraOpNumThreads', 'interOpNumThreads', 'graphOptimizationLevel', 'extra',
  'executionProviders', 'logSeverityLevel', 'logVerbosityLevel', 'logId', 'enableCpuMemArena', 'enableMemPattern',
  'enableProfiling', 'profileFilePrefix', 'syncRunThresholdUs'];

function editDistance(a, b) {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return row[b.length];
}

// `extra: { session: { intra_op: { allow_spinning: '0' } } }` ->
// { 'session.intra_op.allow_spinning': '0' }, as onnxruntime-node flattens it.
function flatten(obj, prefix, out) {
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === 'object') flatten(v, key, out);
    else out[key] = String(v);
  }
  return out;
}

function nativeOptions(options) {
  const out = {};
  for (const [k, v] of Object.entries(options ?? {})) {
    if (!OPTION_NAMES.includes(k)) {
      const best = OPTION_NAMES.reduce((a, b) => (editDistance(k, a) <= editDistance(k, b) ? a : b));
      throw new TypeError(`unknown session option '${k}'; did you mean '${best}'?`);
    }
    if (v === undefined) continue;
    if (k === 'extra') out.config = flatten(v, '', {});
    else if (k === 'executionProviders') {
      for (const p of v) {
        const name = typeof p === 'string' ? p : p?.name;
        if (name !== 'cpu' && name !== 'CPUExecutionProvider') {
          throw new TypeError(`execution provider '${name}' is not available; spindle runs on CPU ('cpu')`);
        }
      }
    } else if (['executionMode', 'intraOpNumThreads', 'interOpNumThreads', 'graphOptimizationLevel', 'enableProfiling',
      'profileFilePrefix', 'syncRunThresholdUs'].includes(k)) {
      out[k] = v;
    }
  }
  return out;
}

class InferenceSession {
  constructor(native) {
    this._native = native;
    this.inputNames = native.inputNames;
    this.outputNames = native.outputNames;
  }

  static async create(pathOrBuffer, options = {}) {
    return new InferenceSession(await addon.createSession(pathOrBuffer, nativeOptions(options)));
  }

  // run(feeds[, fetches][, options]), as onnxruntime-node: fetches is an
  // array of output names or an object keyed by output names; an object whose
  // keys are not all output names is run options (logSeverityLevel, tag...:
  // accepted, no effect).
  async run(feeds, fetches) {
    let names;
    if (Array.isArray(fetches)) {
      names = fetches;
    } else if (fetches && typeof fetches === 'object') {
      const keys = Object.keys(fetches);
      if (keys.length > 0 && keys.every((k) => this.outputNames.includes(k))) names = keys;
    }
    const raw = await this._native.run(feeds, names);
    const out = {};
    for (const [name, t] of Object.entries(raw)) out[name] = new Tensor(t.type, t.data, t.dims);
    return out;
  }

  // Profiling, as onnxruntime-node: with the option enableProfiling every run
  // is recorded from creation on, so startProfiling() has nothing to start;
  // endProfiling() writes the recorded runs as a Chrome trace file
  // (<profileFilePrefix>_<date>_<time>.json) and returns its path.
  startProfiling() {}

  endProfiling() {
    return this._native.endProfiling();
  }

  async release() {}
}

module.exports = { InferenceSession, Tensor, parallelInfo: () => addon.parallelInfo(), version: addon.version };
