'use strict';
// Session creation side by side: spindle and ONNX Runtime through Node.js,
// each creation in a fresh child process (so peak memory is the creation's
// own), runtimes alternating A B A B. Prints per model and runtime the median
// creation time and the median peak RSS of the child, and the ratios.
//
//   node bench/models/load_time.js [--rounds N] MODEL.onnx...
//
// spindle's addon comes from build/bindings/node (or SPINDLE_NODE_ADDON);
// onnxruntime-node from the model cache (scripts/fetch-models.sh).
const { execFileSync } = require('child_process');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');

function child(runtime, model) {
  const rt = runtime === 'spindle' ? path.join(root, 'bindings', 'node')
                                   : path.join(root, 'tools', 'ort', 'common.js');
  const script = `
    const rt = ${JSON.stringify(runtime)} === 'spindle' ? require(${JSON.stringify(rt)})
                                                      : require(${JSON.stringify(rt)}).loadOrt();
    const t0 = process.hrtime.bigint();
    rt.InferenceSession.create(${JSON.stringify(model)}, { intraOpNumThreads: 1 }).then(() => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      process.stdout.write(JSON.stringify({ ms, rss: process.resourceUsage().maxRSS / 1024 }));
    }, (e) => { process.stdout.write(JSON.stringify({ error: String(e.message || e) })); });`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', maxBuffer: 1 << 20 }));
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

const args = process.argv.slice(2);
let rounds = 3;
const models = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === '--rounds') rounds = Number(args[++i]);
  else models.push(path.resolve(args[i]));
}
if (!models.length || !(rounds >= 1)) {
  process.stderr.write('usage: node bench/models/load_time.js [--rounds N] MODEL.onnx...\n');
  process.exit(2);
}

console.log('| model | ORT create ms | spindle create ms | ratio | ORT peak MB | spindle peak MB | ratio |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const model of models) {
  const got = { ort: [], spindle: [] };
  for (let r = 0; r < rounds; ++r)
    for (const rt of ['ort', 'spindle']) got[rt].push(child(rt, model));
  const cell = (rt, key) => {
    const bad = got[rt].find((g) => g.error);
    return bad ? NaN : median(got[rt].map((g) => g[key]));
  };
  const errors = ['ort', 'spindle'].flatMap((rt) => got[rt].filter((g) => g.error).map((g) => `${rt}: ${g.error}`));
  const [om, sm, orss, srss] = [cell('ort', 'ms'), cell('spindle', 'ms'), cell('ort', 'rss'), cell('spindle', 'rss')];
  console.log(`| ${path.basename(model)} | ${om.toFixed(0)} | ${sm.toFixed(0)} | ${(sm / om).toFixed(2)} | ` +
              `${orss.toFixed(0)} | ${srss.toFixed(0)} | ${(srss / orss).toFixed(2)} |`);
  for (const e of new Set(errors)) console.log(`  ${path.basename(model)}: ${e.slice(0, 200)}`);
}
