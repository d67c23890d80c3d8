#!/usr/bin/env node
'use strict';
// ort_optimized.js — the model as ONNX Runtime's graph optimizer leaves it,
// written as an ONNX file: at level `extended` (the default) its QDQ
// transformer turns a QDQ model's node units into the operators of the
// QOperator format (QLinearConv, com.microsoft QLinearAdd,
// QLinearGlobalAveragePool, QGemm, ...), so a QOperator model is what ONNX
// Runtime itself writes from bench/models/quantize_qdq.py's output.
//
//   node bench/models/ort_optimized.js MODEL.onnx OUT.onnx [--level basic|extended|all]
//
// onnxruntime-node comes from the model cache (scripts/fetch-models.sh).
const path = require('path');
const c = require('../../tools/ort/common');

async function main() {
  const { positional, opts } = c.parseArgs(process.argv.slice(2), { '--level': 'string' },
    'usage: ort_optimized.js MODEL.onnx OUT.onnx [--level basic|extended|all]');
  if (positional.length !== 2) c.die('usage: ort_optimized.js MODEL.onnx OUT.onnx [--level basic|extended|all]');
  const level = opts.level ?? 'extended';
  if (!['basic', 'extended', 'all'].includes(level)) c.die(`--level '${level}': expected basic, extended or all`);
  const ort = c.loadOrt();
  const out = path.resolve(positional[1]);
  await ort.InferenceSession.create(path.resolve(positional[0]),
                                    { graphOptimizationLevel: level, optimizedModelFilePath: out, intraOpNumThreads: 1 });
  console.log(`wrote ${out} (ONNX Runtime ${ort.env.versions ? ort.env.versions.common : ''}, level ${level})`);
}

main().catch((e) => c.die(e.message || String(e)));
