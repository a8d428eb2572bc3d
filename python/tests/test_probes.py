"""Probes from Python: compile(probes=[...]) and the values forward and
step return with return_probes=True, against ATR's equations in NumPy."""
import os

import numpy as np
import pytest

import cellc
from conftest import SOURCE

H = I = 5


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


@pytest.fixture(scope="module")
def atr():
    return cellc.compile(os.path.join(SOURCE, "cells", "atr.cell"),
                         probes=["i", "f", "p"])


@pytest.fixture
def params():
    rng = np.random.default_rng(3)
    return {"Wx": rng.uniform(-0.5, 0.5, (H, I)).astype(np.float32),
            "Wh": rng.uniform(-0.5, 0.5, (H, H)).astype(np.float32)}


def atr_gates(x, h, params):
    """ATR's gates and next state (cells/atr.cell), in float64."""
    p = x @ params["Wx"].T.astype(np.float64)
    q = h @ params["Wh"].T.astype(np.float64)
    i, f = sigmoid(p + q), sigmoid(p - q)
    return {"i": i, "f": f, "p": p}, i * p + f * h


def test_probes_are_listed(atr):
    assert atr.probes == [("i", "H"), ("f", "H"), ("p", "H")]
    assert cellc.compile(atr.source).probes == []


@pytest.mark.parametrize("reverse", [False, True])
def test_forward_probes_are_the_gates(atr, params, reverse):
    T, lengths = 4, [4, 2, 3]
    x = np.random.default_rng(4).uniform(-1, 1, (T, 3, I)).astype(np.float32)
    out, (h,), probes = atr.forward([x], params, lengths=lengths,
                                    reverse=reverse, return_probes=True)
    assert list(probes) == ["i", "f", "p"]
    for b, length in enumerate(lengths):
        state = np.zeros(H)
        steps = range(length - 1, -1, -1) if reverse else range(length)
        for t in steps:
            gates, state = atr_gates(x[t, b], state, params)
            for name, value in gates.items():
                np.testing.assert_allclose(probes[name][t, b], value,
                                           rtol=1e-5, atol=1e-6)
        for name in probes:
            assert not probes[name][length:, b].any()  # padded steps
        np.testing.assert_allclose(h[b], state, rtol=1e-5, atol=1e-6)
    # Asking for the probes changes nothing else.
    plain, (plain_h,) = atr.forward([x], params, lengths=lengths,
                                    reverse=reverse)
    np.testing.assert_allclose(out, plain, rtol=1e-5, atol=1e-7)


def test_step_probes_are_the_gates(atr, params):
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (2, I)).astype(np.float32)
    h = rng.uniform(-1, 1, (2, H)).astype(np.float32)
    out, (h_next,), probes = atr.step([x], [h], params, return_probes=True)
    gates, expected = atr_gates(x, h, params)
    for name, value in gates.items():
        assert probes[name].shape == (2, H)
        np.testing.assert_allclose(probes[name], value, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h_next, expected, rtol=1e-5, atol=1e-6)
    assert len(atr.step([x], [h], params)) == 2


def test_a_training_forward_with_probes_has_the_same_gradients(atr, params):
    x = np.random.default_rng(6).uniform(-1, 1, (3, 2, I)).astype(np.float32)
    grads = []
    for return_probes in (False, True):
        tape = cellc.Tape()
        out = atr.forward([x], params, tape=tape, return_probes=return_probes)
        grads.append(atr.backward(tape, np.ones_like(out[0])))
    for name in params:
        np.testing.assert_allclose(grads[1]["params"][name],
                                   grads[0]["params"][name], rtol=1e-5)


def test_an_unknown_probe_is_a_compile_error_naming_it(atr):
    with pytest.raises(cellc.CompileError, match="no value named 'gate'; "
                       "its values are f, h, h', i, p, q, x"):
        cellc.compile(atr.source, probes=["i", "gate"])


def test_probes_are_a_list_of_names(atr):
    with pytest.raises(TypeError, match="probes must be a list"):
        cellc.compile(atr.source, probes="if")


def test_a_cell_without_probes_says_how_to_get_them(atr, params):
    plain = cellc.compile(atr.source)
    x = np.zeros((1, 1, I), np.float32)
    with pytest.raises(ValueError, match=r"has no probes: compile it with "
                                         r"probes=\[names\]"):
        plain.forward([x], params, return_probes=True)
    with pytest.raises(ValueError, match="has no probes"):
        plain.step([x[0]], [], params, return_probes=True)
