'use strict';
// Shared helpers for tools/ort/reference.js and tools/ort/bench.js:
// loading onnxruntime-node, argument and shape parsing, a seeded PRNG,
// deterministic inputs, and a NumPy .npy (v1.0) writer.

const fs = require('fs');
const os = require('os');
const path = require('path');

function die(msg) {
  process.stderr.write(`${path.basename(process.argv[1] || 'ort')}: ${msg}\n`);
  process.exit(2);
}

function cacheDir() {
  return process.env.SPINDLE_CACHE || path.join(os.homedir(), '.cache', 'spindle');
}

// onnxruntime-node from $SPINDLE_CACHE/ort/node_modules (scripts/fetch-models.sh
// puts it there), else through the ordinary resolution (NODE_PATH, node_modules).
function loadOrt() {
  const candidates = [path.join(cacheDir(), 'ort', 'node_modules', 'onnxruntime-node'), 'onnxruntime-node'];
  const errors = [];
  for (const c of candidates) {
    try {
      return require(c);
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND' || !String(e.message).includes(c)) throw e;  // found but broken
      errors.push(c);
    }
  }
  die(`onnxruntime-node not found (tried ${errors.join(', ')} and NODE_PATH); run scripts/fetch-models.sh`);
}

// Minimal argv parser. spec: { '--name': 'string' | 'int' | 'list' | 'flag' }.
// Returns { positional: [...], opts: { name: value } }.
function parseArgs(argv, spec, usage) {
  const positional = [];
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    if (a === '-h' || a === '--help') {
      process.stdout.write(usage);
      process.exit(0);
    }
    if (!a.startsWith('--') || a === '--') {
      positional.push(a);
      continue;
    }
    let value;
    const eq = a.indexOf('=');
    if (eq > 0) {
      value = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    const kind = spec[a];
    if (!kind) die(`unknown option ${a}\n${usage}`);
    const key = a.slice(2);
    if (kind === 'flag') {
      if (value !== undefined) die(`${a} takes no value`);
      opts[key] = true;
      continue;
    }
    if (value === undefined) {
      if (i + 1 >= argv.length) die(`${a} needs a value`);
      value = argv[++i];
    }
    if (kind === 'int') {
      if (!/^-?\d+$/.test(value)) die(`${a} needs an integer, got '${value}'`);
      value = parseInt(value, 10);
    }
    if (kind === 'list') (opts[key] = opts[key] || []).push(value);
    else opts[key] = value;
  }
  return { positional, opts };
}

// "1x3x320x320" -> [1, 3, 320, 320]; "" -> [] (a scalar).
function parseDims(text) {
  if (text === '') return [];
  const dims = text.split(/[x,]/).map((d) => {
    if (!/^\d+$/.test(d)) die(`bad dimension '${d}' in shape '${text}' (want e.g. 1x3x320x320)`);
    return parseInt(d, 10);
  });
  return dims;
}

// --shape values: "NAME=DIMS", or bare "DIMS" for a model with one input.
// Returns Map name -> dims ('' key for a bare one).
function parseShapeArgs(list) {
  const shapes = new Map();
  for (const s of list || []) {
    const eq = s.lastIndexOf('=');
    const name = eq >= 0 ? s.slice(0, eq) : '';
    const dims = parseDims(eq >= 0 ? s.slice(eq + 1) : s);
    if (shapes.has(name)) die(`--shape given twice for '${name || '(the input)'}'`);
    shapes.set(name, dims);
  }
  return shapes;
}

// mulberry32: tiny, fast, good enough, and easy to port (C++ reproduction needs
// only 32-bit unsigned arithmetic). Returns a function giving uint32 values.
function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

