"""cellc.torch's autograd edges: a retained graph runs backward again with
the same gradients, a freed one says so as PyTorch does, and a double
backward (create_graph=True) fails at once, naming what is missing."""
import os

import pytest
import torch

import cellc.torch

I, H, T, B = 5, 7, 6, 4


@pytest.fixture
def layer(cells_dir):
    torch.manual_seed(1)
    return cellc.torch.RNN(os.path.join(cells_dir, "lstm.cell"), I, H,
                           num_layers=2, bidirectional=True)


def test_retained_graph_runs_backward_twice(layer):
    x = torch.randn(T, B, I, requires_grad=True)
    out, _ = layer(x, lengths=[6, 5, 2, 1])
    loss = (out * torch.randn_like(out)).sum()
    loss.backward(retain_graph=True)
    first = [x.grad.clone()] + [p.grad.clone() for p in layer.parameters()]
    loss.backward()
    second = [x.grad] + [p.grad for p in layer.parameters()]
    for a, b in zip(first, second):
        torch.testing.assert_close(b, 2 * a)


def test_a_freed_graph_says_so(layer):
    x = torch.randn(T, B, I, requires_grad=True)
    out, _ = layer(x)
    loss = out.sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a "
                                           "second time"):
        loss.backward()


def test_double_backward_fails_at_once(layer):
    x = torch.randn(T, B, I, requires_grad=True)
    out, _ = layer(x)
    with pytest.raises(RuntimeError, match="cell lstm has no double "
                                           "backward"):
        torch.autograd.grad(out.sum(), x, create_graph=True)


def test_first_order_grad_still_works_without_create_graph(layer):
    x = torch.randn(T, B, I, requires_grad=True)
    out, _ = layer(x)
    (grad,) = torch.autograd.grad(out.sum(), x)
    assert grad.shape == x.shape and not grad.requires_grad
