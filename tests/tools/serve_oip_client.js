#!/usr/bin/env node
// An Open Inference Protocol (KServe v2) client written from the protocol's
// specification, in another language than the server's own tests: Node.js
// fetch over HTTP/REST with the binary tensor data extension, and
// @grpc/grpc-js with @grpc/proto-loader over gRPC. It starts `spindle serve`
// on the kit models (~/.cache/spindle/models), asks each model's metadata,
// runs it over both transports and checks every output byte for byte against
// `spindle run` (the library) on the same input; malformed requests are
// refused with the protocol's errors and the server keeps serving.
//
// Usage: serve_oip_client.js SPINDLE_CLI [PROTO_DIR]
// Environment: SPINDLE_MODELS (default ~/.cache/spindle/models),
// SPINDLE_GRPC_JS (default ~/.cache/spindle/grpc-js/node_modules; installed by
// scripts/fetch-models.sh). Exit 77 (skipped) without models, or without
// grpc-js after the HTTP checks passed.
'use strict';

const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const SPINDLE = process.argv[2];
const PROTO_DIR = process.argv[3] || path.join(__dirname, '..', '..', 'tools', 'spindle', 'proto');
const CACHE = path.join(os.homedir(), '.cache', 'spindle');
const MODELS = process.env.SPINDLE_MODELS || path.join(CACHE, 'models');
const GRPC_JS = process.env.SPINDLE_GRPC_JS || path.join(CACHE, 'grpc-js', 'node_modules');

// The kit models served, with the size given to each dynamic dimension.
const KIT = [
  { name: 'cls', file: 'ch_ppocr_mobile_v2.0_cls_infer.onnx', dims: [2, 3, 48, 192] },
  { name: 'det', file: 'ch_PP-OCRv4_det_infer.onnx', dims: [1, 3, 64, 96] },
  { name: 'rec', file: 'ch_PP-OCRv4_rec_infer.onnx', dims: [1, 3, 48, 160] },
];

// --- .npy files (spindle run's inputs and outputs) ------------------------
const NPY_TYPES = { FP32: '<f4', FP64: '<f8', INT64: '<i8', INT32: '<i4' };

function writeNpy(file, datatype, shape, bytes) {
  let header = `{'descr': '${NPY_TYPES[datatype]}', 'fortran_order': False, 'shape': (${shape.join(', ')}${
    shape.length === 1 ? ',' : ''}), }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const pre = Buffer.alloc(10);
  Buffer.from('\x93NUMPY', 'latin1').copy(pre);
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), bytes]));
}

function readNpy(file) {
  const b = fs.readFileSync(file);
  assert.equal(b.toString('latin1', 0, 6), '\x93NUMPY', `${file}: not a .npy file`);
  const major = b[6];
  const len = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const at = major === 1 ? 10 : 12;
  const header = b.toString('latin1', at, at + len);
  const shape = /'shape': \(([^)]*)\)/.exec(header)[1].split(',').filter((s) => s.trim()).map(Number);
  return { descr: /'descr': '([^']*)'/.exec(header)[1], shape, bytes: b.subarray(at + len) };
}

// --- the inputs: deterministic values in [0, 1) ---------------------------
function inputTensor(meta, dims, seed) {
  assert.equal(meta.datatype, 'FP32', `input ${meta.name}: this client feeds FP32 only`);
  const shape = meta.shape.map((d, i) => (d === -1 ? dims[i] : d));
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; ++i) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = s / 4294967296;
  }
  return { name: meta.name, datatype: meta.datatype, shape, bytes: Buffer.from(data.buffer) };
}

// The library's outputs for these inputs: spindle run --output-dir.
function reference(model, inputs, work) {
  const args = ['run', model, '--output-dir', path.join(work, 'ref')];
  for (const t of inputs) {
    const f = path.join(work, `${t.name}.npy`);
    writeNpy(f, t.datatype, t.shape, t.bytes);
    args.push('--input', `${t.name}=${f}`);
  }
  execFileSync(SPINDLE, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const out = {};
  for (const f of fs.readdirSync(path.join(work, 'ref'))) out[f.slice(0, -4)] = readNpy(path.join(work, 'ref', f));
  return out;
}

function checkOutput(where, name, datatype, shape, bytes, ref) {
  assert.ok(ref[name], `${where}: output ${name} is not one of the library's (${Object.keys(ref)})`);
  assert.equal(datatype, 'FP32', `${where}: output ${name} datatype`);
  assert.deepEqual(shape.map(Number), ref[name].shape, `${where}: output ${name} shape`);
  assert.ok(Buffer.compare(Buffer.from(bytes), ref[name].bytes) === 0, `${where}: output ${name} differs from the library's`);
}

