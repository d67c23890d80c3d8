'use strict';
// CPU microseconds per `run` of the model bench/bindings/trivial_model.py
// writes, through the Node.js package: one intra-op thread, each run awaited,
// RUNS calls after 500 warm-up calls (as bench/bindings/cpu_per_call.py).
//
//   SPINDLE_NODE_ADDON=<build>/bindings/node/spindle.node node cpu_per_call.js MODEL [RUNS]
const path = require('path');
const spindle = require(path.join(__dirname, '..', '..', 'bindings', 'node'));

(async () => {
  const [model, runsArg] = process.argv.slice(2);
  const runs = Number(runsArg || 50000);
  const s = await spindle.InferenceSession.create(model, { intraOpNumThreads: 1 });
  const feeds = {
    input: new spindle.Tensor('float32', Float32Array.from({ length: 512 }, (_, i) => Math.sin(i)), [1, 512]),
    state: new spindle.Tensor('float32', new Float32Array(256), [2, 1, 128]),
    sr: new spindle.Tensor('int64', BigInt64Array.of(16000n), []),
  };
  for (let i = 0; i < 500; i++) await s.run(feeds);
  const t = process.cpuUsage();
  for (let i = 0; i < runs; i++) await s.run(feeds);
  const u = process.cpuUsage(t);
  console.log(`node cpu_us_per_call ${((u.user + u.system) / runs).toFixed(2)}`);
})();
