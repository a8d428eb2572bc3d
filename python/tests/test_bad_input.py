"""Bad input from Python ends in an error that names the culprit (the
argument, the array, the param, the dimension), never in a silently wrong
result or a message about something else."""
import os

import numpy as np
import pytest
import torch

import cellc
import cellc.torch

T, B, I, H = 3, 2, 4, 5


@pytest.fixture
def atr(cells_dir):
    return cellc.compile(os.path.join(cells_dir, "atr.cell"))


@pytest.fixture
def params():
    rng = np.random.default_rng(0)
    return {"Wx": rng.standard_normal((H, I)).astype(np.float32),
            "Wh": rng.standard_normal((H, H)).astype(np.float32)}


@pytest.fixture
def x():
    return np.random.default_rng(1).standard_normal((T, B, I)).astype(
        np.float32)


@pytest.fixture
def layer(atr):
    torch.manual_seed(0)
    return cellc.torch.CellModule(atr, {"I": I, "H": H})


def test_input_of_the_wrong_rank_is_named(atr, params, x, layer):
    # Used to say "a cell without inputs needs lengths".
    with pytest.raises(ValueError, match=r"input 'x' must be \[T, B, I\]"
                                         r".* 2-D .*\[2, 4\]"):
        atr.forward([x[0]], params)
    with pytest.raises(ValueError, match=r"input 'x' must be \[T, B, I\]"):
        atr.forward([x[0, 0]], params)
    with pytest.raises(ValueError,
                       match=r"input 'x' must be \(T, B, I\).* 2-D"):
        layer(torch.randn(B, I))
    with pytest.raises(ValueError, match=r"input 'x' must be \(T, B, I\)"):
        layer(torch.randn(I))


def test_step_input_of_the_wrong_rank_is_named(atr, params, x):
    # Used to blame the initial state ("[B, H] = [3, 5]").
    state = np.zeros((B, H), np.float32)
    with pytest.raises(ValueError,
                       match=r"step input 'x' must be \[B, I\].* 3-D"):
        atr.step([x], [state], params)
    with pytest.raises(ValueError, match=r"state 'h' must be \[B, H\]"):
        atr.step([x[0]], [state[0]], params)


@pytest.mark.parametrize("lengths, error, message", [
    ([2**40, 1], ValueError, r"lengths\[0\] = 1099511627776 is outside "
                             r"\[1, T\] = \[1, 3\]"),
    ([0, 1], ValueError, r"lengths\[0\] = 0 is outside"),
    ([1, 1.5], TypeError, r"lengths\[1\] must be an integer, got float"),
    (["2", 1], TypeError, r"lengths\[0\] must be an integer, got str"),
    ("ab", TypeError, r"lengths must be a sequence of B integers, got str"),
    (5, TypeError, r"lengths must be a sequence of B integers, got int"),
    # Used to read past the list's end before comparing its size.
    ([3], ValueError, r"lengths has 1 entries for a batch of 2"),
    ([3, 3, 3], ValueError, r"lengths has 3 entries for a batch of 2"),
])
def test_bad_lengths_are_named(atr, params, x, layer, lengths, error,
                               message):
    with pytest.raises(error, match=message):
        atr.forward([x], params, lengths=lengths)
    with pytest.raises(error, match=message):
        layer(torch.from_numpy(x), lengths=lengths)


def test_integer_lengths_of_any_kind_are_read(atr, params, x, layer):
    expected, _ = atr.forward([x], params, lengths=[3, 2])
    for lengths in (np.array([3, 2]), np.array([3, 2], np.int32),
                    (3, 2), [np.int64(3), np.int16(2)]):
        out, _ = atr.forward([x], params, lengths=lengths)
        np.testing.assert_array_equal(out, expected)
    out, _ = layer(torch.from_numpy(x), lengths=torch.tensor([3, 2]))
    assert out.shape == (T, B, H)


def test_compile_names_what_it_takes(cells_dir):
    path = os.path.join(cells_dir, "atr.cell")
    with pytest.raises(TypeError, match="str or os.PathLike.*got bytes"):
        cellc.compile(path.encode())
    with pytest.raises(TypeError, match="str or os.PathLike.*got int"):
        cellc.compile(3)


def test_unknown_or_impossible_dims_are_named(cells_dir, atr):
    path = os.path.join(cells_dir, "atr.cell")
    with pytest.raises(ValueError, match="cell atr has no dimension 'Q'"):
        cellc.torch.CellModule(atr, {"I": I, "H": H, "Q": 3})
    for value in (0, -1):
        with pytest.raises(ValueError,
                           match=f"dims\\['I'\\] = {value}: .* at least 1"):
            cellc.torch.CellModule(atr, {"I": value, "H": H})
    with pytest.raises(TypeError, match=r"dims\['H'\] must be an integer"):
        cellc.torch.CellModule(path, {"I": I, "H": 2.5})


def test_zero_width_input_is_named(atr, params):
    with pytest.raises(ValueError, match="input 'x' has width 0"):
        atr.forward([np.zeros((T, B, 0), np.float32)],
                    {"Wx": np.zeros((H, 0), np.float32), "Wh": params["Wh"]})


def test_unknown_params_are_named(atr, params, x):
    extra = dict(params, Wq=params["Wx"])
    with pytest.raises(ValueError,
                       match=r"cell atr has no param 'Wq' \(its params: "
                             r"Wx, Wh\)"):
        atr.forward([x], extra)
    with pytest.raises(ValueError, match="cell atr has no param 'Wq'"):
        atr.step([x[0]], [], extra)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_params_are_named(atr, params, x, layer, bad):
    damaged = dict(params, Wh=params["Wh"].copy())
    damaged["Wh"][1, 2] = bad
    with pytest.raises(ValueError,
                       match=r"param 'Wh' holds .* at \[1, 2\]"):
        atr.forward([x], damaged)
    with torch.no_grad():
        layer.Wx[0, 3] = float(bad)
    with pytest.raises(ValueError, match=r"param 'Wx' holds .* at \[0, 3\]"):
        layer(torch.from_numpy(x))


def test_set_threads_takes_a_positive_count():
    for bad in (-5, 0):
        with pytest.raises(ValueError, match=f"at least 1, got {bad}"):
            cellc.set_threads(bad)
    cellc.set_threads(2)
