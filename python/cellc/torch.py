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
from cellc._gradcheck import GradcheckError, gradcheck  # noqa: F401

__all__ = ["CellFunction", "CellModule", "RNN", "gradcheck",
           "GradcheckError"]


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
        # before backward raises instead of giving wrong gradients. The
        # tape rides on an empty tensor saved beside them, so autograd
        # frees it with them: after the backward, unless the graph is
        # retained (retain_graph=True, which may then run backward again).
        holder = torch.empty(0)
        holder.tape = tape
        ctx.save_for_backward(*tensors, holder)
        ctx.cell = cell
        ctx.n_inputs, ctx.n_states = n_inputs, n_states
        return (torch.from_numpy(out),
                *[torch.from_numpy(state) for state in finals])

    @staticmethod
    def backward(ctx, grad_out, *grad_finals):
        if torch.is_grad_enabled():
            # create_graph=True asks for a differentiable gradient, which
            # the cell's backward kernels are not: fail here rather than
            # return a gradient without a graph that fails later.
            raise RuntimeError(
                f"cellc.torch: cell {ctx.cell.name} has no double backward "
                "(create_graph=True, e.g. a gradient penalty or Hessian-"
                "vector product through the cell): its backward kernels "
                "are not differentiable")
        # Raises if one was changed in place since forward, or if the
        # graph was freed by an earlier backward without retain_graph.
        *_, holder = ctx.saved_tensors
        finals = [None if g is None else _array(g, "final state gradient")
                  for g in grad_finals]
        grads = ctx.cell.backward(
            holder.tape, None if grad_out is None else
            _array(grad_out, "output gradient"), finals)
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


def _compiled(cell):
    """A cellc.Cell as it is, else one compiled from a .cell path, a cell's
    text, or the name of a cell shipped with cellc ("gru", "torch_gru")."""
    if isinstance(cell, cellc.Cell):
        return cell
    if isinstance(cell, str) and cell.isidentifier():
        return cellc.compile(cellc.cell_path(cell))
    return cellc.compile(cell)


_PROBED = {}


def _probed(cell, names):
    """`cell` compiled again, for inference, with the probes `names` (once
    per cell and names in a process; the JIT's cache keeps it across)."""
    key = (cell.source, cell.name, tuple(names))
    if key not in _PROBED:
        _PROBED[key] = cellc.compile(cell.source, cell=cell.name,
                                     training=False, probes=list(names))
    return _PROBED[key]


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
        self.cell = _compiled(cell)
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

    def extra_repr(self):
        text = f"{self.cell.name}, dims={self.dims}"
        return text + ", reverse=True" if self.reverse else text

    def __prepare_scriptable__(self):
        """What torch.jit.script compiles instead: the TorchScript twin
        (cellc._script), sharing these params."""
        from cellc._script import ScriptCellModule
        return ScriptCellModule(self)

    def probe(self, names, *inputs, lengths=None, init=None):
        """The values `names` (gates, intermediates of the cell's step, as
        `cellc --probe`) take at every step, without gradients: {name:
        (T, B, LEN)}, zeros at padded steps. Inputs, lengths and init as in
        forward (padded tensors)."""
        names = [names] if isinstance(names, str) else list(names)
        cell = _probed(self.cell, names)
        params = {name: _array(getattr(self, name), f"param {name}")
                  for name, _ in self.cell.params}
        arrays = [_array(x, f"input {k}") for k, x in enumerate(inputs)]
        states = None if init is None else [
            _array(s, f"initial state {k}") for k, s in enumerate(init)]
        _, _, probes = cell.forward(arrays, params, init=states,
                                    lengths=lengths, reverse=self.reverse,
                                    return_probes=True)
        return {name: torch.from_numpy(probes[name]) for name in names}

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


def _symbol(expression):
    """The dimension an expression is alone ('H' for 'H'), else None."""
    return expression if expression.isidentifier() else None


