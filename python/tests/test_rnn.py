"""cellc.torch.RNN against nn.GRU and nn.LSTM (their weights mapped by
RNN.from_torch onto cells/torch_gru.cell and cells/lstm.cell) and against a
pure-PyTorch stack of a cell's equations: outputs, h_n and every gradient,
1-3 layers, both directions, batch_first, unbatched input, PackedSequence,
inter-layer dropout in training and evaluation. Tolerances are float32's
(test_torch.py says why): 1e-5 forward, 1e-4 gradients."""
import os

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

import cellc.torch
from conftest import SOURCE
from test_torch import REFERENCES, reference

I, H, T, B = 5, 7, 6, 4
FORWARD = dict(rtol=1e-5, atol=1e-5)
GRADIENT = dict(rtol=1e-4, atol=1e-4)


def weighted_loss(output, h_n, seed=11):
    """A loss that weighs every output and final state differently, so a
    gradient in the wrong place shows."""
    generator = torch.Generator().manual_seed(seed)
    states = h_n if isinstance(h_n, tuple) else (h_n,)
    return sum((v * torch.randn(v.shape, generator=generator)).sum()
               for v in (output, *states))


def mapped_gradients(module, rnn):
    """{rnn param name: the gradient nn.GRU/nn.LSTM gives it}: gate chunks
    of weight_ih/weight_hh, and a summed bias's gradient (that of either
    of nn's two biases)."""
    gates = "rzn" if isinstance(module, nn.GRU) else "ifgo"
    expected = {}
    for name, param in module.named_parameters():
        kind, _, layer = name.partition("_l")
        suffix = "_l" + layer
        for gate, grad in zip(gates, param.grad.chunk(len(gates))):
            if kind == "weight_ih":
                expected["W" + gate + suffix] = grad
            elif kind == "weight_hh":
                expected["U" + gate + suffix] = grad
            elif gate == "n":
                expected[("bn" if kind == "bias_ih" else "bhn") +
                         suffix] = grad
            else:
                expected["b" + gate + suffix] = grad
    assert set(expected) == {n for n, _ in rnn.named_parameters()}
    return expected


@pytest.mark.parametrize("torch_class", [nn.GRU, nn.LSTM])
@pytest.mark.parametrize("layers,bidirectional,batch_first",
                         [(1, False, False), (2, True, False),
                          (3, True, True), (2, False, True)])
