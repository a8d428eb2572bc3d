"""An in-place change to a tensor that CellModule's backward reads (an
input, an initial state, a param) raises, as PyTorch's own layers do,
instead of giving wrong gradients; the outputs, which backward does not
read, may be changed."""
import os

import pytest
import torch

import cellc
import cellc.torch

T, B, I, H = 3, 2, 4, 5


@pytest.fixture
def layer(cells_dir):
    torch.manual_seed(0)
    return cellc.torch.CellModule(os.path.join(cells_dir, "atr.cell"),
                                  {"I": I, "H": H})


# An in-place change between forward and backward used to give silently
# wrong gradients: cellrt's backward reads the forward's arrays again.
@pytest.mark.parametrize("changed", ["input", "param", "initial state"])
def test_in_place_change_before_backward_raises(layer, changed):
    x = torch.randn(T, B, I)
    h0 = torch.randn(B, H)
    out, _ = layer(x, init=[h0])
    if changed == "input":
        x.mul_(0)
    elif changed == "param":
        with torch.no_grad():
            layer.Wh.mul_(0)
    else:
        h0.add_(1)
    with pytest.raises(RuntimeError,
                       match="modified by an inplace operation"):
        out.sum().backward()


def test_output_may_be_changed_in_place(layer):
    """Backward does not read the outputs, so changing them is fine (as
    with nn.RNN): the gradients are those of an untouched run."""
    x = torch.randn(T, B, I)
    weights = torch.randn(T, B, H)
    out, (h,) = layer(x)
    (out * weights).sum().backward()
    expected = layer.Wh.grad.clone()
    layer.zero_grad()
    out, (h,) = layer(x)
    loss = (out * weights).sum()
    with torch.no_grad():
        out.mul_(0)
        h.mul_(0)
    loss.backward()
    torch.testing.assert_close(layer.Wh.grad, expected, rtol=0, atol=0)
