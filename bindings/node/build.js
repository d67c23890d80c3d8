'use strict';
// The npm package's install script: builds the native addon (addon.cpp)
// against an installed spindle with CMake (this folder's CMakeLists.txt as a
// project of its own) into ./build/spindle.node, inside the installed package
// (node_modules/spindle/build), never in the checkout it was packed from.
//
// Where spindle is found: SPINDLE_PREFIX (the prefix of `cmake --install`),
// else CMake's usual search (/usr after `apt-get install ./spindle_*.deb`,
// CMAKE_PREFIX_PATH). Needs cmake, a C++20 compiler and Node's headers.
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const out = path.join(__dirname, 'build');
const buildDir = path.join(out, 'cmake');
const addonApi = path.dirname(require.resolve('node-addon-api/package.json'));
const args = ['-S', __dirname, '-B', buildDir, '-DCMAKE_BUILD_TYPE=Release', `-DSPINDLE_NODE_ADDON_API=${addonApi}`];
if (process.env.SPINDLE_PREFIX) args.push(`-DCMAKE_PREFIX_PATH=${path.resolve(process.env.SPINDLE_PREFIX)}`);
const run = (cmd, argv) => execFileSync(cmd, argv, { stdio: 'inherit' });
try {
  run('cmake', args);
  run('cmake', ['--build', buildDir, '--target', 'spindle_node']);
} catch (e) {
  console.error('spindle: building the native addon failed. It needs an installed spindle ' +
                '(apt-get install ./spindle_X.Y.Z_amd64.deb, or cmake --install build --prefix DIR ' +
                'and SPINDLE_PREFIX=DIR), cmake, g++ and /usr/include/node/node_api.h.');
  process.exit(1);
}
fs.copyFileSync(path.join(buildDir, 'spindle.node'), path.join(out, 'spindle.node'));
