"""TorchScript: cellc.torch's layers scripted through their twins
(cellc._script.scriptable) against the eager layers they share params with,
outputs to 1e-5 and gradients to 1e-4; a scripted model saved with
torch.jit.save and loaded with torch.jit.load in a fresh process, run at a
new T and B with lengths as an input tensor; the op's errors."""
import os
import subprocess
import sys
import textwrap
from typing import List, Optional, Tuple

import pytest
import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence

import cellc
import cellc.torch
from cellc._script import scriptable

VOCAB, E, H = 11, 6, 5
FORWARD = dict(rtol=1e-5, atol=1e-5)
GRADIENT = dict(rtol=1e-4, atol=1e-4)


class Model(nn.Module):
    """Embedding -> RNN -> Linear; `rnn` is an eager cellc.torch.RNN or
    its scripted twin, called the same way."""

    def __init__(self, embed, rnn, out):
        super().__init__()
        self.embed, self.rnn, self.out = embed, rnn, out

    def forward(self, tokens: Tensor, h0: Optional[List[Tensor]],
                lengths: Tensor) -> Tuple[Tensor, List[Tensor]]:
        output, h_n = self.rnn(self.embed(tokens), h0, lengths)
        return self.out(output), h_n


def eager_model(cell):
    torch.manual_seed(3)
    rnn = cellc.torch.RNN(cell, E, H, num_layers=2, bidirectional=True,
                          dropout=0.25)
    return Model(nn.Embedding(VOCAB, E), rnn, nn.Linear(2 * H, VOCAB))


def scripted_twin(model):
    """The model scripted with its RNN's twin: the same params."""
    return torch.jit.script(Model(model.embed, scriptable(model.rnn),
                                  model.out))


