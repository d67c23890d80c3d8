#!/usr/bin/env node
'use strict';
// ort_expected.js — expected outputs from ONNX Runtime for the cases that
// tests/opsets/gen_cases.py wrote.
//
//   node tests/opsets/ort_expected.js CASES_DIR
//
// For every CASES_DIR/opsets/<case>/ with a case.json (its inputs' names,
// element types, shapes and values, and its output names), runs model.onnx
// through onnxruntime-node (one thread) and writes
// test_data_set_0/output_<i>.pb (a TensorProto with raw_data), the layout of
// ONNX's backend test data that build/tests/conformance_runner reads. A case
// ONNX Runtime refuses is removed and listed in CASES_DIR/refused-by-ort.txt
// with ORT's message (it has no oracle). Prints "<n> cases, <m> refused".

const fs = require('fs');
const path = require('path');
const c = require('../../tools/ort/common');

// TensorProto element types and the typed arrays ONNX Runtime hands back.
const ELEM = { float32: 1, uint8: 2, int8: 3, uint16: 4, int16: 5, int32: 6, int64: 7, bool: 9, float64: 11, uint32: 12, uint64: 13 };
const ARRAY = {
  float32: Float32Array, uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array,
  int32: Int32Array, int64: BigInt64Array, bool: Uint8Array, float64: Float64Array, uint32: Uint32Array,
  uint64: BigUint64Array,
};

function varint(n) {
  const out = [];
  let v = BigInt.asUintN(64, BigInt(n));
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
}

function field(num, wire, payload) {
  const key = varint((num << 3) | wire);
  if (wire === 0) return Buffer.concat([key, varint(payload)]);
  return Buffer.concat([key, varint(payload.length), payload]);
}

// TensorProto { dims = 1; data_type = 2; name = 8; raw_data = 9 }.
function tensorProto(name, type, dims, data) {
  if (!(type in ELEM)) throw new Error(`output '${name}' has the element type ${type}, which the runner cannot store`);
  const parts = dims.map((d) => field(1, 0, d));
  parts.push(field(2, 0, ELEM[type]));
  parts.push(field(8, 2, Buffer.from(name, 'utf8')));
  parts.push(field(9, 2, Buffer.from(data.buffer, data.byteOffset, data.byteLength)));
  return Buffer.concat(parts);
}

function feedTensor(ort, spec) {
  const A = ARRAY[spec.type];
  let data;
  if (spec.type === 'int64' || spec.type === 'uint64') data = A.from(spec.data.map((v) => BigInt(v)));
  else if (spec.type === 'bool') data = Uint8Array.from(spec.data.map((v) => (v ? 1 : 0)));
  else data = A.from(spec.data.map(Number));
  return new ort.Tensor(spec.type, data, spec.dims);
}

async function main() {
  if (process.argv.length !== 3) c.die('usage: node tests/opsets/ort_expected.js CASES_DIR');
  const root = path.resolve(process.argv[2]);
  const ort = c.loadOrt();
  const dir = path.join(root, 'opsets');
  const refused = [];
  let n = 0;
  for (const name of fs.readdirSync(dir).sort()) {
    const caseDir = path.join(dir, name);
    const specFile = path.join(caseDir, 'case.json');
    if (!fs.existsSync(specFile)) continue;
    const spec = JSON.parse(fs.readFileSync(specFile, 'utf8'));
    try {
      const session = await ort.InferenceSession.create(path.join(caseDir, 'model.onnx'), {
        intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'disabled',
      });
      const feeds = {};
      for (const input of spec.inputs) feeds[input.name] = feedTensor(ort, input);
      const results = await session.run(feeds);
      const data = path.join(caseDir, 'test_data_set_0');
      spec.outputs.forEach((out, i) => {
        const t = results[out];
        fs.writeFileSync(path.join(data, `output_${i}.pb`), tensorProto(out, t.type, t.dims, t.data));
      });
      n++;
    } catch (e) {
      refused.push(`${name}\t${String(e.message).split('\n')[0]}`);
      fs.rmSync(caseDir, { recursive: true, force: true });
    }
  }
  fs.writeFileSync(path.join(root, 'refused-by-ort.txt'), refused.join('\n') + (refused.length ? '\n' : ''));
  process.stdout.write(`${n} cases, ${refused.length} refused by ONNX Runtime ${c.ortVersion(ort)}\n`);
}

main().catch((e) => c.die(e.stack || String(e)));
