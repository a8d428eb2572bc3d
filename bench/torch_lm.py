"""A PyTorch language model's training step with a compiled cell against
PyTorch's own: embedding 512 -> recurrent layers (hidden 512) -> linear
over a 10,000-word vocabulary, T=50, B=64, Adam. The recurrent layer is
cellc.torch.CellModule(atr), CellModule(gru), a hand-written PyTorch ATR
(a loop over time), or nn.GRU (PyTorch's fused CPU GRU); then two
bidirectional layers: cellc.torch.RNN of torch_gru (nn.GRU's equations) and
of lstm against nn.GRU and nn.LSTM with num_layers=2, bidirectional=True.
Prints the median milliseconds of a whole training step and of the
layers' forward+backward alone.

    OMP_NUM_THREADS=1 PYTHONPATH=build/python /usr/bin/python3 \\
        bench/torch_lm.py --threads 1
Run once per thread count (OpenMP reads its settings at start).
"""
import argparse
import os
import statistics
import time

import torch

import cellc
import cellc.torch

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
T, B, E, H, V = 50, 64, 512, 512, 10000


class TorchAtr(torch.nn.Module):
    """The ATR cell in PyTorch, one step at a time (the input projection
    hoisted out of the loop, as a careful PyTorch user would write it)."""

    def __init__(self):
        super().__init__()
        self.Wx = torch.nn.Parameter(torch.empty(H, E).uniform_(-0.04, 0.04))
        self.Wh = torch.nn.Parameter(torch.empty(H, H).uniform_(-0.04, 0.04))

    def forward(self, x):
        p = x @ self.Wx.T
        h = torch.zeros(x.shape[1], H)
        outputs = []
        for t in range(x.shape[0]):
            q = h @ self.Wh.T
            h = torch.sigmoid(p[t] + q) * p[t] + torch.sigmoid(p[t] - q) * h
            outputs.append(h)
        return torch.stack(outputs)


def layers():
    """{name: (layer, output width)}; every layer returns (output, ...)
    but the hand-written ATR, which returns the output."""
    cells = os.path.join(SOURCE, "cells")
    atr = cellc.torch.CellModule(os.path.join(cells, "atr.cell"),
                                 {"I": E, "H": H})
    gru = cellc.torch.CellModule(os.path.join(cells, "gru.cell"),
                                 {"I": E, "H": H})
    stack = dict(num_layers=2, bidirectional=True)
    return {
        "cellc atr": (atr, H),
        "pytorch atr (loop)": (TorchAtr(), H),
        "cellc gru": (gru, H),
        "nn.GRU": (torch.nn.GRU(E, H), H),
        "RNN torch_gru 2 bi": (cellc.torch.RNN(
            os.path.join(cells, "torch_gru.cell"), E, H, **stack), 2 * H),
        "nn.GRU 2 bi": (torch.nn.GRU(E, H, **stack), 2 * H),
        "RNN lstm 2 bi": (cellc.torch.RNN(
            os.path.join(cells, "lstm.cell"), E, H, **stack), 2 * H),
        "nn.LSTM 2 bi": (torch.nn.LSTM(E, H, **stack), 2 * H),
    }


def timed(step, repeats):
    for _ in range(3):
        step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cellc.set_threads(args.threads)
    torch.manual_seed(1)
    tokens = torch.randint(0, V, (T + 1, B))
    print(f"threads {args.threads}: median ms per training step "
          f"(T={T} B={B} emb {E} hidden {H} vocab {V})")
    print(f"{'layer':<20} {'whole step':>10} {'layers fwd+bwd':>14}")
    for name, (layer, width) in layers().items():
        def run(x, layer=layer):
            out = layer(x)
            return out if isinstance(layer, TorchAtr) else out[0]
        embed = torch.nn.Embedding(V, E)
        project = torch.nn.Linear(width, V)
        params = [*embed.parameters(), *layer.parameters(),
                  *project.parameters()]
        optimizer = torch.optim.Adam(params, lr=1e-3)

        def step():
            out = run(embed(tokens[:-1]))
            loss = torch.nn.functional.cross_entropy(
                project(out).reshape(-1, V), tokens[1:].reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        x = torch.randn(T, B, E, requires_grad=True)

        def layer_only():
            run(x).sum().backward()

        print(f"{name:<20} {timed(step, args.repeats):10.1f} "
              f"{timed(layer_only, args.repeats):14.1f}")


if __name__ == "__main__":
    main()
