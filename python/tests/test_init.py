"""Params drawn from a seed (docs/cell-language.md, "Initialisers"):
Cell.init_params gives cellrt's values, the same as the C++ and C APIs
(test/unit/InitParamsTest.cpp pins the golden values below) and
`cellc run --init-seed`; CellModule.reset_parameters draws the cell's
initialisers, its old U(-1/sqrt(R), 1/sqrt(R)) for the rest, reproducibly
under torch.manual_seed."""
import os
import subprocess

import numpy as np
import pytest
import torch

import cellc
import cellc.torch
from helpers import cellc_binary

SOURCE = """
cell init(x: [I]) {
  state h: [H]
  param W: [H, I] ~ uniform(1), U: [H, H] ~ orthogonal
  param Wide: [H, 3*H] ~ orthogonal, N: [H, I] ~ normal(0.5)
  param bf: [H] = 1, b: [H], V: [H, I]
  h' = tanh(W @ x + U @ h + Wide @ concat(h, h, h) + N @ x + V @ x + bf + b)
}
"""
H, I = 6, 40


@pytest.fixture(scope="module")
def cell():
    return cellc.compile(SOURCE)


def empty(cell, dims):
    return {name: np.full([int(eval(d, {}, dict(dims))) for d in shape], -7,
                          dtype=np.float32)
            for name, shape in cell.params}


def test_param_inits(cell):
    assert cell.param_inits == {
        "W": "uniform 1", "U": "orthogonal", "Wide": "orthogonal",
        "N": "normal 0.5", "bf": "constant 1", "b": "none", "V": "none"}


def test_golden_values_of_the_cpp_api():
    golden = cellc.compile("cell g(x: [I]) {\n state h: [H]\n"
                           " param W: [H, I] ~ uniform(1)\n"
                           " h' = tanh(W @ x + h)\n}\n")
    values = {"W": np.zeros((2, 3), np.float32)}
    golden.init_params(values, 42)
    expected = np.array([0.0876345336, 0.161428243, -0.065633215,
                         0.431118906, 0.341221035, 0.553386092],
                        dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(values["W"], expected)


def test_schemes_and_fallback(cell):
    params = empty(cell, {"H": H, "I": I})
    cell.init_params(params, 3)
    assert np.all(np.abs(params["W"]) <= 1) and params["W"].std() > 0.4
    np.testing.assert_allclose(params["U"].T @ params["U"], np.eye(H),
                               atol=1e-5)
    np.testing.assert_allclose(params["Wide"] @ params["Wide"].T, np.eye(H),
                               atol=1e-5)
    assert 0.35 < params["N"].std() < 0.65
    assert np.all(params["bf"] == 1)
    # No fallback: params without an initialiser are left as they were.
    assert np.all(params["b"] == -7) and np.all(params["V"] == -7)
    cell.init_params(params, 3, "constant(0.25)")
    assert np.all(params["b"] == 0.25) and np.all(params["V"] == 0.25)
    cell.init_params(params, 3, "fan_in")
    assert np.all(np.abs(params["V"]) <= 1 / np.sqrt(I))


def test_same_seed_same_values(cell):
    first, second, third = (empty(cell, {"H": H, "I": I}) for _ in range(3))
    cell.init_params(first, 11, "fan_out")
    cell.init_params(second, 11, "fan_out")
    cell.init_params(third, 12, "fan_out")
    for name in first:
        np.testing.assert_array_equal(first[name], second[name])
        if name != "bf":
            assert not np.array_equal(first[name], third[name]), name
    # A param's values do not depend on the others being drawn.
    alone = {"N": np.zeros((H, I), np.float32)}
    cell.init_params(alone, 11)
    np.testing.assert_array_equal(alone["N"], first["N"])


def test_errors(cell):
    params = empty(cell, {"H": H, "I": I})
    with pytest.raises(ValueError, match="fallback must be a scheme such as "
                       "'fan_in', 'uniform\\(0.1\\)' or 'none', not 'glorot'"):
        cell.init_params(params, 1, "glorot")
    with pytest.raises(ValueError, match="has no param 'nope'"):
        cell.init_params({"nope": params["b"]}, 1)
    with pytest.raises(TypeError, match="param 'b' must be float32"):
        cell.init_params({"b": np.zeros(H)}, 1)
    with pytest.raises(cellc.RunError, match="param 'b' has shape \\[5\\] "
                       "but is declared \\[H\\] = \\[6\\]"):
        cell.init_params({"b": np.zeros(5, np.float32),
                          "U": np.zeros((H, H), np.float32)}, 1)
    with pytest.raises(cellc.RunError, match="fallback orthogonal cannot draw "
                       "it"):
        cell.init_params(params, 1, "orthogonal")


def lstm_layer(cells_dir, seed, hidden=8, inputs=50):
    """An LSTM whose cell declares its forget bias 1 (as cells/lstm.cell did
    until 2026-11-30)."""
    torch.manual_seed(seed)
    return cellc.torch.CellModule(
        os.path.join(cells_dir, "..", "test", "models", "Inputs",
                     "lstm-forget-bias-1.cell"), {"I": inputs, "H": hidden})


def test_reset_parameters_uses_the_cell_and_torchs_seed(cells_dir):
    layer = lstm_layer(cells_dir, 0)
    again = lstm_layer(cells_dir, 0)
    other = lstm_layer(cells_dir, 1)
    for name, value in layer.named_parameters():
        torch.testing.assert_close(again.get_parameter(name), value,
                                   rtol=0, atol=0)
        if name != "bf":
            assert not torch.equal(other.get_parameter(name), value), name
    # The cell's bf = 1 (Jozefowicz et al. 2015).
    assert torch.all(layer.bf == 1)
    # The rest as before: U(-1/sqrt(R), 1/sqrt(R)) for the first dimension R
    # (fan_out), here H = 8 rows of I = 50 columns.
    for name in ("Wi", "Ui", "bi"):
        value = getattr(layer, name)
        assert value.abs().max() <= 1 / np.sqrt(8)
        assert value.abs().max() > 1 / np.sqrt(50)
    # The seed is torch's next int64, and the values cellrt's for it.
    torch.manual_seed(0)
    seed = int(torch.randint(0, 2**63 - 1, (), dtype=torch.int64))
    values = {name: np.empty(tuple(p.shape), np.float32)
              for name, p in layer.named_parameters()}
    layer.cell.init_params(values, seed, "fan_out")
    for name, value in values.items():
        np.testing.assert_array_equal(getattr(layer, name).detach().numpy(),
                                      value)



def test_cellc_run_draws_the_same_values(cell, tmp_path):
    source = tmp_path / "init.cell"
    source.write_text(SOURCE)
    x = np.zeros((2, 3, I), np.float32)
    np.save(tmp_path / "x_x.npy", x)
    np.save(tmp_path / "init_h.npy", np.zeros((3, H), np.float32))
    subprocess.run([cellc_binary(), "run", str(source), "--dir",
                    str(tmp_path), "--init-seed", "5", "--init-fallback",
                    "normal(0.1)", "--no-cache"],
                   check=True, capture_output=True)
    params = empty(cell, {"H": H, "I": I})
    cell.init_params(params, 5, "normal(0.1)")
    with np.load(tmp_path / "drawn_params.npz") as drawn:
        assert sorted(drawn.files) == sorted(params)
        for name, value in params.items():
            np.testing.assert_array_equal(drawn[name], value)
