"""The extension module on NumPy arrays: compile errors with locations,
every seed cell forward and backward, a step equal to the first step of a
sequence, and clear errors for wrong arrays."""
import glob
import os

import numpy as np
import pytest

import cellc


def test_compile_error_is_located():
    source = "cell c(x: [H]) {\n  state h: [H]\n  h' = tanh(y)\n}\n"
    with pytest.raises(cellc.CompileError) as caught:
        cellc.compile(source)
    error = caught.value
    assert (error.file, error.line, error.column) == ("<string>", 3, 13)
    assert "unknown name 'y'" in error.message


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        cellc.compile("no/such.cell")


def random_params(cell, dims, rng):
    sizes = {d: dims[d] for d in cell.dims}
    return {name: (0.3 * rng.standard_normal(
        [int(eval(s, {}, sizes)) for s in shape])).astype(np.float32)
        for name, shape in cell.params}


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(
    os.environ.get("CELLC_SOURCE_DIR", "."), "cells", "*.cell"))))
def test_every_seed_cell_runs_and_steps(path):
    cell = cellc.compile(path)
    rng = np.random.default_rng(0)
    dims = {d: 6 for d in cell.dims}
    params = random_params(cell, dims, rng)
    sizes = {d: dims[d] for d in cell.dims}
    inputs = [rng.standard_normal((5, 3, int(eval(n, {}, sizes))))
              .astype(np.float32) for _, n in cell.inputs]
    tape = cellc.Tape()
    out, finals = cell.forward(inputs, params, lengths=[5, 2, 4], tape=tape)
    assert np.isfinite(out).all()
    grads = cell.backward(tape, np.ones_like(out))
    assert sorted(grads["params"]) == sorted(n for n, _ in cell.params)
    assert all(np.isfinite(g).all() for g in grads["params"].values())
    assert np.abs(grads["inputs"][0]).sum() > 0
    states = [np.zeros((3, int(eval(n, {}, sizes))), np.float32)
              for _, n in cell.states]
    step_out, _ = cell.step([x[0] for x in inputs], states, params)
    np.testing.assert_allclose(step_out, out[0], rtol=1e-5, atol=1e-6)


def test_wrong_arrays_are_clear_errors(cells_dir):
    cell = cellc.compile(os.path.join(cells_dir, "atr.cell"))
    params = random_params(cell, {"H": 4, "I": 4}, np.random.default_rng(1))
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(TypeError, match="input 'x' must be float32"):
        cell.forward([x.astype(np.float64)], params)
    with pytest.raises(ValueError, match="C-contiguous"):
        cell.forward([np.zeros((2, 3, 8), np.float32)[:, :, ::2]], params)
    with pytest.raises(ValueError, match="missing param 'Wh'"):
        cell.forward([x], {"Wx": params["Wx"]})
    with pytest.raises(ValueError, match="takes 1 inputs"):
        cell.forward([x, x], params)
    with pytest.raises(ValueError, match="no forward pass"):
        cell.backward(cellc.Tape(), np.zeros((2, 3, 4), np.float32))


def test_bf16_products_round_and_switch_back(cells_dir):
    cell = cellc.compile(os.path.join(cells_dir, "lstm.cell"))
    rng = np.random.default_rng(2)
    dims = {"H": 32, "I": 24}
    params = random_params(cell, dims, rng)
    x = rng.standard_normal((6, 4, 24)).astype(np.float32)
    assert cell.precision == "f32"
    f32, _ = cell.forward([x], params)
    cell.precision = "bf16"
    assert cell.precision == "bf16"
    bf16, _ = cell.forward([x], params)
    difference = np.abs(bf16 - f32).max() / np.abs(f32).max()
    assert 1e-5 < difference < 3e-2
    with pytest.raises(ValueError):
        cell.precision = "fp16"
    cell.precision = "f32"
    again, _ = cell.forward([x], params)
    np.testing.assert_array_equal(again, f32)


def test_a_tape_belongs_to_the_cell_that_recorded_it(cells_dir):
    path = os.path.join(cells_dir, "atr.cell")
    recorder, other = cellc.compile(path), cellc.compile(path)
    rng = np.random.default_rng(3)
    params = random_params(recorder, {"H": 4, "I": 4}, rng)
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    tape = cellc.Tape()
    out, _ = recorder.forward([x], params, tape=tape)
    with pytest.raises(ValueError, match="recorded by another cell"):
        other.backward(tape, np.ones_like(out))
    # Switching the precision after recording keeps the recording cell's
    # products for backward: the gradients equal those of a fresh f32 run.
    expected_tape = cellc.Tape()
    other.forward([x], params, tape=expected_tape)
    expected = other.backward(expected_tape, np.ones_like(out))
    recorder.precision = "bf16"
    got = recorder.backward(tape, np.ones_like(out))
    for name, gradient in expected["params"].items():
        np.testing.assert_array_equal(got["params"][name], gradient)
