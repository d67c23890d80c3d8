#!/usr/bin/env bash
# Checks what a user installs, each from its installed form, never the build
# tree (scripts/test.sh runs it after the Release build; docs/packaging.md):
#   versions      CMake, pyproject.toml and package.json agree; spindle --version
#   cmake-install cmake --install into a temporary prefix; examples/cpp built
#                 against it through find_package (shared and static) and
#                 through pkg-config, and run on a real model
#   deb           cpack -G DEB; its control fields and files; apt-get resolves
#                 its dependencies (a simulation: nothing is installed); the
#                 C++ example built against its unpacked files
#   python        pip install into a venv (Debian's python3, system site
#                 packages for numpy/onnx), the pytest suite and
#                 examples/python against the installed module
#   node          npm pack, npm install of the tarball in a scratch project
#                 (leaving the checkout untouched), examples/node run, and
#                 tsc --noEmit on the typed example
# Usage: scripts/check-packaging.sh [BUILD_DIR]   (default: build, already built)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(realpath "${1:-build}")
cache=${SPINDLE_CACHE:-$HOME/.cache/spindle}
model=$cache/models/ch_PP-OCRv4_rec_infer.onnx
shape=x=1x3x48x320
expect="output softmax_11.tmp_0: float32 1x40x6625"
work=$(mktemp -d /tmp/spindle-packaging.XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# check NAME COMMAND...: runs one check, its output in $work/NAME.log (shown on failure).
check() {
  local name=$1
  shift
  echo "packaging: $name ..."
  # Not in an `if`: bash ignores set -e in functions called from a condition.
  set +e
  (set -e; "$@") >"$work/$name.log" 2>&1
  local rc=$?
  set -e
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "packaging: $name FAILED:"
    tail -n 40 "$work/$name.log"
  fi
}

# expect_output FILE: the example's output names the model's output and shape.
expect_output() {
  grep -qxF "$expect" "$1" || { echo "expected the line '$expect' in:"; cat "$1"; return 1; }
}

# build_example NAME PREFIX [CMAKE ARGS]: examples/cpp against an install prefix, run.
build_example() {
  local dir=$work/example-$1 prefix=$2
  shift 2
  cmake -S examples/cpp -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" "$@"
  cmake --build "$dir"
  "$dir/run_model" "$model" "$shape" | tee "$dir/out.txt"
  expect_output "$dir/out.txt"
}

versions() {
  local v
  v=$(sed -n 's/^#define SPINDLE_VERSION_STRING "\(.*\)"/\1/p' "$build/include/spindle/version.h")
  echo "CMake: $v"
  grep -qx "version = \"$v\".*" pyproject.toml || { echo "pyproject.toml's version is not $v"; return 1; }
  [ "$(node -p "require('./bindings/node/package.json').version")" = "$v" ] ||
    { echo "bindings/node/package.json's version is not $v"; return 1; }
  [ "$("$build/spindle" --version)" = "spindle $v" ] || { echo "spindle --version does not say spindle $v"; return 1; }
}

cmake_install() {
  local prefix=$work/prefix
  cmake --install "$build" --prefix "$prefix"
  [ "$("$prefix/bin/spindle" --version)" = "$("$build/spindle" --version)" ]
  readelf -d "$prefix"/lib/libspindle.so | grep -q "SONAME.*libspindle.so.[0-9]"
  build_example shared "$prefix"
  build_example static "$prefix" -DLINK_STATIC=ON
  # pkg-config, as a Makefile would use it.
  local flags
  flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs spindle)
  # shellcheck disable=SC2086
  c++ -std=c++20 -O1 examples/cpp/run_model.cpp -o "$work/run_model_pc" $flags -Wl,-rpath,"$prefix/lib"
  "$work/run_model_pc" "$model" "$shape" | tee "$work/pc.txt"
  expect_output "$work/pc.txt"
  # ONNX Runtime's C API: a C program against the installed header and library.
  readelf -d "$prefix"/lib/libonnxruntime.so | grep -q "SONAME.*\[libonnxruntime.so.1\]"
  cc -std=c11 tests/capi/layout_test.c -o "$work/capi_layout" -I"$prefix/include" -L"$prefix/lib" -lonnxruntime \
    -Wl,-rpath,"$prefix/lib"
  "$work/capi_layout"
}

