#!/usr/bin/env python3
"""Differential tester: random cells through every path cellc offers.

For each generated file (test/random/cellgen.py) and each of its cells:
  1. `cellc FILE -o FILE.o` (the AOT object of every cell);
  2. `cellc check FILE --cell C`: forward, final states and every gradient
     against a float64 LibTorch interpreter of the equations, plus finite
     differences, in both directions with ragged lengths;
  3. `cellc run` on random arrays twice, once through the JIT and once on
     the AOT object linked into a shared library, and the outputs and
     gradients compared bit for bit;
  4. `cellc FILE --target=nvptx -emit=ptx` accepted by ptxas.
A cell that fails any step is kept in --keep (with the commands and their
output) so it can be minimised into a regression test.

  test/random/differential.py --cells 300 --seed 1       # CI's set
  test/random/differential.py --cells 10000 --seed 1000  # a long run
"""

import argparse
import concurrent.futures
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cellgen  # noqa: E402
import runarrays  # noqa: E402


def run(command, timeout=120, env=None):
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=timeout, env=env)
        return result.returncode, result.stdout + result.stderr
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout} s"
    except OSError as error:
        return -1, f"cannot run {command[0]}: {error}"


def value_names(text, cell):
    """The names the statements of `cell` in `text` define (h' included)."""
    block = re.search(r"^cell " + re.escape(cell) + r"\(.*?^}", text,
                      re.MULTILINE | re.DOTALL)
    names = []
    for line in block.group(0).splitlines()[1:]:
        match = re.match(r"\s+([A-Za-z_][\w']*(?:\s*,\s*[A-Za-z_][\w']*)*)\s*=",
                         line)
        if match:
            names += [n.strip() for n in match.group(1).split(",")]
    return names


