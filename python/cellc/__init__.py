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

import operator
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


def _dims(dims):
    """`dims` as {name: int}, or a TypeError naming the entry that is not
    an integer (a float is never truncated). The values' range is the front
    end's to check, with the cell's location."""
    checked = {}
    for name, value in dict(dims or {}).items():
        if not isinstance(name, str):
            raise TypeError(f"dims keys must be dimension names (str), got "
                            f"{type(name).__name__} {name!r}")
        try:
            checked[name] = operator.index(value)
        except TypeError:
            raise TypeError(f"dims[{name!r}] must be an integer, got "
                            f"{type(value).__name__} {value!r}") from None
    return checked


def compile(path_or_source, cell=None, dims=None, training=True,
            cache_dir=None):
    """A compiled cell from a .cell file's path or from its text.

    cell: which cell of a file with several; dims: dimensions fixed at
    compile time ({"H": 512}); training: also compile the backward kernels;
    cache_dir: where compiled objects are cached (default: as cellc's C++
    API, $CELLC_CACHE_DIR or ~/.cache/cellc; "" turns caching off).
    Raises CompileError with the located diagnostics."""
    # A bytes path would reach the C++ side as text to compile.
    text = os.fspath(path_or_source) if isinstance(
        path_or_source, (str, os.PathLike)) else None
    if not isinstance(text, str):
        got = type(path_or_source).__name__
        raise TypeError("compile takes a .cell file's path (a str or "
                        "os.PathLike) or the cell's text (a str), got "
                        + (got if text is None else got + " giving bytes"))
    is_path = "\n" not in text and "{" not in text
    if is_path and not os.path.exists(text):
        raise FileNotFoundError(f"no cell file {text!r}")
    try:
        return _cellc._compile(text, is_path, cell or "", _dims(dims),
                               training, cache_dir)
    except _cellc.CompileFailure as failure:
        raise CompileError(str(failure)) from None