// Uniform float32 in [0, 1): the top 24 bits / 2^24, exact in float32 (never 1.0).
// With a range [lo, hi): lo + (hi - lo) * u, rounded to float32.
function uniformFloat32(count, seed, lo = 0, hi = 1) {
  const next = mulberry32(seed);
  const out = new Float32Array(count);
  const scale = hi - lo;
  for (let i = 0; i < count; i++) out[i] = lo + scale * ((next() >>> 8) / 16777216);
  return out;
}

// "--range LO,HI" -> [lo, hi]; undefined -> [0, 1].
function parseRange(text) {
  if (text === undefined) return [0, 1];
  const parts = text.split(',').map(Number);
  if (parts.length !== 2 || !parts.every(Number.isFinite) || !(parts[0] < parts[1]))
    die(`--range wants LO,HI with LO < HI, got '${text}'`);
  return parts;
}

function isStaticDim(d) {
  return typeof d === 'number' && Number.isInteger(d) && d > 0;
}

function fmtShape(shape) {
  return `[${shape.map((d) => (typeof d === 'string' ? `'${d}'` : d)).join(', ')}]`;
}

// Resolves the concrete shape of every model input: a --shape for it wins
// (and must agree with the model's fixed dims); otherwise a dynamic first dim
// is taken as batch 1 and any other dynamic dim is an error.
function resolveInputShapes(session, shapes) {
  const metas = inputMetadata(session);
  if (shapes.has('') && metas.length !== 1)
    die(`a --shape without NAME= needs a model with one input; inputs: ${metas.map((m) => m.name).join(', ')}`);
  for (const name of shapes.keys())
    if (name !== '' && !metas.some((m) => m.name === name))
      die(`--shape for unknown input '${name}'; inputs: ${metas.map((m) => m.name).join(', ')}`);
  return metas.map((m, idx) => {
    const model = m.shape;
    const given = shapes.get(m.name) || (metas.length === 1 ? shapes.get('') : undefined);
    let shape;
    if (given) {
      if (model.length > 0 && given.length !== model.length)
        die(`--shape for '${m.name}' has rank ${given.length}, the model says ${fmtShape(model)}`);
      model.forEach((d, i) => {
        if (isStaticDim(d) && d !== given[i])
          die(`--shape for '${m.name}': dim ${i} is ${given[i]}, the model fixes it to ${d} ${fmtShape(model)}`);
      });
      shape = given.slice();
    } else {
      shape = model.map((d, i) => {
        if (isStaticDim(d)) return d;
        if (i === 0) return 1;  // batch
        die(`input '${m.name}' ${fmtShape(model)} has dynamic dim ${i} ('${d}'); ` +
            `give it with --shape ${m.name}=${model.map((x, j) => (isStaticDim(x) ? x : j === 0 ? 1 : 'N')).join('x')}`);
      });
    }
    return { name: m.name, type: m.type, shape, index: idx };
  });
}

function inputMetadata(session) {
  const metas = session.inputMetadata;
  if (!metas) die('this onnxruntime-node has no session.inputMetadata (need >= 1.21)');
  return metas.map((m) => {
    if (!m.isTensor) die(`input '${m.name}' is not a tensor; not supported`);
    return m;
  });
}

// Deterministic tensors for every input. Input k uses seed (seed + k).
function makeInputs(ort, resolved, seed, range = [0, 1]) {
  const feeds = {};
  for (const r of resolved) {
    if (r.type !== 'float32') die(`input '${r.name}' has type ${r.type}; only float32 inputs are generated`);
    const count = r.shape.reduce((a, b) => a * b, 1);
    feeds[r.name] = new ort.Tensor('float32', uniformFloat32(count, (seed + r.index) >>> 0, range[0], range[1]), r.shape);
  }
  return feeds;
}

// --dim SYMBOL=N arguments as a Map from symbolic dimension to size.
function parseDimSymbols(list) {
  const symbols = new Map();
  for (const d of list || []) {
    const m = /^([^=]+)=(\d+)$/.exec(d);
    if (!m) die(`--dim '${d}': expected SYMBOL=N (a symbolic dimension's name and a size >= 0)`);
    symbols.set(m[1], Number(m[2]));
  }
  return symbols;
}

