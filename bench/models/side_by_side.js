#!/usr/bin/env node
'use strict';
// spindle and ONNX Runtime on one model, both through Node.js in one process
// (spindle's package has onnxruntime-node's API shape), A B A B: each round
// times RUNS runs of one side, then of the other, each after a 250 ms pause
// (the other side's threads idle) and two untimed runs. Same input, outputs checked
// to agree first; rounds alternate which side goes first. Prints one JSON
// line: per side the median over rounds of each round's p50 (ms) and CPU ms
// per inference, the ratio spindle/ORT of those medians, and each round's own
// ratio (round_ratios) with their median (round_ratio).
//
//   SPINDLE_NODE_ADDON=<build>/bindings/node/spindle.node \
//   node bench/models/side_by_side.js MODEL --shape NAME=DIMS... [--intra N] [--rounds N] [--runs N]
//        [--int-range HI]   int64/int32 inputs uniform in [0, HI) (token ids; default 100)
//        [--atol A]         accept absolute differences up to A (default 0): a
//                           quantized model's output may differ by one
//                           quantization step where a value sat on a rounding tie
//        [--dim SYMBOL=N]   every input dimension named SYMBOL in the model is N (symbolic
//                           dimensions not named are 1; --shape overrides per input), e.g. a
//                           decoder's cache length: --dim past=255 --dim seq=1
//        [--value NAME=V]   every element of input NAME is V (a sample rate, a flag)
//        [--disable P,Q]    spindle without these optimizer passes (before / after a pass)
//        [--tolerance T]    largest |spindle - ORT| / (1e-3 + |ORT|) accepted (default 1e-2); dynamically
//                           quantized (int8) models need more: a float that lands on the other side of a
//                           rounding step before a DynamicQuantizeLinear moves its product by one step
//
// ORT comes from the cache scripts/fetch-models.sh fills (SPINDLE_CACHE).
const path = require('path');
const c = require('../../tools/ort/common');
const spindle = require(path.join(__dirname, '..', '..', 'bindings', 'node'));