class Checker:
    def __init__(self, args):
        self.args = args
        self.env = dict(os.environ, CELLC_CACHE_DIR=os.path.join(args.work, "cache"))

    def check_file(self, seed):
        """(cells checked, list of (cell, step, log)) for one seed."""
        text, names = cellgen.generate_file(seed)
        folder = pathlib.Path(self.args.work) / f"s{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "cell.cell"
        path.write_text(text)
        failures = []
        cellc = self.args.cellc
        code, log = run([cellc, str(path), "-o", str(folder / "cell.o")], env=self.env)
        if code != 0:
            failures.append(("*", "aot", log))
        for name in names:
            failures += self.check_cell(path, folder, name, code == 0)
        if self.args.ptxas:
            ptx = folder / "cell.ptx"
            code, log = run([cellc, str(path), "--target=nvptx", "-emit=ptx", "-o", str(ptx)])
            if code == 0:
                code, log = run([self.args.ptxas, "-arch=sm_80", str(ptx), "-o",
                                 str(folder / "cell.cubin")])
            if code != 0:
                failures.append(("*", "ptx", log))
        if failures:
            self.keep(seed, text, failures)
        shutil.rmtree(folder, ignore_errors=True)
        return len(names), failures

    def check_cell(self, path, folder, name, have_object):
        failures = []
        code, log = run([self.args.cellc, "check", str(path), "--cell", name,
                         "--fd-points", "2"], env=self.env)
        if code != 0 or "PASS:" not in log:
            failures.append((name, "check", log))
        if self.args.probes:
            failures += self.check_probes(path, name)
        if have_object and not self.args.no_aot:
            problem = self.compare_jit_and_aot(path, folder, name)
            if problem:
                failures.append((name, "jit-vs-aot", problem))
        return failures

    def check_probes(self, path, name):
        """`cellc check --probe` on every value the cell defines: each
        probe against the reference's value, and the gradients unchanged."""
        names = value_names(path.read_text(), name)
        while names:
            code, log = run([self.args.cellc, "check", str(path), "--cell",
                             name, "--probe", ",".join(names),
                             "--fd-points", "1"], env=self.env)
            constant = re.search(r"--probe (\S+): '\S+' of cell '\S+' is a "
                                 r"constant", log)
            if code != 0 and constant:
                names.remove(constant.group(1))  # folded away: nothing to probe
                continue
            if code != 0 or "PASS:" not in log:
                return [(name, "check-probes", log)]
            return []
        return []

    def compare_jit_and_aot(self, path, folder, name):
        """Runs the cell through the JIT and through the AOT object."""
        shared = folder / "cell.so"
        if not shared.exists():
            code, log = run([self.args.cc, "-shared", "-o", str(shared),
                             str(folder / "cell.o")])
            if code != 0:
                return "linking the AOT object failed:\n" + log
        arrays = folder / f"run_{name}"
        problem = runarrays.write_random_arrays(self.args.cellc, path, name,
                                                arrays, self.env)
        if problem:
            return problem
        outputs = {}
        direction = ["--reverse"] if sum(map(ord, name)) % 2 else []
        for mode, extra in (("jit", []), ("aot", ["--object", str(shared)])):
            extra = extra + direction
            out = folder / f"out_{name}_{mode}"
            shutil.copytree(arrays, out)
            code, log = run([self.args.cellc, "run", str(path), "--cell", name,
                             "--dir", str(out)] + extra, env=self.env)
            if code != 0:
                return f"cellc run ({mode}) failed:\n{log}"
            outputs[mode] = out
        return runarrays.compare_results(outputs["jit"], outputs["aot"])

    def keep(self, seed, text, failures):
        keep = pathlib.Path(self.args.keep)
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"seed{seed}.cell").write_text(text)
        with open(keep / f"seed{seed}.log", "w") as log:
            for cell, step, output in failures:
                log.write(f"=== {cell}: {step}\n{output}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=0,
                        help="files to generate (each has 1-3 cells)")
    parser.add_argument("--cells", type=int, default=300,
                        help="without --count: files until this many cells")
    parser.add_argument("--seed", type=int, default=1, help="first seed")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--cellc", default="cellc")
    parser.add_argument("--ptxas", default=shutil.which("ptxas") or
                        ("/usr/local/cuda/bin/ptxas"
                         if os.path.exists("/usr/local/cuda/bin/ptxas") else ""))
    parser.add_argument("--cc", default=shutil.which("clang-16") or "cc")
    parser.add_argument("--probes", action="store_true",
                        help="also `cellc check --probe` every value of "
                             "every cell (cellc --probe over the language)")
    parser.add_argument("--no-aot", action="store_true",
                        help="skip the JIT-vs-AOT comparison")
    parser.add_argument("--keep", default="random-failures",
                        help="folder for failing files and their logs")
    parser.add_argument("--work", default=None, help="scratch folder")
    args = parser.parse_args()
    scratch = None
    if args.work is None:
        scratch = tempfile.TemporaryDirectory(prefix="cellc-random-")
        args.work = scratch.name

    if not args.count:
        total = 0
        while total < args.cells:
            total += len(cellgen.generate_file(args.seed + args.count)[1])
            args.count += 1
    checker = Checker(args)
    cells = failed_cells = 0
    seeds = range(args.seed, args.seed + args.count)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for done, (seed, (count, failures)) in enumerate(
                zip(seeds, pool.map(checker.check_file, seeds)), 1):
            cells += count
            failing = {cell for cell, _, _ in failures}
            failed_cells += count if "*" in failing else len(failing)
            for cell, step, _ in failures:
                print(f"FAIL seed {seed} cell {cell}: {step} "
                      f"(kept in {args.keep}/seed{seed}.cell)", flush=True)
            if done % 50 == 0:
                print(f"[{done}/{args.count} files] {cells} cells, "
                      f"{failed_cells} failed", flush=True)
    print(f"random cells: seeds {args.seed}..{args.seed + args.count - 1}, "
          f"{args.count} files, ptxas {'on' if args.ptxas else 'off'}")
    print(f"{cells - failed_cells} passed, {failed_cells} failed")
    return 1 if failed_cells else 0


if __name__ == "__main__":
    sys.exit(main())
