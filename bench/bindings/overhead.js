'use strict';
// Per-call cost of `session.run` through Node.js: spindle's package and
// onnxruntime-node on the same model and input, A B A B in one process.
//
// Usage: SPINDLE_NODE_ADDON=<build>/bindings/node/spindle.node \
//        NODE_PATH=<cache>/ort/node_modules node overhead.js MODEL ROUNDS RUNS
// Also times spindle with syncRunThresholdUs 0 (every run hops to a libuv
// worker thread and back), which is the hop the default avoids for short runs.
// Prints one JSON line per side with the median over rounds of each round's
// p50, in microseconds, and the spindle/ORT ratio. Both sessions use one
// intra-op thread and sequential execution, as a service running many small
// models would.
const path = require('path');
const spindle = require(path.join(__dirname, '..', '..', 'bindings', 'node'));
const ort = require('onnxruntime-node');

const median = (a) => { const s = a.slice().sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

async function p50(session, feeds, runs) {
  const t = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    t.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  return median(t);
}

async function main() {
  const [model, roundsArg, runsArg] = process.argv.slice(2);
  const rounds = Number(roundsArg || 5), runs = Number(runsArg || 2000);
  const s = await spindle.InferenceSession.create(model, { intraOpNumThreads: 1 });
  // The same session with every run sent to a libuv worker (the behaviour
  // before runs could stay on the JavaScript thread).
  const h = await spindle.InferenceSession.create(model, { intraOpNumThreads: 1, syncRunThresholdUs: 0 });
  const o = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const name = s.inputNames[0];
  const dims = [16, 40];
  const data = Float32Array.from({ length: 640 }, (_, i) => Math.sin(i));
  const sf = { [name]: new spindle.Tensor('float32', data, dims) };
  const of = { [name]: new ort.Tensor('float32', data, dims) };
  const a = (await s.run(sf))[s.outputNames[0]].data, b = (await o.run(of))[o.outputNames[0]].data;
  for (let i = 0; i < a.length; i++) if (Math.abs(a[i] - b[i]) > 1e-5) throw new Error(`outputs differ at ${i}: ${a[i]} vs ${b[i]}`);
  await p50(s, sf, 500); await p50(o, of, 500); await p50(h, sf, 500);
  const sp = [], op = [], hp = [];
  for (let r = 0; r < rounds; r++) {
    sp.push(await p50(s, sf, runs));
    op.push(await p50(o, of, runs));
    hp.push(await p50(h, sf, runs));
  }
  const ms = median(sp), mo = median(op), mh = median(hp);
  console.log(JSON.stringify({ side: 'spindle', binding: 'node', p50_us: +ms.toFixed(1), rounds: sp.map((v) => +v.toFixed(1)) }));
  console.log(JSON.stringify({ side: 'spindle, every run on a worker', binding: 'node', p50_us: +mh.toFixed(1),
                               rounds: hp.map((v) => +v.toFixed(1)) }));
  console.log(JSON.stringify({ side: 'onnxruntime-node', binding: 'node', p50_us: +mo.toFixed(1), rounds: op.map((v) => +v.toFixed(1)) }));
  console.log(JSON.stringify({ ratio_spindle_over_ort: +(ms / mo).toFixed(3) }));
}
main().catch((e) => { console.error(e.stack || e.message); process.exit(1); });
