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

T, B, I, H = 5, 3, 4, 6


def cellc_binary():
    # build/python/cellc/__init__.py -> build/bin/cellc
    build = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(cellc.__file__))))
    path = os.path.join(build, "bin", "cellc")
    if not os.path.exists(path):
        pytest.skip("no cellc binary beside the module (an install)")
    return path


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
