'use strict';
// typescript.test.js — typed_program.ts (TypeScript written for
// onnxruntime-node) type-checks with `tsc --noEmit` against onnxruntime-node's
// own types and, with the import resolved to bindings/node/index.d.ts,
// against spindle's. Needs tsc (Debian's node-typescript, scripts/setup-deps.sh);
// the onnxruntime-node side needs the cache scripts/fetch-models.sh fills.
const test = require('node:test');
const assert = require('node:assert');
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const tsc = (process.env.PATH || '').split(path.delimiter).map((d) => path.join(d, 'tsc')).find((f) => fs.existsSync(f));
const ortTypes = path.join(process.env.SPINDLE_CACHE || path.join(os.homedir(), '.cache', 'spindle'), 'ort', 'node_modules');

function typeCheck(project) {
  const r = spawnSync(tsc, ['--noEmit', '-p', project], { encoding: 'utf8' });
  assert.strictEqual(r.status, 0, `tsc -p ${project}:\n${r.stdout}${r.stderr}`);
}

test('typed_program.ts type-checks against spindle\'s index.d.ts', { skip: !tsc && 'tsc not found (apt-get install node-typescript)' },
  () => typeCheck(path.join(__dirname, 'tsconfig.spindle.json')));

test('typed_program.ts type-checks against onnxruntime-node\'s types', {
  skip: (!tsc && 'tsc not found (apt-get install node-typescript)') ||
        (!fs.existsSync(path.join(ortTypes, 'onnxruntime-node')) && 'onnxruntime-node missing: run scripts/fetch-models.sh'),
}, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spindle-tsc-'));
  try {
    // onnxruntime-common's types name browser types (ImageData, WebGLTexture): lib dom.
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'es2020', module: 'commonjs', lib: ['es2020', 'dom'], types: [], strict: true, noEmit: true, baseUrl: dir,
        paths: {
          'onnxruntime-node': [path.join(ortTypes, 'onnxruntime-node', 'dist', 'index.d.ts')],
          'onnxruntime-common': [path.join(ortTypes, 'onnxruntime-common', 'dist', 'cjs', 'index.d.ts')],
        },
      },
      files: [path.join(__dirname, 'typed_program.ts')],
    }));
    typeCheck(path.join(dir, 'tsconfig.json'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
