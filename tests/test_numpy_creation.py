"""Array creation of mnnpy.numpy against NumPy: values, dtypes, shapes and errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mnnpy.numpy as mp
from helpers import assert_same
from numpy_strategies import DTYPES, arrays, shapes

dtypes_or_none = st.one_of(st.none(), st.sampled_from(DTYPES))


def both(name, *args, **kwargs):
    """Ours and NumPy's result of the same call; NumPy's exception type when it raises."""
    try:
        expected = getattr(np, name)(*args, **kwargs)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as e:
        with pytest.raises(type(e)):
            getattr(mp, name)(*args, **kwargs)
        return None
    ours = getattr(mp, name)(*args, **kwargs)
    if isinstance(expected, (tuple, list)):
        assert len(ours) == len(expected)
        for o, e in zip(ours, expected):
            assert_same(o, e)
    else:
        assert_same(ours, expected)
    return ours


@settings(max_examples=40, deadline=None)
@given(shape=shapes, dtype=dtypes_or_none, fill=st.one_of(st.integers(-100, 100), st.floats(-1e3, 1e3),
                                                            st.booleans()))
def test_filled_arrays(shape, dtype, fill):
    for name in ("zeros", "ones"):
        both(name, shape, dtype=dtype)
    empty, expected = mp.empty(shape, dtype=dtype), np.empty(shape, dtype=dtype)
    assert empty.shape == expected.shape and empty.dtype == expected.dtype  # NumPy's values are arbitrary
    if dtype is None or np.can_cast(np.asarray(fill).dtype, dtype, "same_kind"):
        both("full", shape, fill, dtype=dtype)


@settings(max_examples=40, deadline=None)
@given(x=arrays(), dtype=dtypes_or_none, fill=st.integers(-5, 5))
def test_like_functions(x, dtype, fill):
    for name in ("zeros_like", "ones_like"):
        both(name, x, dtype=dtype)
        both(name, x, dtype=dtype, shape=(2, 3))
    both("full_like", x, fill, dtype=dtype)
    assert mp.empty_like(x).shape == x.shape and mp.empty_like(x).dtype == x.dtype


@settings(max_examples=60, deadline=None)
@given(start=st.one_of(st.integers(-50, 50), st.floats(-50, 50)), stop=st.one_of(st.none(), st.integers(-50, 50),
                                                                                    st.floats(-50, 50)),
       step=st.one_of(st.none(), st.integers(-7, 7), st.floats(-7, 7).filter(lambda s: abs(s) > 0.01)),
       dtype=st.one_of(st.none(), st.sampled_from(["int32", "int64", "float32", "float64"])))
def test_arange(start, stop, step, dtype):
    if stop is None:
        if step is not None:
            return
        both("arange", start, dtype=dtype)
    elif isinstance(start, float) or isinstance(stop, float) or isinstance(step, float) or dtype is not None:
        try:
            expected = np.arange(start, stop, step, dtype=dtype)
        except (ValueError, ZeroDivisionError, TypeError) as e:
            with pytest.raises(type(e)):
                mp.arange(start, stop, step, dtype=dtype)
            return
        assert_same(mp.arange(start, stop, step, dtype=dtype), expected, rtol=1e-6, atol=1e-9)
    else:
        both("arange", start, stop, step, dtype=dtype)


@settings(max_examples=60, deadline=None)
@given(start=st.floats(-100, 100), stop=st.floats(-100, 100), num=st.integers(0, 40), endpoint=st.booleans(),
       dtype=st.one_of(st.none(), st.sampled_from(["float32", "float64", "int32"])))
def test_linspace_logspace(start, stop, num, endpoint, dtype):
    expected, step = np.linspace(start, stop, num, endpoint=endpoint, retstep=True, dtype=dtype)
    ours, our_step = mp.linspace(start, stop, num, endpoint=endpoint, retstep=True, dtype=dtype)
    assert_same(ours, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(our_step, step, rtol=1e-12, equal_nan=True)
    lo, hi = start / 50, stop / 50
    assert_same(mp.logspace(lo, hi, num, endpoint=endpoint), np.logspace(lo, hi, num, endpoint=endpoint),
                rtol=1e-12)
    assert_same(mp.logspace(lo, hi, num, base=2.0), np.logspace(lo, hi, num, base=2.0), rtol=1e-12)
    if start != 0 and stop != 0:
        assert_same(mp.geomspace(start, stop, num, endpoint=endpoint),
                    np.geomspace(start, stop, num, endpoint=endpoint), rtol=1e-12)


def test_linspace_with_array_ends_and_axis():
    start, stop = np.array([0.0, 1.0, 2.0]), np.array([[4.0], [8.0]])
    for axis in (0, 1, -1):
        assert_same(mp.linspace(start, stop, 5, axis=axis), np.linspace(start, stop, 5, axis=axis), rtol=1e-12)
    with pytest.raises(ValueError):
        mp.linspace(0, 1, -1)
    with pytest.raises(ValueError):
        mp.geomspace(0, 1, 3)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 6), m=st.one_of(st.none(), st.integers(0, 6)), k=st.integers(-7, 7),
       dtype=st.sampled_from(["float64", "int32", "bool", "float32"]))
def test_eye_tri_identity(n, m, k, dtype):
    both("eye", n, m, k, dtype=dtype)
    both("tri", n, m, k, dtype=dtype)
    both("identity", n, dtype=dtype)


@settings(max_examples=40, deadline=None)
@given(x=arrays(shape=st.sampled_from([(3,), (3, 3), (2, 4), (4, 2), (2, 3, 4), (0, 3)])), k=st.integers(-4, 4))
def test_tril_triu(x, k):
    both("tril", x, k)
    both("triu", x, k)


def test_tril_of_0d_raises():
    with pytest.raises(TypeError):
        np.tril(np.float64(1.0))
    with pytest.raises(TypeError):
        mp.tril(np.float64(1.0))


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(0, 4), min_size=0, max_size=3), indexing=st.sampled_from(["xy", "ij"]),
       sparse=st.booleans())
def test_meshgrid_and_indices(sizes, indexing, sparse):
    arrays_in = [np.arange(s, dtype=np.float32) * 1.5 for s in sizes]
    both("meshgrid", *arrays_in, indexing=indexing, sparse=sparse)
    both("indices", tuple(sizes))
    ours, expected = mp.indices(tuple(sizes), sparse=True), np.indices(tuple(sizes), sparse=True)
    for o, e in zip(ours, expected):
        assert_same(o, e)


@settings(max_examples=40, deadline=None)
@given(x=arrays(), dtype=dtypes_or_none, ndmin=st.integers(0, 5))
def test_array_and_asarray(x, dtype, ndmin):
    both("array", x, dtype=dtype, ndmin=ndmin)
    both("asarray", x.tolist() if x.size else x, dtype=dtype)
    assert_same(mp.asarray(mp.asarray(x)), x)
    assert_same(mp.ascontiguousarray(x), np.ascontiguousarray(x))
    assert_same(mp.copy(x), np.copy(x))


def test_array_copy_rules_and_nested_vars():
    v = mp.arange(3)
    assert mp.asarray(v) is v
    with pytest.raises(ValueError):
        mp.array(v, dtype=np.float32, copy=False)
    with pytest.raises(ValueError):
        np.array([1, 2], copy=False)
    with pytest.raises(ValueError):
        mp.array([1, 2], copy=False)
    assert_same(mp.array([mp.arange(2), np.array([5, 6])]), np.array([[0, 1], [5, 6]]))
    assert_same(mp.asarray([[1, 2.5], [3, 4]]), np.asarray([[1, 2.5], [3, 4]]))
    with pytest.raises(TypeError):
        mp.asarray(np.array(["a", "b"]))
    with pytest.raises(ValueError):
        mp.asarray_chkfinite([1.0, np.nan])
    assert_same(mp.asfarray([1, 2]), np.asarray([1.0, 2.0]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.bool_])
def test_asarray_of_var_casts_as_numpy(rng, dtype):
    # np.asarray converts (copying) where the dtype differs and keeps the array where it does not.
    x = rng.integers(-100, 100, (3, 5)).astype(np.int32)
    v = mp.asarray(x)
    assert_same(mp.asarray(v, dtype=dtype), np.asarray(x, dtype=dtype))
    assert_same(mp.asarray(v, dtype=dtype, copy=True), np.asarray(x, dtype=dtype, copy=True))
    assert mp.asarray(v, dtype=np.int32) is v
    with pytest.raises(ValueError, match="avoid copy"):
        np.asarray(x, dtype=dtype, copy=False)
    with pytest.raises(ValueError, match="avoid copy"):
        mp.asarray(v, dtype=dtype, copy=False)
    with pytest.raises(ValueError, match="avoid copy"):
        mp.asarray(x, dtype=dtype, copy=False)


def test_buffers_iterables_and_functions(tmp_path):
    raw = np.arange(10, dtype=np.int16).tobytes()
    assert_same(mp.frombuffer(raw, dtype=np.int16, count=4, offset=2), np.frombuffer(raw, np.int16, 4, 2))
    assert_same(mp.fromiter(range(5), dtype=np.float32), np.fromiter(range(5), np.float32))
    assert_same(mp.fromfunction(lambda i, j: i * 10 + j, (3, 4)), np.fromfunction(lambda i, j: i * 10 + j, (3, 4)))
    assert_same(mp.fromstring("1 2 3", dtype=np.int64, sep=" "), np.fromstring("1 2 3", np.int64, sep=" "))
    path = tmp_path / "values.txt"
    np.savetxt(path, np.arange(6.0).reshape(2, 3))
    assert_same(mp.loadtxt(path), np.loadtxt(path))
    np.arange(5, dtype=np.float32).tofile(tmp_path / "raw.bin")
    assert_same(mp.fromfile(tmp_path / "raw.bin", dtype=np.float32), np.arange(5, dtype=np.float32))


@pytest.mark.parametrize("bad", [(-1, 2), (2.5,), "abc"])
def test_bad_shapes_raise_numpys_errors(bad):
    with pytest.raises(Exception) as expected:
        np.zeros(bad)
    with pytest.raises(expected.type):
        mp.zeros(bad)