deb() {
  (cd "$build" && rm -f spindle_*.deb && cpack -G DEB)
  local file
  file=$(ls "$build"/spindle_*.deb)
  dpkg-deb -I "$file"
  dpkg-deb -c "$file" | tee "$work/deb-files.txt"
  for f in ./usr/bin/spindle ./usr/include/spindle/session.h ./usr/include/spindle/version.h \
           ./usr/lib/libspindle.a ./usr/lib/cmake/spindle/spindleConfig.cmake ./usr/lib/pkgconfig/spindle.pc \
           ./usr/lib/libonnxruntime.so.1.30.0 ./usr/include/onnxruntime/onnxruntime_c_api.h; do
    grep -q " $f\$" "$work/deb-files.txt" || { echo "the .deb lacks $f"; return 1; }
  done
  grep -q "./usr/lib/libspindle.so.[0-9.]* ->" "$work/deb-files.txt" || { echo "the .deb lacks the SONAME link"; return 1; }
  grep -q "./usr/lib/libonnxruntime.so.1 ->" "$work/deb-files.txt" || { echo "the .deb lacks libonnxruntime.so.1"; return 1; }
  dpkg-deb -f "$file" Depends | grep -q libblis4-serial || { echo "Depends lacks libblis4-serial"; return 1; }
  if [ "$(id -u)" -eq 0 ]; then
    # Resolving needs apt's package lists (an image may come without them).
    apt-get install -s "$file" || { apt-get update -qq && apt-get install -s "$file"; }
  fi
  dpkg-deb -x "$file" "$work/deb-root"
  build_example deb "$work/deb-root/usr"
}

python_package() {
  local venv=$work/venv
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  SPINDLE_BUILD_DIR=$build "$venv/bin/pip" install --no-index --no-build-isolation "$root"
  # From outside the checkout, without PYTHONPATH: the installed module.
  (cd "$work" && env -u PYTHONPATH "$venv/bin/python" -c \
    "import spindle, sys; assert spindle.__file__.startswith(sys.prefix), spindle.__file__; print(spindle.__version__, spindle.__file__)")
  (cd "$work" && env -u PYTHONPATH "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/bindings/python/tests")
  (cd "$work" && env -u PYTHONPATH "$venv/bin/python" "$root/examples/python/run_model.py" "$model" "$shape") |
    tee "$work/py.txt"
  expect_output "$work/py.txt"
}

node_package() {
  (cd bindings/node && npm pack --pack-destination "$work" --loglevel=error)
  local project=$work/node-project before after
  mkdir -p "$project"
  cp examples/node/run_model.js examples/node/run_model.ts examples/node/tsconfig.json "$project"
  before=$(git status --porcelain --ignored)
  (cd "$project" && npm init -y >/dev/null &&
    SPINDLE_PREFIX=$work/prefix npm install --foreground-scripts --no-audit --no-fund --loglevel=error "$work"/spindle-*.tgz)
  after=$(git status --porcelain --ignored)
  [ "$before" = "$after" ] || { echo "npm install wrote into the checkout:"; diff <(echo "$before") <(echo "$after"); return 1; }
  (cd "$project" && node run_model.js "$model" "$shape") | tee "$work/node.txt"
  expect_output "$work/node.txt"
  (cd "$project" && npm install --no-save --no-audit --no-fund --loglevel=error typescript@5 && npx tsc --noEmit -p .)
}

if [ ! -f "$model" ]; then
  echo "packaging: $model is missing: run scripts/fetch-models.sh" >&2
  exit 1
fi
check versions versions
check cmake-install cmake_install
check deb deb
check python python_package
check node node_package
echo "packaging: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
