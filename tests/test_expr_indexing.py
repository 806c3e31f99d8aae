"""Var.__getitem__ and Var.__setitem__ against NumPy: basic, integer-array and boolean
indexing, assignment of every kind, and NumPy's errors."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mnnpy
from mnnpy import expr as F

from helpers import ALL_DTYPES, random_array

DTYPES = ALL_DTYPES + ["bfloat16"]
SETTINGS = settings(max_examples=80, deadline=None)


def rand(rng, shape, dtype):
    if dtype == "bfloat16":
        return np.asarray(random_array(rng, shape, "float32")).astype(ml_dtypes.bfloat16)
    return np.asarray(random_array(rng, shape, dtype))


def check(ours, expected):
    got = ours.numpy() if isinstance(ours, mnnpy.Var) else np.asarray(ours)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if expected.dtype.kind != "b":
        view = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[expected.dtype.itemsize]
        got, expected = np.ascontiguousarray(got).view(view), np.ascontiguousarray(expected).view(view)
    np.testing.assert_array_equal(got, expected)


def assign(x, index, value):
    """NumPy's result of x[index] = value, on a copy."""
    y = x.copy()
    y[index] = value
    return y


def check_assign(x, index, value):
    v = F.const(x)
    v[index] = value
    check(v, assign(x, index, value))


optional_int = st.none() | st.integers(-8, 8)
steps = st.none() | st.integers(-3, 3).filter(bool)
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
dtypes = st.sampled_from(DTYPES)


@st.composite
def basic_index(draw, shape):
    items = []
    for n in shape[:draw(st.integers(0, len(shape)))]:
        kind = draw(st.sampled_from(["int", "slice", "slice"] if n else ["slice"]))
        if kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        else:
            items.append(slice(draw(optional_int), draw(optional_int), draw(steps)))
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@st.composite
def advanced_index(draw, shape):
    """Integer arrays (broadcasting together) on some axes, ints and slices on others."""
    index_shape = draw(st.lists(st.integers(1, 3), max_size=2))
    items, has_array = [], False
    for n in shape:
        kind = draw(st.sampled_from(["array", "array", "int", "slice", "full"]))
        if kind == "array" or (n == shape[-1] and not has_array):
            s = [d if draw(st.booleans()) else 1 for d in index_shape][draw(st.integers(0, len(index_shape))):]
            a = np.asarray(draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(s)), max_size=int(np.prod(s)))),
                           dtype=draw(st.sampled_from([np.int64, np.int32, np.int16, np.int8]))).reshape(s)
            items.append(a.tolist() if draw(st.booleans()) and a.ndim == 1 else a)
            has_array = True
        elif kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            items.append(slice(draw(optional_int), draw(optional_int), draw(steps)))
        else:
            items.append(slice(None))
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), None)
    return tuple(items)


# ---------------------------------------------------------------- getitem
@SETTINGS
@given(shape=shapes, dtype=dtypes, data=st.data())
def test_basic_indexing(shape, dtype, data):
    x = rand(np.random.default_rng(0), shape, dtype)
    index = data.draw(basic_index(shape))
    try:
        expected = x[index]
    except IndexError as e:  # an integer landed on a shorter axis: the same error is expected
        with pytest.raises(IndexError, match=str(e)):
            F.const(x)[index]
        return
    check(F.const(x)[index], expected)


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), dtype=dtypes, data=st.data())
def test_integer_array_indexing(shape, dtype, data):
    x = rand(np.random.default_rng(1), shape, dtype)
    index = data.draw(advanced_index(shape))
    check(F.const(x)[index], x[index])


@SETTINGS
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=4).map(tuple), dtype=dtypes, data=st.data())
def test_boolean_mask_indexing(shape, dtype, data):
    rng = np.random.default_rng(2)
    x = rand(rng, shape, dtype)
    start = data.draw(st.integers(0, len(shape) - 1))
    stop = data.draw(st.integers(start + 1, len(shape)))
    mask = rng.random(shape[start:stop]) < 0.5
    index = (slice(None),) * start + (mask,)
    if data.draw(st.booleans()) and stop < len(shape) and shape[stop]:
        index += (data.draw(st.integers(-shape[stop], shape[stop] - 1)),)
    check(F.const(x)[index], x[index])
    check(F.const(x)[F.const(mask) if start == 0 else index], x[mask if start == 0 else index])


