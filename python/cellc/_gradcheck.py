"""gradcheck(module): `cellc check` on a PyTorch module's own params.

The check (tools/cellc-check) compiles the module's cell from its source
and compares it, forward and backward, with a float64 LibTorch interpreter
of its equations, plus finite differences of that interpreter, on the
module's params and the sizes their shapes bind; inputs, states and
gradients are random from `seed`. It runs as the cellc-check program, which
links LibTorch's C++ library, so the Python module needs neither.
"""

import os
import re
import shutil
import subprocess
import tempfile

import cellc

__all__ = ["gradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """The check found the compiled cell off its equations on the module's
    params, or could not run them; `report` is its output."""

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report


def _checker():
    """cellc-check: the installed package's bin/, else the build tree's
    bin/ (the module in build/python/cellc), else PATH."""
    package = os.path.dirname(os.path.abspath(cellc.__file__))
    build = os.path.dirname(os.path.dirname(package))
    places = [os.path.join(package, "bin", "cellc-check"),
              os.path.join(build, "bin", "cellc-check")]
    for path in places:
        if os.access(path, os.X_OK):
            return path
    found = shutil.which("cellc-check")
    if found:
        return found
    raise FileNotFoundError(
        "gradcheck needs the cellc-check program (built where LibTorch's C++ "
        f"library is installed); not in {' or '.join(places)} nor on PATH")


def _runs(module):
    """(label, {param: tensor}, dims) for each separate check: the module,
    or each layer and direction of a cellc.torch.RNN."""
    names = [name for name, _ in module.cell.params]
    if hasattr(module, "_layers"):
        return [(f"layer {k}" + (" reverse" if suffix.endswith("_reverse")
                                 else ""),
                 {name: getattr(module, name + suffix) for name in names},
                 dims) for k, suffix, dims in module._layers()]
    if hasattr(module, "save_params"):
        return [("", {name: getattr(module, name) for name in names},
                 module.dims)]
    raise TypeError("gradcheck takes a cellc.torch.CellModule or "
                    f"cellc.torch.RNN, got {type(module).__name__}")


def _refuse_non_finite(runs):
    """A NaN or Inf param would fail every comparison for a reason that is
    not the cell's: refused before anything runs."""
    import torch
    for label, params, _ in runs:
        for name, value in params.items():
            if not bool(torch.isfinite(value.detach()).all()):
                where = f" ({label})" if label else ""
                raise ValueError(f"gradcheck: param {name}{where} holds NaN "
                                 "or Inf; the check needs finite params")


def _write_params(path, params):
    """The params as float32 entries NAME.npy, as np.savez writes them."""
    import zipfile
    import numpy as np
    with zipfile.ZipFile(path, "w") as archive:
        for name, value in params.items():
            with archive.open(name + ".npy", "w", force_zip64=True) as entry:
                np.lib.format.write_array(
                    entry, value.detach().cpu().float().contiguous().numpy())


def _free_dims(cell, dims):
    """--dim for each of `dims` that no param's shape names: the params'
    shapes bind the others."""
    named = set()
    for _, shape in cell.params:
        for extent in shape:
            named.update(re.findall(r"[A-Za-z_]\w*", str(extent)))
    return [f"--dim={name}={value}" for name, value in sorted(dims.items())
            if name not in named]


def _check(checker, cell, label, params, dims, options, folder):
    """One cellc-check run; raises GradcheckError unless it passes."""
    source = os.path.join(folder, cell.name + ".cell")
    archive = os.path.join(folder, "params.npz")
    with open(source, "w") as file:
        file.write(cell.source)
    _write_params(archive, params)
    command = [checker, source, "--cell", cell.name, "--params", archive,
               *options, *_free_dims(cell, dims)]
    result = subprocess.run(command, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        where = f" ({label})" if label else ""
        raise GradcheckError(
            f"cellc check of cell {cell.name}{where} failed on the module's "
            f"params:\n{result.stdout}", result.stdout)


def gradcheck(module, steps=5, batch=3, seed=1, fd_points=3):
    """Checks a cellc.torch.CellModule or cellc.torch.RNN (each layer and
    direction on its own) as `cellc check --params` does: its cell's
    kernels, forward and backward, against a float64 LibTorch interpreter
    of the cell's equations and finite differences, on the module's params
    and the dims their shapes give; `steps` and `batch` size the random
    inputs, drawn from `seed`; `fd_points` coordinates per array get
    finite differences. Returns True, or raises GradcheckError holding the
    check's report. Params with NaN or Inf are a ValueError."""
    runs = _runs(module)
    _refuse_non_finite(runs)
    checker = _checker()
    options = [f"--steps={int(steps)}", f"--batch={int(batch)}",
               f"--seed={int(seed)}", f"--fd-points={int(fd_points)}"]
    for label, params, dims in runs:
        with tempfile.TemporaryDirectory(prefix="cellc-gradcheck-") as folder:
            _check(checker, module.cell, label, params, dims, options, folder)
    return True
