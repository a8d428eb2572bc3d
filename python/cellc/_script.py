"""TorchScript for cellc.torch's layers.

torch.jit.script cannot compile cellc.torch.RNN or CellModule (a Python
autograd.Function, `*inputs`), and torch.jit.trace would bake the lengths
in. `scriptable(module)` returns their twin for TorchScript: an nn.Module
that shares the module's nn.Parameters and buffers (same names, same
tensors: gradients and optimizer steps reach both) and runs the cell through
the op torch.ops.cellc.run, whose forward and backward are cellrt's, called
from C++ (cellc/_ops*.so, python/ops/). It holds a torch.classes.cellc.Cell
compiled again from the cell's text, so torch.jit.save stores the text and
torch.jit.load compiles it (through the JIT's disk cache) in any process
that imported cellc._script first:

    scripted = torch.jit.script(scriptable(rnn))
    output, h_n = scripted(x, None, torch.tensor(lengths))
    torch.jit.save(scripted, "rnn.pt")
    # elsewhere: import cellc._script; torch.jit.load("rnn.pt")

The twins take and return lists where the eager modules take tuples or
varargs (TorchScript has no *args): RNN's forward(x, hx: Optional[List],
lengths: Optional[Tensor]) returns (output, [h_n per state]) for padded
input (PackedSequence is not scriptable); CellModule's forward(inputs:
List, lengths, init) returns (output, [final state...]). Lengths are a 1-D
integer tensor read at every call, so T and B may change. Called outside
TorchScript, a twin runs the eager module it was made from, with that
module's interface.
"""

import glob
import os
from typing import List, Optional, Tuple

import torch
from torch import Tensor, nn


__all__ = ["scriptable", "ScriptRNN", "ScriptCellModule"]


def _load_ops():
    """Loads cellc/_ops*.so, which registers torch.classes.cellc.Cell and
    torch.ops.cellc.run (torch.jit.load of a scripted layer needs them)."""
    folder = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(folder, "_ops*.so")))
    if not found:
        raise ImportError(
            f"cellc's TorchScript ops (_ops*.so) are not in {folder}: cellc "
            "was built without LibTorch (libtorch-dev)")
    torch.ops.load_library(found[0])


_load_ops()


def _script_cell(cell):
    """The cellc.Cell `cell` as a torch.classes.cellc.Cell, compiled again
    from its text, with its training flag and precision."""
    compiled = torch.classes.cellc.Cell(cell.source, cell.name,
                                        cell.has_backward)
    if cell.precision != compiled.precision():
        compiled.set_precision(cell.precision)
    if compiled.dims() != list(cell.dims):
        # A dimension fixed at compile time (cellc.compile(..., dims=))
        # is not in the text: compiled again, the params would differ.
        raise ValueError(
            f"cell {cell.name} was compiled with fixed dims (it has "
            f"{list(cell.dims)}, its text {compiled.dims()}): scriptable "
            "needs a cell compiled without dims=")
    return compiled


class _Twin(nn.Module):
    """What both twins hold: the cell for TorchScript, the eager module's
    params and buffers under their own names (the same tensors, so
    state_dict keys match too), and the eager module itself.

    Outside TorchScript a twin runs its eager module: torch.jit.script
    (torch 1.13) writes what __prepare_scriptable__ returns into the
    parent's own _modules, so a model scripted through it calls the twin
    from then on in eager mode too, with the eager module's interface
    (PackedSequence, a tuple h_0, lengths as a list)."""

    __jit_ignored_attributes__ = ["eager"]

    def __init__(self, module):
        super().__init__()
        self.cell = _script_cell(module.cell)
        for name, param in module.named_parameters(recurse=False):
            self.register_parameter(name, param)
        for name, buffer in module.named_buffers(recurse=False):
            self.register_buffer(name, buffer)
        # Not a submodule: its params would be listed twice.
        self.__dict__["eager"] = module
        self.train(module.training)

    def _eager(self):
        """The eager module, in this twin's training mode (train() and
        eval() on the parent reach the twin only)."""
        return self.eager.train(self.training)


def _full_lengths(x: Tensor) -> Tensor:
    """B lengths of T steps for a [T, B, ...] batch."""
    return torch.full([x.size(1)], x.size(0), dtype=torch.long)


