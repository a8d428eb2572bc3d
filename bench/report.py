#!/usr/bin/env python3
"""Turns bench/results.txt (the lines cellc-bench and bench/run print) into
the generated part of bench/README.md and prints the RATIO lines.

  report.py RESULTS README

Everything between <!-- BEGIN RESULTS --> and <!-- END RESULTS --> in
README is replaced; the hand-written rest is kept (a missing README gets a
skeleton).
"""

import re
import statistics
import sys

BEGIN, END = "<!-- BEGIN RESULTS -->", "<!-- END RESULTS -->"
CELLS = ["atr", "gru", "lstm", "lau", "sru", "srnmt"]
PEERS = ["torch-eager", "torch-nn", "onednn-gru", "onednn-lbr-gru",
         "onednn-lstm", "cellc-untiled", "cellc-bf16"]
LABEL = {
    "cellc": "cellc",
    "floor": "GEMM floor",
    "torch-eager": "LibTorch eager",
    "torch-nn": "LibTorch nn",
    "onednn-gru": "oneDNN GRU",
    "onednn-lbr-gru": "oneDNN LBR-GRU",
    "onednn-lstm": "oneDNN LSTM",
    # cellrt without its tiled steps (CELLRT_TILED_STEPS=0): the schedule
    # before they became the default.
    "cellc-untiled": "cellc untiled",
    # Cell::withPrecision(BF16): products read bfloat16, f32 sums
    # (training only).
    "cellc-bf16": "cellc bf16",
}
MODE = {"fwd": "forward (inference)", "train": "forward + backward",
        "step": "decoding step"}