def test_matches_torch(torch_class, layers, bidirectional, batch_first):
    torch.manual_seed(layers)
    module = torch_class(I, H, num_layers=layers, batch_first=batch_first,
                         bidirectional=bidirectional)
    rnn = cellc.torch.RNN.from_torch(module)
    shape = (B, T, I) if batch_first else (T, B, I)
    x = torch.randn(shape, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    count = layers * (2 if bidirectional else 1)
    h0 = [torch.randn(count, B, H, requires_grad=True)
          for _ in range(2 if torch_class is nn.LSTM else 1)]
    h0_2 = [h.detach().clone().requires_grad_() for h in h0]
    hx = (lambda hs: tuple(hs) if len(hs) > 1 else hs[0])

    out, h_n = module(x, hx(h0))
    out2, h_n2 = rnn(x2, hx(h0_2))
    torch.testing.assert_close(out2, out, **FORWARD)
    for a, b in zip(h_n2 if isinstance(h_n2, tuple) else (h_n2,),
                    h_n if isinstance(h_n, tuple) else (h_n,)):
        torch.testing.assert_close(a, b, **FORWARD)

    weighted_loss(out, h_n).backward()
    weighted_loss(out2, h_n2).backward()
    torch.testing.assert_close(x2.grad, x.grad, **GRADIENT)
    for a, b in zip(h0_2, h0):
        torch.testing.assert_close(a.grad, b.grad, **GRADIENT)
    expected = mapped_gradients(module, rnn)
    for name, param in rnn.named_parameters():
        torch.testing.assert_close(param.grad, expected[name], **GRADIENT,
                                   msg=lambda m: f"param {name}: {m}")


def test_packed_sequences_match_torch():
    torch.manual_seed(2)
    module = nn.GRU(I, H, num_layers=2, bidirectional=True)
    rnn = cellc.torch.RNN.from_torch(module)
    x = torch.randn(T, B, I)
    packed = pack_padded_sequence(x, [3, 6, 1, 4], enforce_sorted=False)
    out, h_n = module(packed)
    out2, h_n2 = rnn(packed)
    assert isinstance(out2, type(packed))
    torch.testing.assert_close(out2.data, out.data, **FORWARD)
    assert torch.equal(out2.batch_sizes, out.batch_sizes)
    assert torch.equal(out2.sorted_indices, out.sorted_indices)
    assert torch.equal(out2.unsorted_indices, out.unsorted_indices)
    torch.testing.assert_close(h_n2, h_n, **FORWARD)


def test_unbatched_input_matches_torch():
    torch.manual_seed(3)
    module = nn.LSTM(I, H, num_layers=2)
    rnn = cellc.torch.RNN.from_torch(module)
    x = torch.randn(T, I)
    out, (h, c) = module(x)
    out2, (h2, c2) = rnn(x)
    assert out2.shape == (T, H) and h2.shape == (2, H)
    for a, b in ((out2, out), (h2, h), (c2, c)):
        torch.testing.assert_close(a, b, **FORWARD)


def test_no_bias_matches_torch():
    torch.manual_seed(4)
    module = nn.GRU(I, H, bias=False)
    rnn = cellc.torch.RNN.from_torch(module)
    assert {n for n, _ in rnn.named_parameters()} == {
        "Wr_l0", "Wz_l0", "Wn_l0", "Ur_l0", "Uz_l0", "Un_l0"}
    x = torch.randn(T, B, I)
    torch.testing.assert_close(rnn(x)[0], module(x)[0], **FORWARD)


def forget_bias_one_cell():
    """An LSTM that declares its forget bias 1 (as cells/lstm.cell did until
    2026-11-30; the C++ tests' test/models/Inputs/lstm-forget-bias-1.cell)."""
    return os.path.join(SOURCE, "test", "models", "Inputs",
                        "lstm-forget-bias-1.cell")


def test_no_bias_keeps_declared_constants():
    """bias=False freezes vector params: at the cell's constant (here a
    forget bias 1), else zero."""
    rnn = cellc.torch.RNN(forget_bias_one_cell(), I, H, bias=False)
    buffers = dict(rnn.named_buffers())
    assert torch.equal(buffers["bf_l0"], torch.ones(H))
    for name in ("bi_l0", "bo_l0", "bg_l0"):
        assert torch.equal(buffers[name], torch.zeros(H))
    assert not any(p.dim() == 1 for p in rnn.parameters())


def test_fresh_rnn_declared_forget_bias_is_one():
    """Every layer and direction of a fresh RNN starts with the cell's
    declared forget bias 1, the other biases drawn; the shipped lstm.cell
    declares none, so its forget bias is drawn like nn.LSTM's."""
    torch.manual_seed(9)
    rnn = cellc.torch.RNN(forget_bias_one_cell(), I, H, num_layers=2,
                          bidirectional=True)
    params = dict(rnn.named_parameters())
    forget = [n for n in params if n.startswith("bf_")]
    assert sorted(forget) == ["bf_l0", "bf_l0_reverse", "bf_l1",
                              "bf_l1_reverse"]
    for name in forget:
        assert torch.equal(params[name].detach(), torch.ones(H)), name
    assert not torch.equal(params["bi_l0"].detach(), torch.ones(H))
    shipped = cellc.torch.RNN("lstm", I, H)
    bf = shipped.bf_l0.detach()
    assert bf.abs().max() <= 1 / H ** 0.5 and bf.abs().max() > 0


def stack_reference(rnn, step, x, lengths, h0=None):
    """The same stack in pure PyTorch: each layer and direction the cell's
    equations (test_torch.reference), concatenated, dropout between layers
    drawn in the order RNN draws it."""
    layer_input, finals = x, [[] for _ in rnn.cell.states]
    for k in range(rnn.num_layers):
        outputs = []
        for d in range(rnn.num_directions):
            suffix = f"_l{k}" + ("_reverse" if d else "")
            params = {n: getattr(rnn, n + suffix) for n, _ in rnn.cell.params}
            index = k * rnn.num_directions + d
            init = [torch.zeros(x.shape[1], H) if h0 is None else h[index]
                    for h in (h0 or [None] * len(rnn.cell.states))]
            out, states = reference(step, layer_input, init, params, lengths,
                                    d == 1)
            outputs.append(out)
            for s, state in enumerate(states):
                finals[s].append(state)
        layer_input = torch.cat(outputs, dim=2)
        if rnn.dropout and rnn.training and k + 1 < rnn.num_layers:
            layer_input = nn.functional.dropout(layer_input, rnn.dropout,
                                                True)
    return layer_input, [torch.stack(f) for f in finals]


@pytest.mark.parametrize("name", ["atr", "lstm", "ran"])
@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("training", [True, False])
def test_matches_a_pure_pytorch_stack(cells_dir, name, layers, training):
    torch.manual_seed(5)
    rnn = cellc.torch.RNN(os.path.join(cells_dir, name + ".cell"), I, H,
                          num_layers=layers, bidirectional=True,
                          dropout=0.3)
    rnn.train(training)
    lengths = [6, 4, 3, 1]
    x = torch.randn(T, B, I, requires_grad=True)
    torch.manual_seed(9)
    out, h_n = rnn(x, lengths=lengths)
    h_n = h_n if isinstance(h_n, tuple) else (h_n,)
    weighted_loss(out, h_n).backward()
    grads = {n: p.grad.clone() for n, p in rnn.named_parameters()}
    rnn.zero_grad()

    x2 = x.detach().clone().requires_grad_()
    torch.manual_seed(9)
    out2, h_n2 = stack_reference(rnn, REFERENCES[name], x2, lengths)
    weighted_loss(out2, tuple(h_n2)).backward()
    torch.testing.assert_close(out, out2, **FORWARD)
    for a, b in zip(h_n, h_n2):
        torch.testing.assert_close(a, b, **FORWARD)
    torch.testing.assert_close(x.grad, x2.grad, **GRADIENT)
    for n, p in rnn.named_parameters():
        torch.testing.assert_close(grads[n], p.grad, **GRADIENT,
                                   msg=lambda m: f"param {n}: {m}")


def test_dropout_changes_training_only(cells_dir):
    torch.manual_seed(6)
    rnn = cellc.torch.RNN(os.path.join(cells_dir, "atr.cell"), I, H,
                          num_layers=2, dropout=0.5)
    x = torch.randn(T, B, I)
    rnn.eval()
    assert torch.equal(rnn(x)[0], rnn(x)[0])
    rnn.train()
    assert not torch.equal(rnn(x)[0], rnn(x)[0])


def test_layers_differ_and_seed_reproduces(cells_dir):
    path = os.path.join(cells_dir, "atr.cell")
    torch.manual_seed(8)
    a = cellc.torch.RNN(path, I, H, num_layers=2, bidirectional=True)
    torch.manual_seed(8)
    b = cellc.torch.RNN(path, I, H, num_layers=2, bidirectional=True)
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(p, q), name
    assert not torch.equal(a.Wh_l1, a.Wh_l1_reverse)
    bound = 1 / H ** 0.5  # nn.GRU's U(-1/sqrt(hidden_size), ...)
    assert a.Wx_l0.abs().max() <= bound and a.Wx_l0.abs().max() > bound / 2


def test_repr(cells_dir):
    rnn = cellc.torch.RNN(os.path.join(cells_dir, "gru.cell"), I, H,
                          num_layers=2, bidirectional=True, dropout=0.25)
    assert repr(rnn) == ("RNN(gru, 5, 7, num_layers=2, dropout=0.25, "
                         "bidirectional=True)")
    layer = cellc.torch.CellModule(os.path.join(cells_dir, "atr.cell"),
                                   {"I": I, "H": H}, reverse=True)
    assert repr(layer) == "CellModule(atr, dims={'I': 5, 'H': 7}, " \
        "reverse=True)"


def test_clear_errors(cells_dir):
    path = os.path.join(cells_dir, "lstm.cell")
    rnn = cellc.torch.RNN(path, I, H, num_layers=2)
    with pytest.raises(ValueError, match=r"2 states \(h, c\), got 1"):
        rnn(torch.randn(T, B, I), torch.zeros(2, B, H))
    with pytest.raises(ValueError, match=r"state c must be \(2, 4, 7\)"):
        rnn(torch.randn(T, B, I), (torch.zeros(2, B, H),
                                   torch.zeros(1, B, H)))
    with pytest.raises(ValueError, match="got shape"):
        rnn(torch.randn(T, B, I, 1))
    # SRU reads an input as wide as its state: a second bidirectional
    # layer's input is twice as wide.
    with pytest.raises(ValueError, match="layer 1's input is 14 wide"):
        cellc.torch.RNN(os.path.join(cells_dir, "sru.cell"), H, H,
                        num_layers=2, bidirectional=True)
    with pytest.raises(ValueError, match="one input"):
        cellc.torch.RNN("cell two(x: [I], y: [I]) { state h: [H]\n"
                        " param W: [H, I], V: [H, I]\n"
                        " h' = tanh(W @ x + V @ y) }", I, H)
    with pytest.raises(ValueError, match="dropout"):
        cellc.torch.RNN(path, I, H, dropout=1.0)
    with pytest.raises(TypeError, match="nn.GRU or an nn.LSTM"):
        cellc.torch.RNN.from_torch(nn.RNN(I, H))
