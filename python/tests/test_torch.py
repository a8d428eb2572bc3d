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


def atr(x, h, p):
    a = x @ p["Wx"].T
    q = h @ p["Wh"].T
    return (torch.sigmoid(a + q) * a + torch.sigmoid(a - q) * h,)


def gru(x, h, p):
    z = torch.sigmoid(x @ p["Wz"].T + h @ p["Uz"].T + p["bz"])
    r = torch.sigmoid(x @ p["Wr"].T + h @ p["Ur"].T + p["br"])
    c = torch.tanh(x @ p["Wh"].T + (r * h) @ p["Uh"].T + p["bh"])
    return (z * h + (1 - z) * c,)


def lstm(x, state, p):
    h, c = state
    gate = {k: x @ p["W" + k].T + h @ p["U" + k].T + p["b" + k]
            for k in "ifog"}
    c2 = torch.sigmoid(gate["f"]) * c + torch.sigmoid(gate["i"]) * \
        torch.tanh(gate["g"])
    return torch.sigmoid(gate["o"]) * torch.tanh(c2), c2


REFERENCES = {"atr": (atr, 1), "gru": (gru, 1), "lstm": (lstm, 2)}


def reference(step, n_states, x, init, params, lengths, reverse):
    """The runtime's semantics: padded steps give zero output and keep the
    state; reverse runs each sequence from its last step back to 0."""
    states = list(init)
    outputs = [None] * x.shape[0]
    order = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    mask_all = torch.tensor(lengths).unsqueeze(1)
    for t in order:
        new = step(x[t], states[0] if n_states == 1 else states, params)
        active = (t < mask_all).float()
        states = [active * n + (1 - active) * s for n, s in zip(new, states)]
        outputs[t] = active * new[0]
    return torch.stack(outputs), states


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("reverse", [False, True])
def test_matches_pytorch(cells_dir, name, reverse):
    torch.manual_seed(7)
    step, n_states = REFERENCES[name]
    layer = cellc.torch.CellModule(os.path.join(cells_dir, name + ".cell"),
                                   {"I": I, "H": H}, reverse=reverse)
    x = torch.randn(T, B, I, requires_grad=True)
    init = [torch.randn(B, H, requires_grad=True) for _ in range(n_states)]
    out, finals = layer(x, lengths=LENGTHS, init=init)
    weights = [torch.randn_like(out)] + [torch.randn(B, H) for _ in finals]
    loss = (out * weights[0]).sum() + sum(
        (f * w).sum() for f, w in zip(finals, weights[1:]))
    loss.backward()

    params = {n: p.detach().clone().requires_grad_() for n, p in
              layer.named_parameters()}
    x2 = x.detach().clone().requires_grad_()
    init2 = [s.detach().clone().requires_grad_() for s in init]
    out2, finals2 = reference(step, n_states, x2, init2, params, LENGTHS,
                              reverse)
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