def batch(cell, steps, size, seed):
    """Tokens [T, B], h_0 per state [4, B, H] and unsorted lengths."""
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (steps, size), generator=generator)
    states = 2 if cell == "lstm" else 1
    h0 = [torch.randn(4, size, H, generator=generator, requires_grad=True)
          for _ in range(states)]
    lengths = torch.randint(1, steps + 1, (size,), generator=generator)
    lengths[size // 2] = steps
    return tokens, h0, lengths


def as_list(h_n):
    return [h_n] if isinstance(h_n, Tensor) else list(h_n)


def run_and_differentiate(model, tokens, h0, lengths, seed=5):
    """Outputs, h_n and the gradients of a weighted loss with respect to
    every named param and h_0 (dropout drawn from `seed`)."""
    torch.manual_seed(seed)
    logits, h_n = model(tokens, h0, lengths)
    h_n = as_list(h_n)
    generator = torch.Generator().manual_seed(17)
    loss = sum((v * torch.randn(v.shape, generator=generator)).sum()
               for v in [logits] + h_n)
    names, params = zip(*model.named_parameters())
    grads = torch.autograd.grad(loss, list(params) + h0)
    return logits, h_n, dict(zip(names, grads)), grads[len(names):]


@pytest.mark.parametrize("cell", ["atr", "lstm"])
def test_scripted_model_matches_eager(cell):
    model = eager_model(cell)
    scripted = scripted_twin(model)
    tokens, h0, lengths = batch(cell, 7, 5, seed=1)
    expected = run_and_differentiate(model, tokens, h0, lengths)
    got = run_and_differentiate(scripted, tokens, h0, lengths)
    torch.testing.assert_close(got[0], expected[0], **FORWARD)
    for g, e in zip(got[1], expected[1]):
        torch.testing.assert_close(g, e, **FORWARD)
    assert got[2].keys() == expected[2].keys()  # the eager names
    for name, grad in expected[2].items():
        torch.testing.assert_close(got[2][name], grad, **GRADIENT,
                                   msg=lambda m: f"{name}: {m}")
    for g, e in zip(got[3], expected[3]):
        torch.testing.assert_close(g, e, **GRADIENT)


# Runs in a fresh process: loads the saved model (compiling its cell again)
# and writes its outputs and gradients at the batch it is given.
FRESH_PROCESS = textwrap.dedent("""
    import sys, torch
    import cellc._script  # registers torch.classes.cellc and cellc::run
    model_path, batch_path, result_path = sys.argv[1:]
    model = torch.jit.load(model_path)
    model.eval()
    tokens, h0, lengths = torch.load(batch_path)
    logits, h_n = model(tokens, h0, lengths)
    loss = logits.square().sum() + sum(h.sum() for h in h_n)
    names, params = zip(*model.named_parameters())
    grads = torch.autograd.grad(loss, params)
    torch.save((logits, h_n, dict(zip(names, grads))), result_path)
""")


@pytest.mark.parametrize("cell", ["atr", "lstm"])
def test_saved_model_loads_in_fresh_process(cell, tmp_path):
    model = eager_model(cell)
    torch.jit.save(scripted_twin(model), str(tmp_path / "model.pt"))
    # Another T and B than the model ever ran at, lengths a tensor input.
    tokens, h0, lengths = batch(cell, 9, 3, seed=2)
    h0 = [h.detach() for h in h0]
    torch.save((tokens, h0, lengths), str(tmp_path / "batch.pt"))
    subprocess.run([sys.executable, "-c", FRESH_PROCESS,
                    str(tmp_path / "model.pt"), str(tmp_path / "batch.pt"),
                    str(tmp_path / "result.pt")],
                   check=True, env=os.environ.copy(), timeout=120)
    logits, h_n, grads = torch.load(str(tmp_path / "result.pt"))
    model.eval()
    expected, expected_h_n = model(tokens, h0, lengths)
    torch.testing.assert_close(logits, expected, **FORWARD)
    for g, e in zip(h_n, as_list(expected_h_n)):
        torch.testing.assert_close(g, e, **FORWARD)
    loss = expected.square().sum() + sum(h.sum()
                                         for h in as_list(expected_h_n))
    names, params = zip(*model.named_parameters())
    assert sorted(grads) == sorted(names)
    for name, grad in zip(names, torch.autograd.grad(loss, params)):
        torch.testing.assert_close(grads[name], grad, **GRADIENT,
                                   msg=lambda m: f"{name}: {m}")


def test_cell_module_twin_matches_eager():
    torch.manual_seed(4)
    layer = cellc.torch.CellModule("lstm", {"I": 4, "H": 3}, reverse=True)
    scripted = torch.jit.script(scriptable(layer))
    x = torch.randn(6, 3, 4, requires_grad=True)
    init = [torch.randn(3, 3, requires_grad=True) for _ in range(2)]
    lengths = torch.tensor([4, 6, 1])
    results = []
    for module in (layer, scripted):
        if module is layer:
            output, finals = module(x, lengths=lengths, init=init)
        else:
            output, finals = module([x], lengths, init)
        loss = (output * torch.arange(output.numel()).view(output.shape)
                ).sum() + finals[0].sum() - 2 * finals[1].sum()
        results.append([output, *finals, *torch.autograd.grad(
            loss, [x, *init, *layer.parameters()])])
    for got, expected in zip(results[1], results[0]):
        torch.testing.assert_close(got, expected, **GRADIENT)


def test_rnn_twin_batch_first_unbatched_and_without_bias():
    """batch_first and unbatched input; bias=False makes the cell's vectors
    buffers, which the twin passes to the op without asking a gradient."""
    torch.manual_seed(6)
    rnn = cellc.torch.RNN("gru", 4, 4, batch_first=True, bias=False)
    scripted = torch.jit.script(scriptable(rnn))
    assert dict(scripted.named_buffers()).keys() == \
        dict(rnn.named_buffers()).keys() != set()
    x = torch.randn(2, 5, 4)  # (B, T, I)
    h0 = torch.randn(1, 2, 4)
    results = []
    for module, hx in ((rnn, h0), (scripted, [h0])):
        output, h_n = module(x, hx)
        h_n = as_list(h_n)
        results.append([output, *h_n, *torch.autograd.grad(
            output.sum() + h_n[0].sum(), list(rnn.parameters()))])
    for got, expected in zip(results[1], results[0]):
        torch.testing.assert_close(got, expected, **GRADIENT)
    expected, expected_h = rnn(x[0])
    output, (h_n,) = scripted(x[0])  # unbatched (T, I), no lengths
    torch.testing.assert_close(output, expected, **FORWARD)
    torch.testing.assert_close(h_n, expected_h, **FORWARD)


@pytest.fixture(scope="module")
def scripted_atr():
    torch.manual_seed(7)
    rnn = cellc.torch.RNN("atr", 3, 3)
    return rnn, torch.jit.script(scriptable(rnn))


def test_float64_input_is_a_clear_error(scripted_atr):
    _, scripted = scripted_atr
    with pytest.raises(RuntimeError, match="input 'x' must be float32, got "
                       "Double"):
        scripted(torch.randn(4, 2, 3, dtype=torch.float64))
    # Called outside TorchScript, the op's TypeError is Python's.
    cell = scripted.cell
    with pytest.raises(TypeError, match="param 'Wx' must be float32"):
        torch.ops.cellc.run(cell, [torch.randn(4, 2, 3)], [],
                            [torch.randn(3, 3).double(), torch.randn(3, 3)],
                            torch.tensor([4, 4]), False)


def test_bad_lengths_are_clear_errors(scripted_atr):
    _, scripted = scripted_atr
    x = torch.randn(4, 2, 3)
    with pytest.raises(RuntimeError, match=r"lengths\[1\] = 5 is outside "
                       r"\[1, T\] = \[1, 4\]"):
        scripted(x, None, torch.tensor([4, 5]))
    with pytest.raises(RuntimeError, match="lengths has 3 entries for a "
                       "batch of 2"):
        scripted(x, None, torch.tensor([4, 4, 4]))
    with pytest.raises(RuntimeError, match="lengths must hold integers"):
        scripted(x, None, torch.tensor([4.0, 4.0]))


def test_backward_frees_the_tape_unless_retained(scripted_atr):
    rnn, scripted = scripted_atr
    output, _ = scripted(torch.randn(4, 2, 3))
    first, = torch.autograd.grad(output.sum(), rnn.Wx_l0, retain_graph=True)
    again, = torch.autograd.grad(output.sum(), rnn.Wx_l0)
    torch.testing.assert_close(again, first, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="backward through the graph a "
                       "second time"):
        torch.autograd.grad(output.sum(), rnn.Wx_l0)


def test_no_double_backward(scripted_atr):
    rnn, scripted = scripted_atr
    output, _ = scripted(torch.randn(4, 2, 3))
    with pytest.raises(RuntimeError, match="no double backward"):
        torch.autograd.grad(output.sum(), rnn.Wx_l0, create_graph=True)


def test_in_place_change_before_backward_raises(scripted_atr):
    _, scripted = scripted_atr
    x = torch.randn(4, 2, 3, requires_grad=True)
    output, _ = scripted(x)
    with torch.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        output.sum().backward()


def test_script_through_prepare_scriptable():
    """torch.jit.script takes the eager model as it is, through RNN's
    __prepare_scriptable__. It puts the twin in the model's own _modules;
    the model keeps running eagerly as before, PackedSequence and all."""
    model = eager_model("lstm").eval()
    tokens, h0, lengths = batch("lstm", 5, 3, seed=8)
    packed = pack_padded_sequence(model.embed(tokens), lengths,
                                  enforce_sorted=False)
    before = model(tokens, h0, lengths), model.rnn(packed)
    scripted = torch.jit.script(model)
    after = model(tokens, h0, lengths), model.rnn(packed)
    torch.testing.assert_close(scripted(tokens, h0, lengths)[0],
                               before[0][0], **FORWARD)
    assert isinstance(after[0][1], tuple)  # eager h_n, not the twin's list
    torch.testing.assert_close(after, before, rtol=0, atol=0)


def test_cell_with_fixed_dims_is_refused():
    cell = cellc.compile(cellc.cell_path("atr"), dims={"H": 4})
    with pytest.raises(ValueError, match="compiled with fixed dims"):
        scriptable(cellc.torch.CellModule(cell, {"I": 4}))


def test_cell_module_scripts_through_prepare_scriptable():
    torch.manual_seed(9)
    layer = cellc.torch.CellModule(cellc.cell_path("atr"), {"I": 3, "H": 4})
    x = torch.randn(5, 2, 3)
    expected, _ = layer(x)
    scripted = torch.jit.script(layer)
    output, _ = scripted([x], torch.tensor([5, 5]))
    torch.testing.assert_close(output, expected, **FORWARD)


def test_loading_needs_only_cellc_torch(tmp_path):
    """torch.jit.load in a fresh process that imported cellc.torch (not
    cellc._script) finds the ops."""
    layer = cellc.torch.CellModule(cellc.cell_path("atr"), {"I": 3, "H": 4})
    path = tmp_path / "atr.pt"
    torch.jit.save(torch.jit.script(layer), str(path))
    code = ("import torch, cellc.torch; m = torch.jit.load(%r); "
            "print(m([torch.randn(2, 1, 3)], None)[0].shape)" % str(path))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                            text=True, env=os.environ.copy())
    assert result.returncode == 0, result.stderr
    assert "torch.Size([2, 1, 4])" in result.stdout


def test_scriptable_names_what_it_takes():
    with pytest.raises(TypeError, match="cellc.torch.RNN or CellModule, got "
                                        "GRU"):
        scriptable(nn.GRU(3, 4))


def test_a_subclass_of_rnn_scripts():
    class Tagged(cellc.torch.RNN):
        pass

    layer = Tagged(cellc.cell_path("atr"), 3, 4)
    assert isinstance(scriptable(layer), torch.nn.Module)
