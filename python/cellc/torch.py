"""Compiled cells as PyTorch layers: CellFunction (a torch.autograd.Function)
and CellModule (an nn.Module holding the cell's params as nn.Parameters).

    import torch, cellc, cellc.torch
    layer = cellc.torch.CellModule("cells/atr.cell", dims={"I": 512, "H": 512})
    out, (h,) = layer(x)                     # x: (T, B, I) float32, CPU
    out.sum().backward()                     # gradients through cellrt

Forward and backward run in cellrt on the tensors' own memory (NumPy views
of CPU float32 tensors, no copies). cellrt computes in float32: against a
PyTorch float32 implementation of the same equations outputs agree to
~1e-6 and gradients to ~1e-5 relative (sums in another order, and cellc's
own exp within 1 ulp); see python/tests.
"""

import operator

import torch
from torch import nn
from torch.nn.utils.rnn import (PackedSequence, pack_padded_sequence,
                                pad_packed_sequence)

import cellc

__all__ = ["CellFunction", "CellModule"]


def _array(tensor, what):
    """A CPU float32 tensor's NumPy view (no copy), or a clear error."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got "
                        f"{type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise ValueError(f"{what} is on {tensor.device}: cellc.torch runs "
                         "on the CPU (move it with .cpu())")
    if tensor.dtype != torch.float32:
        raise TypeError(f"{what} must be float32, got {tensor.dtype}")
    return tensor.detach().contiguous().numpy()


class CellFunction(torch.autograd.Function):
    """apply(cell, reverse, lengths, n_inputs, n_states, *tensors): tensors
    are the inputs (T, B, LEN), the initial states (B, LEN) and the params
    in cell.params order. Returns the output (T, B, W) and the final states.
    """

    @staticmethod
    def forward(ctx, cell, reverse, lengths, n_inputs, n_states, *tensors):
        inputs = [_array(t, f"input {k}")
                  for k, t in enumerate(tensors[:n_inputs])]
        init = [_array(t, f"initial state {k}") for k, t in
                enumerate(tensors[n_inputs:n_inputs + n_states])]
        params = {name: _array(t, f"param {name}") for (name, _), t in
                  zip(cell.params, tensors[n_inputs + n_states:])}
        tape = cellc.Tape()
        out, finals = cell.forward(inputs, params, init=init,
                                   lengths=lengths, reverse=reverse,
                                   tape=tape)
        # cellrt's backward reads the inputs, initial states and params
        # again (not the outputs): saved, a change to one of them in place
        # before backward raises instead of giving wrong gradients.
        ctx.save_for_backward(*tensors)
        ctx.cell, ctx.tape = cell, tape
        ctx.n_inputs, ctx.n_states = n_inputs, n_states
        return (torch.from_numpy(out),
                *[torch.from_numpy(state) for state in finals])

    @staticmethod
    def backward(ctx, grad_out, *grad_finals):
        ctx.saved_tensors  # raises if one was changed in place since forward
        finals = [None if g is None else _array(g, "final state gradient")
                  for g in grad_finals]
        grads = ctx.cell.backward(
            ctx.tape, None if grad_out is None else
            _array(grad_out, "output gradient"), finals)
        ctx.tape = None  # one backward per forward
        as_tensors = [torch.from_numpy(g) for g in grads["inputs"]]
        as_tensors += [torch.from_numpy(g) for g in grads["init"]]
        as_tensors += [torch.from_numpy(grads["params"][name])
                       for name, _ in ctx.cell.params]
        return (None, None, None, None, None, *as_tensors)


def _lengths(lengths):
    """`lengths` as a list of ints: any sequence of Python, NumPy or
    integer-tensor values. A float is never truncated, a str never read as
    its characters; the cell checks the count and the range."""
    if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__iter__"):
        raise TypeError("lengths must be a sequence of B integers, got "
                        f"{type(lengths).__name__}")
    values = []
    for k, n in enumerate(lengths):
        try:
            values.append(operator.index(n))
        except TypeError:
            raise TypeError(f"lengths[{k}] must be an integer, got "
                            f"{type(n).__name__} {n!r}") from None
    return values


def _check_dims(cell, dims):
    """A clear error for a dimension the cell lacks (a misspelt one would be
    ignored), a missing one, or a value that is not a positive integer."""
    unknown = [d for d in dims if d not in cell.dims]
    if unknown:
        raise ValueError(f"cell {cell.name} has no dimension {unknown[0]!r} "
                         f"(its dimensions: {', '.join(cell.dims)})")
    missing = [d for d in cell.dims if d not in dims]
    if missing:
        raise ValueError(f"cell {cell.name} needs dims {', '.join(missing)}")
    for name, value in dims.items():
        try:
            number = operator.index(value)
        except TypeError:
            raise TypeError(f"dims[{name!r}] must be an integer, got "
                            f"{type(value).__name__} {value!r}") from None
        if number < 1:
            raise ValueError(f"dims[{name!r}] = {number}: a dimension must "
                             "be at least 1")


def _size(expression, dims):
    """The value of a dimension expression such as '3*H+I'."""
    try:
        return int(eval(expression, {"__builtins__": {}}, dict(dims)))
    except NameError as missing:
        raise ValueError(f"dims has no value for {missing}") from None


class CellModule(nn.Module):
    """A compiled cell as a layer. `cell` is a .cell path, its source, or a
    cellc.Cell; `dims` gives every dimension the cell declares, e.g.
    {"I": 512, "H": 512}. Params are nn.Parameters named as in the cell,
    drawn as the cell declares (`~ orthogonal`, `= 1`), or, where it
    declares nothing, from U(-1/sqrt(R), 1/sqrt(R)) for their first
    dimension R (see reset_parameters; assign to change that; a layer-norm
    gain usually wants ones: `param g: [H] = 1`)."""

    def __init__(self, cell, dims, reverse=False):
        super().__init__()
        self.cell = cell if isinstance(cell, cellc.Cell) else \
            cellc.compile(cell)
        _check_dims(self.cell, dims)
        self.dims = {name: operator.index(v) for name, v in dims.items()}
        self.reverse = reverse
        for name, shape in self.cell.params:
            size = [_size(d, self.dims) for d in shape]
            self.register_parameter(name, nn.Parameter(torch.empty(size)))
        self.reset_parameters()

    def reset_parameters(self):
        """Draws every param as its cell declares (`param bf: [H] = 1`,
        `~ orthogonal`; docs/cell-language.md, "Initialisers"), and one
        without an initialiser from U(-1/sqrt(R), 1/sqrt(R)) for its first
        dimension R ('fan_out', the draw before cells had initialisers).
        The seed comes from torch's generator, so torch.manual_seed makes
        it reproducible; the values are cellrt's (Cell.init_params), the
        same as the C++ API's for that seed."""
        import numpy as np
        seed = int(torch.randint(0, 2**63 - 1, (), dtype=torch.int64))
        values = {name: np.empty(tuple(getattr(self, name).shape),
                                 dtype=np.float32)
                  for name, _ in self.cell.params}
        self.cell.init_params(values, seed, "fan_out")
        with torch.no_grad():
            for name, value in values.items():
                getattr(self, name).copy_(torch.from_numpy(value))

    def save_params(self, path):
        """Writes the params to one .npz archive at `path` (exactly that
        name), an entry per param named as in the cell, float32: what
        np.load, `cellc run --params` and cellc::npy::readArchive read.
        Written entry by entry as np.savez does, without its keyword
        arguments (a param may be called `file`)."""
        import zipfile
        import numpy as np
        with zipfile.ZipFile(path, "w") as archive:
            for name, _ in self.cell.params:
                value = getattr(self, name).detach().float().numpy()
                with archive.open(name + ".npy", "w",
                                  force_zip64=True) as entry:
                    np.lib.format.write_array(entry, value)

    def load_params(self, path):
        """Reads params saved by save_params, np.savez or cellc's C++
        writeArchive; every param of the cell must be there with its shape,
        and nothing else. Values of another float dtype are converted to
        float32 (the C++ reader accepts float32 only)."""
        import numpy as np
        with np.load(path) as archive:
            names = {name for name, _ in self.cell.params}
            unknown = sorted(set(archive.files) - names)
            missing = sorted(names - set(archive.files))
            if unknown or missing:
                raise ValueError(f"{path}: cell {self.cell.name} "
                                 f"has no param {', '.join(unknown)}"
                                 if unknown else
                                 f"{path}: no entry for param "
                                 f"{', '.join(missing)}")
            values = {name: torch.from_numpy(archive[name].astype(
                np.float32)) for name in names}
        for name, value in values.items():
            param = getattr(self, name)
            if value.shape != param.shape:
                raise ValueError(f"{path}: entry {name} has shape "
                                 f"{list(value.shape)}, the param "
                                 f"{list(param.shape)}")
        with torch.no_grad():
            for name, value in values.items():
                getattr(self, name).copy_(value)

    def state_widths(self):
        return [_size(length, self.dims) for _, length in self.cell.states]

    def forward(self, *inputs, lengths=None, init=None):
        """inputs: one (T, B, LEN) tensor per cell input, or PackedSequences
        (then the output is packed the same way). lengths: B sequence
        lengths (default: all T). init: the initial states (default zeros).
        Returns (output, [final state...])."""
        packed = isinstance(inputs[0], PackedSequence)
        if packed:
            padded = [pad_packed_sequence(x) for x in inputs]
            inputs = [x for x, _ in padded]
            lengths = padded[0][1]
        for (name, length), x in zip(self.cell.inputs, inputs):
            if isinstance(x, torch.Tensor) and x.dim() != 3:
                raise ValueError(f"input {name!r} must be (T, B, {length}) "
                                 f"(time-major), got a {x.dim()}-D tensor "
                                 f"of shape {list(x.shape)}")
        steps, batch = inputs[0].shape[0], inputs[0].shape[1]
        if lengths is None:
            lengths = [steps] * batch
        lengths = _lengths(lengths)
        if init is None:
            init = [torch.zeros(batch, w) for w in self.state_widths()]
        params = [getattr(self, name) for name, _ in self.cell.params]
        result = CellFunction.apply(self.cell, self.reverse, lengths,
                                    len(inputs), len(init), *inputs, *init,
                                    *params)
        output, finals = result[0], list(result[1:])
        if packed:
            output = pack_padded_sequence(output, torch.tensor(lengths),
                                          enforce_sorted=False)
        return output, finals
