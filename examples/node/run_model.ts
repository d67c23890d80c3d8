// run_model.ts — the same as run_model.js, typed: it type-checks against the
// package's index.d.ts (`npx tsc --noEmit -p .` with the tsconfig.json here),
// written as code for onnxruntime-node would be.
import * as ort from 'spindle';

export async function runModel(model: string, dims: readonly number[]): Promise<string[]> {
  const options: ort.InferenceSession.SessionOptions = {
    intraOpNumThreads: 2,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    executionProviders: ['cpu'],
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  };
  const session: ort.InferenceSession = await ort.InferenceSession.create(model, options);
  const size = dims.reduce((a, b) => a * b, 1);
  const input = new ort.Tensor('float32', new Float32Array(size), dims);
  const feeds: ort.InferenceSession.FeedsType = { [session.inputNames[0]]: input };
  const results = await session.run(feeds, [session.outputNames[0]]);
  const out: ort.Tensor = results[session.outputNames[0]];
  const ids = new ort.Tensor('int64', BigInt64Array.from([1n, 2n]), [2]);
  const lines = [`${ort.version}: ${out.type} [${out.dims.join(', ')}] (${out.size} values)`, `${ids.type} ${ids.size}`];
  await session.release();
  return lines;
}