def test_boolean_mask_from_graph(rng):
    x = rng.standard_normal((5, 6)).astype(np.float32)
    v = F.const(x)
    check(v[v > 0.5], x[x > 0.5])
    check(v[F.greater(F.reduce_sum(v, axis=1), 0)], x[x.sum(1) > 0])
    check(v[v[:, 0] > 0, 1:4], x[x[:, 0] > 0, 1:4])


def test_boolean_scalars_and_mixed(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    v = F.const(x)
    for index in [True, False, (True, 1), (np.True_, [0, 2]), (Ellipsis, False), ([True, False, True], [1, 3])]:
        check(v[index], x[index])


def test_mixed_advanced_positions(rng):
    x = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    v = F.const(x)
    i, j = rng.integers(0, 3, (2, 1)), rng.integers(0, 4, (3,))
    for index in [(i, j), (slice(None), [1, 2], [0, 4]), (i, slice(1, 3), [[2]], 0), (Ellipsis, [0, 1], [5, 4]),
                  (0, slice(None), [1, 2]), ([1], None, [2, 3]), (slice(None), None, j)]:
        check(v[index], x[index])


def test_index_var_arrays(rng):
    x = rng.standard_normal((6, 3)).astype(np.float32)
    v = F.const(x)
    idx = F.const(np.array([5, -1, 0], np.int32))
    check(v[idx], x[[5, -1, 0]])
    check(v[F.add(idx, 0), 1], x[[5, -1, 0], 1])  # computed indices, resolved at run time
    check(v[idx, F.const(np.array([0, 2, 1]))], x[[5, -1, 0], [0, 2, 1]])
    # Computed indices out of range read zeros rather than failing when run.
    check(v[F.add(idx, 4)], np.stack([np.zeros(3, np.float32), x[3], x[4]]))
    check(v[F.add(idx, 4), F.const(np.array([0, 1, 2]))], np.array([0, x[3, 1], x[4, 2]], np.float32))


def test_indexing_placeholder_masks_need_values():
    p = F.placeholder([3])
    with pytest.raises(ValueError, match="has no value"):
        _ = p[p > 0]
    p.write(np.array([1, -1, 2], np.float32))
    check(p[p > 0], np.array([1, 2], np.float32))


def test_iteration_and_len(rng):
    x = rng.standard_normal((3, 2)).astype(np.float32)
    rows = list(F.const(x))
    assert len(rows) == 3
    for r, e in zip(rows, x, strict=True):
        check(r, e)


def test_zero_d_and_empty_indexing():
    s = F.const(np.float64(3.0))
    check(s[()], np.float64(3.0))
    check(s[...], np.array(3.0))
    check(s[None], np.array([3.0]))
    e = np.zeros((0, 3), np.float32)
    check(F.const(e)[:, 1], e[:, 1])
    check(F.const(e)[[]], e[[]])
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    check(F.const(x)[[]], x[[]])
    check(F.const(x)[5:1], x[5:1])


def test_getitem_errors():
    v = F.const(np.ones((2, 3), np.float32))
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 2"):
        v[5]
    with pytest.raises(IndexError, match="index -4 is out of bounds for axis 1 with size 3"):
        v[:, -4]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        v[:, [0, 3]]
    with pytest.raises(IndexError, match="too many indices for array: array is 2-dimensional, but 3 were indexed"):
        v[0, 0, 0]
    with pytest.raises(IndexError, match="too many indices for array: array is 1-dimensional, but 2 were indexed"):
        F.const(np.ones(3))[0, 1]
    with pytest.raises(IndexError, match="only integers, slices"):
        v[1.0]
    with pytest.raises(IndexError, match="only integers, slices"):
        v["a"]
    with pytest.raises(IndexError, match="an index can only have a single ellipsis"):
        v[..., ...]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        v[::0]
    with pytest.raises(IndexError, match="arrays used as indices must be of integer"):
        v[np.array([1.0])]
    with pytest.raises(IndexError, match="arrays used as indices must be of integer"):
        v[F.const(np.array([0.0]))]
    with pytest.raises(IndexError, match=r"shape mismatch: indexing arrays could not be broadcast together with "
                                         r"shapes \(2,\) \(3,\)"):
        v[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 0; size of axis is 2 "
                                         "but size of corresponding boolean axis is 3"):
        v[np.array([True, False, True])]


# ---------------------------------------------------------------- setitem
def value_for(rng, shape, dtype, data):
    """A value broadcastable to `shape`: full, with some axes 1 or dropped, or a scalar."""
    form = data.draw(st.sampled_from(["full", "ones", "scalar", "python"]))
    if form == "python":
        return 1 if dtype != "bool" else True
    if form == "scalar":
        return rand(rng, (), dtype)
    s = list(shape)
    if form == "ones":
        s = [1 if data.draw(st.booleans()) else d for d in s][data.draw(st.integers(0, len(s))):]
    return rand(rng, tuple(s), dtype)


@SETTINGS
@given(shape=shapes, dtype=dtypes, data=st.data())
def test_basic_setitem(shape, dtype, data):
    rng = np.random.default_rng(3)
    x = rand(rng, shape, dtype)
    index = data.draw(basic_index(shape))
    try:
        region = x[index].shape
    except IndexError:
        return  # covered by test_basic_indexing
    value = value_for(rng, region, dtype, data)
    check_assign(x, index, value)


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), dtype=dtypes, data=st.data())
def test_integer_array_setitem(shape, dtype, data):
    rng = np.random.default_rng(4)
    x = rand(rng, shape, dtype)
    index = data.draw(advanced_index(shape))
    # Repeated positions get equal values, so the order of writes does not matter.
    positions = np.arange(x.size).reshape(shape)[index]
    if np.unique(positions).size == positions.size and data.draw(st.booleans()):
        value = value_for(rng, positions.shape, dtype, data)  # broadcast forms of the value too
    elif data.draw(st.booleans()):
        value = (positions % 7).astype(x.dtype)
    else:
        value = rand(rng, (), dtype)
    check_assign(x, index, value)


