#!/usr/bin/env node
'use strict';
// How long ONNX Runtime's intra-op workers keep a core busy after a run:
// after each of a few runs, the JS thread busy-waits W ms and the process's
// CPU time over those W ms is printed (W ms is the JS thread; anything above
// is ORT's workers spinning). Why bench/models/side_by_side.js pauses before
// timing each side.
//
//   SPINDLE_CACHE=... node bench/models/ort_spin.js MODEL.onnx NAME=DIMS [INTRA]
const c = require('../../tools/ort/common');

async function main() {
  const [model, shape, intraArg] = process.argv.slice(2);
  if (!model || !shape || !shape.includes('=')) c.die('usage: ort_spin.js MODEL.onnx NAME=DIMS [INTRA]');
  const ort = c.loadOrt();
  const o = await ort.InferenceSession.create(model, { intraOpNumThreads: Number(intraArg ?? 2), interOpNumThreads: 1,
                                                      executionMode: 'sequential' });
  const name = shape.slice(0, shape.lastIndexOf('='));
  const dims = c.parseDims(shape.slice(shape.lastIndexOf('=') + 1));
  const feeds = { [name]: new ort.Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(0.5), dims) };
  for (let i = 0; i < 10; i++) await o.run(feeds);
  for (const ms of [1, 5, 20, 100]) {
    await o.run(feeds);
    const c0 = process.cpuUsage();
    const t0 = Date.now();
    while (Date.now() - t0 < ms) { /* the JS thread's own W ms */ }
    const u = process.cpuUsage(c0);
    console.log(`${ms} ms after a run: ${((u.user + u.system) / 1000).toFixed(1)} ms of CPU`);
  }
}
main().catch((e) => { console.error(e.stack || e.message); process.exit(1); });
