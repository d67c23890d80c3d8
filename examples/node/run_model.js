'use strict';
// run_model.js — load an ONNX model with spindle's Node package, set its
// threading options, run it once on generated inputs and print the outputs.
//
//   npm install /path/to/spindle-0.1.0.tgz      # docs/packaging.md
//   node run_model.js MODEL NAME=1x3x48x320 [NAME=DIMS ...]
//
// Every input needs its shape on the command line; inputs are float32, filled
// with a ramp (0, 0.01, 0.02, ...).
const spindle = require('spindle');

async function main() {
  const [model, ...shapeArgs] = process.argv.slice(2);
  if (!model) {
    console.error('usage: node run_model.js MODEL NAME=DIMxDIM... [NAME=DIMS ...]');
    process.exit(2);
  }
  const shapes = Object.fromEntries(shapeArgs.map((a) => {
    const [name, text] = a.split('=');
    const dims = (text ?? '').split('x').map(Number);
    if (!dims.every((d) => Number.isInteger(d) && d >= 0)) throw new Error(`'${a}': expected NAME=DIMxDIM..., e.g. x=1x3x48x320`);
    return [name, dims];
  }));
  console.log(`spindle ${spindle.version}`);
  const session = await spindle.InferenceSession.create(model, {
    intraOpNumThreads: 2, // counts the calling thread
    executionMode: 'sequential',
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  });
  const feeds = {};
  for (const name of session.inputNames) {
    const dims = shapes[name];
    if (!dims) throw new Error(`input '${name}' needs a shape: ${name}=DIMxDIM...`);
    const data = Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) }, (_, i) => (i % 100) * 0.01);
    feeds[name] = new spindle.Tensor('float32', data, dims);
  }
  const results = await session.run(feeds);
  for (const [name, t] of Object.entries(results)) console.log(`output ${name}: ${t.type} ${t.dims.join('x')}`);
}

main().catch((e) => {
  console.error(`run_model: ${e.message}`);
  process.exit(1);
});
