#!/usr/bin/env bash
# Fuzzes the compiler: builds the libFuzzer target cellc-fuzz (ASan + UBSan,
# tools/cellc-fuzz) into ${FUZZ_BUILD_DIR:-build-fuzz}, replays the
# pathological inputs it writes there, then fuzzes for SECONDS (default 60)
# from a seed corpus of every .cell file in the tree.
#
#   scripts/fuzz.sh [SECONDS] [libFuzzer flags...]
#   scripts/fuzz.sh 3600 -jobs=2 -workers=2     # longer, on two cores
#   CELLC_FUZZ_STAGE=passes scripts/fuzz.sh 600 # stop before LLVM: ~40x
#                                               # more inputs per second
#   CELLC_FUZZ_STAGE=ptx scripts/fuzz.sh 600    # GPU lowering and PTX
#
# New inputs go to $FUZZ_CORPUS (default build-fuzz/corpus-STAGE, kept
# between runs); a crash, a leak, a sanitizer report, an internal compiler
# error or a timeout stops it with the input in build-fuzz/artifacts. Exits
# non-zero when it found something.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
export CCACHE_BASEDIR=$PWD
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}

start=$(date +%s)
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  # -O1: sanitized code compiles fast and still runs fast enough; NDEBUG as
  # in Debian's LLVM and MLIR, whose class layouts must match ours.
  cmake -G Ninja -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DCELLC_FUZZ=ON \
    -DMLIR_DIR=/usr/lib/llvm-16/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-16/build/utils/lit/lit.py \
    -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 \
    -DLLVM_USE_LINKER=lld >/dev/null
fi
ninja -C "$BUILD_DIR" -j "$(nproc)" cellc-fuzz
echo "fuzz build: $(( $(date +%s) - start )) s"
fuzzer=$BUILD_DIR/bin/cellc-fuzz

# Inputs that once crashed or hung cellc, bigger than -max_len below: each
# must end quickly in an error.
pathological=$BUILD_DIR/pathological
corpus=${FUZZ_CORPUS:-$BUILD_DIR/corpus-${CELLC_FUZZ_STAGE:-object}}
mkdir -p "$pathological" "$corpus" "$BUILD_DIR/artifacts"
python3 - "$pathological" <<'PY'
import os, sys
out = sys.argv[1]
def write(name, text):
    data = text.encode() if isinstance(text, str) else text
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
head = "cell c(x: [H]) {\n  state h: [H]\n  param W: [H, H]\n  h' = "
write("sum-20000.cell", head + " + ".join(["x"] * 20000) + "\n}\n")
write("parens-10000.cell", head + "(" * 10000 + "x" + ")" * 10000 + "\n}\n")
write("calls-10000.cell", head + "tanh(" * 10000 + "x" + ")" * 10000 + "\n}\n")
write("negations-10000.cell", head + "-" * 10000 + "x\n}\n")
write("matvec-10000.cell", head + "W @ " * 10000 + "x\n}\n")
write("tanh-1000.cell", head + "tanh(" * 1000 + "x" + ")" * 1000 + "\n}\n")
write("bad-line-1mb.cell", head + "x " + "$" * 1000000 + "\n}\n")
write("latin1.cell", b"# caf\xe9\n" + (head + "x\n}\n").encode())
write("nul.cell", (head + "x").encode() + b"\x00\n}\n")
write("empty.cell", "")
write("comment-only.cell", "# nothing here\n")
write("dims.cell", "cell c(x: [H]) { state h: [1 - H]; param b: [99999999999],"
      " d: [1099511627776*H]; h' = x }\n")
write("matvec-param.cell", "cell c(x: [H]) { state h: [H]; param W: [H, H], "
      "b: [H]; h' = x + W @ b }\n")
PY
"$fuzzer" -timeout=10 -rss_limit_mb=4096 "$pathological"/* 2>&1 | tail -n 3

seeds=$BUILD_DIR/seeds
rm -rf "$seeds" && mkdir -p "$seeds"
find cells test examples models -name '*.cell' -size -4k \
  -exec cp --backup=numbered -t "$seeds" {} + 2>/dev/null || true
# The target reads `# --dim NAME=VALUE` lines as cellc reads --dim.
for cell in atr gru srnmt; do
  { echo "# --dim H=8"; cat "cells/$cell.cell"; } >"$seeds/dim-$cell.cell"
done
"$fuzzer" "$corpus" "$seeds" \
  -dict=tools/cellc-fuzz/cell.dict -max_len=4096 \
  -timeout=30 -rss_limit_mb=4096 -max_total_time="$seconds" \
  -artifact_prefix="$BUILD_DIR/artifacts/" -print_final_stats=1 "$@"
