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
//
// The JavaScript layer follows onnxruntime-node 1.30 (its onnxruntime-common
// API) name for name: argument checks throw the same error classes with the
// same messages, so code that catches or matches them keeps working. What
// differs is listed in README.md (its Node.js section), each with its reason.
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

// The onnxruntime-common API version this package follows (env.versions.common).
const ORT_API_VERSION = '1.30.0';

// Tensor types and their typed arrays, as onnxruntime-common maps them
// (float16 as Uint16Array: Node.js has no Float16Array). bfloat16, which
// onnxruntime-common leaves out, is spindle's addition: its bits in a
// Uint16Array, as float16.
const TYPED = new Map([
  ['float32', Float32Array], ['uint8', Uint8Array], ['int8', Int8Array], ['uint16', Uint16Array],
  ['int16', Int16Array], ['int32', Int32Array], ['bool', Uint8Array], ['float64', Float64Array],
  ['uint32', Uint32Array], ['int4', Uint8Array], ['uint4', Uint8Array], ['int64', BigInt64Array],
  ['uint64', BigUint64Array], ['float16', Uint16Array], ['bfloat16', Uint16Array],
]);
const TYPE_OF_ARRAY = new Map([
  [Float32Array, 'float32'], [Uint8Array, 'uint8'], [Int8Array, 'int8'], [Uint16Array, 'uint16'],
  [Int16Array, 'int16'], [Int32Array, 'int32'], [BigInt64Array, 'int64'], [Float64Array, 'float64'],
  [Uint32Array, 'uint32'], [BigUint64Array, 'uint64'],
]);

function typeOfArray(data) {
  const exact = TYPE_OF_ARRAY.get(data?.constructor);
  if (exact) return exact;
  for (const [Typed, type] of TYPE_OF_ARRAY) if (data instanceof Typed) return type;  // e.g. a Buffer
  return undefined;
}

function elementCount(dims) {
  let size = 1;
  for (let i = 0; i < dims.length; i++) {
    const d = dims[i];
    if (typeof d !== 'number' || !Number.isSafeInteger(d)) throw new TypeError(`dims[${i}] must be an integer, got: ${d}`);
    if (d < 0) throw new RangeError(`dims[${i}] must be a non-negative integer, got: ${d}`);
    size *= d;
  }
  return size;
}

// A tensor in CPU memory. Constructors, checks and messages as onnxruntime-node's:
//   new Tensor(type, data[, dims])   data: a typed array of the type, or a plain array
//   new Tensor(data[, dims])         type from the typed array; string[] / boolean[]
// GPU locations (texture, gpu-buffer, ml-tensor, cpu-pinned) do not exist here.
class Tensor {
  constructor(arg0, arg1, arg2) {
    let type;
    let data;
    let dims;
    if (typeof arg0 === 'string') {
      type = arg0;
      dims = arg2;
      if (type === 'string') {
        if (!Array.isArray(arg1)) throw new TypeError("A string tensor's data must be a string array.");
        if (arg1.some((s) => typeof s !== 'string')) throw new TypeError("A string tensor's data must be a string array.");
        data = arg1;
      } else {
        const Typed = TYPED.get(type);
        if (Typed === undefined) throw new TypeError(`Unsupported tensor type: ${type}.`);
        if (Array.isArray(arg1)) {
          if (type === 'float16' || type === 'bfloat16' || type === 'uint4' || type === 'int4') {
            throw new TypeError(`Creating a ${type} tensor from number array is not supported. Please use ${Typed.name} as data.`);
          }
          data = type === 'int64' || type === 'uint64' ? Typed.from(arg1, BigInt) : Typed.from(arg1);
        } else if (arg1 instanceof Typed) {
          data = arg1;
        } else if (arg1 instanceof Uint8ClampedArray) {
          if (type !== 'uint8') throw new TypeError("A Uint8ClampedArray tensor's data must be type of uint8");
          data = Uint8Array.from(arg1);
        } else {
          throw new TypeError(`A ${type} tensor's data must be type of ${Typed}`);
        }
      }
    } else {
      dims = arg1;
      if (Array.isArray(arg0)) {
        if (arg0.length === 0) throw new TypeError('Tensor type cannot be inferred from an empty array.');
        const first = typeof arg0[0];
        if (first === 'string') [type, data] = ['string', arg0];
        else if (first === 'boolean') [type, data] = ['bool', Uint8Array.from(arg0)];
        else throw new TypeError(`Invalid element type of data array: ${first}.`);
      } else if (arg0 instanceof Uint8ClampedArray) {
        [type, data] = ['uint8', Uint8Array.from(arg0)];
      } else {
        type = typeOfArray(arg0);
        if (type === undefined) throw new TypeError(`Unsupported type for tensor data: ${arg0?.constructor}.`);
        data = arg0;
      }
    }
    if (dims === undefined) dims = [data.length];
    else if (!Array.isArray(dims)) throw new TypeError("A tensor's dims must be a number array");
    const size = elementCount(dims);
    const packed = (type === 'int4' || type === 'uint4') && Math.ceil(size / 2) === data.length;
    if (size !== data.length && !packed) throw new Error(`Tensor's size(${size}) does not match data length(${data.length}).`);
    this.cpuData = data;
    this.dataLocation = 'cpu';
    this.type = type;
    this.dims = dims;
    this.size = size;
  }

