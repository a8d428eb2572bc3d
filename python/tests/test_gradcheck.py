"""gradcheck(module): `cellc check --params` on a module's own params."""
import math

import pytest
import torch

import cellc
import cellc.torch
from cellc._gradcheck import GradcheckError, _checker, gradcheck

# exp(b) overflows float32 once b > 88.7, where float64 does not: with such
# a b the compiled cell cannot follow its equations.
EXP_BIAS = """
cell grow(x: [I]) {
  state h: [H]
  param W: [H, I], b: [H]
  h' = tanh(W @ x + h) * exp(b)
}
"""


@pytest.fixture(autouse=True)
def checker():
    try:
        return _checker()
    except FileNotFoundError as missing:
        pytest.skip(str(missing))


def test_cell_module_passes():
    torch.manual_seed(0)
    module = cellc.torch.CellModule(cellc.cell_path("atr"),
                                    dims={"I": 5, "H": 6})
    assert gradcheck(module) is True


def test_rnn_each_layer_and_direction_passes():
    torch.manual_seed(0)
    rnn = cellc.torch.RNN("lstm", 3, 4, num_layers=2, bidirectional=True)
    assert gradcheck(rnn, steps=3, batch=2, fd_points=1) is True


def test_params_the_float32_cell_cannot_follow_fail():
    torch.manual_seed(0)
    module = cellc.torch.CellModule(EXP_BIAS, dims={"I": 3, "H": 4})
    assert gradcheck(module, steps=3, batch=2, fd_points=1)
    with torch.no_grad():
        module.b.fill_(100)
    with pytest.raises(GradcheckError) as failure:
        gradcheck(module, steps=3, batch=2, fd_points=1)
    # The check ran on the module's sizes and says what is off.
    assert "[small] H=4 I=3 T=3 B=2" in failure.value.report
    assert "FAIL: grow:" in str(failure.value)


def test_rnn_failure_names_the_layer_and_direction():
    torch.manual_seed(0)
    rnn = cellc.torch.RNN(EXP_BIAS, 3, 4, num_layers=2, bidirectional=True)
    with torch.no_grad():
        rnn.b_l1_reverse.fill_(100)
    with pytest.raises(GradcheckError, match=r"grow \(layer 1 reverse\)"):
        gradcheck(rnn, steps=2, batch=2, fd_points=1)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_non_finite_params_are_refused_before_running(bad, monkeypatch):
    module = cellc.torch.CellModule(cellc.cell_path("atr"),
                                    dims={"I": 5, "H": 6})
    with torch.no_grad():
        module.Wh[2, 3] = bad
    monkeypatch.setattr("subprocess.run", None)  # any run would raise
    with pytest.raises(ValueError, match="param Wh holds NaN or Inf"):
        gradcheck(module)