def fields(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def parse(path):
    data = {"results": {}, "skips": [], "aot": {}, "jit": {}, "meta": {},
            "failed": [], "jit_absent": False, "peaks": {}}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        tag = line.split()[0]
        if tag == "RESULT":
            f = fields(line)
            key = (f["impl"], f["cell"], f["mode"], int(f["T"]), int(f["B"]),
                   int(f["threads"]))
            data["results"][key] = f
        elif tag == "SKIP":
            data["skips"].append(fields(line))
        elif tag == "PEAK":
            f = fields(line)
            data["peaks"][(f["kind"], int(f["threads"]))] = f
        elif tag in ("FAILED", "ERROR"):
            data["failed"].append(line)
        elif tag == "AOT":
            f = fields(line)
            data["aot"][f["cell"]] = f
        elif tag == "JIT":
            f = fields(line)
            data["jit"][f["cell"]] = f
        elif tag == "JIT-ABSENT":
            data["jit_absent"] = True
        elif tag in ("MACHINE", "SETTINGS"):
            data["meta"][tag] = fields(line)
        elif tag in ("DATE", "COMMIT", "LOAD_START", "LOAD_END"):
            data["meta"][tag] = line.split(None, 1)[1]
    return data


def ms(r):
    return float(r["median_ms"])


def spread(r):
    """Half the min..max range, in % of the median."""
    m = ms(r)
    return 100.0 * (float(r["max_ms"]) - float(r["min_ms"])) / 2 / m if m else 0


def fmt_time(r, unit_ms):
    if r is None:
        return "—"
    v = ms(r)
    if unit_ms:
        text = f"{v:.1f}" if v >= 10 else f"{v:.2f}"
    else:  # step mode: microseconds
        text = f"{v * 1000:.0f}"
    return f"{text} ±{spread(r):.0f}%"


def workload_name(cell, mode, T, B, threads):
    if mode == "step":
        return f"{cell}-step-B{B}-{threads}t"
    return f"{cell}-{mode}-T{T}-B{B}-{threads}t"


def peak_rate(peaks, kinds, threads):
    """The best rate among `kinds` at `threads`, or None."""
    rates = [float(peaks[(k, threads)]["rate"]) for k in kinds
             if (k, threads) in peaks]
    return max(rates) if rates else None


def machine_floor_section(data, shapes, ratio_lines, ratios):
    """The machine's peaks and each workload's flop floor: the floor's GEMM
    flops at the best f32 GEMM rate this machine reached (and at the bf16
    rate). Empty when the run has no PEAK lines."""
    peaks = data["peaks"]
    if not peaks:
        return []
    out = ["### Against the machine's peak", ""]
    threads_seen = sorted({t for _, t in peaks})
    out.append("| peak | " + " | ".join(
        f"{t} thread{'s' if t > 1 else ''}" for t in threads_seen) + " |")
    out.append("|---" * (1 + len(threads_seen)) + "|")
    for kind in ("sgemm", "matmul-f32", "matmul-bf16", "copy", "fma-f32",
                 "dot-bf16"):
        row = [f"`{kind}`"]
        for t in threads_seen:
            p = peaks.get((kind, t))
            row.append(f"{float(p['rate']):.0f} {p['unit']}" if p else "—")
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    out.append("GEMMs at n = 2048 (`cellc-bench --peak`); `matmul-*` is "
               "oneDNN's matmul primitive with the weights packed once into "
               "its preferred layout, `copy` counts the bytes read and "
               "written. The flop floor of a workload is the GEMM floor's "
               "flops (`gemm_gflop`, counted as it runs) at the best f32 "
               "rate measured at its thread count: the time of those products "
               "if every one ran as fast as a large, packed GEMM (the "
               "per-step products are smaller and slower). cellc / flop "
               "floor is cellc's time over that; the bf16 floor is at the "
               "`matmul-bf16` rate. `fma-f32` and `dot-bf16` are the "
               "instruction ceilings under the GEMMs: 24 independent chains "
               "of `vfmadd231ps zmm` (32 flops) or AVX512_BF16's "
               "`vdpbf16ps zmm` (64 flops) per thread; a bf16 GEMM can only "
               "beat an f32 one where the second is the faster.")
    out.append("")
    out.append("| workload | GEMM GFLOP | flop floor (ms) | cellc (ms) | "
               "cellc / flop floor | bf16 flop floor (ms) |")
    out.append("|---|---|---|---|---|---|")
    for name, threads, c, f in floor_workloads(data, shapes, "gemm_gflop"):
        f32 = peak_rate(peaks, ("sgemm", "matmul-f32"), threads)
        bf16 = peak_rate(peaks, ("matmul-bf16",), threads)
        if f32:
            gflop = float(f["gemm_gflop"])
            floor_ms = gflop / f32 * 1e3
            ratios[(name, "flopfloor")] = floor_ms / ms(c)
            ratio_lines.append(f"RATIO {name}-flopfloor "
                               f"{floor_ms / ms(c):.3f}")
            bf16_ms = f"{gflop / bf16 * 1e3:.3g}" if bf16 else "—"
            out.append(f"| {name} | {gflop:.3g} | {floor_ms:.3g} | "
                       f"{ms(c):.3g} | {ms(c) / floor_ms:.2f}× | "
                       f"{bf16_ms} |")
    out.append("")
    out += memory_floor_lines(data, shapes, ratio_lines, ratios)
    return out


def floor_workloads(data, shapes, key):
    """(name, threads, cellc's result, the floor's) of every sequence
    workload whose floor line carries `key`. Decoding steps are left out:
    their products are matrix-vector products, bound by reading the
    weights, not by flops or the scan's bytes; the GEMM floor is theirs."""
    res = data["results"]
    for (mode, T, B, threads) in shapes:
        if mode == "step":
            continue
        for cell in CELLS:
            c = res.get(("cellc", cell, mode, T, B, threads))
            f = res.get(("floor", cell, mode, T, B, threads))
            if c and f and key in f:
                yield workload_name(cell, mode, T, B, threads), threads, c, f


def memory_floor_lines(data, shapes, ratio_lines, ratios):
    """SRU and SR-NMT: the flop floor plus the bytes a fused element-wise
    scan must move (the floor's `scan_mb`) at the measured copy rate."""
    peaks = data["peaks"]
    rows = []
    for name, threads, c, f in floor_workloads(data, shapes, "scan_mb"):
        f32 = peak_rate(peaks, ("sgemm", "matmul-f32"), threads)
        copy = peak_rate(peaks, ("copy",), threads)
        if f32 and copy:
            flop_ms = float(f["gemm_gflop"]) / f32 * 1e3
            scan_ms = float(f["scan_mb"]) / copy  # MB / (GB/s) = ms
            floor_ms = flop_ms + scan_ms
            ratios[(name, "memfloor")] = floor_ms / ms(c)
            ratio_lines.append(f"RATIO {name}-memfloor "
                               f"{floor_ms / ms(c):.3f}")
            rows.append(f"| {name} | {float(f['scan_mb']):.4g} | "
                        f"{flop_ms:.3g} | {scan_ms:.3g} | {floor_ms:.3g} | "
                        f"{ms(c):.3g} | {ms(c) / floor_ms:.2f}× |")
    if not rows:
        return []
    return ["The memory floor of the cells whose time is an element-wise "
            "scan (SRU, SR-NMT): the flop floor plus the bytes a perfectly "
            "fused scan must read and write (forward 5 floats of H per row: "
            "the projection's 3, x, the output; training 16, with the saved "
            "state and the backward pass; bench/Bench.h) at the `copy` "
            "rate.", "",
            "| workload | scan MB | flop floor (ms) | scan at copy rate (ms) "
            "| memory floor (ms) | cellc (ms) | cellc / memory floor |",
            "|---|---|---|---|---|---|---|"] + rows + [""]


# Issue #16's bounds against LibTorch in sequences, by thread count.
TORCH_BOUNDS = ((1, 1.35), (2, 1.75))


def speedups(res, mode, T, B):
    """(cell, cellc's 1-thread time / its 2-thread time) per cell."""
    for cell in CELLS:
        one = res.get(("cellc", cell, mode, T, B, 1))
        two = res.get(("cellc", cell, mode, T, B, 2))
        if one and two:
            yield f"{cell}-{mode}-T{T}-B{B}", ms(one) / ms(two)


def targets_section(data, ratios):
    """Issue #16's targets as it states them, each checked against this
    run's ratios (peer time / cellc time, floor time / cellc time), and the
    compile-time targets of the first benchmark issue."""
    res = data["results"]
    checks = []

    def check(desc, items, bound, higher_is_better=True):
        """items: [(label, value)]; value compared with bound."""
        items = list(items)
        if not items:
            checks.append((desc, "not measured", []))
            return
        bad = [(l, v) for l, v in items
               if (v < bound if higher_is_better else v > bound)]
        worst = (min if higher_is_better else max)(items, key=lambda x: x[1])
        status = "holds" if not bad else f"fails in {len(bad)} of {len(items)}"
        checks.append((desc, f"{status}; worst {worst[0]} = {worst[1]:.3f}",
                       bad))

    def seq(peer, threads=None):
        return [(n, r) for (n, p), r in ratios.items()
                if p == peer and "-step-" not in n
                and (threads is None or n.endswith(f"-{threads}t"))]

    def step(peer, batch=None):
        return [(n, r) for (n, p), r in ratios.items()
                if p == peer and "-step-" in n
                and (batch is None or f"-B{batch}-" in n)]

    for peer in ("onednn-gru", "onednn-lbr-gru", "onednn-lstm"):
        check(f"≥ 1.0× {LABEL[peer]}'s speed (sequences, 1 and 2 threads): "
              f"{LABEL[peer]} time / cellc time", seq(peer), 1.0)
    for threads, bound in ((1, 1.05), (2, 1.10)):
        check(f"≤ {bound:.2f}× the plan's GEMM floor at {threads} thread"
              f"{'s' if threads > 1 else ''} (every cell, sequences): "
              "cellc time / floor time",
              [(n, 1 / r) for n, r in seq("floor", threads)], bound, False)
    bound = 1.15
    check(f"SRU and SR-NMT ≤ {bound}× their memory floor: cellc time / "
          "memory floor", [(n, 1 / r) for (n, p), r in ratios.items()
                           if p == "memfloor"], bound, False)
    bound = 1.7
    check(f"speed-up from 1 to 2 threads ≥ {bound}× (training, T=100 "
          "B=64): cellc 1-thread time / 2-thread time",
          speedups(res, "train", 100, 64), bound)
    bound = 1.05
    check(f"decoding step ≤ {bound}× the floor (B=1 and B=10, 1 and 2 "
          "threads): cellc time / floor time",
          [(n, 1 / r) for n, r in step("floor")], bound, False)
    bound = 1.6
    check(f"bf16 training ≥ {bound}× faster than f32 (T=50 B=64, "
          "ATR/GRU/LSTM, 1 and 2 threads): cellc time / cellc bf16 time",
          [(n, 1 / r) for n, r in seq("cellc-bf16")
           if "-train-T50-" in n and n.split("-")[0] in ("atr", "gru",
                                                          "lstm")], bound)
    for threads, bound in TORCH_BOUNDS:
        for peer in ("torch-eager", "torch-nn"):
            check(f"vs {LABEL[peer]} ≥ {bound}× at {threads} thread"
                  f"{'s' if threads > 1 else ''} (sequences)",
                  seq(peer, threads), bound)
    bound = 2.5
    for peer in ("torch-eager", "torch-nn"):
        check(f"vs {LABEL[peer]} ≥ {bound}× at the B=10 decoding step",
              step(peer, 10), bound)
    check("compile time ≤ 0.5 s per cell (AOT, median)",
          [(c, float(a["median_s"])) for c, a in data["aot"].items()], 0.5,
          False)
    check("compile time ≤ 0.5 s per cell (JIT uncached, median)",
          [(c, float(j["median_s"])) for c, j in data["jit"].items()], 0.5,
          False)

    out = ["### Targets", "",
           "Issue #16's targets as the issue states them (and the compile "
           "times of the first benchmark issue), checked on this run.", "",
           "| target | result |", "|---|---|"]
    out += [f"| {desc} | {status} |" for desc, status, _ in checks]
    out.append("")
    for desc, status, bad in checks:
        if bad:
            out.append(f"* {desc} — misses: " + ", ".join(
                f"{l} {v:.3f}" for l, v in sorted(bad, key=lambda x: x[1])))
    out.append("")
    out += unreachable_lines(ratios)
    return out


def unreachable_lines(ratios):
    """The LibTorch targets a cellc at the flop floor would still miss: the
    peer's time over the flop floor (the products alone at the machine's
    peak GEMM rate) is the highest ratio any implementation of the same
    products can reach."""
    out = []
    for threads, bound in TORCH_BOUNDS:
        rows = []
        for peer in ("torch-eager", "torch-nn"):
            for (name, p), r in sorted(ratios.items()):
                floor = ratios.get((name, "flopfloor"))
                if (p == peer and floor and name.endswith(f"-{threads}t")
                        and r < bound and r / floor < bound):
                    rows.append(f"{name} vs {LABEL[peer]} {r / floor:.3f}")
        if rows:
            out += [f"Out of reach on this machine at {threads} thread"
                    f"{'s' if threads > 1 else ''}: cellc at the flop floor "
                    f"would still be under {bound}× against these (peer "
                    "time / flop floor): " + ", ".join(rows) + ".", ""]
    return out

def main():
    results_path, readme_path = sys.argv[1], sys.argv[2]
    data = parse(results_path)
    res = data["results"]
    out = []  # README lines
    ratio_lines = []
    ratios = {}  # (name, peer) -> ratio

    shapes = sorted({(k[2], k[3], k[4], k[5]) for k in res},
                    key=lambda s: (["fwd", "train", "step"].index(s[0]),
                                   s[1], -s[2], s[3]))

    meta = data["meta"]
    machine = meta.get("MACHINE", {})
    settings = meta.get("SETTINGS", {})
    out.append("## Results of the last run")
    out.append("")
    out.append(f"* Machine: {machine.get('model', '?').replace('_', ' ')}, "
               f"{machine.get('cpus', '?')} CPUs "
               f"({machine.get('cores_per_socket', '?')} cores, "
               f"{machine.get('threads_per_core', '?')} thread per core), "
               f"L2 {machine.get('l2', '?').replace('_', ' ')}, "
               f"L3 {machine.get('l3', '?').replace('_', ' ')}, "
               f"AVX-512: {machine.get('avx512', '?')}.")
    out.append(f"* Date: {meta.get('DATE', '?')}; commit "
               f"{meta.get('COMMIT', '?')}.")
    out.append(f"* Load average (1/5/15 min) at the start "
               f"{meta.get('LOAD_START', '?')}, at the end "
               f"{meta.get('LOAD_END', '?')}.")
    out.append(f"* Environment: OPENBLAS_CORETYPE="
               f"{settings.get('OPENBLAS_CORETYPE', '?')} OMP_WAIT_POLICY="
               f"{settings.get('OMP_WAIT_POLICY', '?')}; "
               f"{settings.get('reps', '?')} timed repetitions per sequence "
               f"workload and {settings.get('step_reps', '?')} per decoding "
               f"workload (100 steps each), after one warm-up.")
    out.append("* Times are medians; ±x% is half the min–max range over the "
               "repetitions. Ratios are peer time / cellc time (above 1: "
               "cellc is faster); for the floor, floor time / cellc time "
               "(1.0 would be cellc at the GEMM floor, 0.91 = cellc 1.10× "
               "the floor).")
    if data["failed"]:
        out.append("* Failures: " + "; ".join(f"`{f}`" for f in data["failed"]))
    out.append("")

    # Compile time.
    out.append("### Compile time per cell")
    out.append("")
    out.append("| cell | AOT `cellc X.cell -o X.o` (s) | JIT uncached (s) | "
               "JIT first in process (s) | JIT cached load (s) |")
    out.append("|---|---|---|---|---|")
    for cell in CELLS:
        a = data["aot"].get(cell)
        j = data["jit"].get(cell)
        aot = (f"{float(a['median_s']):.3f} ({float(a['min_s']):.3f}–"
               f"{float(a['max_s']):.3f})") if a else "—"
        if j:
            jit = (f"{float(j['median_s']):.3f} ({float(j['min_s']):.3f}–"
                   f"{float(j['max_s']):.3f})")
            first = j["first_s"]
            cached = j["cached_s"]
        else:
            jit = first = cached = "not measured" if data["jit_absent"] else "—"
        out.append(f"| {cell} | {aot} | {jit} | {first} | {cached} |")
    out.append("")
    out.append("AOT: wall time of the `cellc` process (startup included), "
               "median of 3. JIT: `cellc::jit::compileFile` with the disk "
               "cache off, median of 3 after one untimed compile; \"first in "
               "process\" is that untimed compile ((process-first) marks the "
               "one that pays LLVM/MLIR initialisation); \"cached\" is a "
               "second compile with a disk cache.")
    out.append("")

    # Time tables.
    for (mode, T, B, threads) in shapes:
        unit_ms = mode != "step"
        title = (f"### {MODE[mode]}, T={T} B={B} I=H=512, {threads} thread"
                 f"{'s' if threads > 1 else ''}") if mode != "step" else (
                 f"### {MODE[mode]}, B={B} I=H=512, {threads} thread"
                 f"{'s' if threads > 1 else ''} (µs per step)")
        impls = [i for i in ["cellc", "floor"] + PEERS
                 if any((i, c, mode, T, B, threads) in res for c in CELLS)]
        out.append(title)
        out.append("")
        header = "| cell | " + " | ".join(LABEL[i] for i in impls)
        header += " | floor/cellc | " + " | ".join(
            f"{LABEL[p]}/cellc" for p in impls if p in PEERS) + " |"
        out.append(header)
        out.append("|---" * (1 + len(impls) + 1 +
                             len([p for p in impls if p in PEERS])) + "|")
        for cell in CELLS:
            c = res.get(("cellc", cell, mode, T, B, threads))
            if c is None:
                continue
            name = workload_name(cell, mode, T, B, threads)
            row = [cell] + [fmt_time(res.get((i, cell, mode, T, B, threads)),
                                     unit_ms) for i in impls]
            f = res.get(("floor", cell, mode, T, B, threads))
            if f:
                r = ms(f) / ms(c)
                ratios[(name, "floor")] = r
                ratio_lines.append(f"RATIO {name}-floor {r:.3f}")
                row.append(f"{r:.2f}")
            else:
                row.append("—")
            for p in impls:
                if p not in PEERS:
                    continue
                pr = res.get((p, cell, mode, T, B, threads))
                if pr:
                    r = ms(pr) / ms(c)
                    ratios[(name, p)] = r
                    ratio_lines.append(f"RATIO {name}-{p} {r:.3f}")
                    row.append(f"**{r:.2f}**")
                else:
                    row.append("—")
            out.append("| " + " | ".join(row) + " |")
        out.append("")

    out.extend(machine_floor_section(data, shapes, ratio_lines, ratios))

    # Memory.
    out.append("### Peak memory (MB)")
    out.append("")
    out.append("`work`: peak RSS during the timed iterations above the RSS "
               "once params, inputs and gradient arrays exist (the "
               "implementation's own activations, tape, temporaries); "
               "`total`: peak RSS of the workload above the child process's "
               "RSS before it built anything (so params, inputs and "
               "gradients included). One forked child per workload, read "
               "from /proc/self/status (VmHWM, reset with clear_refs). "
               "1 thread.")
    out.append("")
    mem_shapes = [s for s in shapes if s[3] == 1]
    for (mode, T, B, threads) in mem_shapes:
        impls = [i for i in ["cellc", "floor"] + PEERS
                 if any((i, c, mode, T, B, threads) in res for c in CELLS)]
        label = (f"{MODE[mode]} T={T} B={B}" if mode != "step"
                 else f"{MODE[mode]} B={B}")
        out.append(f"**{label}** (work / total)")
        out.append("")
        out.append("| cell | " + " | ".join(LABEL[i] for i in impls) + " |")
        out.append("|---" * (1 + len(impls)) + "|")
        for cell in CELLS:
            if ("cellc", cell, mode, T, B, threads) not in res:
                continue
            row = [cell]
            for i in impls:
                r = res.get((i, cell, mode, T, B, threads))
                row.append(f"{float(r['work_mb']):.0f} / "
                           f"{float(r['peak_mb']):.0f}" if r else "—")
            out.append("| " + " | ".join(row) + " |")
        out.append("")

    out.extend(targets_section(data, ratios))

    generated = "\n".join(out)
    try:
        readme = open(readme_path).read()
    except FileNotFoundError:
        readme = f"# cellc benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in readme or END not in readme:
        readme += f"\n{BEGIN}\n{END}\n"
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    open(readme_path, "w").write(
        head + BEGIN + "\n" + generated + "\n" + END + tail)

    # stdout: medians and spreads, then the RATIO lines.
    for key in sorted(res):
        r = res[key]
        impl, cell, mode, T, B, threads = key
        print(f"MEDIAN {workload_name(cell, mode, T, B, threads)} {impl} "
              f"{ms(r):.4f} ms spread ±{spread(r):.1f}% "
              f"(min {float(r['min_ms']):.4f} max {float(r['max_ms']):.4f}, "
              f"n={r['reps']})")
    for line in ratio_lines:
        print(line)


if __name__ == "__main__":
    main()
