#!/usr/bin/env bash
# Fuzzes the compiler: builds the libFuzzer target cellc-fuzz (ASan + UBSan,
# tools/cellc-fuzz; and npy-fuzz, tools/npy-fuzz, for the array readers
# `cellc run` uses) into ${FUZZ_BUILD_DIR:-build-fuzz}, replays the
# pathological inputs it writes there, then fuzzes for SECONDS (default 60)
# from a seed corpus of every .cell file in the tree.
#
#   scripts/fuzz.sh [SECONDS] [libFuzzer flags...]
#   scripts/fuzz.sh 3600 -jobs=2 -workers=2     # longer, on two cores
#   CELLC_FUZZ_STAGE=passes scripts/fuzz.sh 600 # stop before LLVM: ~40x
#                                               # more inputs per second
#   CELLC_FUZZ_STAGE=ptx scripts/fuzz.sh 600    # GPU lowering and PTX
#   CELLC_FUZZ_STAGE=npy scripts/fuzz.sh 600    # the .npy/.npz readers only
#   CELLC_FUZZ_STAGE=data scripts/fuzz.sh 600   # the drivers' data readers
#
# Every run of the default stage first puts the .npy/.npz readers
# (tools/npy-fuzz) through ${CELLC_FUZZ_NPY_RUNS:-50000} inputs from a fresh
# corpus with a fixed seed: the same inputs each time, a few seconds; then
# the drivers' data readers (models/fuzz) through
# ${CELLC_FUZZ_DATA_RUNS:-20000} inputs likewise (about 10 s).
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
stage=${CELLC_FUZZ_STAGE:-object}
if [ "$stage" = npy ]; then
  ninja -C "$BUILD_DIR" -j "$(nproc)" npy-fuzz
elif [ "$stage" = data ]; then
  ninja -C "$BUILD_DIR" -j "$(nproc)" data-fuzz
else
  ninja -C "$BUILD_DIR" -j "$(nproc)" cellc-fuzz npy-fuzz data-fuzz
fi
echo "fuzz build: $(( $(date +%s) - start )) s"
fuzzer=$BUILD_DIR/bin/cellc-fuzz

