#!/usr/bin/env node
'use strict';
// ONNX Runtime on one model at two graph optimization levels, alternated in
// one process (onnxruntime-node, sequential): 'all' (its default here, with
// the NCHWc layout transformer that reorders convolution chains into
// channel blocks) against 'extended' (every fusion, no layout change). Tells
// how much of ONNX Runtime's speed on a model comes from its blocked layout.
// Prints the median over ROUNDS of each round's p50 (ms) and all/extended.
//
//   node bench/models/ort_levels.js MODEL --shape NAME=DIMS [--intra N] [--rounds N] [--runs N]
const path = require('path');
const c = require('../../tools/ort/common');

async function main() {
  const { positional, opts } = c.parseArgs(process.argv.slice(2),
    { '--shape': 'list', '--intra': 'int', '--rounds': 'int', '--runs': 'int' },
    'usage: ort_levels.js MODEL --shape NAME=DIMS... [--intra N] [--rounds N] [--runs N]');
  const ort = c.loadOrt();
  const model = path.resolve(positional[0]);
  const intra = opts.intra ?? 1, rounds = opts.rounds ?? 6, runs = opts.runs ?? 15;
  const levels = ['all', 'extended'];
  const sessions = {};
  for (const level of levels)
    sessions[level] = await ort.InferenceSession.create(model, {
      intraOpNumThreads: intra, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: level });
  const feeds = c.makeInputs(ort, c.resolveInputShapes(sessions.all, c.parseShapeArgs(opts.shape)), 0);
  const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
  const p50 = {};
  for (const level of levels) {
    p50[level] = [];
    await sessions[level].run(feeds);  // warm-up
  }
  for (let r = 0; r < rounds; ++r)
    for (const level of levels) {
      const t = [];
      for (let i = 0; i < runs; ++i) {
        const t0 = process.hrtime.bigint();
        await sessions[level].run(feeds);
        t.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      p50[level].push(median(t));
    }
  const all = median(p50.all), extended = median(p50.extended);
  console.log(JSON.stringify({ model: path.basename(model), intra, rounds, runs, all_p50_ms: +all.toFixed(3),
                               extended_p50_ms: +extended.toFixed(3), all_over_extended: +(all / extended).toFixed(3) }));
}

main().catch((e) => c.die(e.message));
