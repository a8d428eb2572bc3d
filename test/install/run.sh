#!/usr/bin/env bash
# Installs cellc from the build tree into a scratch prefix, then configures,
# builds and runs a user's project (test/install/external) against it.
set -euo pipefail
build=$1
source=$(cd "$(dirname "$0")" && pwd)/external
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Quiet on success, the whole log of the failing step otherwise.
quiet() { "$@" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }; }
quiet cmake --install "$build" --prefix "$work/prefix"
quiet cmake -S "$source" -B "$work/build" -G Ninja \
  -DCMAKE_C_COMPILER=clang-16 -DCMAKE_PREFIX_PATH="$work/prefix"
quiet cmake --build "$work/build"
"$work/build/user"