const median = (a) => { const s = a.slice().sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

async function timeSide(session, feeds, runs) {
  const times = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const cpu = process.cpuUsage(cpu0);
  return { p50: median(times), cpu: (cpu.user + cpu.system) / 1000 / runs };
}

async function main() {
  const { positional, opts } = c.parseArgs(process.argv.slice(2),
    { '--shape': 'list', '--dim': 'list', '--intra': 'int', '--rounds': 'int', '--runs': 'int', '--int-range': 'int',
      '--tolerance': 'string', '--value': 'list', '--atol': 'float', '--disable': 'string' },
    'usage: side_by_side.js MODEL --shape NAME=DIMS... [--dim SYMBOL=N]... [--intra N] [--rounds N] [--runs N] [--int-range HI] [--value NAME=V]... [--tolerance T] [--atol A] [--disable P,Q]');
  const model = path.resolve(positional[0]);
  const atol = opts.atol === undefined ? 0 : Number(opts.atol);
  if (!(atol >= 0)) c.die(`--atol needs a non-negative number, got '${opts.atol}'`);
  const intra = opts.intra ?? 1, rounds = opts.rounds ?? 5, runs = opts.runs ?? 20, intHi = opts['int-range'] ?? 100;
  const ort = c.loadOrt();
  const o = await ort.InferenceSession.create(model, { intraOpNumThreads: intra, interOpNumThreads: 1,
                                                      executionMode: 'sequential', graphOptimizationLevel: 'all' });
  const extra = opts.disable ? { optimization: { disable_specified_optimizers: opts.disable } } : undefined;
  const s = await spindle.InferenceSession.create(model, { intraOpNumThreads: intra, executionMode: 'sequential', extra });
  const shapes = c.parseShapeArgs(opts.shape);
  const symbols = c.parseDimSymbols(opts.dim);
  const raw = c.randomFeeds(c.inputMetadata(o), shapes, symbols, intHi);
  for (const spec of opts.value || []) {
    const m = /^([^=]+)=(-?[0-9.e+-]+)$/.exec(spec);
    if (!m || !raw[m[1]]) c.die(`--value '${spec}': expected NAME=V with NAME one of the model's inputs`);
    const r = raw[m[1]];
    r.data.fill(r.type === 'int64' ? BigInt(Math.trunc(Number(m[2]))) : Number(m[2]));
  }
  const of = {}, sf = {};
  for (const [k, v] of Object.entries(raw)) {
    of[k] = new ort.Tensor(v.type, v.data, v.dims);
    sf[k] = new spindle.Tensor(v.type, v.data, v.dims);
  }
  // Outputs must agree before anything is timed.
  const ro = await o.run(of), rs = await s.run(sf);
  let worst = 0, worstAbs = 0;
  for (const name of o.outputNames) {
    const a = ro[name].data, b = rs[name].data;
    if (a.length !== b.length) c.die(`output '${name}': ${b.length} values from spindle, ${a.length} from ORT`);
    for (let i = 0; i < a.length; i++) {
      const abs = Math.abs(Number(a[i]) - Number(b[i]));
      if (!(abs <= worstAbs)) worstAbs = Number.isNaN(abs) ? Infinity : abs;
      const d = abs <= atol ? 0 : abs / (1e-3 + Math.abs(Number(a[i])));
      if (!(d <= worst)) worst = Number.isNaN(d) ? Infinity : d;
    }
  }
  const tolerance = opts.tolerance === undefined ? 1e-2 : Number(opts.tolerance);
  if (!(tolerance >= 0)) c.die(`--tolerance needs a number >= 0, got '${opts.tolerance}'`);
  if (worst > tolerance) c.die(`outputs differ: worst relative difference ${worst} (tolerance ${tolerance})`);
  await timeSide(s, sf, Math.min(runs, 5));
  await timeSide(o, of, Math.min(runs, 5));
  // ONNX Runtime's workers keep spinning for tens of milliseconds after a run
  // (measured: ~35 ms of a second core after each mobilenet_v3 run at intra
  // 2), so a side timed right after the other would share its cores with
  // them. Each side starts after a quiet pause instead, then two untimed
  // runs (the pause lets the machine idle its cores).
  const settle = async (session, feeds) => {
    await new Promise((resolve) => setTimeout(resolve, 250));
    for (let i = 0; i < 2; i++) await session.run(feeds);
  };
  const sp = [], op = [];
  // Rounds alternate which side goes first (S O, O S, ...), so a drift of
  // the machine's speed within a round does not always favour one side.
  for (let r = 0; r < rounds; r++) {
    for (const side of r % 2 === 0 ? ['s', 'o'] : ['o', 's']) {
      if (side === 's') {
        await settle(s, sf);
        sp.push(await timeSide(s, sf, runs));
      } else {
        await settle(o, of);
        op.push(await timeSide(o, of, runs));
      }
    }
  }
  const sm = median(sp.map((x) => x.p50)), om = median(op.map((x) => x.p50));
  const r3 = (x) => Math.round(x * 1000) / 1000;
  console.log(JSON.stringify({
    model: path.basename(model), intra, rounds, runs, worst_rel_diff: Number(worst.toExponential(2)),
    worst_abs_diff: Number(worstAbs.toExponential(2)),
    spindle_p50_ms: r3(sm), ort_p50_ms: r3(om), ratio: r3(sm / om),
    // Each round's ratio, both sides timed within the same second or two:
    // the guest's speed changes between regimes within minutes, which moves
    // both sides of a round together but the medians of different rounds
    // apart; their median is the steadier figure.
    round_ratio: r3(median(sp.map((x, i) => x.p50 / op[i].p50))),
    round_ratios: sp.map((x, i) => r3(x.p50 / op[i].p50)),
    spindle_cpu_ms: r3(median(sp.map((x) => x.cpu))), ort_cpu_ms: r3(median(op.map((x) => x.cpu))),
  }));
}
main().catch((e) => { console.error(e.stack || e.message); process.exit(1); });