  get data() {
    this.ensureValid();
    return this.cpuData;
  }

  // 'cpu', or 'none' after dispose().
  get location() {
    return this.dataLocation;
  }

  async getData() {
    return this.data;
  }

  dispose() {
    this.cpuData = undefined;
    this.dataLocation = 'none';
  }

  ensureValid() {
    if (this.dataLocation === 'none') throw new Error('The tensor is disposed.');
  }

  // A tensor of the same data (not a copy) with other dims of the same size.
  reshape(dims) {
    this.ensureValid();
    return new Tensor(this.type, this.cpuData, dims);
  }

  // A tensor over an output the addon made (type, data and dims agree
  // already): no checks, as a run returns it.
  static _fromNative(type, data, dims) {
    const out = Object.create(Tensor.prototype);
    out.cpuData = data;
    out.dataLocation = 'cpu';
    out.type = type;
    out.dims = dims;
    out.size = data.length;
    return out;
  }

  // Images: onnxruntime-node has these names but in Node.js they need browser
  // objects (ImageData, OffscreenCanvas) and throw; so do these, saying why.
  static async fromImage() {
    throw new Error('Input data provided is not supported - aborted tensor creation ' +
                    '(Tensor.fromImage needs browser image objects, which Node.js does not have; ' +
                    'decode the image yourself and pass its pixels to new Tensor())');
  }

  toImageData() {
    throw new ReferenceError('Tensor.toImageData needs OffscreenCanvas, which Node.js does not have');
  }

  toDataURL() {
    throw new ReferenceError('Tensor.toDataURL needs OffscreenCanvas, which Node.js does not have');
  }
}

// Logging: the package's own warnings (ignored options, execution providers
// it does not have) are silenced by env.logLevel 'error' or 'fatal', or a
// session's logSeverityLevel 3 or 4. The same level (the session's, else
// env.logLevel) and logId go to spindle's log of session creation.
let logLevelValue = 'warning';
const LOG_LEVELS = ['verbose', 'info', 'warning', 'error', 'fatal'];
const env = {
  wasm: {},
  webgl: {},
  webgpu: {},
  versions: { common: ORT_API_VERSION, node: addon.version, spindle: addon.version },
  set logLevel(value) {
    if (value === undefined) return;
    if (typeof value !== 'string' || !LOG_LEVELS.includes(value)) throw new Error(`Unsupported logging level: ${value}`);
    logLevelValue = value;
  },
  get logLevel() {
    return logLevelValue;
  },
};
Object.defineProperty(env, 'logLevel', { enumerable: true });

function warn(severity, message) {
  if (LOG_LEVELS.indexOf(logLevelValue) > 2) return;
  if (severity !== undefined && severity > 2) return;
  console.warn(`spindle: ${message}`);
}

