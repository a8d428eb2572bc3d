"""cellc.torch against pure PyTorch implementations of the same equations:
the output, the final states and every gradient (inputs, initial states,
params), ragged lengths, both directions. Tolerances are float32's: cellrt
sums in another order than PyTorch and has its own exp (within 1 ulp), so
outputs agree to 1e-5 and gradients to 1e-4 relative."""
import os

import pytest
import torch

import cellc
import cellc.torch

T, B, I, H = 6, 4, 5, 7
LENGTHS = [6, 4, 3, 1]


# Each seed cell's equations (cells/*.cell) as PyTorch: (x, [state...],
# params) -> (output, [new state...]).
def lin(p, name, v):
    return v @ p[name].T


def atr(x, s, p):
    a, q = lin(p, "Wx", x), lin(p, "Wh", s[0])
    h = torch.sigmoid(a + q) * a + torch.sigmoid(a - q) * s[0]
    return h, [h]


def gru(x, s, p):
    h = s[0]
    z = torch.sigmoid(lin(p, "Wz", x) + lin(p, "Uz", h) + p["bz"])
    r = torch.sigmoid(lin(p, "Wr", x) + lin(p, "Ur", h) + p["br"])
    c = torch.tanh(lin(p, "Wh", x) + lin(p, "Uh", r * h) + p["bh"])
    h2 = z * h + (1 - z) * c
    return h2, [h2]


def torch_gru(x, s, p):
    """nn.GRU's equations (the reset gate scales Un @ h + bhn)."""
    h = s[0]
    r = torch.sigmoid(lin(p, "Wr", x) + lin(p, "Ur", h) + p["br"])
    z = torch.sigmoid(lin(p, "Wz", x) + lin(p, "Uz", h) + p["bz"])
    n = torch.tanh(lin(p, "Wn", x) + p["bn"] + r * (lin(p, "Un", h) +
                                                    p["bhn"]))
    h2 = (1 - z) * n + z * h
    return h2, [h2]


def lstm(x, s, p):
    h, c = s
    gate = {k: lin(p, "W" + k, x) + lin(p, "U" + k, h) + p["b" + k]
            for k in "ifog"}
    c2 = torch.sigmoid(gate["f"]) * c + torch.sigmoid(gate["i"]) * \
        torch.tanh(gate["g"])
    h2 = torch.sigmoid(gate["o"]) * torch.tanh(c2)
    return h2, [h2, c2]


def rnn(x, s, p):
    h = torch.tanh(lin(p, "W", x) + lin(p, "U", s[0]) + p["b"])
    return h, [h]


def ran(x, s, p):
    h, c = s
    i = torch.sigmoid(lin(p, "Wi", x) + lin(p, "Ui", h) + p["bi"])
    f = torch.sigmoid(lin(p, "Wf", x) + lin(p, "Uf", h) + p["bf"])
    c2 = i * lin(p, "Wc", x) + f * c
    h2 = torch.tanh(c2)
    return h2, [h2, c2]


def lau(x, s, p):
    h = s[0]
    gate = {k: torch.sigmoid(lin(p, "Wx" + k, x) + lin(p, "Wh" + k, h))
            for k in "rzg"}
    r, z, g = gate["r"], gate["z"], gate["g"]
    c = torch.tanh((1 - r) * lin(p, "Wxh", x) + r * lin(p, "Whh", h))
    h2 = ((1 - z) * h + z * c) * (1 - g) + g * lin(p, "Wx", x)
    return h2, [h2]


def sru(x, s, p):
    f = torch.sigmoid(lin(p, "Wf", x) + p["bf"])
    r = torch.sigmoid(lin(p, "Wr", x) + p["br"])
    c2 = f * s[0] + (1 - f) * lin(p, "W", x)
    return r * torch.tanh(c2) + (1 - r) * x, [c2]


def srnmt(x, s, p):
    u = lin(p, "W", x)
    u = torch.nn.functional.layer_norm(u, u.shape[-1:], eps=1e-5)
    xt, g, z = u.chunk(3, dim=-1)
    h2 = (1 - torch.sigmoid(g)) * s[0] + torch.sigmoid(g) * xt
    return (1 - torch.sigmoid(z)) * h2 + torch.sigmoid(z) * x, [h2]


def deeptrans(x, s, p):
    def transition(gates, candidate, recurrent, old):
        z, r = gates.chunk(2, dim=-1)
        c = torch.tanh(candidate + lin(p, recurrent, torch.sigmoid(r) * old))
        return (1 - torch.sigmoid(z)) * old + torch.sigmoid(z) * c

    a, b = s
    a2 = transition(lin(p, "W", x) + lin(p, "U", a), lin(p, "Wc", x), "Uc",
                    a)
    b2 = transition(lin(p, "V", a2) + lin(p, "R", b), lin(p, "Vc", a2), "Rc",
                    b)
    return b2, [a2, b2]


REFERENCES = {f.__name__: f for f in
              (atr, gru, torch_gru, lstm, rnn, ran, lau, sru, srnmt,
               deeptrans)}


