"""Random `.npy` arrays for `cellc run`, from a cell's plan, without numpy.

The plan (`cellc FILE --cell C -emit=plan`) names the cell's dimensions,
inputs, states, params and output width; this writes x_*, param_*, init_*,
lengths, dout and dfinal_* with random sizes and values, so that `cellc run`
runs the training forward and the backward pass.
"""

import os
import pathlib
import random
import re
import struct
import subprocess


def write_npy(path, shape, values, dtype="<f4"):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join(f"{d}, " for d in shape) if len(shape) == 1
        else ", ".join(str(d) for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    code = "f" if dtype == "<f4" else "i"
    with open(path, "wb") as out:
        out.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        out.write(header.encode("latin1"))
        out.write(struct.pack(f"<{len(values)}{code}", *values))


def evaluate(expr, dims):
    """A plan dimension expression (`2*H`, `I+H`, `4`) for bound dims."""
    total = 0
    for sign, term in re.findall(r"([+-]?)([^+-]+)", expr.replace(" ", "")):
        factor, _, name = term.rpartition("*")
        if name.isdigit():
            value = int(name) * (int(factor) if factor else 1)
        else:
            value = dims[name] * (int(factor) if factor else 1)
        total += -value if sign == "-" else value
    return total


def read_plan(cellc, path, name, env):
    result = subprocess.run([cellc, str(path), "--cell", name, "-emit=plan"],
                            capture_output=True, text=True, env=env)
    if result.returncode != 0:
        return None, result.stderr
    plan = {"dims": [], "input": [], "state": [], "param": [], "output": None}
    for line in result.stdout.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "dims":
            plan["dims"] = words[1:]
        elif words[0] in ("input", "state", "param"):
            plan[words[0]].append((words[1], words[2:]))
        elif words[0] == "output":
            plan["output"] = words[1]
        elif words[0] == "buffer":
            break
    return plan, ""


def write_random_arrays(cellc, path, name, folder, env, seed=0):
    """Writes the arrays to `folder`; returns a problem or ''."""
    plan, error = read_plan(cellc, path, name, env)
    if plan is None:
        return "cellc -emit=plan failed:\n" + error
    rng = random.Random(f"{path}:{name}:{seed}")
    dims = {d: rng.randint(2, 9) for d in plan["dims"]}
    T, B = rng.randint(1, 6), rng.randint(1, 4)
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)

    def values(count):
        return [rng.uniform(-0.5, 0.5) for _ in range(count)]

    def extent(exprs):
        return [evaluate(e, dims) for e in exprs]

    for input_name, (width,) in plan["input"]:
        shape = [T, B] + extent([width])
        write_npy(folder / f"x_{input_name}.npy", shape, values(T * B * shape[2]))
    for param, exprs in plan["param"]:
        shape = extent(exprs)
        write_npy(folder / f"param_{param}.npy", shape, values(_size(shape)))
    for state, (width,) in plan["state"]:
        n = evaluate(width, dims)
        write_npy(folder / f"init_{state}.npy", [B, n], values(B * n))
        write_npy(folder / f"dfinal_{state}.npy", [B, n], values(B * n))
    out = evaluate(plan["output"], dims)
    write_npy(folder / "dout.npy", [T, B, out], values(T * B * out))
    lengths = [T] + [rng.randint(1, T) for _ in range(B - 1)]
    write_npy(folder / "lengths.npy", [B], lengths, dtype="<i4")
    return ""


def _size(shape):
    size = 1
    for d in shape:
        size *= d
    return size


def compare_results(first, second):
    """'' when every result array is byte-identical in both folders."""
    names = sorted(p.name for p in pathlib.Path(first).iterdir()
                   if p.name.startswith(("out", "final_", "grad_")))
    if "out.npy" not in names:
        return f"{first}: no out.npy written"
    for name in names:
        a = (pathlib.Path(first) / name).read_bytes()
        other = pathlib.Path(second) / name
        if not other.exists():
            return f"{name}: written by the JIT run only"
        if a != other.read_bytes():
            return f"{name}: the JIT and AOT results differ"
    return ""


if __name__ == "__main__":
    import sys
    problem = write_random_arrays(sys.argv[1], sys.argv[2], sys.argv[3],
                                  sys.argv[4], dict(os.environ))
    print(problem or "written")