const listSupportedBackends = () => [{ name: 'cpu', bundled: true }];

// Session option names: onnxruntime-node's (SessionOptions, OnnxModelOptions)
// and spindle's own. Any other name is refused as a likely typo.
const ORT_OPTION_NAMES = ['executionProviders', 'intraOpNumThreads', 'interOpNumThreads', 'freeDimensionOverrides',
  'graphOptimizationLevel', 'enableCpuMemArena', 'enableMemPattern', 'executionMode', 'optimizedModelFilePath',
  'enableProfiling', 'profileFilePrefix', 'logId', 'logSeverityLevel', 'logVerbosityLevel', 'preferredOutputLocation',
  'enableGraphCapture', 'extra', 'externalData'];
const OPTION_NAMES = [...ORT_OPTION_NAMES, 'syncRunThresholdUs'];
// ONNX Runtime's 'layout' level adds its layout transformations (NCHWc) to
// 'extended': spindle's blocked layout is part of 'all', so 'layout' is 'all'.
const OPTIMIZATION_LEVELS = { disabled: 'disabled', basic: 'basic', extended: 'extended', layout: 'all', all: 'all' };
const CPU_PROVIDERS = ['cpu', 'CPUExecutionProvider'];

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

const invalid = (what) => new TypeError(`Invalid argument: sessionOptions.${what}`);

function checkType(options, key, type, article) {
  const v = options[key];
  if (v !== undefined && typeof v !== type) throw invalid(`${key} must be ${article}.`);
  return v;
}

function threadCount(options, key) {
  const v = checkType(options, key, 'number', 'a number');
  if (v !== undefined && !(Number.isInteger(v) && v >= 0)) throw new RangeError(`'${key}' is invalid: ${v}`);
  return v;
}

function logSeverity(v, where) {
  if (v === undefined) return undefined;
  if (typeof v !== 'number') throw new TypeError(`Invalid argument: ${where}.logSeverityLevel must be a number.`);
  if (![0, 1, 2, 3, 4].includes(v)) {
    throw new RangeError(`Invalid argument: ${where}.logSeverityLevel must be one of the following: 0, 1, 2, 3, 4.`);
  }
  return v;
}

// Execution providers as onnxruntime-node resolves them: names it does not
// have are dropped with a warning; none left is an error.
function checkProviders(eps, severity) {
  if (eps === undefined) return;
  if (!Array.isArray(eps)) throw invalid('executionProviders must be an array.');
  const names = eps.map((p) => (typeof p === 'string' ? p : p?.name));
  const missing = names.filter((n) => !CPU_PROVIDERS.includes(n));
  if (missing.length === names.length && names.length > 0) {
    throw new Error(`no available backend found. ERR: ${missing.map((n) => `[${n}] backend not found.`).join(', ')}`);
  }
  for (const n of missing) {
    warn(severity, `removing requested execution provider "${n}" from session options because it is not available: ` +
                   'spindle runs on the CPU only');
  }
}