# The .npy/.npz readers: seeds written here (numpy's forms of the header,
# np.savez's stored and deflated archives, without numpy itself), the inputs
# that once failed replayed, then the given libFuzzer flags on CORPUS.
#   fuzz_readers CORPUS [libFuzzer flags...]
fuzz_readers() {
  local corpus=$1 seeds=$BUILD_DIR/npy-seeds
  shift
  rm -rf "$seeds" && mkdir -p "$seeds" "$corpus" "$BUILD_DIR/artifacts"
  python3 - "$seeds" <<'PY'
import io, os, struct, sys, zipfile
out = sys.argv[1]
def npy(shape, descr="<f4", version=1, quote="'"):
    q = quote
    dims = "".join(f"{d}, " for d in shape) if len(shape) == 1 else \
        ", ".join(str(d) for d in shape)
    header = (f"{{{q}descr{q}: {q}{descr}{q}, {q}fortran_order{q}: False, "
              f"{q}shape{q}: ({dims}), }}")
    start = 10 if version == 1 else 12
    header += " " * ((64 - (start + len(header) + 1) % 64) % 64) + "\n"
    count = 1
    for d in shape:
        count *= d
    data = bytes(range(256)) * 4
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    size = 8 if descr == "<i8" else 4
    return (b"\x93NUMPY" + bytes([version, 0]) + length + header.encode()
            + data[:count * size])
seeds = {"f4-2x3.npy": npy((2, 3)), "f4-scalar.npy": npy(()),
         "f4-empty.npy": npy((0, 4)), "i4-5.npy": npy((5,), "<i4"),
         "i8-3.npy": npy((3,), "<i8"), "v2.npy": npy((4,), version=2),
         "v3.npy": npy((2, 2), version=3),
         "double-quotes.npy": npy((3,), quote='"')}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
for name, method in (("stored.npz", zipfile.ZIP_STORED),
                     ("deflated.npz", zipfile.ZIP_DEFLATED)):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("W.npy", seeds["f4-2x3.npy"])
        with archive.open("b.npy", "w", force_zip64=True) as entry:
            entry.write(seeds["i4-5.npy"])
    with open(os.path.join(out, name), "wb") as f:
        f.write(buffer.getvalue())
PY
  # Explicit failures: callers test this function, which turns off set -e.
  "$BUILD_DIR/bin/npy-fuzz" -timeout=10 -rss_limit_mb=2048 \
    tools/npy-fuzz/regressions/* >"$BUILD_DIR/npy-regressions.log" 2>&1 ||
    { cat "$BUILD_DIR/npy-regressions.log"; return 1; }
  "$BUILD_DIR/bin/npy-fuzz" "$corpus" "$seeds" \
    -dict=tools/npy-fuzz/npy.dict -max_len=8192 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$BUILD_DIR/artifacts/" \
    -print_final_stats=1 "$@"
}

# The drivers' data readers (models/fuzz: parallel text, segmented and
# CoNLL-U corpora, raw text, word lists, SICK/SNLI pairs, GloVe/word2vec
# vectors; the first byte picks the reader): one small valid file of each
# as seeds, then the given libFuzzer flags on CORPUS.
#   fuzz_data CORPUS [libFuzzer flags...]
fuzz_data() {
  local corpus=$1 seeds=$BUILD_DIR/data-seeds
  shift
  rm -rf "$seeds" && mkdir -p "$seeds" "$corpus" "$BUILD_DIR/artifacts"
  python3 - "$seeds" <<'PY'
import os, sys
seeds = {
    0: "one two three\nfour five\n",
    1: "中国  人民\n新  世纪\n",
    2: "# sent_id = 1\n1\t中国\t_\t_\t_\t_\t0\troot\t_\t_\n"
       "2\t人民\t_\t_\t_\t_\t1\tdep\t_\t_\n\n",
    3: "中国人民\n\n新世纪\n",
    4: "中国\n人民\n",
    5: "pair_ID\tsentence_A\tsentence_B\trelatedness_score\t"
       "entailment_judgment\n1\tA man runs\tA dog sleeps\t3.2\tNEUTRAL\n",
    6: "a man runs\ta dog sleeps\n",
    7: "the 0.1 0.2 0.3 0.4\ncat 1 2 3 4\n",
    15: "2 4\nthe 0.1 0.2 0.3 0.4\ncat 1 2 3 4\n",
}
for reader, text in seeds.items():
    with open(os.path.join(sys.argv[1], f"reader-{reader}"), "wb") as f:
        f.write(bytes([reader]) + text.encode())
PY
  "$BUILD_DIR/bin/data-fuzz" "$corpus" "$seeds" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$BUILD_DIR/artifacts/" \
    -print_final_stats=1 "$@"
}

if [ "$stage" = npy ]; then
  fuzz_readers "${FUZZ_CORPUS:-$BUILD_DIR/corpus-npy}" \
    -max_total_time="$seconds" "$@"
  exit
fi
if [ "$stage" = data ]; then
  fuzz_data "${FUZZ_CORPUS:-$BUILD_DIR/corpus-data}" \
    -max_total_time="$seconds" "$@"
  exit
fi
# A bounded run of a readers' target from a fresh corpus with a fixed seed:
#   bounded TARGET FUNCTION RUNS   (FUNCTION: fuzz_readers or fuzz_data)
bounded() {
  local target=$1 run=$2 runs=$3 corpus log=$BUILD_DIR/$1.log
  corpus=$(mktemp -d)
  if ! "$run" "$corpus" -runs="$runs" -seed=1 >"$log" 2>&1; then
    rm -rf "$corpus"
    tail -n 30 "$log"
    echo "$target found something (the input is in $BUILD_DIR/artifacts)"
    exit 1
  fi
  rm -rf "$corpus"
  grep -E '^Done|^stat::new_units_added' "$log"
}

if [ "$stage" = object ]; then
  bounded npy-fuzz fuzz_readers "${CELLC_FUZZ_NPY_RUNS:-50000}"
  bounded data-fuzz fuzz_data "${CELLC_FUZZ_DATA_RUNS:-20000}"
fi

# Inputs that once crashed or hung cellc, bigger than -max_len below: each
# must end quickly in an error.
pathological=$BUILD_DIR/pathological
corpus=${FUZZ_CORPUS:-$BUILD_DIR/corpus-$stage}
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
