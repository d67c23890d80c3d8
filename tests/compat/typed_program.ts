// typed_program.ts — onnxruntime-node code as TypeScript users write it,
// importing 'onnxruntime-node'. compare_node.test.js type-checks it twice with
// `tsc --noEmit`: once against onnxruntime-node's own types, once with the
// import resolved to spindle's index.d.ts (tsconfig paths), so code typed for
// onnxruntime-node type-checks unchanged after switching the import to spindle.
import * as ort from 'onnxruntime-node';

export async function classify(model: string, bytes: Uint8Array): Promise<string[]> {
  const lines: string[] = [`common ${ort.env.versions.common}`, ort.listSupportedBackends().map((b) => b.name).join(',')];
  ort.env.logLevel = 'warning';
  const options: ort.InferenceSession.SessionOptions = {
    executionProviders: ['cpu'],
    intraOpNumThreads: 2,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'extended',
    enableCpuMemArena: true,
    enableMemPattern: true,
    logSeverityLevel: 3,
    logId: 'typed',
    freeDimensionOverrides: { batch: 1 },
    optimizedModelFilePath: '/tmp/optimized.onnx',
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  };
  const session: ort.InferenceSession = await ort.InferenceSession.create(model, options);
  const copy = new ArrayBuffer(bytes.byteLength + 16);
  new Uint8Array(copy, 16).set(bytes);
  const fromSlice = await ort.InferenceSession.create(copy, 16, bytes.byteLength, { graphOptimizationLevel: 'all' });
  for (const m of session.inputMetadata) {
    if (m.isTensor) lines.push(`${m.name}: ${m.type} [${m.shape.join(', ')}]`);
  }
  const x = new ort.Tensor('float32', new Float32Array(3 * 48 * 192), [1, 3, 48, 192]);
  const feeds: ort.InferenceSession.FeedsType = { [session.inputNames[0]]: x };
  const results: ort.InferenceSession.ReturnType = await session.run(feeds, [session.outputNames[0]], { tag: 'typed' });
  const out: ort.Tensor = results[session.outputNames[0]];
  const data = (await out.getData()) as Float32Array;
  const flat: ort.Tensor = out.reshape([out.size]);
  lines.push(`${out.type} [${out.dims.join(', ')}] ${out.location} ${data[0]} ${flat.dims[0]}`);
  out.dispose();
  const ids = new ort.Tensor('int64', [1, 2, 3], [3]);
  const flags = new ort.Tensor([true, false]);
  lines.push(`${ids.type} ${flags.type} ${ids.size}`);
  session.startProfiling();
  session.endProfiling();
  await session.release();
  await fromSlice.release();
  return lines;
}
