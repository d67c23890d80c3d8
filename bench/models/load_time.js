'use strict';
// Session creation and memory side by side: spindle and ONNX Runtime through
// Node.js, each session in a fresh child process (so its peak memory is the
// session's own plus Node's), runtimes alternating A B A B. Prints per model
// and runtime the median creation time and the median peak RSS of the child
// after creation, and with --runs N also the peak RSS after N runs on
// generated inputs (the memory a serving process holds: weights, prepacked
// and transformed weights, buffers kept between runs, kernel scratch).
//
//   node bench/models/load_time.js [--rounds N] [--runs N] [--intra N]
//        [--shape NAME=DIMS]... [--dim SYMBOL=N]... [--int-range HI] MODEL.onnx...
//
// Inputs are generated as bench/models/side_by_side.js generates them (one
// set of --shape / --dim for every model given). spindle's addon comes from
// build/bindings/node (or SPINDLE_NODE_ADDON); onnxruntime-node from the
// model cache (scripts/fetch-models.sh).
const { execFileSync } = require('child_process');
const path = require('path');
const c = require('../../tools/ort/common');

const root = path.resolve(__dirname, '..', '..');

// One child: creates the session, then runs it `runs` times.
function child(runtime, model, config) {
  const rt = runtime === 'spindle' ? path.join(root, 'bindings', 'node') : path.join(root, 'tools', 'ort', 'common.js');
  const script = `
    const c = require(${JSON.stringify(path.join(root, 'tools', 'ort', 'common.js'))});
    const rt = ${JSON.stringify(runtime)} === 'spindle' ? require(${JSON.stringify(rt)}) : c.loadOrt();
    const cfg = ${JSON.stringify(config)};
    const peak = () => process.resourceUsage().maxRSS / 1024;
    (async () => {
      const t0 = process.hrtime.bigint();
      const s = await rt.InferenceSession.create(${JSON.stringify(model)}, { intraOpNumThreads: cfg.intra });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const rss = peak();
      let runRss = 0, firstRunMs = 0;
      if (cfg.runs > 0) {
        const raw = c.randomFeeds(c.inputMetadata(s), new Map(cfg.shapes), new Map(cfg.symbols), cfg.intHi);
        const feeds = {};
        for (const [k, v] of Object.entries(raw)) feeds[k] = new rt.Tensor(v.type, v.data, v.dims);
        for (let i = 0; i < cfg.runs; ++i) {
          const r0 = process.hrtime.bigint();
          await s.run(feeds);
          if (i === 0) firstRunMs = Number(process.hrtime.bigint() - r0) / 1e6;
        }
        runRss = peak();
      }
      process.stdout.write(JSON.stringify({ ms, rss, runRss, firstRunMs }));
    })().catch((e) => { process.stdout.write(JSON.stringify({ error: String(e.message || e) })); });`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', maxBuffer: 1 << 20 }));
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

const usage = 'usage: node bench/models/load_time.js [--rounds N] [--runs N] [--intra N] [--shape NAME=DIMS]... ' +
              '[--dim SYMBOL=N]... [--int-range HI] MODEL.onnx...';
const { positional, opts } = c.parseArgs(process.argv.slice(2),
  { '--rounds': 'int', '--runs': 'int', '--intra': 'int', '--shape': 'list', '--dim': 'list', '--int-range': 'int' }, usage);
const rounds = opts.rounds ?? 3, runs = opts.runs ?? 0;
if (!positional.length || !(rounds >= 1) || !(runs >= 0)) c.die(usage);
const config = { runs, intra: opts.intra ?? 1, intHi: opts['int-range'] ?? 100,
                 shapes: [...c.parseShapeArgs(opts.shape)], symbols: [...c.parseDimSymbols(opts.dim)] };

const runCols = runs > 0;
console.log('| model | ORT create ms | spindle create ms | ratio | ORT peak MB | spindle peak MB | ratio |' +
            (runCols ? ` ORT peak after ${runs} runs | spindle peak after ${runs} runs | ratio | ORT 1st run ms | spindle 1st run ms |` : ''));
console.log('|---|---:|---:|---:|---:|---:|---:|' + (runCols ? '---:|---:|---:|---:|---:|' : ''));
for (const model of positional.map((m) => path.resolve(m))) {
  const got = { ort: [], spindle: [] };
  for (let r = 0; r < rounds; ++r)
    for (const rt of ['ort', 'spindle']) got[rt].push(child(rt, model, config));
  const cell = (rt, key) => (got[rt].some((g) => g.error) ? NaN : median(got[rt].map((g) => g[key])));
  const errors = ['ort', 'spindle'].flatMap((rt) => got[rt].filter((g) => g.error).map((g) => `${rt}: ${g.error}`));
  const pair = (key, digits) => {
    const o = cell('ort', key), s = cell('spindle', key);
    return [o.toFixed(digits), s.toFixed(digits), (s / o).toFixed(2)];
  };
  let row = [path.basename(model), ...pair('ms', 0), ...pair('rss', 0)];
  if (runCols) row = row.concat(pair('runRss', 0), pair('firstRunMs', 1).slice(0, 2));
  console.log(`| ${row.join(' | ')} |`);
  for (const e of new Set(errors)) console.log(`  ${path.basename(model)}: ${e.slice(0, 200)}`);
}