class ScriptRNN(_Twin):
    """cellc.torch.RNN for TorchScript (see the module's docstring)."""

    state_names: List[str]
    state_widths: List[List[int]]
    weights: List[List[Tensor]]

    def __init__(self, rnn):
        super().__init__(rnn)
        self.num_layers = rnn.num_layers
        self.num_directions = rnn.num_directions
        self.batch_first = rnn.batch_first
        self.dropout = rnn.dropout
        self.input_size = rnn.input_size
        self.state_names = [name for name, _ in rnn.cell.states]
        self.state_widths = rnn._layer_state_widths()
        # TorchScript reads attributes by literal names only: each layer's
        # and direction's params (the tensors registered above) in the
        # cell's order, in h_n's order.
        self.weights = [[getattr(rnn, name + suffix)
                         for name, _ in rnn.cell.params]
                        for _, suffix, _ in rnn._layers()]

    def extra_repr(self):
        return (f"{self.cell.name()}, {self.input_size}, layers="
                f"{self.num_layers}, directions={self.num_directions}")

    def _initial_states(self, hx: Optional[List[Tensor]], batch: int,
                        unbatched: bool) -> List[Tensor]:
        """h_0 as one contiguous [layers * directions, B, width] tensor per
        state; [] (zeros) without hx."""
        if hx is None:
            return []
        if len(hx) != len(self.state_names):
            raise ValueError("h_0: the cell has " +
                             str(len(self.state_names)) + " states (" +
                             ", ".join(self.state_names) + "), got " +
                             str(len(hx)))
        states: List[Tensor] = []
        count = self.num_layers * self.num_directions
        for s, state in enumerate(hx):
            if unbatched:
                state = state.unsqueeze(1)
            width = self.state_widths[0][s]
            same = all([w[s] == width for w in self.state_widths])
            if list(state.shape) != [count, batch, width] or not same:
                raise ValueError(
                    "h_0 for state " + self.state_names[s] + " must be (" +
                    str(count) + ", " + str(batch) + ", " + str(width) +
                    ") (layers * directions, batch, width), got " +
                    str(hx[s].shape))
            states.append(state.contiguous())
        return states

    def forward(self, x: Tensor, hx: Optional[List[Tensor]] = None,
                lengths: Optional[Tensor] = None
                ) -> Tuple[Tensor, List[Tensor]]:
        if not torch.jit.is_scripting():
            return self._run_eager(x, hx, lengths)
        if x.dim() != 2 and x.dim() != 3:
            raise ValueError(
                "input must be (T, B, input_size) ((B, T, input_size) with "
                "batch_first) or unbatched (T, input_size), got shape " +
                str(x.shape))
        unbatched = x.dim() == 2
        if unbatched:
            x = x.unsqueeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        x = x.contiguous()
        if lengths is None:
            lengths = _full_lengths(x)
        h0 = self._initial_states(hx, x.size(1), unbatched)
        finals: List[List[Tensor]] = []
        for _ in self.state_names:
            finals.append([])
        layer_input = x
        for k in range(self.num_layers):
            outputs: List[Tensor] = []
            for d in range(self.num_directions):
                index = k * self.num_directions + d
                result = torch.ops.cellc.run(
                    self.cell, [layer_input], [h[index] for h in h0],
                    self.weights[index], lengths, d == 1)
                outputs.append(result[0])
                for s in range(len(finals)):
                    finals[s].append(result[s + 1])
            layer_input = outputs[0] if len(outputs) == 1 else \
                torch.cat(outputs, 2)
            if self.dropout > 0 and self.training and \
                    k + 1 < self.num_layers:
                layer_input = nn.functional.dropout(layer_input,
                                                    self.dropout, True)
        h_n = [torch.stack(states) for states in finals]
        output = layer_input
        if unbatched:
            output = output.squeeze(1)
            h_n = [h.squeeze(1) for h in h_n]
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, h_n

    @torch.jit.unused
    def _run_eager(self, x: Tensor, hx: Optional[List[Tensor]],
                   lengths: Optional[Tensor]
                   ) -> Tuple[Tensor, List[Tensor]]:
        return self._eager()(x, hx, lengths=lengths)


class ScriptCellModule(_Twin):
    """cellc.torch.CellModule for TorchScript (see the module's
    docstring)."""

    weights: List[Tensor]

    def __init__(self, module):
        super().__init__(module)
        self.reverse = module.reverse
        self.weights = [getattr(module, name) for name, _ in
                        module.cell.params]

    def extra_repr(self):
        text = self.cell.name()
        return text + ", reverse=True" if self.reverse else text

    def forward(self, inputs: List[Tensor], lengths: Optional[Tensor] = None,
                init: Optional[List[Tensor]] = None
                ) -> Tuple[Tensor, List[Tensor]]:
        if not torch.jit.is_scripting():
            return self._run_eager(inputs, lengths, init)
        if len(inputs) == 0 or inputs[0].dim() != 3:
            raise ValueError("inputs: one (T, B, LEN) tensor per cell input "
                             "(time-major)")
        if lengths is None:
            lengths = _full_lengths(inputs[0])
        result = torch.ops.cellc.run(self.cell, inputs,
                                     [] if init is None else init,
                                     self.weights, lengths, self.reverse)
        return result[0], result[1:]

    @torch.jit.unused
    def _run_eager(self, inputs: List[Tensor], lengths: Optional[Tensor],
                   init: Optional[List[Tensor]]
                   ) -> Tuple[Tensor, List[Tensor]]:
        # An eager caller passes one input as it is (CellModule(x, ...));
        # several inputs come as a list (CellModule's *inputs).
        many = inputs if isinstance(inputs, list) else [inputs]
        return self._eager()(*many, lengths=lengths, init=init)


def scriptable(module):
    """The TorchScript twin of a cellc.torch.RNN or CellModule, sharing its
    params and buffers: what its __prepare_scriptable__ gives (this module
    does not import cellc.torch, which imports it)."""
    prepare = getattr(module, "__prepare_scriptable__", None)
    ours = any(c.__module__ == "cellc.torch" for c in type(module).__mro__)
    if not isinstance(module, nn.Module) or prepare is None or not ours:
        raise TypeError("scriptable takes a cellc.torch.RNN or CellModule, "
                        f"got {type(module).__name__}")
    return prepare()
