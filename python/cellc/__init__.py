"""cellc from Python: compile a recurrent cell written as equations, run it
forward, backward and one step at a time on NumPy arrays (no copies), and
use it as a PyTorch layer (cellc.torch.CellModule).

    import numpy as np, cellc
    atr = cellc.compile(cellc.cell_path("atr"))           # cells/atr.cell
    x = np.random.randn(7, 4, 16).astype(np.float32)       # [T, B, H]
    params = {name: np.random.randn(*[16] * len(shape)).astype(np.float32)
              for name, shape in atr.params}
    out, (h,) = atr.forward([x], params, lengths=[7, 5, 3, 1])

Layouts are the runtime's: inputs [T, B, LEN] time-major, states [B, LEN],
params as the cell declares them; arrays must be float32 and C-contiguous.

Installed with `pip install --no-build-isolation .` from a CMake build of
the checkout (README.md, "From Python / PyTorch"), or imported from the
build tree with PYTHONPATH=build/python. `cellc.__version__` is the
project's version; `cell_path(name)` is the file of a cell shipped with
cellc (`cellc.cell_path("gru")`).

Warnings of the compiler (an unused param, two dimensions made one) are
Python warnings of the class CompileWarning, located as cellc prints them,
on every compile (a compile from the cache replays them).

Probes: `cellc.compile(path, probes=["i", "f"])` compiles kernels that also
write those values of every step; `cell.probes` lists them as [(name,
length)], and `cell.forward(..., return_probes=True)` returns a third
element, {name: [T, B, LEN] array} (`cell.step(..., return_probes=True)`:
{name: [B, LEN]}).

A compiled Cell pickles as what it was compiled from (its text, cell name,
dims, training flag, probes) and its precision: unpickling compiles it
again, through the JIT's cache in its default place. copy.copy and
copy.deepcopy share the immutable compiled cell.
"""

import operator
import os
import re
import warnings

from ._cellc import Cell, RunError, Tape, set_threads  # noqa: F401
from ._cellc import __version__  # noqa: F401
from . import _cellc

__all__ = ["compile", "cell_path", "Cell", "Tape", "CompileError",
           "CompileWarning", "RunError", "set_threads"]

# A diagnostic's first line, as cellc prints it: "FILE:LINE:COL: SEVERITY: ".
_DIAGNOSTIC = (r"^(?P<file>[^\s:][^\n:]*):(?P<line>\d+):(?P<column>\d+): "
               r"{severity}: (?P<message>[^\n]*)")


class _Located:
    """A diagnostic's text and its first `severity`'s location: `text`,
    `file`, `line`, `column` and `message` (None where it has no
    location)."""

    _severity = None

    def __init__(self, text):
        super().__init__(text)
        self.text = text
        first = re.search(_DIAGNOSTIC.format(severity=self._severity), text,
                          re.MULTILINE)
        self.file = first["file"] if first else None
        self.line = int(first["line"]) if first else None
        self.column = int(first["column"]) if first else None
        self.message = first["message"] if first else text


class CompileError(_Located, Exception):
    """A cell that does not compile. `text` is every diagnostic, located as
    cellc prints them; `file`, `line`, `column` and `message` are the first
    error's (None where the error has no location)."""

    _severity = "error"


class CompileWarning(_Located, UserWarning):
    """One warning of the compiler, e.g. `atr.cell:3:33: warning: param 'b'
    is never used`, with the source line and a caret. `file`, `line`,
    `column` and `message` as CompileError's."""

    _severity = "warning"


def _warn(text, stacklevel):
    """Each located warning in the compiler's `text` as a CompileWarning
    (with the source line and caret that follow its first line)."""
    starts = [m.start() for m in re.finditer(
        _DIAGNOSTIC.format(severity="warning"), text, re.MULTILINE)]
    if not starts and text.strip():
        starts = [0]
    for start, end in zip(starts, starts[1:] + [len(text)]):
        warnings.warn(CompileWarning(text[start:end].rstrip("\n")),
                      stacklevel=stacklevel + 1)


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


def _probes(probes):
    """`probes` as a list of names; a str would be read as its letters."""
    if isinstance(probes, str) or not all(
            isinstance(name, str) for name in probes or ()):
        raise TypeError(f"probes must be a list of value names (str), got "
                        f"{probes!r}")
    return list(probes or ())


def compile(path_or_source, cell=None, dims=None, training=True,
            cache_dir=None, probes=None):
    """A compiled cell from a .cell file's path or from its text.

    cell: which cell of a file with several; dims: dimensions fixed at
    compile time ({"H": 512}); training: also compile the backward kernels;
    cache_dir: where compiled objects are cached (default: as cellc's C++
    API, $CELLC_CACHE_DIR or ~/.cache/cellc; "" turns caching off);
    probes: names of values of the step (gates, intermediates, "h'") that
    forward and step return with return_probes=True.
    Raises CompileError with the located diagnostics (an unknown probe
    among them); each warning is a CompileWarning."""
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
        compiled, diagnostics = _cellc._compile(
            text, is_path, cell or "", _dims(dims), training, cache_dir,
            _probes(probes))
    except _cellc.CompileFailure as failure:
        raise CompileError(str(failure)) from None
    _warn(diagnostics, stacklevel=2)
    return compiled


def cell_path(name):
    """The path of the cell file `name` shipped with cellc ("gru" gives
    .../cellc/cells/gru.cell): the installed package's copy, or, imported
    from the build tree, the source tree's cells/. A ValueError lists the
    names there are."""
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "cells")
    names = sorted(file[:-len(".cell")] for file in os.listdir(shipped)
                   if file.endswith(".cell")) if os.path.isdir(shipped) else []
    if name not in names:
        raise ValueError(f"no cell named {name!r} shipped with cellc (in "
                         f"{shipped}); there are: {', '.join(names)}")
    return os.path.join(shipped, name + ".cell")
