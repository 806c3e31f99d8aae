"""Reductions of mnnpy.expr against NumPy: every axis set, keepdims, dtypes, NaN, empty."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import mnnpy
from mnnpy import expr as F

from helpers import ALL_DTYPES, assert_same, random_array

REDUCERS = {"sum": (F.reduce_sum, np.sum), "mean": (F.reduce_mean, np.mean), "prod": (F.reduce_prod, np.prod),
            "min": (F.reduce_min, np.min), "max": (F.reduce_max, np.max), "any": (F.reduce_any, np.any),
            "all": (F.reduce_all, np.all)}


def numpy_expected(kind, x, axis, keepdims):
    ref = REDUCERS[kind][1]
    return np.asarray(ref(x, axis=axis, keepdims=keepdims))


@st.composite
def array_and_axes(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=6))
    rank = len(shape)
    axes = draw(st.one_of(st.none(), st.lists(st.integers(-rank, rank - 1), unique_by=lambda a: a % rank,
                                              max_size=rank) if rank else st.none()))
    return shape, axes


@settings(max_examples=120, deadline=None)
@given(sa=array_and_axes(), kind=st.sampled_from(sorted(REDUCERS)), keepdims=st.booleans(),
       dtype=st.sampled_from(ALL_DTYPES), seed=st.integers(0, 2**31))
def test_reductions_match_numpy(sa, kind, keepdims, dtype, seed):
    shape, axes = sa
    x = random_array(np.random.default_rng(seed), shape, dtype, -3, 4)
    # MNN's convention: an empty axis list means every axis.
    axis = None if not axes else tuple(axes)
    expected = numpy_expected(kind, x, axis, keepdims)
    ours = REDUCERS[kind][0](F.const(x), axis=None if axes is None else list(axes), keepdims=keepdims).numpy()
    rtol = 1e-2 if dtype == "float16" else (1e-5 if dtype == "float32" else 1e-12)
    assert_same(ours, expected, rtol=rtol, atol=1e-5 if dtype != "float16" else 1e-2)


@settings(max_examples=60, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=7), data=st.data(),
       dtype=st.sampled_from(["float32", "float64", "int8", "int32", "int64", "uint8", "bool", "float16"]),
       kind=st.sampled_from(["argmax", "argmin"]), seed=st.integers(0, 2**31))
def test_argmin_argmax_match_numpy(shape, data, dtype, kind, seed):
    x = random_array(np.random.default_rng(seed), shape, dtype, -3, 3)  # small range: many ties
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    ours = getattr(F, kind)(F.const(x), axis).numpy()
    assert_same(ours, getattr(np, kind)(x, axis=axis))


@pytest.mark.parametrize("n", [1, 7, 1000, 300_000])
def test_nan_propagates_like_numpy(rng, n):
    x = random_array(rng, (n,), "float32")
    x[n // 2] = np.nan
    assert np.isnan(F.reduce_max(F.const(x)).numpy())
    assert np.isnan(F.reduce_min(F.const(x)).numpy())
    assert F.argmax(F.const(x), 0).numpy() == np.argmax(x)
    assert F.argmin(F.const(x), 0).numpy() == np.argmin(x)
    m = np.stack([x, x[::-1]])
    assert_same(F.reduce_max(F.const(m), axis=[0]).numpy(), m.max(axis=0))


@pytest.mark.parametrize("threads", [1, 2])
def test_large_reductions(rng, threads):
    mnnpy.set_num_threads(threads)
    try:
        x = random_array(rng, (4_000_003,), "float32", 0, 1)
        assert_same(F.reduce_sum(F.const(x)).numpy(), x.sum(dtype=np.float64).astype(np.float32), rtol=1e-6)
        assert F.argmax(F.const(x), 0).numpy() == x.argmax()
        assert F.argmin(F.const(x), 0).numpy() == x.argmin()
        m = x[:4_000_000].reshape(1000, 4000)
        assert_same(F.reduce_sum(F.const(m), axis=[1]).numpy(), m.sum(axis=1), rtol=1e-5)
        assert_same(F.reduce_sum(F.const(m), axis=[0]).numpy(), m.sum(axis=0), rtol=1e-5)
        assert_same(F.argmax(F.const(m), 1).numpy(), m.argmax(axis=1))
        assert_same(F.argmax(F.const(m), 0).numpy(), m.argmax(axis=0))
    finally:
        mnnpy.set_num_threads(2)


def test_sum_of_float32_is_accurate(rng):
    x = np.full(10_000_000, 0.1, np.float32)
    np.testing.assert_allclose(F.reduce_sum(F.const(x)).numpy(), np.float64(x[0]) * x.size, rtol=1e-6)


def test_empty_reductions():
    e = np.zeros((0, 3), np.float32)
    assert_same(F.reduce_sum(F.const(e), axis=[0]).numpy(), e.sum(axis=0))
    assert_same(F.reduce_prod(F.const(e), axis=[0]).numpy(), e.prod(axis=0))
    assert_same(F.reduce_any(F.const(e)).numpy(), e.any())
    assert_same(F.reduce_all(F.const(e)).numpy(), e.all())
    assert_same(F.reduce_max(F.const(e), axis=[1]).numpy(), e.max(axis=1))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        F.reduce_max(F.const(e))
    with pytest.raises(ValueError, match="empty sequence"):
        F.argmax(F.const(e), 0)


def test_bad_axes():
    x = F.const(np.zeros((2, 3), np.float32))
    with pytest.raises(IndexError, match="axis 2 is out of bounds for array of dimension 2"):
        F.reduce_sum(x, axis=[2])
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        F.reduce_sum(x, axis=[1, -1])