@SETTINGS
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple), dtype=dtypes, data=st.data())
def test_boolean_setitem(shape, dtype, data):
    rng = np.random.default_rng(5)
    x = rand(rng, shape, dtype)
    stop = data.draw(st.integers(1, len(shape)))
    mask = rng.random(shape[:stop]) < 0.5
    index = data.draw(st.sampled_from([mask, (mask, Ellipsis), (Ellipsis, mask) if stop == len(shape) else mask]))
    value = value_for(rng, x[index].shape, dtype, data)
    check_assign(x, index, value)


def test_boolean_setitem_scalar_is_lazy(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    p = F.placeholder([4, 5])
    y = F.add(p, 0.0)
    y[p > 0] = 0.0  # the mask reads a placeholder that has no value yet
    assert y.op_type == "Where"
    for _ in range(2):
        x = rng.standard_normal((4, 5)).astype(np.float32)
        p.write(x)
        check(y, np.where(x > 0, np.float32(0), x))
    z = F.const(x)
    z[..., np.array([True, False, True, False, True])] = 7
    check(z, assign(x, (Ellipsis, np.array([True, False, True, False, True])), 7))


def test_setitem_does_not_write_through_views(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    a = F.const(x)
    b = a[0:2]
    b[0] = 1.0
    check(a, x)
    check(b, assign(x[0:2], 0, 1.0))
    same = a  # the same Python object: both names see the assignment
    a[1, 1] = -5.0
    check(same, assign(x, (1, 1), -5.0))
    before = a[2]
    a[2] = 0.0
    check(before, x[2])


def test_setitem_from_itself_and_rebind(rng):
    x = rng.standard_normal((5, 4)).astype(np.float32)
    v = F.const(x)
    v[1:] = v[:-1]  # the value reads the array being assigned to
    check(v, assign(x, slice(1, None), x[:-1].copy()))
    w = F.const(x)
    w[[0, 2]] = w[[2, 0]][:, ::-1]
    check(w, assign(x, [0, 2], x[[2, 0]][:, ::-1]))
    a, b = F.const(x), F.const(-x)
    alias = a
    mnnpy._core.rebind(a, b)
    check(alias, -x)


def test_setitem_casts_and_repeats(rng):
    x = np.arange(6, dtype=np.int32)
    v = F.const(x)
    v[[0, 0, 1]] = np.array([1.7, 2.9, -3.2])
    check(v, assign(x, [0, 0, 1], np.array([1.7, 2.9, -3.2])))
    v = F.const(x)
    v[::2] = 2.5
    check(v, assign(x, slice(None, None, 2), 2.5))
    w = F.const(x)
    w[1:3] = F.const(np.array([7, 8], np.int64))
    check(w, assign(x, slice(1, 3), np.array([7, 8])))
    u = F.const(np.zeros((2, 3), np.float32))
    u[:, 1:] = np.ones((1, 1, 2))  # extra leading length-1 axes are dropped, as in NumPy
    check(u, assign(np.zeros((2, 3), np.float32), (slice(None), slice(1, None)), np.ones((1, 1, 2))))


def test_setitem_row_and_scalar_updates(rng):
    x = rng.standard_normal((6, 4, 3)).astype(np.float32)
    for index, value in [([1, 3], rng.standard_normal(3).astype(np.float32)),
                         ([1, -1], rng.standard_normal((4, 3)).astype(np.float32)),
                         (([0, 2], [1, 1]), rng.standard_normal((1, 3)).astype(np.float32)),
                         ((slice(None), [0, 3]), rng.standard_normal(3).astype(np.float32)),
                         ((slice(1, None), [0, 3]), np.float32(2)),
                         (([4, 4, 2],), np.float32(-1))]:
        check_assign(x, index, value)


def test_setitem_with_computed_indices(rng):
    x = rng.standard_normal((5, 4)).astype(np.float32)
    v = F.const(x)
    idx = F.add(F.const(np.array([0, -1, 9], np.int64)), 0)
    v[idx] = 3.0
    # The out-of-range computed index writes nothing.
    check(v, assign(x, [0, -1], 3.0))
    w = F.const(x)
    w[F.const(np.array([1, 2, 3])), idx] = -1.0
    check(w, assign(x, ([1, 2], [0, -1]), -1.0))


def test_setitem_large_threads(rng):
    x = rng.standard_normal((512, 700)).astype(np.float32)
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        v = F.const(x)
        v[10:500:3, ::-2] = np.float32(4)
        check(v, assign(x, (slice(10, 500, 3), slice(None, None, -2)), np.float32(4)))
        w = F.const(x)
        rows = rng.integers(0, 512, 300)
        w[rows] = np.arange(700, dtype=np.float32)
        check(w, assign(x, rows, np.arange(700, dtype=np.float32)))
    mnnpy.set_num_threads(1)


def test_inplace_operators_through_setitem(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    v = F.const(x)
    v[1:] += 1.0
    v[:, [0, 2]] *= 2.0
    y = x.copy()
    y[1:] += np.float32(1)
    y[:, [0, 2]] *= np.float32(2)
    check(v, y)


def test_setitem_zero_d():
    s = F.const(np.float32(1))
    s[()] = 5
    check(s, np.float32(5))
    s[...] = np.array([[6]])
    check(s, np.array(6, np.float32))


def test_setitem_errors():
    v = F.const(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(4,\) into shape \(2, ?3\)"):
        v[0:2] = np.ones(4)
    with pytest.raises(ValueError, match=r"shape mismatch: value array of shape \(4,\) could not be broadcast to "
                                         r"indexing result of shape \(2, ?3\)"):
        v[[0, 1]] = np.ones(4)
    with pytest.raises(IndexError, match="index 2 is out of bounds for axis 0 with size 2"):
        v[2] = 1
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 1 with size 3"):
        v[:, [0, 9]] = 1
    with pytest.raises(IndexError, match="boolean index did not match"):
        v[np.array([True, False, True])] = 1
    check(v, np.ones((2, 3), np.float32))
