"""cellc from Python: compile a recurrent cell written as equations, run it
forward, backward and one step at a time on NumPy arrays (no copies), and
use it as a PyTorch layer (cellc.torch.CellModule).

    import numpy as np, cellc
    atr = cellc.compile("cells/atr.cell")
    x = np.random.randn(7, 4, 16).astype(np.float32)          # [T, B, H]
    params = {name: np.random.randn(*[16] * len(shape)).astype(np.float32)
              for name, shape in atr.params}
    out, (h,) = atr.forward([x], params, lengths=[7, 5, 3, 1])

Layouts are the runtime's: inputs [T, B, LEN] time-major, states [B, LEN],
params as the cell declares them; arrays must be float32 and C-contiguous.
"""

import os
import re

from ._cellc import Cell, RunError, Tape, set_threads  # noqa: F401
from . import _cellc

__all__ = ["compile", "Cell", "Tape", "CompileError", "RunError",
           "set_threads"]

_LOCATION = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?P<column>\d+): "
                       r"error: (?P<message>[^\n]*)", re.MULTILINE)


class CompileError(Exception):
    """A cell that does not compile. `text` is every diagnostic, located as
    cellc prints them; `file`, `line`, `column` and `message` are the first
    error's (None where the error has no location)."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text
        first = _LOCATION.search(text)
        self.file = first["file"] if first else None
        self.line = int(first["line"]) if first else None
        self.column = int(first["column"]) if first else None
        self.message = first["message"] if first else text


def compile(path_or_source, cell=None, dims=None, training=True,
            cache_dir=None):
    """A compiled cell from a .cell file's path or from its text.

    cell: which cell of a file with several; dims: dimensions fixed at
    compile time ({"H": 512}); training: also compile the backward kernels;
    cache_dir: where compiled objects are cached (default: as cellc's C++
    API, $CELLC_CACHE_DIR or ~/.cache/cellc; "" turns caching off).
    Raises CompileError with the located diagnostics."""
    text = os.fspath(path_or_source)
    is_path = "\n" not in text and "{" not in text
    if is_path and not os.path.exists(text):
        raise FileNotFoundError(f"no cell file {text!r}")
    try:
        return _cellc._compile(text, is_path, cell or "", dict(dims or {}),
                               training, cache_dir)
    except _cellc.CompileFailure as failure:
        raise CompileError(str(failure)) from None
