"""nn.Module for models written in Python, load_module over an expr graph, profile and summary."""
import numpy as np
import pytest

import mnnpy
from mnnpy import expr as F
from mnnpy import nn


class Linear(nn.Module):
    def __init__(self, rng, n_in, n_out):
        super().__init__()
        self.weight = F.const(rng.standard_normal((n_in, n_out)).astype(np.float32))
        self.bias = F.const(np.zeros(n_out, np.float32))

    def forward(self, x):
        return F.matmul(x, self.weight) + self.bias


class TwoLayers(nn.Module):
    def __init__(self, rng):
        super().__init__()
        self.first = Linear(rng, 8, 16)
        self.second = Linear(rng, 16, 4)

    def forward(self, x):
        return self.second(F.relu(self.first(x)))


def test_parameters_are_found_in_children_in_order(rng):
    model = TwoLayers(rng)
    names = [n for n, _ in model.named_parameters()]
    assert names == ["first.weight", "first.bias", "second.weight", "second.bias"]
    assert [tuple(p.shape) for p in model.parameters] == [(8, 16), (16,), (16, 4), (4,)]
    x = rng.standard_normal((3, 8)).astype(np.float32)
    w1, w2 = model.first.weight.numpy(), model.second.weight.numpy()
    np.testing.assert_allclose(model(F.const(x)).numpy(), np.maximum(x @ w1, 0) @ w2, rtol=1e-5, atol=1e-5)
    assert model.onForward([F.const(x)])[0].shape == (3, 4)


def test_load_parameters_replaces_values_and_checks_shapes(rng, tmp_path):
    model, other = TwoLayers(rng), TwoLayers(rng)
    model.load_parameters(other.parameters)
    for a, b in zip(model.parameters, other.parameters):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="has 4 parameters, got 3"):
        model.load_parameters(other.parameters[:3])
    bad = other.parameters
    bad[0] = F.const(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match=r"'first.weight' has shape \(8, 16\), got \(2, 2\)"):
        model.load_parameters(bad)
    model.save(tmp_path / "params.mnnpy")
    saved = F.load_as_dict(str(tmp_path / "params.mnnpy"))
    assert sorted(saved) == ["first.bias", "first.weight", "second.bias", "second.weight"]
    np.testing.assert_array_equal(saved["second.weight"].numpy(), other.second.weight.numpy())


def test_module_without_forward_and_train_flag(rng):
    class Empty(nn.Module):
        pass
    with pytest.raises(NotImplementedError, match="does not define forward"):
        Empty()(F.const(np.zeros(2, np.float32)))
    model = TwoLayers(rng)
    model.train(True)
    assert model.is_training and model.first.is_training
    model.train(False)
    assert not model.second.is_training


def test_load_module_over_an_expr_graph_and_profile(rng):
    x = F.placeholder((4, 8))
    w = F.const(rng.standard_normal((8, 8)).astype(np.float32))
    y = F.tanh(F.matmul(x, w))
    module = nn.load_module([x], [y])
    xv = rng.standard_normal((4, 8)).astype(np.float32)
    out = module.forward(F.const(xv))
    np.testing.assert_allclose(out.numpy(), np.tanh(xv @ w.numpy()), rtol=1e-5, atol=1e-6)
    second = module.forward(np.zeros((4, 8), np.float32))
    np.testing.assert_allclose(out.numpy(), np.tanh(xv @ w.numpy()), rtol=1e-5, atol=1e-6)  # untouched
    np.testing.assert_array_equal(second.numpy(), np.zeros((4, 8), np.float32))
    with pytest.raises(ValueError, match="takes 1 inputs, got 2"):
        module.forward(xv, xv)
    rows = nn.profile(module, xv, repeats=2, print_table=False)
    assert {r["op"] for r in rows} == {"MatMul", "Fused(Tanh)"}
    assert next(r for r in rows if r["op"] == "MatMul")["flops"] == 2 * 4 * 8 * 8
