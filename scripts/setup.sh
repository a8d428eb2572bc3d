#!/usr/bin/env bash
# Installs every Debian package cellc needs to build, test and benchmark.
# Idempotent: packages already present are skipped, so a second run is quick.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache lld-16 clang-16
  llvm-16 llvm-16-dev llvm-16-tools libmlir-16-dev mlir-16-tools
  antlr4 libantlr4-runtime-dev
  libfuzzer-16-dev libclang-rt-16-dev
  libdnnl-dev libopenblas-dev libsentencepiece-dev
  libtorch-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev zlib1g-dev nlohmann-json3-dev libspdlog-dev
  fasttext libxsmm-dev
  libopenmpi-dev openmpi-bin
  pybind11-dev python3-pybind11 python3-pytest python3-numpy python3-torch
  python3 python3-matplotlib
  python3-venv python3-pip python3-wheel python3-setuptools python3-build
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