class RNN(nn.Module):
    """A stack of recurrent layers of any compiled cell, called as
    torch.nn.GRU is: `output, h_n = rnn(x, h_0)`.

    cell: a cell shipped with cellc ("torch_gru" computes exactly what
    nn.GRU does, "lstm" what nn.LSTM does, "atr", "gru", ...), a .cell path,
    a cell's text or a cellc.Cell, with one input; input_size and
    hidden_size give the dimensions of that input and of the first state,
    `dims` any other dimension the cell declares. Every layer and direction
    runs the one compiled cell (the direction backward with reverse=True).

    x: (T, B, input_size), (B, T, input_size) with batch_first, (T,
    input_size) unbatched, or a PackedSequence (then the output is packed
    the same way). h_0: (num_layers * directions, B, state width) per state,
    a tuple of them for a cell with several states (lstm's (h, c)), default
    zeros. Returns the output (T, B, directions * output width), the top
    layer's, zero at padded steps, and h_n shaped as h_0: each layer's and
    direction's state after its last step (backward's: after step 0).
    `lengths=` gives B sequence lengths for a padded x without packing it.

    dropout: applied to every layer's output but the last, in training, as
    nn.GRU does. bias=False: the cell's vector params (biases, gains) are
    buffers, not trained, at the constant the cell file declares for them
    (lstm's bf = 1, a gain's = 1), else 0. Params are named as in the cell
    with nn.GRU's suffixes: Wz_l0, Wz_l1_reverse, ... (reset_parameters
    says how they start).
    """

    def __init__(self, cell, input_size, hidden_size, num_layers=1,
                 bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, dims=None):
        super().__init__()
        self.cell = _compiled(cell)
        self.input_size = operator.index(input_size)
        self.hidden_size = operator.index(hidden_size)
        self.num_layers = operator.index(num_layers)
        self.bias, self.batch_first = bool(bias), bool(batch_first)
        self.dropout, self.bidirectional = float(dropout), bool(bidirectional)
        self.dims = dict(dims or {})
        if self.num_layers < 1:
            raise ValueError(f"num_layers must be at least 1, got "
                             f"{self.num_layers}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self._layer_dims = self._dims_of_layers()
        for k, suffix, layer_dims in self._layers():
            for name, shape in self.cell.params:
                size = [_size(d, layer_dims) for d in shape]
                if self.bias or len(size) == 2:
                    self.register_parameter(
                        name + suffix, nn.Parameter(torch.empty(size)))
                else:
                    self.register_buffer(name + suffix, torch.empty(size))
        self.reset_parameters()

    def _dims_of_layers(self):
        """Every layer's dims: input_size (layer 0) or the layer below's
        output width times the directions, hidden_size, and `dims`."""
        cell = self.cell
        if len(cell.inputs) != 1:
            raise ValueError(
                f"cellc.torch.RNN needs a cell with one input; cell "
                f"{cell.name} has {len(cell.inputs)} (use CellModule)")
        if not cell.states:
            raise ValueError(f"cell {cell.name} has no state")
        input_dim = _symbol(cell.inputs[0][1])
        hidden_dim = _symbol(cell.states[0][1])
        if input_dim is None or hidden_dim is None:
            raise ValueError(
                f"cell {cell.name}: its input ({cell.inputs[0][1]}) and "
                f"first state ({cell.states[0][1]}) must each be one "
                "dimension for input_size and hidden_size to set them")
        for name in (input_dim, hidden_dim):
            if name in self.dims:
                raise ValueError(f"dims[{name!r}] is set by "
                                 f"{'input_size' if name == input_dim else 'hidden_size'}")
        layers = []
        width = self.input_size
        for k in range(self.num_layers):
            layer_dims = {**self.dims, hidden_dim: self.hidden_size}
            if input_dim != hidden_dim:
                layer_dims[input_dim] = width
            elif width != self.hidden_size:
                raise ValueError(
                    f"cell {cell.name} reads an input as wide as its state "
                    f"({input_dim}): layer {k}'s input is {width} wide, "
                    f"hidden_size {self.hidden_size}")
            _check_dims(cell, layer_dims)
            layers.append(layer_dims)
            width = _size(cell.output_width, layer_dims) * \
                self.num_directions
        return layers

    @property
    def num_directions(self):
        return 2 if self.bidirectional else 1

    def _layers(self):
        """(layer, param suffix, dims) for every layer and direction, in
        h_n's order."""
        for k in range(self.num_layers):
            for suffix in [""] + (["_reverse"] if self.bidirectional else []):
                yield k, f"_l{k}{suffix}", self._layer_dims[k]

    def reset_parameters(self):
        """Draws every layer's and direction's params as the cell declares
        them, one without an initialiser from U(-1/sqrt(R), 1/sqrt(R)) for
        its first dimension R: for the cells in nn.GRU's and nn.LSTM's form
        (torch_gru, lstm) that is their U(-1/sqrt(hidden_size), ...). Each
        layer and direction draws its own values; torch.manual_seed makes
        them reproducible."""
        import numpy as np
        inits = self.cell.param_inits
        for _, suffix, _ in self._layers():
            seed = int(torch.randint(0, 2**63 - 1, (), dtype=torch.int64))
            values = {name: np.empty(tuple(getattr(self, name + suffix)
                                           .shape), dtype=np.float32)
                      for name, _ in self.cell.params}
            self.cell.init_params(values, seed, "fan_out")
            with torch.no_grad():
                for name, value in values.items():
                    held = getattr(self, name + suffix)
                    if not self.bias and value.ndim == 1 and \
                            not inits[name].startswith("constant"):
                        value[:] = 0
                    held.copy_(torch.from_numpy(value))

    def extra_repr(self):
        text = f"{self.cell.name}, {self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        for name, default in (("bias", True), ("batch_first", False),
                              ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, name) != default:
                text += f", {name}={getattr(self, name)}"
        if self.dims:
            text += f", dims={self.dims}"
        return text

    def __prepare_scriptable__(self):
        """What torch.jit.script compiles instead: the TorchScript twin
        (cellc._script), sharing these params."""
        from cellc._script import ScriptRNN
        return ScriptRNN(self)

    def _layer_state_widths(self):
        """Each layer's state widths: [[width per state] per layer]."""
        return [[_size(length, dims) for _, length in self.cell.states]
                for dims in self._layer_dims]

    def _initial_states(self, hx, batch, unbatched):
        """h_0 as one (layers * directions, B, width) tensor per state."""
        widths = self._layer_state_widths()
        count = self.num_layers * self.num_directions
        n_states = len(self.cell.states)
        if hx is None:
            return [None] * n_states, widths
        states = list(hx) if isinstance(hx, (tuple, list)) else [hx]
        if len(states) != n_states:
            raise ValueError(
                f"h_0: cell {self.cell.name} has {n_states} states "
                f"({', '.join(n for n, _ in self.cell.states)}), got "
                f"{len(states)}")
        result = []
        for s, (name, _) in enumerate(self.cell.states):
            state = states[s].unsqueeze(1) if unbatched else states[s]
            width = widths[0][s]
            if tuple(state.shape) != (count, batch, width) or any(
                    w[s] != width for w in widths):
                raise ValueError(
                    f"h_0 for state {name} must be ({count}, {batch}, "
                    f"{width}) (layers * directions, batch, width), got "
                    f"{list(states[s].shape)}")
            result.append(state)
        return result, widths

    def _time_major(self, input, lengths):
        """(x as (T, B, I), lengths as B ints, packed, unbatched)."""
        packed = isinstance(input, PackedSequence)
        unbatched = not packed and input.dim() == 2
        if packed:
            x, padded_lengths = pad_packed_sequence(input)
            lengths = padded_lengths.tolist()
        else:
            if input.dim() not in (2, 3):
                raise ValueError(
                    f"input must be (T, B, {self.input_size})"
                    f"{' with batch_first (B, T, ...)' if self.batch_first else ''}"
                    f" or unbatched (T, {self.input_size}), got shape "
                    f"{list(input.shape)}")
            x = input.unsqueeze(1) if unbatched else \
                input.transpose(0, 1) if self.batch_first else input
        steps, batch = x.shape[0], x.shape[1]
        lengths = [steps] * batch if lengths is None else _lengths(lengths)
        return x, lengths, packed, unbatched

    def forward(self, input, hx=None, lengths=None):
        x, lengths, packed, unbatched = self._time_major(input, lengths)
        batch = x.shape[1]
        h0, widths = self._initial_states(hx, batch, unbatched)
        finals = [[] for _ in self.cell.states]
        layer_input = x
        for k in range(self.num_layers):
            outputs = []
            for d in range(self.num_directions):
                index = k * self.num_directions + d
                suffix = f"_l{k}" + ("_reverse" if d else "")
                init = [torch.zeros(batch, widths[k][s]) if h is None else
                        h[index] for s, h in enumerate(h0)]
                params = [getattr(self, name + suffix)
                          for name, _ in self.cell.params]
                result = CellFunction.apply(self.cell, d == 1, lengths, 1,
                                            len(init), layer_input, *init,
                                            *params)
                outputs.append(result[0])
                for s, state in enumerate(result[1:]):
                    finals[s].append(state)
            layer_input = outputs[0] if len(outputs) == 1 else \
                torch.cat(outputs, dim=2)
            if self.dropout and self.training and k + 1 < self.num_layers:
                layer_input = nn.functional.dropout(layer_input,
                                                    self.dropout, True)
        h_n = [torch.stack(states) for states in finals]
        output = layer_input
        if packed:
            output = _packed_like(output, lengths, input)
        elif unbatched:
            output, h_n = output.squeeze(1), [h.squeeze(1) for h in h_n]
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, h_n[0] if len(h_n) == 1 else tuple(h_n)

    def probe(self, names, input, hx=None, lengths=None):
        """The values `names` (gates, intermediates of the cell's step, as
        `cellc --probe`) take at every step of every layer and direction,
        without dropout and without gradients: {name: (layers *
        directions, T, B, LEN)} ((layers * directions, B, T, LEN) with
        batch_first; zeros at padded steps). Input, hx and lengths as in
        forward."""
        names = [names] if isinstance(names, str) else list(names)
        cell = _probed(self.cell, names)
        x, lengths, _, unbatched = self._time_major(input, lengths)
        h0, _ = self._initial_states(hx, x.shape[1], unbatched)
        values = {name: [] for name in names}
        layer_input = x
        with torch.no_grad():
            for k in range(self.num_layers):
                outputs = []
                for d in range(self.num_directions):
                    index = k * self.num_directions + d
                    suffix = f"_l{k}" + ("_reverse" if d else "")
                    params = {name: _array(getattr(self, name + suffix),
                                           f"param {name + suffix}")
                              for name, _ in self.cell.params}
                    init = [None if h is None else
                            _array(h[index], "h_0") for h in h0]
                    out, _, probes = cell.forward(
                        [_array(layer_input, "input")], params,
                        init=init if h0[0] is not None else None,
                        lengths=lengths, reverse=d == 1, return_probes=True)
                    outputs.append(torch.from_numpy(out))
                    for name in names:
                        values[name].append(torch.from_numpy(probes[name]))
                layer_input = torch.cat(outputs, dim=2)
        result = {name: torch.stack(v) for name, v in values.items()}
        if unbatched:
            return {name: v.squeeze(2) for name, v in result.items()}
        if self.batch_first:
            return {name: v.transpose(1, 2) for name, v in result.items()}
        return result

    @classmethod
    def from_torch(cls, module):
        """The RNN computing what an nn.GRU (cell torch_gru) or nn.LSTM
        (cell lstm) does, with its weights: same options, biases summed
        where the cell keeps one (nn.LSTM's b_ih + b_hh)."""
        forms = {nn.GRU: ("torch_gru", "rzn"), nn.LSTM: ("lstm", "ifgo")}
        if type(module) not in forms or getattr(module, "proj_size", 0):
            raise TypeError("from_torch takes an nn.GRU or an nn.LSTM "
                            f"(without proj_size), got "
                            f"{type(module).__name__}")
        name, gates = forms[type(module)]
        rnn = cls(name, module.input_size, module.hidden_size,
                  module.num_layers, module.bias, module.batch_first,
                  module.dropout, module.bidirectional)
        with torch.no_grad():
            for _, suffix, _ in rnn._layers():
                weights = [getattr(module, kind + suffix).chunk(len(gates))
                           for kind in ("weight_ih", "weight_hh")]
                zeros = [torch.zeros(module.hidden_size)] * len(gates)
                biases = [getattr(module, kind + suffix).chunk(len(gates))
                          if module.bias else zeros
                          for kind in ("bias_ih", "bias_hh")]
                for g, gate in enumerate(gates):
                    getattr(rnn, "W" + gate + suffix).copy_(weights[0][g])
                    getattr(rnn, "U" + gate + suffix).copy_(weights[1][g])
                    if name == "torch_gru" and gate == "n":
                        # n = tanh(W x + b_in + r * (U h + b_hn)).
                        getattr(rnn, "bn" + suffix).copy_(biases[0][g])
                        getattr(rnn, "bhn" + suffix).copy_(biases[1][g])
                    else:
                        getattr(rnn, "b" + gate + suffix).copy_(
                            biases[0][g] + biases[1][g])
        return rnn


def _packed_like(output, lengths, packed):
    """The padded (T, B, W) output as a PackedSequence with the batch order
    of `packed` (the input), as nn.GRU returns it."""
    order = packed.sorted_indices
    if order is None:
        order = torch.arange(output.shape[1])
    sorted_lengths = torch.tensor(lengths)[order]
    result = pack_padded_sequence(output.index_select(1, order),
                                  sorted_lengths, enforce_sorted=True)
    return PackedSequence(result.data, result.batch_sizes,
                          packed.sorted_indices, packed.unsorted_indices)


# The TorchScript ops (cellc/_ops*.so), registered on import so that
# torch.jit.load of a scripted model needs only `import cellc.torch`; a
# build without LibTorch has none, and scripting then says so.
try:
    import cellc._script  # noqa: E402,F401
except ImportError:
    pass
