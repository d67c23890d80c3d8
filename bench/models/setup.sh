#!/usr/bin/env bash
# Installs what bench/models/export_models.py needs to export the benchmark
# models: Debian's PyTorch and torchvision (idempotent: only missing
# packages are installed). Kept out of scripts/setup-deps.sh on purpose:
# building and testing spindle never needs torch, only the benchmarks do.
#
#   bench/models/setup.sh
set -euo pipefail
packages=(python3-torch python3-torchvision python3-numpy)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench/models/setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
