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


def test_exp_and_sigmoid_accuracy_over_the_float_range():
    # The vector exp covers [-87, 88] (libm the rest): within 3 ulp of the float64 value there,
    # and sigmoid, built on it, within 4 (where it is a normal float); past the range, the limits
    # 0, inf, 0 and 1.
    x = np.concatenate([np.linspace(-87, 88, 400003), [-1e4, -100.0, 100.0, 1e4]]).astype(np.float32)
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        exact_exp, exact_sigmoid = np.exp(x64), 1 / (1 + np.exp(-x64))
    got_exp = F.exp(F.const(x)).numpy().astype(np.float64)
    got_sigmoid = F.sigmoid(F.const(x)).numpy().astype(np.float64)
    inside = slice(0, -4)
    ulp = 2.0 ** -24
    assert np.max(np.abs(got_exp - exact_exp)[inside] / exact_exp[inside]) < 3 * ulp
    normal = exact_sigmoid > 1e-30  # below, float32 results lose bits as subnormals
    assert np.max(np.abs(got_sigmoid - exact_sigmoid)[normal] / exact_sigmoid[normal]) < 4 * ulp
    assert np.max(np.abs(got_sigmoid - exact_sigmoid)[~normal]) < 1e-37
    assert got_exp[-4] == 0 and np.isinf(got_exp[-1]) and got_sigmoid[-4] == 0 and got_sigmoid[-1] == 1


def test_const_follows_mnn_defaults():
    assert F.const([1, 2, 3]).dtype == np.float32  # MNN's default for lists
    assert F.const([1, 2, 3], [3], F.NCHW, F.dtype.int).dtype == np.int32
    assert F.const(np.arange(3)).dtype == np.int64  # a NumPy array keeps its dtype
    assert F.const([1, 2, 3, 4], [2, 2]).shape == (2, 2)
    with pytest.raises(ValueError, match="do not fill shape"):
        F.const([1, 2, 3], [2, 2])
