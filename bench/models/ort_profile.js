#!/usr/bin/env node
'use strict';
// ONNX Runtime's own per-node profile of one model (onnxruntime-node,
// enableProfiling), for bench/models/per_node.sh: warm-up runs, then RUNS
// profiled runs, sequential, graph optimizations 'all' (as in
// side_by_side.js). Writes ORT's Chrome-trace JSON to OUT.
//
//   node bench/models/ort_profile.js MODEL --shape NAME=DIMS... --intra N --runs N --out OUT
const fs = require('fs');
const os = require('os');
const path = require('path');
const c = require('../../tools/ort/common');

async function main() {
  const { positional, opts } = c.parseArgs(process.argv.slice(2),
    { '--shape': 'list', '--intra': 'int', '--runs': 'int', '--out': 'string' },
    'usage: ort_profile.js MODEL --shape NAME=DIMS... [--intra N] [--runs N] --out OUT');
  if (!opts.out) c.die('--out is required');
  const ort = c.loadOrt();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort-profile-'));
  const s = await ort.InferenceSession.create(path.resolve(positional[0]), {
    intraOpNumThreads: opts.intra ?? 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all', enableProfiling: true, profileFilePrefix: path.join(dir, 'ort') });
  const shapes = c.parseShapeArgs(opts.shape);
  const feeds = {};
  c.inputMetadata(s).forEach((m, k) => {
    const dims = shapes.get(m.name) || m.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const u = c.uniformFloat32(dims.reduce((a, b) => a * b, 1), k, 0, 1);
    const data = m.type === 'int64' ? BigInt64Array.from(u, (v) => BigInt(Math.floor(v * 100)))
      : m.type === 'bool' ? Uint8Array.from(u, (v) => (v < 0.5 ? 1 : 0)) : u;
    feeds[m.name] = new ort.Tensor(m.type, data, dims);
  });
  for (let i = 0; i < 3 + (opts.runs ?? 20); i++) await s.run(feeds);
  await s.endProfiling();
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
  if (files.length !== 1) c.die(`expected one profile in ${dir}, found ${files.length}`);
  fs.copyFileSync(path.join(dir, files[0]), opts.out);
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => c.die(e.stack || String(e)));
