'use strict';
// compare_node.test.js — runs ort_program.js against onnxruntime-node 1.30 and
// against spindle's Node package, each in its own process, and compares them
// step by step (one node:test test per step, run by `ctest -L node`):
//  - a step onnxruntime-node passes must pass on spindle;
//  - numbers (tensor samples and sums) must agree within 1e-4 + 1e-3 * |value|,
//    everything else exactly;
//  - where the step expects an error, the error's class must be the same, and
//    its message too when the error comes from the API layer (argument checks
//    both packages do in JavaScript), not from the runtime below it;
//  - a step onnxruntime-node itself fails (e.g. asking for CUDA on a machine
//    without it) is skipped, not counted.
// onnxruntime-node comes from the cache scripts/fetch-models.sh fills
// (SPINDLE_CACHE, default ~/.cache/spindle); without it or the models every
// step is skipped.
const test = require('node:test');
const assert = require('node:assert');
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const cache = process.env.SPINDLE_CACHE || path.join(os.homedir(), '.cache', 'spindle');
const program = path.join(__dirname, 'ort_program.js');
const needed = [path.join(cache, 'ort', 'node_modules', 'onnxruntime-node'),
  path.join(cache, 'models', 'ch_ppocr_mobile_v2.0_cls_infer.onnx'), path.join(cache, 'models', 'ch_PP-OCRv4_rec_infer.onnx')];
const missing = needed.filter((p) => !fs.existsSync(p));

// Errors whose message is the runtime's own (ONNX Runtime's C++ text vs
// spindle's): only the class is compared.
const RUNTIME_MESSAGES = new Set(['create-missing-file', 'create-garbage-bytes', 'run-wrong-type', 'run-wrong-rank',
  'tensor-fromImage-in-node']);

function runSide(which) {
  const out = execFileSync(process.execPath, [program, which], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'],
    maxBuffer: 64 << 20 });
  const steps = new Map();
  for (const line of out.split('\n')) {
    const m = line.match(/^(pass|fail) (\S+) (.*)$/);
    if (m) steps.set(m[2], { ok: m[1] === 'pass', value: JSON.parse(m[3]) });
  }
  return steps;
}

// Deep comparison with a tolerance for numbers; returns a path to the first difference.
function difference(got, want, where = '') {
  if (typeof want === 'number' && typeof got === 'number') {
    return Math.abs(got - want) <= 1e-4 + 1e-3 * Math.abs(want) ? null : `${where}: ${got} vs ${want}`;
  }
  if (Array.isArray(want) || (want && typeof want === 'object')) {
    if (!got || typeof got !== 'object' || Array.isArray(got) !== Array.isArray(want)) {
      return `${where}: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`;
    }
    const keys = new Set([...Object.keys(want), ...Object.keys(got)]);
    for (const k of keys) {
      const d = difference(got[k], want[k], `${where}.${k}`);
      if (d) return d;
    }
    return null;
  }
  return got === want ? null : `${where}: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`;
}

if (missing.length > 0) {
  test('onnxruntime-node program on spindle', (t) => t.skip(`missing ${missing.join(', ')}: run scripts/fetch-models.sh`));
} else {
  const ort = runSide('ort');
  const spindle = runSide('spindle');
  test('both sides ran every step', () => {
    assert.ok(ort.size >= 35, `onnxruntime-node printed ${ort.size} steps`);
    assert.deepStrictEqual([...spindle.keys()], [...ort.keys()]);
  });
  for (const [name, want] of ort) {
    test(`step ${name}`, (t) => {
      if (!want.ok) {
        t.skip(`onnxruntime-node fails this step here (${want.value.message.slice(0, 120)})`);
        return;
      }
      const got = spindle.get(name);
      assert.ok(got, 'spindle did not reach this step');
      assert.ok(got.ok, `spindle failed: ${JSON.stringify(got.value)}`);
      if (want.value && want.value.error !== undefined && RUNTIME_MESSAGES.has(name)) {
        assert.strictEqual(got.value.error, want.value.error, `error class (spindle: ${got.value.message})`);
        return;
      }
      const d = difference(got.value, want.value);
      assert.strictEqual(d, null, `spindle differs from onnxruntime-node at ${d}`);
    });
  }
}
