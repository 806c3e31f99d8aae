"""MNN.expr-style helpers composed from core ops, against NumPy."""
import numpy as np
import pytest

from mnnpy import expr as F

from helpers import assert_same, random_array


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(rng, axis):
    x = random_array(rng, (3, 7), "float32", -30, 30)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    assert_same(F.softmax(F.const(x), axis).numpy(), e / e.sum(axis=axis, keepdims=True), rtol=1e-5, atol=1e-7)


def test_moments(rng):
    x = random_array(rng, (2, 3, 4, 5), "float32")
    mean, var = F.moments(F.const(x))
    assert_same(mean.numpy(), x.mean(axis=(2, 3), keepdims=True), rtol=1e-5)
    assert_same(var.numpy(), x.var(axis=(2, 3), keepdims=True), rtol=1e-4)


def test_one_hot(rng):
    idx = rng.integers(0, 4, size=(2, 3))
    assert_same(F.one_hot(F.const(idx), 4).numpy(), np.eye(4, dtype=np.float32)[idx])
    assert_same(F.one_hot(F.const(idx), 4, axis=0).numpy(), np.moveaxis(np.eye(4, dtype=np.float32)[idx], -1, 0))


def test_shape_rank_size_clone(rng):
    x = random_array(rng, (2, 5), "float32")
    v = F.const(x)
    assert_same(F.shape(v).numpy(), np.array([2, 5], np.int32))
    assert int(F.rank(v)) == 2 and int(F.size(v)) == 10
    c = F.clone(v * 2, deepcopy=True)
    assert c.op_type == "Const"
    assert_same(c.numpy(), x * 2)


def test_activations(rng):
    x = random_array(rng, (100,), "float32", -8, 8)
    assert_same(F.relu(F.const(x)).numpy(), np.maximum(x, 0))
    assert_same(F.relu(F.const(x), 0.1).numpy(), np.where(x > 0, x, x * np.float32(0.1)))
    assert_same(F.relu6(F.const(x)).numpy(), np.clip(x, 0, 6))
    assert_same(F.elu(F.const(x)).numpy(), np.where(x > 0, x, np.expm1(x)), rtol=1e-5)
    erf = np.vectorize(__import__("math").erf)
    assert_same(F.gelu(F.const(x)).numpy(), (0.5 * x * (1 + erf(x / np.sqrt(2)))).astype(np.float32),
                rtol=1e-5, atol=1e-6)
    assert_same(F.selu(F.const(x)).numpy(),
                (1.0507009873554804934 * np.where(x > 0, x, 1.6732632423543772848 * np.expm1(x))).astype(np.float32),
                rtol=1e-5, atol=1e-6)


def test_gelu_relative_accuracy_over_its_range():
    # Both tails, the centre, and values around zero, against the float64 value x * Phi(x):
    # relative accuracy holds even where the left tail is tiny (down to 1e-30 at x = -11.6, where
    # the rounding of exp's argument -x^2 / 2 alone costs about 1e-5).
    x = np.concatenate([np.linspace(-12, 12, 20001), np.geomspace(1e-6, 1, 50), -np.geomspace(1e-6, 1, 50)])
    x = x.astype(np.float32)
    erfc = np.vectorize(__import__("math").erfc)
    expected = x.astype(np.float64) * 0.5 * erfc(-x.astype(np.float64) / np.sqrt(2))
    got = F.gelu(F.const(x)).numpy().astype(np.float64)
    big = np.abs(expected) > 1e-30
    assert np.max(np.abs(got - expected)[big] / np.abs(expected[big])) < 3e-5


def test_const_follows_mnn_defaults():
    assert F.const([1, 2, 3]).dtype == np.float32  # MNN's default for lists
    assert F.const([1, 2, 3], [3], F.NCHW, F.dtype.int).dtype == np.int32
    assert F.const(np.arange(3)).dtype == np.int64  # a NumPy array keeps its dtype
    assert F.const([1, 2, 3, 4], [2, 2]).shape == (2, 2)
    with pytest.raises(ValueError, match="do not fill shape"):
        F.const([1, 2, 3], [2, 2])
