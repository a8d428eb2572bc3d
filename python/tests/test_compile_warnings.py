"""The compiler's warnings reach Python as located CompileWarnings (they
were dropped), on every compile: a cache hit replays them."""
import os
import warnings

import pytest

import cellc

UNUSED = """cell unused(x: [I]) {
  state h: [H]
  param Wx: [H, I], Wh: [H, H], b: [H]
  h' = tanh(Wx @ x + Wh @ h)
}
"""

UNIFIED = """cell unified(x: [I]) {
  state h: [H]
  param W: [H, J], U: [H, H]
  h' = tanh(W @ x + U @ h)
}
"""


def compile_warnings(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cellc.compile(*args, **kwargs)
    return [w for w in caught if issubclass(w.category, cellc.CompileWarning)]


def test_an_unused_param_warns_with_its_location(tmp_path):
    path = tmp_path / "unused.cell"
    path.write_text(UNUSED)
    with pytest.warns(cellc.CompileWarning) as caught:
        cellc.compile(str(path), cache_dir="")
    warning = caught[0].message
    assert str(warning).startswith(
        f"{path}:3:33: warning: param 'b' is never used\n"
        "  param Wx: [H, I], Wh: [H, H], b: [H]\n")
    assert (warning.file, warning.line, warning.column) == (str(path), 3, 33)
    assert warning.message == "param 'b' is never used"
    # Attributed to the caller of compile, not to cellc.
    assert caught[0].filename == __file__


def test_a_dimension_made_another_warns():
    caught = compile_warnings(UNIFIED, cache_dir="")
    assert len(caught) == 1
    warning = caught[0].message
    assert (warning.file, warning.line, warning.column) == ("<string>", 4, 15)
    assert "makes dimension 'I' equal to 'J'" in warning.message


def test_each_warning_is_its_own():
    both = UNUSED.replace("h' = tanh(Wx @ x + Wh @ h)",
                          "param V: [H, K]\n  h' = tanh(V @ x + Wh @ h)")
    caught = compile_warnings(both, cache_dir="")
    assert sorted(w.message.message for w in caught) == [
        "param 'Wx' is never used", "param 'b' is never used",
        "this expression makes dimension 'I' equal to 'K' everywhere in the "
        "cell (K vs I); write one name if they are meant to be the same size"]


def test_a_cached_compile_warns_again(tmp_path):
    for _ in range(2):
        caught = compile_warnings(UNUSED, cache_dir=str(tmp_path))
        assert [w.message.line for w in caught] == [3]
    assert len(os.listdir(tmp_path)) == 1


def test_a_clean_cell_does_not_warn(cells_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cellc.compile(os.path.join(cells_dir, "atr.cell"))


def test_warnings_can_be_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error", cellc.CompileWarning)
        with pytest.raises(cellc.CompileWarning, match="never used"):
            cellc.compile(UNUSED, cache_dir="")
