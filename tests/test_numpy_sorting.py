"""mnnpy.numpy sorting and set functions against NumPy itself."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mnnpy
import mnnpy.numpy as mp
from helpers import assert_same
from numpy_strategies import DTYPES, arrays, nonempty_shapes

AxisError = np.exceptions.AxisError
FEW = settings(max_examples=40, deadline=None)


def read(v):
    return np.asarray(v)


def same_values(ours, expected):
    ours, expected = read(ours), np.asarray(expected)
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    np.testing.assert_array_equal(ours, expected)


@st.composite
def array_and_axis(draw, allow_nan=True, allow_none=True):
    a = draw(arrays(allow_nan=allow_nan))
    choices = [st.integers(-a.ndim, a.ndim - 1)] if a.ndim else []
    if allow_none or not a.ndim:
        choices.append(st.none())
    return a, draw(st.one_of(*choices))


@FEW
@given(array_and_axis())
def test_sort_matches_numpy(case):
    a, axis = case
    same_values(mp.sort(a, axis=axis), np.sort(a, axis=axis))
    same_values(mp.sort(a, axis=axis, kind="stable"), np.sort(a, axis=axis, kind="stable"))


@FEW
@given(array_and_axis())
def test_argsort_is_numpys_stable_order(case):
    a, axis = case
    same_values(mp.argsort(a, axis=axis, kind="stable"), np.argsort(a, axis=axis, kind="stable"))
    same_values(mp.argsort(a, axis=axis, stable=True), np.argsort(a, axis=axis, stable=True))
    # The default kind orders ties as it likes: the values it selects must be sorted.
    ours = read(mp.argsort(a, axis=axis))
    flat = a.reshape(-1) if axis is None else a
    same_values(np.take_along_axis(flat, ours, axis=-1 if axis is None else axis), np.sort(a, axis=axis))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 33, 300, 5000, 200_000])
@pytest.mark.parametrize("threads", [1, 2])
def test_long_rows_every_dtype(rng, dtype, n, threads):
    mnnpy.set_num_threads(threads)
    try:
        if np.dtype(dtype).kind == "f":
            a = (rng.standard_normal(n) * 1000).astype(dtype)
            a[::11] = np.nan
            a[::13] = 0.0
            a[::17] = -0.0
            a[::19] = np.inf
            a[::23] = -np.inf
        elif dtype == "bool":
            a = rng.integers(0, 2, n).astype(bool)
        else:
            info = np.iinfo(dtype)
            a = rng.integers(info.min, info.max, n, endpoint=True, dtype=dtype)
        same_values(mp.sort(a), np.sort(a))
        same_values(mp.argsort(a, kind="stable"), np.argsort(a, kind="stable"))
        few = a[rng.integers(0, n, n)] if n > 1 else a  # many repeats
        same_values(mp.argsort(few, kind="stable"), np.argsort(few, kind="stable"))
        for ours, ref in zip(mp.unique(few, True, True, True), np.unique(few, True, True, True)):
            same_values(ours, ref)
        same_values(mp.isin(a, few[: n // 3]), np.isin(a, few[: n // 3]))
    finally:
        mnnpy.set_num_threads(1)


def test_sort_along_inner_axes_threaded(rng):
    a = rng.standard_normal((3, 40_000, 2)).astype(np.float32)
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        for axis in (0, 1, 2):
            same_values(mp.sort(a, axis=axis), np.sort(a, axis=axis))
            same_values(mp.argsort(a, axis=axis, kind="stable"), np.argsort(a, axis=axis, kind="stable"))
    mnnpy.set_num_threads(1)


def test_sort_takes_vars_and_msort(rng):
    a = rng.standard_normal((4, 5))
    v = mp.asarray(a) if hasattr(mp, "asarray") else mnnpy.expr.const(a)
    same_values(mp.sort(v, axis=0), np.sort(a, axis=0))
    same_values(mp.msort(a), np.sort(a, axis=0))


def test_sort_errors():
    a = np.arange(4.0)
    for call in (lambda m: m.sort(a, axis=1), lambda m: m.argsort(a, axis=-2), lambda m: m.sort(np.float64(1.0))):
        with pytest.raises(AxisError):
            call(np)
        with pytest.raises(AxisError):
            call(mp)
    for kwargs in ({"kind": "bogus"}, {"kind": "stable", "stable": True}, {"order": "x"}):
        with pytest.raises(ValueError):
            np.sort(a, **kwargs)
        with pytest.raises(ValueError):
            mp.sort(a, **kwargs)
    with pytest.raises(TypeError):
        mp.sort(np.arange(3) + 1j)


# ---- lexsort, partition ---------------------------------------------------------------------

@FEW
@given(st.integers(1, 3), nonempty_shapes.filter(lambda s: len(s) >= 1), st.data())
def test_lexsort_matches_numpy(count, shape, data):
    dtype = data.draw(st.sampled_from(DTYPES))
    keys = [data.draw(arrays(dtype=dtype, shape=shape, min_value=-3, max_value=3)) for _ in range(count)]
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    same_values(mp.lexsort(keys, axis=axis), np.lexsort(keys, axis=axis))
    stacked = np.stack(keys)
    same_values(mp.lexsort(stacked, axis=axis), np.lexsort(stacked, axis=axis))


def test_lexsort_errors():
    for m in (np, mp):
        with pytest.raises(TypeError):
            m.lexsort([])
        with pytest.raises(ValueError):
            m.lexsort([np.arange(3), np.arange(4)])


@FEW
@given(st.data())
def test_partition_property(data):
    a = data.draw(arrays(shape=nonempty_shapes.filter(lambda s: len(s) >= 1), allow_nan=True))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = a.shape[axis]
    kth = data.draw(st.one_of(st.integers(-n, n - 1), st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)))
    ours = read(mp.partition(a, kth, axis=axis))
    ref = np.partition(a, kth, axis=axis)
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    sorted_a = np.sort(a, axis=axis)
    for k in np.atleast_1d(kth):
        np.testing.assert_array_equal(np.take(ours, k, axis=axis), np.take(sorted_a, k, axis=axis))
        before = np.take(ours, np.arange(n)[: k % n], axis=axis)
        after = np.take(ours, np.arange(n)[k % n:], axis=axis)
        if before.size and a.dtype.kind != "f":
            assert (before.max(axis=axis) <= np.take(ours, k, axis=axis)).all()
            assert (after.min(axis=axis) >= np.take(ours, k, axis=axis)).all()
    index = read(mp.argpartition(a, kth, axis=axis))
    np.testing.assert_array_equal(np.take_along_axis(a, index, axis=axis), ours)


def test_partition_errors():
    a = np.arange(5)
    for m in (np, mp):
        with pytest.raises(ValueError):
            m.partition(a, 5)
        with pytest.raises(ValueError):
            m.argpartition(a, -6)
        with pytest.raises(ValueError):
            m.partition(a, 1, kind="quick")
        with pytest.raises(AxisError):
            m.partition(a, 1, axis=1)


# ---- unique -----------------------------------------------------------------------------------

@FEW
@given(arrays(allow_nan=True), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_unique_flat_matches_numpy(a, index, inverse, counts, equal_nan):
    ours = mp.unique(a, index, inverse, counts, equal_nan=equal_nan)
    ref = np.unique(a, index, inverse, counts, equal_nan=equal_nan)
    if not isinstance(ref, tuple):
        ours, ref = (ours,), (ref,)
    assert len(ours) == len(ref)
    names = ["values"] + ["index"] * index + ["inverse"] * inverse + ["counts"] * counts
    # Distinct NaNs: which NaN NumPy's unstable sort puts where decides their index and inverse
    # entries; there, check what they must satisfy instead of NumPy's arbitrary choice.
    nan_order_free = not equal_nan and a.dtype.kind == "f" and int(np.isnan(a).sum()) > 1
    values = read(ours[0])
    for name, o, r in zip(names, ours, ref):
        if nan_order_free and name == "index":
            same_values(a.reshape(-1)[read(o)], values)
        elif nan_order_free and name == "inverse":
            same_values(values[read(o)].reshape(np.shape(r)), a.reshape(np.shape(r)))
        else:
            same_values(o, r)


@FEW
@given(st.data())
def test_unique_along_axis_matches_numpy(data):
    a = data.draw(arrays(shape=nonempty_shapes.filter(lambda s: len(s) >= 1), min_value=-2, max_value=2))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    ours = mp.unique(a, True, True, True, axis=axis)
    ref = np.unique(a, True, True, True, axis=axis)
    for o, r in zip(ours, ref):
        same_values(o, r)


@FEW
@given(arrays(allow_nan=True))
def test_array_api_unique_functions(a):
    # NumPy leaves their order unspecified (and NaNs distinct): compare as sorted sets.
    values = read(mp.unique_values(a))
    same_values(values, np.sort(np.unique_values(a)))
    ours, ref = mp.unique_counts(a), np.unique_counts(a)
    order = np.argsort(ref.values, kind="stable")
    same_values(ours.values, ref.values[order])
    same_values(ours.counts, ref.counts[order])
    ours = mp.unique_inverse(a)
    np.testing.assert_array_equal(read(ours.values)[read(ours.inverse_indices)], a)
    assert read(ours.inverse_indices).shape == np.unique_inverse(a).inverse_indices.shape
    ours = mp.unique_all(a)
    assert ours._fields == np.unique_all(a)._fields
    np.testing.assert_array_equal(a.reshape(-1)[read(ours.indices)], read(ours.values))
    assert read(ours.counts).sum() == a.size


# ---- set operations -------------------------------------------------------------------------

set_pairs = st.tuples(arrays(allow_nan=True, min_value=-5, max_value=5),
                      arrays(allow_nan=True, min_value=-5, max_value=5))


@FEW
@given(set_pairs, st.booleans())
def test_intersect1d_matches_numpy(pair, return_indices):
    a, b = pair
    ours = mp.intersect1d(a, b, return_indices=return_indices)
    ref = np.intersect1d(a, b, return_indices=return_indices)
    for o, r in zip(ours if return_indices else (ours,), ref if return_indices else (ref,)):
        same_values(o, r)
    ua, ub = np.unique(a), np.unique(b)
    same_values(mp.intersect1d(ua, ub, assume_unique=True), np.intersect1d(ua, ub, assume_unique=True))


@FEW
@given(set_pairs, st.booleans())
def test_union_setdiff_setxor_match_numpy(pair, assume_unique):
    a, b = pair
    same_values(mp.union1d(a, b), np.union1d(a, b))
    if assume_unique:
        a, b = np.unique(a), np.unique(b)
    same_values(mp.setdiff1d(a, b, assume_unique), np.setdiff1d(a, b, assume_unique))
    same_values(mp.setxor1d(a, b, assume_unique), np.setxor1d(a, b, assume_unique))


@FEW
@given(set_pairs, st.booleans(), st.sampled_from([None, "sort", "table"]))
def test_isin_matches_numpy(pair, invert, kind):
    a, b = pair
    kinds = {a.dtype.kind, b.dtype.kind}
    if kind == "table" and "f" in kinds:
        with pytest.raises(ValueError):
            np.isin(a, b, kind=kind)
        with pytest.raises(ValueError):
            mp.isin(a, b, kind=kind)
        return
    same_values(mp.isin(a, b, invert=invert, kind=kind), np.isin(a, b, invert=invert, kind=kind))


def test_isin_scalars_and_errors():
    same_values(mp.isin(3, [1, 3]), np.isin(3, [1, 3]))
    for m in (np, mp):
        with pytest.raises(ValueError):
            m.isin(np.arange(3), [1], kind="bogus")
