"""Params as one .npz archive: CellModule.save_params/load_params and the
state_dict, and the same archive read by `cellc run --params` (C++), whose
results must equal the module's; np.savez_compressed archives read too."""
import os
import subprocess

import numpy as np
import pytest
import torch

import cellc
import cellc.torch
from helpers import cellc_binary

T, B, I, H = 5, 3, 4, 6



def gru_layer(cells_dir, seed):
    torch.manual_seed(seed)
    return cellc.torch.CellModule(os.path.join(cells_dir, "gru.cell"),
                                  {"I": I, "H": H})


def test_save_and_load_round_trip(cells_dir, tmp_path):
    layer, other = gru_layer(cells_dir, 1), gru_layer(cells_dir, 2)
    layer.save_params(tmp_path / "p.npz")
    other.load_params(tmp_path / "p.npz")
    for name, value in layer.state_dict().items():
        torch.testing.assert_close(other.state_dict()[name], value,
                                   rtol=0, atol=0)
    # The state_dict has the same names as the archive.
    with np.load(tmp_path / "p.npz") as archive:
        assert sorted(archive.files) == sorted(layer.state_dict())


def test_load_errors_name_the_entry(cells_dir, tmp_path):
    layer = gru_layer(cells_dir, 1)
    params = {k: v.numpy() for k, v in layer.state_dict().items()}
    np.savez(tmp_path / "extra.npz", Wq=np.zeros(3, np.float32), **params)
    with pytest.raises(ValueError, match="has no param Wq"):
        layer.load_params(tmp_path / "extra.npz")
    del params["Uz"]
    np.savez(tmp_path / "missing.npz", **params)
    with pytest.raises(ValueError, match="no entry for param Uz"):
        layer.load_params(tmp_path / "missing.npz")


@pytest.mark.parametrize("compressed", [False, True])
def test_cellc_run_reads_the_archive(cells_dir, tmp_path, compressed):
    layer = gru_layer(cells_dir, 4)
    x = torch.randn(T, B, I)
    expected, finals = layer(x)
    if compressed:
        np.savez_compressed(tmp_path / "params.npz",
                            **{k: v.numpy() for k, v in
                               layer.state_dict().items()})
    else:
        layer.save_params(tmp_path / "params.npz")
    np.save(tmp_path / "x_x.npy", x.numpy())
    np.save(tmp_path / "dout.npy", np.ones((T, B, H), np.float32))
    subprocess.run([cellc_binary(), "run",
                    os.path.join(cells_dir, "gru.cell"), "--dir",
                    str(tmp_path), "--no-cache"], check=True,
                   capture_output=True)
    out = np.load(tmp_path / "out.npy")
    np.testing.assert_array_equal(out, expected.detach().numpy())
    # The gradients come back as one archive too, equal to autograd's
    # through the module (the same runtime underneath).
    expected.sum().backward()
    with np.load(tmp_path / "grad_params.npz") as grads:
        for name, param in layer.named_parameters():
            np.testing.assert_allclose(grads[name], param.grad.numpy(),
                                       rtol=1e-6, atol=1e-6)
    assert not os.path.exists(tmp_path / "grad_param_Wz.npy")


def test_cellc_run_rejects_params_twice(cells_dir, tmp_path):
    layer = gru_layer(cells_dir, 1)
    layer.save_params(tmp_path / "params.npz")
    np.save(tmp_path / "x_x.npy", np.zeros((T, B, I), np.float32))
    np.save(tmp_path / "param_Wz.npy", np.zeros((H, I), np.float32))
    run = subprocess.run([cellc_binary(), "run",
                          os.path.join(cells_dir, "gru.cell"), "--dir",
                          str(tmp_path), "--no-cache"], capture_output=True,
                         text=True)
    assert run.returncode == 1
    assert "param_Wz.npy and" in run.stderr and "keep one" in run.stderr


def seed_cells(cells_dir):
    return sorted(f[:-5] for f in os.listdir(cells_dir) if f.endswith(".cell"))


@pytest.mark.parametrize("name", seed_cells(os.path.join(
    os.environ.get("CELLC_SOURCE_DIR", "."), "cells")))
def test_module_equals_the_cpp_runtime_bit_for_bit(cells_dir, tmp_path,
                                                    name):
    """The module and `cellc run` (the C++ runtime through the same JIT)
    on the same arrays: output, final states and every gradient equal."""
    torch.manual_seed(5)
    path = os.path.join(cells_dir, name + ".cell")
    cell = cellc.compile(path)
    # Only the dims the cell has (SRU's input is [H]).
    layer = cellc.torch.CellModule(
        cell, {d: {"I": I, "H": H}[d] for d in cell.dims})
    width = cellc.torch._size(layer.cell.inputs[0][1], layer.dims)
    x = torch.randn(T, B, width, requires_grad=True)
    init = [torch.randn(B, w, requires_grad=True)
            for w in layer.state_widths()]
    lengths = [5, 2, 4]
    out, finals = layer(x, lengths=lengths, init=init)
    dout = torch.randn_like(out)
    dfinals = [torch.randn_like(f) for f in finals]
    ((out * dout).sum() + sum((f * d).sum()
                              for f, d in zip(finals, dfinals))).backward()

    layer.save_params(tmp_path / "params.npz")
    np.save(tmp_path / "x_x.npy", x.detach().numpy())
    np.save(tmp_path / "lengths.npy", np.array(lengths, np.int32))
    np.save(tmp_path / "dout.npy", dout.numpy())
    for (state, _), s, d in zip(layer.cell.states, init, dfinals):
        np.save(tmp_path / f"init_{state}.npy", s.detach().numpy())
        np.save(tmp_path / f"dfinal_{state}.npy", d.numpy())
    subprocess.run([cellc_binary(), "run", path, "--dir", str(tmp_path)],
                   check=True, capture_output=True)

    def same(file, tensor):
        np.testing.assert_array_equal(np.load(tmp_path / file),
                                      tensor.detach().numpy(), err_msg=file)

    same("out.npy", out)
    same("grad_x_x.npy", x.grad)
    for (state, _), f, s in zip(layer.cell.states, finals, init):
        same(f"final_{state}.npy", f)
        same(f"grad_init_{state}.npy", s.grad)
    with np.load(tmp_path / "grad_params.npz") as grads:
        for n, p in layer.named_parameters():
            np.testing.assert_array_equal(grads[n], p.grad.numpy(),
                                          err_msg=n)
