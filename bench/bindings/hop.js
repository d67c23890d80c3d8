#!/usr/bin/env node
'use strict';
// The cost of the hop to a libuv worker on real models: two sessions of one
// model in one Node.js process, one with syncRunThresholdUs 0 (every run on
// a worker) and one with 1e9 (every run on the JavaScript thread), timed A B
// A B (ROUNDS rounds of 40 awaited runs each); prints the median over rounds
// of each round's p50 and the ratio JavaScript thread / worker.
//
//   SPINDLE_NODE_ADDON=<build>/bindings/node/spindle.node \
//   node bench/bindings/hop.js MODEL.onnx NAME=DIMS [INTRA] [ROUNDS]
const path = require('path');
const spindle = require(path.join(__dirname, '..', '..', 'bindings', 'node'));
const { die, parseDims } = require('../../tools/ort/common');

const median = (a) => { const s = a.slice().sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

async function main() {
  const [model, shape, intraArg, roundsArg] = process.argv.slice(2);
  if (!model || !shape || !shape.includes('=')) die('usage: hop.js MODEL.onnx NAME=DIMS [INTRA] [ROUNDS]');
  const intra = Number(intraArg ?? 1), rounds = Number(roundsArg ?? 6);
  const name = shape.slice(0, shape.lastIndexOf('='));
  const dims = parseDims(shape.slice(shape.lastIndexOf('=') + 1));
  const n = dims.reduce((a, b) => a * b, 1);
  const data = Float32Array.from({ length: n }, (_, i) => (i % 97) / 97);
  const feeds = { [name]: new spindle.Tensor('float32', data, dims) };
  const opts = (t) => ({ intraOpNumThreads: intra, executionMode: 'sequential', syncRunThresholdUs: t });
  const worker = await spindle.InferenceSession.create(model, opts(0));
  const js = await spindle.InferenceSession.create(model, opts(1e9));
  const p50 = async (s) => {
    const t = [];
    for (let i = 0; i < 40; i++) {
      const t0 = process.hrtime.bigint();
      await s.run(feeds);
      t.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    return median(t);
  };
  for (let i = 0; i < 5; i++) { await worker.run(feeds); await js.run(feeds); }
  const w = [], j = [];
  for (let r = 0; r < rounds; r++) { w.push(await p50(worker)); j.push(await p50(js)); }
  const mw = median(w), mj = median(j);
  console.log(JSON.stringify({ model: path.basename(model), intra, rounds, worker_p50_ms: +mw.toFixed(3),
                               js_thread_p50_ms: +mj.toFixed(3), ratio: +(mj / mw).toFixed(3) }));
}
main().catch((e) => { console.error(e.stack || e.message); process.exit(1); });
