#!/usr/bin/env bash
# Installs what spindle needs to build and test on Debian 12 (idempotent:
# only missing packages are installed).
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config git ccache
  libhwloc-dev libfmt-dev libspdlog-dev libcli11-dev nlohmann-json3-dev
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata python3-onnx python3-numpy
  libblis-serial-dev libblis4-serial
  libgtest-dev libgmock-dev libbenchmark-dev
  libtbb-dev libeigen3-dev libpthreadpool-dev libomp-dev
  python3-dev pybind11-dev python3-pytest
  python3-setuptools python3-wheel python3-venv python3-pip dpkg-dev
  clang clang-14 libclang-rt-14-dev
  node-typescript
  libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev wrk
  libgrpc++-dev protobuf-compiler-grpc python3-grpcio python3-yaml
  universal-ctags
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm: the machine's own (often NodeSource's, which bundles npm)
# are used when present; Debian's packages conflict with them.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