// onnxruntime-node's session options -> the addon's ({ intraOpNumThreads,
// interOpNumThreads, executionMode, graphOptimizationLevel, enableProfiling,
// profileFilePrefix, syncRunThresholdUs, config }).
function nativeOptions(options) {
  for (const k of Object.keys(options)) {
    if (!OPTION_NAMES.includes(k)) {
      const best = OPTION_NAMES.reduce((a, b) => (editDistance(k, a) <= editDistance(k, b) ? a : b));
      throw new TypeError(`unknown session option '${k}'; did you mean '${best}'?`);
    }
  }
  const severity = logSeverity(options.logSeverityLevel, 'sessionOptions');
  const out = {};
  checkProviders(options.executionProviders, severity);
  for (const k of ['intraOpNumThreads', 'interOpNumThreads']) {
    const v = threadCount(options, k);
    if (v !== undefined) out[k] = v;
  }
  for (const k of ['executionMode', 'graphOptimizationLevel']) {
    const v = checkType(options, k, 'string', 'a string');
    if (v === undefined) continue;
    const allowed = k === 'executionMode' ? { sequential: 'sequential', parallel: 'parallel' } : OPTIMIZATION_LEVELS;
    if (!Object.hasOwn(allowed, v)) throw new TypeError(`'${k}' is not supported: ${v}`);
    out[k] = allowed[v];
  }
  for (const k of ['enableCpuMemArena', 'enableMemPattern', 'enableProfiling', 'enableGraphCapture']) {
    checkType(options, k, 'boolean', 'a boolean value');
  }
  for (const k of ['logId', 'profileFilePrefix', 'optimizedModelFilePath']) checkType(options, k, 'string', 'a string');
  // The session's log level (env.logLevel when not given) and id: what
  // session creation logs on stderr (threads, optimizer passes, kernels).
  out.logSeverityLevel = severity !== undefined ? severity : LOG_LEVELS.indexOf(logLevelValue);
  if (options.logId !== undefined) out.logId = options.logId;
  if (options.enableProfiling) out.enableProfiling = true;
  if (options.profileFilePrefix !== undefined) out.profileFilePrefix = options.profileFilePrefix;
  if (options.syncRunThresholdUs !== undefined) out.syncRunThresholdUs = options.syncRunThresholdUs;
  if (options.extra !== undefined) {
    if (options.extra === null || typeof options.extra !== 'object') throw invalid('extra must be an object.');
    out.config = flatten(options.extra, '', {});
  }
  if (options.optimizedModelFilePath !== undefined) out.optimizedModelFilePath = options.optimizedModelFilePath;
  if (options.externalData !== undefined) {
    warn(severity, 'externalData is ignored: spindle reads a model\'s external data files from beside the model file ' +
                   '(or the folder in extra.session.model_external_initializers_file_folder_path)');
  }
  const location = options.preferredOutputLocation;
  const locations = typeof location === 'object' && location !== null ? Object.values(location) : [location];
  if (locations.some((l) => l !== undefined && l !== 'cpu')) {
    warn(severity, 'preferredOutputLocation other than \'cpu\' is ignored: outputs are always in CPU memory');
  }
  return out;
}

// onnxruntime-node's run options -> the addon's ({ timeoutMs, terminate,
// logSeverityLevel, tag }): terminate cancels the run, as in
// onnxruntime-node; logSeverityLevel and tag set what the run logs and under
// which id; timeoutMs (spindle's own) fails a run that takes longer. Values
// are read once, here, so the addon gets plain numbers, strings and booleans;
// undefined when none is set (the addon then reads nothing).
function checkRunOptions(options) {
  if (options.logSeverityLevel === undefined && options.tag === undefined && options.terminate === undefined &&
      options.timeoutMs === undefined) {
    return undefined;
  }
  const out = {};
  const severity = logSeverity(options.logSeverityLevel, 'runOptions');
  if (severity !== undefined) out.logSeverityLevel = severity;
  if (options.tag !== undefined && typeof options.tag !== 'string') {
    throw new TypeError('Invalid argument: runOptions.tag must be a string.');
  }
  if (options.tag !== undefined) out.tag = options.tag;
  const { terminate, timeoutMs } = options;
  if (terminate !== undefined) {
    if (typeof terminate !== 'boolean') throw new TypeError('Invalid argument: runOptions.terminate must be a boolean.');
    out.terminate = terminate;
  }
  if (timeoutMs !== undefined) {
    if (typeof timeoutMs !== 'number') {
      throw new TypeError(`Invalid argument: runOptions.timeoutMs must be a number, got ${typeof timeoutMs}.`);
    }
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) {
      throw new RangeError('Invalid argument: runOptions.timeoutMs must be a non-negative integer number of ' +
                           `milliseconds (0: no limit), got ${timeoutMs}.`);
    }
    out.timeoutMs = timeoutMs;
  }
  return out;
}

