"""Whole cellc.torch modules survive copy.deepcopy, pickle and
torch.save/torch.load (best-model snapshots, EMA copies, whole-model
saves): the copy computes what the original does, and owns its params."""
import copy
import io
import os
import pickle

import torch

import cellc.torch

I, H, T, B = 5, 7, 6, 4


def models(cells_dir):
    torch.manual_seed(2)
    return [
        cellc.torch.CellModule(os.path.join(cells_dir, "atr.cell"),
                               {"I": I, "H": H}, reverse=True),
        cellc.torch.RNN(os.path.join(cells_dir, "lstm.cell"), I, H,
                        num_layers=2, bidirectional=True, dropout=0.1),
        torch.nn.Sequential(torch.nn.Linear(I, I),
                            cellc.torch.RNN(os.path.join(cells_dir,
                                                         "gru.cell"), I, H)),
    ]


def outputs(model, x):
    model.eval()
    result = model(x)
    return result[0] if isinstance(result, tuple) else result


def round_trips(model):
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    return {"deepcopy": copy.deepcopy(model),
            "pickle": pickle.loads(pickle.dumps(model)),
            "torch.save": torch.load(buffer)}


def test_copies_compute_the_same(cells_dir):
    x = torch.randn(T, B, I)
    for model in models(cells_dir):
        expected = outputs(model, x)
        for how, copied in round_trips(model).items():
            assert repr(copied) == repr(model), how
            torch.testing.assert_close(outputs(copied, x), expected,
                                       rtol=0, atol=0,
                                       msg=lambda m: f"{how}: {m}")


def test_a_copy_owns_its_params(cells_dir):
    model = models(cells_dir)[1]
    snapshot = copy.deepcopy(model)
    x = torch.randn(T, B, I)
    before = outputs(snapshot, x)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(1)
    torch.testing.assert_close(outputs(snapshot, x), before, rtol=0, atol=0)
    assert not torch.equal(outputs(model, x), before)


def test_a_copy_trains(cells_dir):
    model = copy.deepcopy(models(cells_dir)[0])
    x = torch.randn(T, B, I, requires_grad=True)
    model(x)[0].sum().backward()
    assert all(p.grad is not None for p in model.parameters())
