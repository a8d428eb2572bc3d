#!/usr/bin/env python3
"""The GPU peers of cellc-gpu, timed on the same workloads (run on a GPU
machine; bench/gpu/README.md).

  cudnn        torch.nn.GRU / torch.nn.LSTM on CUDA: cuDNN's fused RNN
               kernels (PyTorch's GRU is the linear-before-reset variant)
  torch-eager  the cell's equations in PyTorch ops on CUDA, written as a
               good PyTorch user would: input projection hoisted as one
               GEMM over T*B rows, one stacked recurrent GEMM per step
               (ATR, GRU and LSTM)

Each peer runs in two settings: `-resident` keeps everything on the GPU
(inputs, outputs and gradients stay there, the usual PyTorch use), `-host`
does what cellrt's host-array API does per call: copies the inputs, the
initial state and every parameter to the GPU and the output, final state
and every gradient back. fp32 throughout, TF32 off (cellrt's cuBLAS calls
use plain fp32 GEMMs). Prints RESULT lines in cellc-bench's format.
"""
import argparse
import statistics
import time

import torch


def timed(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def atr_eager(x, h, Wx, Wh):
    p_all = (x.reshape(-1, x.shape[-1]) @ Wx.t()).view(x.shape[0], x.shape[1], -1)
    outs = []
    for p in p_all.unbind(0):
        q = h @ Wh.t()
        i = torch.sigmoid(p + q)
        f = torch.sigmoid(p - q)
        h = i * p + f * h
        outs.append(h)
    return torch.stack(outs), h


def gru_eager(x, h, W, U, Uh, b):
    H = h.shape[1]
    xw_all = torch.addmm(b, x.reshape(-1, x.shape[-1]), W.t()).view(
        x.shape[0], x.shape[1], 3 * H)
    outs = []
    for xw in xw_all.unbind(0):
        zr = torch.sigmoid(xw[:, :2 * H] + h @ U.t())
        z, r = zr.chunk(2, 1)
        c = torch.tanh(xw[:, 2 * H:] + (r * h) @ Uh.t())
        h = torch.lerp(c, h, z)
        outs.append(h)
    return torch.stack(outs), h


def lstm_eager(x, h, c, W, U, b):
    xw_all = torch.addmm(b, x.reshape(-1, x.shape[-1]), W.t()).view(
        x.shape[0], x.shape[1], -1)
    outs = []
    for xw in xw_all.unbind(0):
        gates = torch.addmm(xw, h, U.t())
        i, f, o, g = gates.chunk(4, 1)
        i, f, o = torch.sigmoid(i), torch.sigmoid(f), torch.sigmoid(o)
        c = f * c + i * torch.tanh(g)
        h = o * torch.tanh(c)
        outs.append(h)
    return torch.stack(outs), h


class Workload:
    def __init__(self, impl, cell, T, B, H, train, host):
        self.T, self.B, self.H, self.train, self.host = T, B, H, train, host
        dev = torch.device("cuda")
        scale = H ** -0.5
        g = torch.Generator().manual_seed(1)

        def rand(*shape, s=scale):
            return (torch.rand(*shape, generator=g) * 2 - 1) * s

        self.x_host = rand(T, B, H, s=1.0)
        self.dout_host = rand(T, B, H, s=1.0)
        self.h0_host = torch.zeros(B, H)
        if impl == "cudnn":
            rnn = (torch.nn.GRU if cell == "gru" else torch.nn.LSTM)(H, H)
            self.module = rnn.to(dev)
            self.params = list(self.module.parameters())
        else:
            shapes = {"atr": [(H, H), (H, H)],
                      "gru": [(3 * H, H), (2 * H, H), (H, H), (3 * H,)],
                      "lstm": [(4 * H, H), (4 * H, H), (4 * H,)]}[cell]
            self.params = [rand(*s).to(dev) for s in shapes]
        for p in self.params:
            p.requires_grad_(train)
        self.params_host = [p.detach().cpu() for p in self.params]
        self.impl, self.cell = impl, cell
        self.x = self.x_host.to(dev)
        self.dout = self.dout_host.to(dev)
        self.h0 = self.h0_host.to(dev)

    def forward(self, x, h0):
        if self.impl == "cudnn":
            if self.cell == "lstm":
                return self.module(x, (h0[None], h0[None]))[0]
            return self.module(x, h0[None])[0]
        if self.cell == "atr":
            return atr_eager(x, h0, *self.params)[0]
        if self.cell == "gru":
            return gru_eager(x, h0, *self.params)[0]
        return lstm_eager(x, h0, h0, *self.params)[0]

    def run(self):
        if self.host:  # what a host-array call moves in
            x = self.x_host.to("cuda")
            h0 = self.h0_host.to("cuda")
            with torch.no_grad():
                for p, ph in zip(self.params, self.params_host):
                    p.copy_(ph)
        else:
            x, h0 = self.x, self.h0
        if not self.train:
            with torch.inference_mode():
                out = self.forward(x, h0)
            if self.host:
                out.cpu()
            return
        x = x.detach().requires_grad_(True)
        for p in self.params:
            p.grad = None
        out = self.forward(x, h0)
        dout = self.dout_host.to("cuda") if self.host else self.dout
        out.backward(dout)
        if self.host:  # and what it moves out
            out.detach().cpu()
            x.grad.cpu()
            for p in self.params:
                p.grad.cpu()


def step_peer(cell, B, H, steps=100):
    """One decoding step of torch.nn.GRUCell / LSTMCell on the GPU, states
    reordered by beam parents every step (index_select), everything
    resident; a run is `steps` steps."""
    dev = torch.device("cuda")
    module = (torch.nn.GRUCell if cell == "gru" else torch.nn.LSTMCell)(H, H)
    module = module.to(dev)
    g = torch.Generator().manual_seed(1)
    x = torch.rand(B, H, generator=g).to(dev)
    h = torch.rand(B, H, generator=g).to(dev)
    c = torch.rand(B, H, generator=g).to(dev)
    parents = torch.tensor([(b * 7 + 3) % B for b in range(B)], device=dev)

    def run():
        nonlocal h, c
        with torch.inference_mode():
            for _ in range(steps):
                hs = h.index_select(0, parents)
                if cell == "gru":
                    h = module(x, hs)
                else:
                    h, c = module(x, (hs, c.index_select(0, parents)))
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", default="atr,gru,lstm")
    parser.add_argument("--seq", default="50x64,100x64")
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--modes", default="fwd,train")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__} "
          f"cudnn {torch.backends.cudnn.version()}", flush=True)
    if args.modes == "step":
        for cell in ("gru", "lstm"):
            for B in (10, 1):
                steps = 100
                times = sorted(t / steps for t in timed(
                    step_peer(cell, B, args.size, steps), 2, 10))
                print(f"RESULT impl=torch-cell-resident cell={cell} mode=step "
                      f"T=1 B={B} I={args.size} H={args.size} threads=1 "
                      f"median_ms={statistics.median(times):.4f} "
                      f"min_ms={times[0]:.4f} max_ms={times[-1]:.4f} "
                      f"reps={len(times)}", flush=True)
        return
    for cell in args.cells.split(","):
        for seq in args.seq.split(","):
            T, B = map(int, seq.split("x"))
            for mode in args.modes.split(","):
                for impl in ("cudnn", "torch-eager"):
                    if impl == "cudnn" and cell not in ("gru", "lstm"):
                        continue
                    for host in (False, True):
                        w = Workload(impl, cell, T, B, args.size,
                                     mode == "train", host)
                        times = sorted(timed(w.run, args.warmup, args.reps))
                        name = f"{impl}-{'host' if host else 'resident'}"
                        print(f"RESULT impl={name} cell={cell} mode={mode} "
                              f"T={T} B={B} I={args.size} H={args.size} "
                              f"threads=1 median_ms={statistics.median(times):.4f} "
                              f"min_ms={times[0]:.4f} max_ms={times[-1]:.4f} "
                              f"reps={len(times)}", flush=True)


if __name__ == "__main__":
    main()