def reference(step, x, init, params, lengths, reverse):
    """The runtime's semantics: padded steps give zero output and keep the
    state; reverse runs each sequence from its last step back to 0."""
    states = list(init)
    outputs = [None] * x.shape[0]
    order = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    mask_all = torch.tensor(lengths).unsqueeze(1)
    for t in order:
        output, new = step(x[t], states, params)
        active = (t < mask_all).float()
        states = [active * n + (1 - active) * s for n, s in zip(new, states)]
        outputs[t] = active * output
    return torch.stack(outputs), states


def cell_dims(cell):
    """I and H for the dimensions the cell has (SRU's input is [H]: it has
    no I, and a dims entry it lacks is an error)."""
    return {d: {"I": I, "H": H}[d] for d in cell.dims}


def test_every_seed_cell_has_a_reference(cells_dir):
    names = {f[:-5] for f in os.listdir(cells_dir) if f.endswith(".cell")}
    assert names == set(REFERENCES)


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("reverse", [False, True])
def test_matches_pytorch(cells_dir, name, reverse):
    torch.manual_seed(7)
    step = REFERENCES[name]
    cell = cellc.compile(os.path.join(cells_dir, name + ".cell"))
    layer = cellc.torch.CellModule(cell, cell_dims(cell), reverse=reverse)
    width = cellc.torch._size(layer.cell.inputs[0][1], layer.dims)
    x = torch.randn(T, B, width, requires_grad=True)
    init = [torch.randn(B, w, requires_grad=True)
            for w in layer.state_widths()]
    out, finals = layer(x, lengths=LENGTHS, init=init)
    weights = [torch.randn_like(out)] + [torch.randn_like(f) for f in finals]
    loss = (out * weights[0]).sum() + sum(
        (f * w).sum() for f, w in zip(finals, weights[1:]))
    loss.backward()

    params = {n: p.detach().clone().requires_grad_() for n, p in
              layer.named_parameters()}
    x2 = x.detach().clone().requires_grad_()
    init2 = [s.detach().clone().requires_grad_() for s in init]
    out2, finals2 = reference(step, x2, init2, params, LENGTHS, reverse)
    loss2 = (out2 * weights[0]).sum() + sum(
        (f * w).sum() for f, w in zip(finals2, weights[1:]))
    loss2.backward()

    close = dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out, out2.detach(), **close)
    for f, f2 in zip(finals, finals2):
        torch.testing.assert_close(f, f2.detach(), **close)
    grad = dict(rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(x.grad, x2.grad, **grad)
    for s, s2 in zip(init, init2):
        torch.testing.assert_close(s.grad, s2.grad, **grad)
    for n, p in layer.named_parameters():
        torch.testing.assert_close(p.grad, params[n].grad, **grad,
                                   msg=lambda m: f"param {n}: {m}")


def test_packed_sequences(cells_dir):
    torch.manual_seed(3)
    layer = cellc.torch.CellModule(os.path.join(cells_dir, "gru.cell"),
                                   {"I": I, "H": H})
    x = torch.randn(T, B, I)
    lengths = [3, 6, 1, 4]  # unsorted
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths,
                                                     enforce_sorted=False)
    out_packed, finals = layer(packed)
    out, _ = torch.nn.utils.rnn.pad_packed_sequence(out_packed)
    expected, expected_finals = layer(x, lengths=lengths)
    torch.testing.assert_close(out, expected[:out.shape[0]])
    torch.testing.assert_close(finals[0], expected_finals[0])


def test_a_small_model_learns(cells_dir):
    """embedding -> CellModule(atr) -> linear, next-token prediction on a
    repeating sequence: the loss must fall well below its start."""
    torch.manual_seed(1)
    vocab, width = 10, 16
    embed = torch.nn.Embedding(vocab, width)
    cell = cellc.torch.CellModule(os.path.join(cells_dir, "atr.cell"),
                                  {"I": width, "H": width})
    project = torch.nn.Linear(width, vocab)
    parameters = [*embed.parameters(), *cell.parameters(),
                  *project.parameters()]
    optimizer = torch.optim.Adam(parameters, lr=0.02)
    tokens = torch.arange(12).remainder(vocab).repeat(8, 1).T  # (T, B)
    losses = []
    for _ in range(60):
        out, _ = cell(embed(tokens[:-1]))
        logits = project(out)
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, vocab), tokens[1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0], losses


def test_clear_errors(cells_dir):
    layer = cellc.torch.CellModule(os.path.join(cells_dir, "atr.cell"),
                                   {"I": I, "H": H})
    with pytest.raises(TypeError, match="float32"):
        layer(torch.randn(T, B, I, dtype=torch.float64))
    with pytest.raises(ValueError, match="needs dims H"):
        cellc.torch.CellModule(os.path.join(cells_dir, "atr.cell"),
                               {"I": I})
    with pytest.raises(cellc.RunError):
        layer(torch.randn(T, B, I + 1))
    # A tensor on another device (meta stands in for CUDA on a CPU-only
    # machine): the error says where it is and what to do.
    with pytest.raises(ValueError, match=r"is on meta.*\.cpu\(\)"):
        layer(torch.empty(T, B, I, device="meta"))