// Appends a feed as the addon takes it to `list` (name, type, data, dims:
// one flat array for all feeds); onnxruntime-node's checks and messages.
// The values are read once here, so the addon reads an array rather than
// the caller's getters (the addon refuses anything but numbers in dims and
// a string type itself, without coercion).
function pushFeed(list, name, v) {
  if (v === null || typeof v !== 'object') throw new TypeError('Tensor must be an object.');
  if (v instanceof Tensor && v.location !== 'cpu') throw new RangeError('Tensor.location is not supported.');
  const { type, dims } = v;
  // The addon reads ArrayBuffer-backed arrays only: a copy of one over a shared buffer.
  let data = v.data;
  if (typeof SharedArrayBuffer !== 'undefined' && data?.buffer instanceof SharedArrayBuffer) data = data.slice();
  list.push(name, type, data, dims);
}

// Copies an output into a tensor given in `fetches` (onnxruntime-node's
// pre-allocated outputs) and returns a tensor over that tensor's data.
function intoPreallocated(name, out, pre) {
  if (pre.type !== out.type || pre.size !== out.data.length || pre.dims.length !== out.dims.length ||
      pre.dims.some((d, i) => d !== out.dims[i])) {
    throw new Error(`output '${name}' is ${out.type} [${out.dims}] but the tensor given for it in 'fetches' is ` +
                    `${pre.type} [${pre.dims}]`);
  }
  pre.data.set(out.data);
  return new Tensor(pre.type, pre.data, pre.dims);
}

const DISPOSED = 'Session already disposed.';

class InferenceSession {
  constructor(native, options) {
    this._native = native;
    this._profiling = options.enableProfiling === true;
    this.inputNames = native.inputNames;
    this.outputNames = native.outputNames;
    this._outputNames = native.outputNames;  // the order of the addon's results, whatever a caller does to outputNames
    this.inputMetadata = native.inputMetadata;
    this.outputMetadata = native.outputMetadata;
  }

