#!/usr/bin/env node
'use strict';
// generate_ort.js — the greedy decoding loop of `spindle generate` on ONNX
// Runtime (onnxruntime-node), for tokens/s side by side on the same model,
// prompt and token count:
//
//   node bench/models/generate_ort.js MODEL --prompt-ids 1,2,3 --max-new-tokens N [--intra N] [--warmup N]
//
// After --warmup (default 1) untimed prefills, the prompt runs once with an
// empty cache (input_ids, position_ids and attention_mask when the model has
// them, past_key_values.N.* of past length 0), then every step feeds the chosen token (the largest logit of the last
// row, the first on ties) with the previous step's present.N.* as the past.
// Prints one JSON object with the keys of `spindle generate --json`
// (generated_ids, prefill_ms, decode_p50_ms, decode_tokens_per_s, ...).
// ORT comes from the cache scripts/fetch-models.sh fills (SPINDLE_CACHE).
const c = require('../../tools/ort/common');

const usage = 'usage: node bench/models/generate_ort.js MODEL --prompt-ids 1,2,3 --max-new-tokens N [--intra N] [--warmup N]\n';

async function main() {
  const { positional, opts } = c.parseArgs(process.argv.slice(2),
    { '--prompt-ids': 'string', '--max-new-tokens': 'int', '--intra': 'int', '--warmup': 'int' }, usage);
  if (positional.length !== 1 || !opts['prompt-ids']) c.die(usage);
  const model = positional[0];
  const prompt = opts['prompt-ids'].split(',').map((t) => {
    if (!/^\d+$/.test(t)) c.die(`--prompt-ids: '${t}' is not a token id`);
    return BigInt(t);
  });
  const newTokens = opts['max-new-tokens'] ?? 16, intra = opts.intra ?? 1;
  if (newTokens < 1) c.die('--max-new-tokens: expected at least 1');
  const ort = c.loadOrt();
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: intra, interOpNumThreads: 1,
                                                            executionMode: 'sequential', graphOptimizationLevel: 'all' });
  const metas = c.inputMetadata(session);
  const cache = metas.filter((m) => m.name.startsWith('past_key_values.')).map((m) => ({
    past: m.name, present: 'present.' + m.name.slice('past_key_values.'.length),
    dims: [1, m.shape[1], 0, m.shape[3]],
  }));
  const has = (n) => metas.some((m) => m.name === n);
  const ints = (n, f) => new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => f(i)), [1, n]);
  let past = cache.map((k) => new ort.Tensor('float32', new Float32Array(0), k.dims));
  let length = 0;
  const generated = [], times = [];
  const step = async (ids) => {
    const n = ids.length;
    const feeds = { input_ids: ints(n, (i) => ids[i]) };
    if (has('position_ids')) feeds.position_ids = ints(n, (i) => BigInt(length + i));
    if (has('attention_mask')) feeds.attention_mask = ints(length + n, () => 1n);
    cache.forEach((k, i) => { feeds[k.past] = past[i]; });
    const t0 = process.hrtime.bigint();
    const out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    past = cache.map((k) => out[k.present]);
    length += n;
    const logits = out.logits;
    const vocab = logits.dims[logits.dims.length - 1];
    const row = logits.data.subarray(logits.data.length - vocab);
    let best = 0;
    for (let v = 1; v < vocab; v++) if (row[v] > row[best]) best = v;
    generated.push(best);
  };
  for (let w = 0; w < (opts.warmup ?? 1); w++) {  // untimed prefills, as spindle generate --warmup
    await step(prompt);
    past = cache.map((k) => new ort.Tensor('float32', new Float32Array(0), k.dims));
    length = 0, generated.length = 0, times.length = 0;
  }
  await step(prompt);
  while (generated.length < newTokens) await step([BigInt(generated[generated.length - 1])]);
  const decode = times.slice(1);
  const sorted = decode.slice().sort((x, y) => x - y);
  const p50 = sorted.length ? sorted[Math.ceil(0.5 * sorted.length) - 1] : 0;
  const total = decode.reduce((a, b) => a + b, 0);
  process.stdout.write(JSON.stringify({
    model, runtime: `onnxruntime-node ${c.ortVersion(ort)}`, intra_threads: intra, prompt_tokens: prompt.length,
    generated_ids: generated, prefill_ms: times[0], prefill_tokens_per_s: 1e3 * prompt.length / times[0],
    decode_steps: decode.length, decode_p50_ms: p50, decode_tokens_per_s: total > 0 ? 1e3 * decode.length / total : 0,
  }, null, 2) + '\n');
}

main().catch((e) => c.die(e.message));