// Deterministic raw feeds ({type, data, dims} per input name, for either
// runtime's Tensor) from input metadata: each input's shape from `shapes`
// (name -> dims), else its static dimensions with symbolic ones from
// `symbols` (others 1); float32 uniform in [0, 1), integers in [0, intHi),
// bools about half set. Input k uses seed k.
function randomFeeds(metas, shapes, symbols, intHi) {
  const out = {};
  metas.forEach((m, k) => {
    const dims = shapes.get(m.name) || m.shape.map((d) => (typeof d === 'number' && d > 0 ? d
                                                           : symbols.has(d) ? symbols.get(d) : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const u = uniformFloat32(n, k, 0, 1);
    let data;
    if (m.type === 'float32') data = u;
    else if (m.type === 'int64') data = BigInt64Array.from(u, (v) => BigInt(Math.floor(v * intHi)));
    else if (m.type === 'int32') data = Int32Array.from(u, (v) => Math.floor(v * intHi));
    else if (m.type === 'bool') data = Uint8Array.from(u, (v) => (v < 0.5 ? 1 : 0));
    else die(`input '${m.name}' has type ${m.type}; float32, int64, int32 and bool are generated`);
    out[m.name] = { type: m.type, data, dims };
  });
  return out;
}

// ORT tensor type -> NumPy descr.
const NPY_DESCR = {
  float32: '<f4',
  float64: '<f8',
  float16: '<f2',
  int8: '|i1',
  uint8: '|u1',
  int16: '<i2',
  uint16: '<u2',
  int32: '<i4',
  uint32: '<u4',
  int64: '<i8',
  uint64: '<u8',
  bool: '|b1',
};

function npyDescr(type) {
  const d = NPY_DESCR[type];
  if (!d) die(`tensor type '${type}' cannot be written as .npy`);
  return d;
}

// NumPy .npy format v1.0: magic, version 1.0, uint16 LE header length, a
// Python dict literal padded with spaces and '\n' so the data starts at a
// multiple of 64, then the raw C-order data.
function npyBytes(descr, shape, data) {
  if (os.endianness() !== 'LE') die('big-endian hosts are not supported');
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  if (header.length > 0xffff) die('npy header too long');
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const count = shape.reduce((a, b) => a * b, 1);
  if (body.length !== count * (data.BYTES_PER_ELEMENT || 1))
    die(`npy: data has ${body.length} bytes, shape ${fmtShape(shape)} needs ${count} elements`);
  return Buffer.concat([pre, Buffer.from(header, 'latin1'), body]);
}

function writeNpy(file, type, shape, data) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, npyBytes(npyDescr(type), shape, data));
}

// Characters outside [A-Za-z0-9._-] become '_'; names that collide after that
// get a numeric suffix. Returns Map name -> file stem.
function sanitizedNames(names) {
  const used = new Set();
  const out = new Map();
  for (const n of names) {
    const base = n.replace(/[^A-Za-z0-9._-]/g, '_') || '_';
    let stem = base;
    for (let k = 1; used.has(stem.toLowerCase()); k++) stem = `${base}_${k}`;
    used.add(stem.toLowerCase());
    out.set(n, stem);
  }
  return out;
}

function ortVersion(ort) {
  try {
    return ort.env && ort.env.versions ? ort.env.versions.common || ort.env.versions.node : undefined;
  } catch (_) {
    return undefined;
  }
}

module.exports = {
  die,
  cacheDir,
  loadOrt,
  parseArgs,
  parseDims,
  parseShapeArgs,
  mulberry32,
  uniformFloat32,
  parseRange,
  resolveInputShapes,
  inputMetadata,
  makeInputs,
  parseDimSymbols,
  randomFeeds,
  npyDescr,
  npyBytes,
  writeNpy,
  sanitizedNames,
  ortVersion,
};