  // create(path[, options]), create(Uint8Array[, options]),
  // create(ArrayBuffer[, byteOffset[, byteLength]][, options]): argument
  // checks and messages as onnxruntime-node's.
  static async create(arg0, arg1, arg2, arg3) {
    let model;
    let options = {};
    const optionsAt = (v) => {
      if (typeof v === 'object' && v !== null) options = v;
      else if (v !== undefined) throw new TypeError("'options' must be an object.");
    };
    if (typeof arg0 === 'string' || arg0 instanceof Uint8Array) {
      model = arg0;
      if (typeof model !== 'string' && !(model.buffer instanceof ArrayBuffer)) model = Uint8Array.from(model);
      optionsAt(arg1);
    } else if (arg0 instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && arg0 instanceof SharedArrayBuffer)) {
      let byteOffset = 0;
      let byteLength = arg0.byteLength;
      if (typeof arg1 === 'number') {
        byteOffset = arg1;
        if (!Number.isSafeInteger(byteOffset)) throw new RangeError("'byteOffset' must be an integer.");
        if (byteOffset < 0 || byteOffset >= arg0.byteLength) {
          throw new RangeError(`'byteOffset' is out of range [0, ${arg0.byteLength}).`);
        }
        byteLength = arg0.byteLength - byteOffset;
        if (typeof arg2 === 'number') {
          byteLength = arg2;
          if (!Number.isSafeInteger(byteLength)) throw new RangeError("'byteLength' must be an integer.");
          if (byteLength <= 0 || byteOffset + byteLength > arg0.byteLength) {
            throw new RangeError(`'byteLength' is out of range (0, ${arg0.byteLength - byteOffset}].`);
          }
          optionsAt(arg3);
        } else if (arg2 !== undefined) {
          throw new TypeError("'byteLength' must be a number.");
        }
      } else {
        optionsAt(arg1);
      }
      model = new Uint8Array(arg0, byteOffset, byteLength);
      // The addon reads ArrayBuffer-backed arrays only: copy a shared buffer's slice.
      if (!(arg0 instanceof ArrayBuffer)) model = Uint8Array.from(model);
    } else {
      throw new TypeError("Unexpected argument[0]: must be 'path' or 'buffer'.");
    }
    return new InferenceSession(await addon.createSession(model, nativeOptions(options)), options);
  }

  // run(feeds[, fetches][, options]), as onnxruntime-node: fetches is an
  // array of output names or an object keyed by output names (null, or a
  // tensor to write that output into); an object with no output name among
  // its keys is run options. Feeds whose names are not inputs are ignored.
  async run(feeds, arg1, arg2) {
    if (this._native === null) throw new Error(DISPOSED);
    if (typeof feeds !== 'object' || feeds === null || feeds instanceof Tensor || Array.isArray(feeds)) {
      throw new TypeError("'feeds' must be an object that use input names as keys and OnnxValue as corresponding values.");
    }
    const fetches = {};
    let options = {};
    let fetchesGiven = false;
    const optionsAt = (v) => {
      if (typeof v === 'object' && v !== null) options = v;
      else if (v !== undefined) throw new TypeError("'options' must be an object.");
    };
    if (typeof arg1 === 'object') {
      if (arg1 === null) throw new TypeError('Unexpected argument[1]: cannot be null.');
      if (arg1 instanceof Tensor) throw new TypeError("'fetches' cannot be a Tensor");
      if (Array.isArray(arg1)) {
        if (arg1.length === 0) throw new TypeError("'fetches' cannot be an empty array.");
        for (const name of arg1) {
          if (typeof name !== 'string') throw new TypeError("'fetches' must be a string array or an object.");
          if (!this.outputNames.includes(name)) throw new RangeError(`'fetches' contains invalid output name: ${name}.`);
          fetches[name] = null;
        }
        fetchesGiven = true;
        optionsAt(arg2);
      } else {
        const keys = Object.getOwnPropertyNames(arg1);
        for (const name of this.outputNames) {
          const v = arg1[name];
          if (keys.includes(name) && (v === null || v instanceof Tensor)) {
            fetches[name] = v;
            fetchesGiven = true;
          }
        }
        if (fetchesGiven) optionsAt(arg2);
        else options = arg1;
      }
    } else if (arg1 !== undefined) {
      throw new TypeError("Unexpected argument[1]: must be 'fetches' or 'options'.");
    }
    for (const name of this.inputNames) {
      if (feeds[name] === undefined) throw new Error(`input '${name}' is missing in 'feeds'.`);
    }
    const runOptions = checkRunOptions(options);
    const inputs = [];
    for (const name of this.inputNames) pushFeed(inputs, name, feeds[name]);
    const names = fetchesGiven ? Object.keys(fetches) : this._outputNames;
    // The addon's flat result: type, data, dims of each output in the order of `names`.
    const raw = await this._native.run(inputs, fetchesGiven ? names : undefined, runOptions, true);
    const out = {};
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      const t = Tensor._fromNative(raw[3 * i], raw[3 * i + 1], raw[3 * i + 2]);
      out[name] = fetchesGiven && fetches[name] ? intoPreallocated(name, t, fetches[name]) : t;
    }
    return out;
  }

  // Profiling, as onnxruntime-node: with the option enableProfiling every run
  // is recorded from creation on, so startProfiling() has nothing to start;
  // endProfiling() writes the recorded runs as a Chrome trace file
  // (<profileFilePrefix>_<date>_<time>.json) and returns its path (ORT returns
  // nothing); without enableProfiling it does nothing.
  startProfiling() {}

  endProfiling() {
    if (this._native === null) throw new Error(DISPOSED);
    return this._profiling ? this._native.endProfiling() : undefined;
  }

  // Frees the model and its thread pools (once the runs in flight end). The
  // session's names and metadata stay readable; anything else fails with
  // onnxruntime-node's 'Session already disposed.'
  async release() {
    if (this._native === null) throw new Error(DISPOSED);
    this._native.release();
    this._native = null;
  }
}

const parallelInfo = () => addon.parallelInfo();
const { version } = addon;

// Shorthand names only: Node.js finds them as named exports for ES modules
// (`import { InferenceSession, Tensor } from 'spindle'`, as from onnxruntime-node).
module.exports = { InferenceSession, Tensor, env, listSupportedBackends, parallelInfo, version };
