"""CellModule.probe and RNN.probe: a layer's gate values at every step, as
`cellc --probe` gives them, against the equations (ATR's i and f) and,
for a stack, against each layer run on its own."""
import os

import pytest
import torch

import cellc.torch

I, H, T, B = 5, 7, 6, 4


def atr_gates(layer, x, lengths):
    """ATR's i = sigmoid(p + q) and f = sigmoid(p - q) at every step from
    the layer's own outputs (h after each step), zero at padded steps."""
    out, _ = layer(x, lengths=lengths)
    p = x @ layer.Wx.T
    h = torch.cat([torch.zeros(1, B, H), out[:-1]])
    q = h @ layer.Wh.T
    mask = (torch.arange(T).unsqueeze(1) < torch.tensor(lengths)).float()
    mask = mask.unsqueeze(2)
    return {"i": torch.sigmoid(p + q) * mask,
            "f": torch.sigmoid(p - q) * mask}


def test_cell_module_probes_are_the_gates(cells_dir):
    torch.manual_seed(1)
    layer = cellc.torch.CellModule(os.path.join(cells_dir, "atr.cell"),
                                   {"I": I, "H": H})
    x = torch.randn(T, B, I)
    lengths = [6, 4, 3, 1]
    gates = layer.probe(["i", "f"], x, lengths=lengths)
    expected = atr_gates(layer, x, lengths)
    with torch.no_grad():
        for name in "if":
            assert gates[name].shape == (T, B, H)
            torch.testing.assert_close(gates[name], expected[name],
                                       rtol=1e-5, atol=1e-6)


def test_rnn_probes_each_layer_and_direction(cells_dir):
    torch.manual_seed(2)
    path = os.path.join(cells_dir, "atr.cell")
    rnn = cellc.torch.RNN(path, I, H, num_layers=2, bidirectional=True,
                          dropout=0.5)  # probes run without dropout
    x = torch.randn(T, B, I)
    lengths = [6, 5, 2, 1]
    gates = rnn.probe("i", x, lengths=lengths)["i"]
    assert gates.shape == (4, T, B, H)

    def single(layer, suffix, reverse, layer_input):
        module = cellc.torch.CellModule(path, {"I": layer_input.shape[2],
                                               "H": H}, reverse=reverse)
        with torch.no_grad():
            for name in ("Wx", "Wh"):
                getattr(module, name).copy_(getattr(rnn, name + suffix))
        return module

    below = []
    for d, suffix in enumerate(["_l0", "_l0_reverse"]):
        module = single(0, suffix, d == 1, x)
        torch.testing.assert_close(gates[d], module.probe("i", x,
                                                          lengths=lengths)["i"])
        below.append(module(x, lengths=lengths)[0].detach())
    upper_input = torch.cat(below, dim=2)
    for d, suffix in enumerate(["_l1", "_l1_reverse"]):
        module = single(1, suffix, d == 1, upper_input)
        torch.testing.assert_close(
            gates[2 + d], module.probe("i", upper_input, lengths=lengths)["i"])


def test_batch_first_probes(cells_dir):
    torch.manual_seed(3)
    rnn = cellc.torch.RNN(os.path.join(cells_dir, "lstm.cell"), I, H,
                          batch_first=True)
    x = torch.randn(B, T, I)
    gates = rnn.probe(["f"], x)["f"]
    assert gates.shape == (1, B, T, H)
    time_major = rnn.probe(["f"], x)  # the same call twice: cached cell
    torch.testing.assert_close(time_major["f"], gates)


def test_an_unknown_probe_is_named(cells_dir):
    layer = cellc.torch.CellModule(os.path.join(cells_dir, "atr.cell"),
                                   {"I": I, "H": H})
    with pytest.raises(cellc.CompileError, match="zz"):
        layer.probe("zz", torch.randn(T, B, I))