// --- the server -------------------------------------------------------------
async function startServer(repo) {
  const proc = spawn(SPINDLE, ['serve', '--model-repository', repo, '--http-port', '0', '--grpc-port', '0',
    '--threads', '2'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: proc.stdout });
    rl.once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`spindle serve exited (${code}) before listening`)));
  });
  const m = /listening on http:\/\/127\.0\.0\.1:(\d+), gRPC on 127\.0\.0\.1:(\d+)/.exec(line);
  if (!m) {
    proc.kill();
    throw new Error(`spindle serve did not start: ${line}`);
  }
  return { proc, http: `http://127.0.0.1:${m[1]}`, grpc: `127.0.0.1:${m[2]}` };
}

// --- HTTP/REST --------------------------------------------------------------
async function getJson(url) {
  const r = await fetch(url);
  assert.equal(r.status, 200, `GET ${url}: ${r.status}`);
  return r.json();
}

// The binary tensor data extension: a JSON header of
// Inference-Header-Content-Length bytes, then the tensors' bytes in order.
function binaryRequest(inputs, outputs) {
  const header = Buffer.from(JSON.stringify({
    id: 'node-client',
    inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape,
      parameters: { binary_data_size: t.bytes.length } })),
    outputs: outputs.map((name) => ({ name, parameters: { binary_data: true } })),
  }));
  return { header, body: Buffer.concat([header, ...inputs.map((t) => t.bytes)]) };
}

async function httpInfer(server, model, body, headerLength) {
  const r = await fetch(`${server.http}/v2/models/${model}/infer`, {
    method: 'POST', body,
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(headerLength) },
  });
  return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) };
}

async function checkHttp(server, kit, meta, inputs, ref) {
  const outputs = meta.outputs.map((o) => o.name);
  const { header, body } = binaryRequest(inputs, outputs);
  const r = await httpInfer(server, kit.name, body, header.length);
  assert.equal(r.status, 200, `HTTP ${kit.name}: ${r.body}`);
  const n = Number(r.headers.get('inference-header-content-length'));
  const res = JSON.parse(r.body.subarray(0, n).toString());
  assert.equal(res.model_name, kit.name);
  assert.equal(res.id, 'node-client');
  let at = n;
  for (const o of res.outputs) {
    const size = o.parameters.binary_data_size;
    checkOutput(`HTTP ${kit.name}`, o.name, o.datatype, o.shape, r.body.subarray(at, at + size), ref);
    at += size;
  }
  assert.equal(at, r.body.length, `HTTP ${kit.name}: bytes past the outputs`);
  assert.deepEqual(res.outputs.map((o) => o.name), outputs);
  // JSON tensors: the same values as numbers (FP32 written exactly enough to read back).
  const json = {
    inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape,
      data: Array.from(new Float32Array(t.bytes.buffer, t.bytes.byteOffset, t.bytes.length / 4)) })),
    outputs: [{ name: outputs[0] }],
  };
  const j = await fetch(`${server.http}/v2/models/${kit.name}/infer`, { method: 'POST', body: JSON.stringify(json) });
  assert.equal(j.status, 200, `HTTP JSON ${kit.name}`);
  const o = (await j.json()).outputs[0];
  checkOutput(`HTTP JSON ${kit.name}`, o.name, o.datatype, o.shape, Buffer.from(new Float32Array(o.data).buffer), ref);
  // Truncated binary data: 400 with a JSON error, and the server still serves.
  const cut = await httpInfer(server, kit.name, body.subarray(0, body.length - 5), header.length);
  assert.equal(cut.status, 400, `truncated binary data: ${cut.status}`);
  assert.ok(JSON.parse(cut.body.toString()).error, 'truncated binary data: an error message');
}

