"""A compiled cellc.Cell pickles (torch.save, multiprocessing) as what it
was compiled from, and copies (copy.deepcopy of a module holding one)
share its compiled cell."""
import copy
import os
import pickle

import numpy as np
import pytest

import cellc
from conftest import SOURCE

TWO_CELLS = """cell first(x: [I]) {
  state h: [H]
  param W: [H, I], U: [H, H]
  h' = tanh(W @ x + U @ h)
}
cell second(x: [I]) {
  state h: [H]
  param W: [H, I]
  h' = sigmoid(W @ x) * h + W @ x
}
"""


def inputs(cell, dims):
    rng = np.random.default_rng(7)
    width = dims[cell.inputs[0][1]]
    x = rng.uniform(-1, 1, (4, 3, width)).astype(np.float32)
    params = {name: rng.uniform(-0.5, 0.5, [dims[d] for d in shape])
              .astype(np.float32) for name, shape in cell.params}
    return x, params


def same_runs(cell, other, dims):
    x, params = inputs(cell, dims)
    out, finals = cell.forward([x], params, lengths=[4, 2, 3])
    again, again_finals = other.forward([x], params, lengths=[4, 2, 3])
    np.testing.assert_array_equal(again, out)
    for final, again_final in zip(finals, again_finals):
        np.testing.assert_array_equal(again_final, final)


@pytest.mark.parametrize("name", ["atr", "lstm"])
def test_a_pickled_cell_runs_the_same(name):
    cell = cellc.compile(os.path.join(SOURCE, "cells", f"{name}.cell"))
    restored = pickle.loads(pickle.dumps(cell))
    assert type(restored) is cellc.Cell
    assert (restored.name, restored.params, restored.has_backward) == (
        cell.name, cell.params, True)
    same_runs(cell, restored, {"H": 6, "I": 5})


def test_a_pickle_keeps_how_the_cell_was_compiled():
    cell = cellc.compile(TWO_CELLS, cell="second", dims={"H": 4},
                         training=False, probes=["h'"])
    restored = pickle.loads(pickle.dumps(cell, pickle.HIGHEST_PROTOCOL))
    assert restored.name == "second"
    assert restored.dims == cell.dims
    assert not restored.has_backward
    assert restored.probes == cell.probes == [("h'", "4")]
    assert restored.source == TWO_CELLS
    same_runs(cell, restored, {"4": 4, "I": 3})  # H = 4 reads "4"


def test_a_pickle_holds_the_text_not_the_path(tmp_path):
    path = tmp_path / "mine.cell"
    with open(os.path.join(SOURCE, "cells", "gru.cell")) as gru:
        text = gru.read()
    path.write_text(text)
    cell = cellc.compile(str(path))
    assert cell.source == text
    pickled = pickle.dumps(cell)
    path.write_text("not a cell")
    restored = pickle.loads(pickled)
    assert restored.source == text
    same_runs(cell, restored, {"H": 3, "I": 2})


def test_unpickling_compiles_through_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CELLC_CACHE_DIR", str(tmp_path))
    cell = cellc.compile(os.path.join(SOURCE, "cells", "atr.cell"),
                         dims={"H": 3})
    pickle.loads(pickle.dumps(cell))
    assert len(os.listdir(tmp_path)) == 1


def bf16_or_skip(cell):
    try:
        cell.precision = "bf16"
    except cellc.RunError as unsupported:
        pytest.skip(f"no bf16 on this CPU: {unsupported}")


def test_precision_survives_pickle_and_copies():
    cell = cellc.compile(os.path.join(SOURCE, "cells", "gru.cell"))
    bf16_or_skip(cell)
    for other in (pickle.loads(pickle.dumps(cell)), copy.deepcopy(cell),
                  copy.copy(cell)):
        assert other.precision == "bf16"
        same_runs(cell, other, {"H": 8, "I": 8})
    f32 = cellc.compile(os.path.join(SOURCE, "cells", "gru.cell"))
    assert pickle.loads(pickle.dumps(f32)).precision == "f32"


def test_a_deepcopy_shares_the_compiled_cell_but_not_its_precision():
    cell = cellc.compile(os.path.join(SOURCE, "cells", "atr.cell"))
    copied = copy.deepcopy(cell)
    assert copied is not cell and copied.source == cell.source
    same_runs(cell, copied, {"H": 4, "I": 4})
    # A tape recorded by the copy's forward runs backward on the original:
    # they hold one compiled cell.
    x, params = inputs(cell, {"H": 4, "I": 4})
    tape = cellc.Tape()
    out, _ = copied.forward([x], params, tape=tape)
    cell.backward(tape, np.ones_like(out))
    bf16_or_skip(copied)
    assert cell.precision == "f32"


def test_a_container_of_cells_deepcopies():
    cell = cellc.compile(os.path.join(SOURCE, "cells", "atr.cell"))
    layers = {"a": cell, "b": cell}
    copied = copy.deepcopy(layers)
    # The memo keeps one copy for one cell, as for any Python object.
    assert copied["a"] is copied["b"] and copied["a"] is not cell


def test_a_damaged_pickle_is_a_clear_error():
    with pytest.raises(ValueError, match="not a pickled cellc.Cell"):
        cellc.Cell.__new__(cellc.Cell).__setstate__((99, "", "", "", {}, True,
                                                     [], "f32"))