// --- gRPC --------------------------------------------------------------------
function grpcClient(address) {
  const grpc = require(path.join(GRPC_JS, '@grpc', 'grpc-js'));
  const loader = require(path.join(GRPC_JS, '@grpc', 'proto-loader'));
  const def = loader.loadSync(path.join(PROTO_DIR, 'inference.proto'),
    { keepCase: true, longs: String, enums: String, defaults: true });
  const { inference } = grpc.loadPackageDefinition(def);
  const client = new inference.GRPCInferenceService(address, grpc.credentials.createInsecure());
  const call = (method, req) => new Promise((resolve, reject) => {
    client[method](req, { deadline: Date.now() + 60000 }, (err, res) => (err ? reject(err) : resolve(res)));
  });
  return { grpc, client, call };
}

async function checkGrpc(g, kit, meta, inputs, ref) {
  const m = await g.call('ModelMetadata', { name: kit.name });
  assert.deepEqual(m.inputs.map((t) => [t.name, t.datatype, t.shape.map(Number)]),
    meta.inputs.map((t) => [t.name, t.datatype, t.shape]));
  const req = {
    model_name: kit.name, id: 'node-grpc',
    inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
    raw_input_contents: inputs.map((t) => t.bytes),
  };
  const res = await g.call('ModelInfer', req);
  assert.equal(res.id, 'node-grpc');
  assert.equal(res.outputs.length, meta.outputs.length);
  res.outputs.forEach((o, i) => checkOutput(`gRPC ${kit.name}`, o.name, o.datatype, o.shape,
    res.raw_output_contents[i], ref));
  // A raw entry shorter than its shape: INVALID_ARGUMENT, and the server still serves.
  const bad = { ...req, raw_input_contents: inputs.map((t) => t.bytes.subarray(4)) };
  await assert.rejects(g.call('ModelInfer', bad), (e) => {
    assert.equal(e.code, g.grpc.status.INVALID_ARGUMENT, e.details);
    return true;
  });
}

async function main() {
  const kits = KIT.filter((k) => fs.existsSync(path.join(MODELS, k.file)));
  if (!kits.length) {
    console.log(`serve_oip_client: no kit model in ${MODELS} (scripts/fetch-models.sh): skipped`);
    process.exit(77);
  }
  const haveGrpc = fs.existsSync(path.join(GRPC_JS, '@grpc', 'grpc-js')) &&
    fs.existsSync(path.join(GRPC_JS, '@grpc', 'proto-loader'));
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spindle-oip-client-'));
  let server;
  try {
    for (const k of kits) {
      fs.mkdirSync(path.join(work, 'repo', k.name, '1'), { recursive: true });
      fs.symlinkSync(path.join(MODELS, k.file), path.join(work, 'repo', k.name, '1', 'model.onnx'));
    }
    server = await startServer(path.join(work, 'repo'));
    assert.equal((await fetch(`${server.http}/v2/health/ready`)).status, 200);
    const g = haveGrpc ? grpcClient(server.grpc) : null;
    if (g) assert.equal((await g.call('ServerReady', {})).ready, true);
    for (const [i, k] of kits.entries()) {
      const meta = await getJson(`${server.http}/v2/models/${k.name}`);
      const inputs = meta.inputs.map((t, j) => inputTensor(t, k.dims, 17 + 31 * i + j));
      const refDir = path.join(work, `ref-${k.name}`);
      fs.mkdirSync(refDir);
      const ref = reference(path.join(MODELS, k.file), inputs, refDir);
      await checkHttp(server, k, meta, inputs, ref);
      if (g) await checkGrpc(g, k, meta, inputs, ref);
      console.log(`serve_oip_client: ${k.name}: ${meta.outputs.length} output(s) equal to the library's over HTTP${
        g ? ' and gRPC' : ''}`);
    }
    if (g) g.client.close();
    // Graceful stop: SIGTERM, exit 0.
    const code = await new Promise((resolve) => {
      server.proc.once('exit', resolve);
      server.proc.kill('SIGTERM');
    });
    assert.equal(code, 0, 'spindle serve exit code after SIGTERM');
    server = null;
  } finally {
    if (server) server.proc.kill('SIGKILL');
    fs.rmSync(work, { recursive: true, force: true });
  }
  if (!haveGrpc) {
    console.log(`serve_oip_client: @grpc/grpc-js not in ${GRPC_JS} (scripts/fetch-models.sh): gRPC skipped`);
    process.exit(77);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
