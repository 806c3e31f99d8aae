"""NumPy 2's Array API functions in mnnpy.numpy (astype, permute_dims, matrix_transpose, unstack,
vecdot, linalg.vecdot, cumulative_sum/cumulative_prod, eye's offsets) against NumPy itself:
values, dtypes, shapes and the exception types NumPy raises."""
import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mnnpy.numpy as mnp
from mnnpy import Var
from helpers import assert_same, same_as_numpy as same
from numpy_strategies import DTYPES, arrays, shapes

FAST = settings(max_examples=30, deadline=None)


# ---------------------------------------------------------------- astype
@FAST
@given(arrays(shape=shapes, max_value=100, min_value=-100), st.sampled_from(DTYPES), st.booleans(), st.booleans())
def test_astype(a, dtype, copy, as_var):
    x = mnp.asarray(a) if as_var else a
    ours = mnp.astype(x, dtype, copy=copy)
    assert isinstance(ours, Var)
    assert_same(ours, numpy.astype(a, dtype, copy=copy))
    if as_var and numpy.dtype(dtype) == a.dtype:
        assert (ours is x) == (not copy)  # copy=False returns the array itself, as NumPy does


def test_astype_copy_is_independent():
    x = mnp.asarray(numpy.arange(4, dtype=numpy.int32))
    y = mnp.astype(x, numpy.int32)
    x.fill(7)
    assert_same(y, numpy.arange(4, dtype=numpy.int32))


def test_astype_device_and_scalars():
    scalar = numpy.float32(2.5)
    assert_same(mnp.astype(scalar, numpy.int16, device="cpu"), numpy.astype(scalar, numpy.int16))
    for call in (lambda m: m.astype(3, m.float32),  # NumPy: AttributeError (a Python int has no astype)
                 lambda m: m.astype([1, 2], m.float32),  # lists are not arrays here (NumPy's rule)
                 lambda m: m.astype(numpy.ones(2), numpy.float32, device="gpu"),
                 lambda m: m.astype(numpy.ones(2), "not a dtype")):
        same(call)


# ---------------------------------------------------------------- permute_dims / matrix_transpose
@FAST
@given(arrays(), st.data())
def test_permute_dims(a, data):
    axes = data.draw(st.permutations(range(a.ndim)).map(tuple))
    if a.ndim and data.draw(st.booleans()):
        axes = tuple(ax - a.ndim if data.draw(st.booleans()) else ax for ax in axes)  # negative axes too
    same(lambda m: m.permute_dims(a, axes))
    same(lambda m: m.permute_dims(a))
    assert mnp.permute_dims is mnp.transpose  # one function under two names, as in NumPy


@pytest.mark.parametrize("shape, axes", [((2, 3), (0,)), ((2, 3), (0, 0)), ((2, 3), (0, 2)), ((2, 3), (0, 1, 2)),
                                         ((), (0,))])
def test_permute_dims_bad_axes(shape, axes):
    a = numpy.ones(shape, numpy.float32)
    same(lambda m: m.permute_dims(a, axes))


@FAST
@given(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=5, min_side=0, max_side=4)))
def test_matrix_transpose(a):
    same(lambda m: m.matrix_transpose(a))  # ValueError below two axes, as NumPy
    same(lambda m: m.linalg.matrix_transpose(a))


# ---------------------------------------------------------------- unstack
@FAST
@given(arrays(), st.data())
def test_unstack(a, data):
    axis = data.draw(st.integers(-a.ndim - 1, a.ndim)) if a.ndim else data.draw(st.integers(-1, 1))
    ours = same(lambda m: m.unstack(a, axis=axis))  # AxisError out of range, ValueError for 0-d
    if ours is not None:
        assert isinstance(ours, tuple) and all(isinstance(p, Var) for p in ours)
        if len(ours):
            assert_same(mnp.stack(ours, axis=axis), a)


def test_unstack_default_axis_and_positional_only():
    a = numpy.random.default_rng().random((3, 2, 4)).astype(numpy.float32)
    same(lambda m: m.unstack(a))
    with pytest.raises(TypeError):
        mnp.unstack(a, 1)


# ---------------------------------------------------------------- vecdot
@st.composite
def vecdot_operands(draw):
    n = draw(st.integers(0, 5))
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)).input_shapes
    axis = draw(st.integers(-1 - min(len(batch[0]), len(batch[1])), -1))
    dtype_a, dtype_b = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    ops = []
    for b, dt in zip(batch, (dtype_a, dtype_b)):
        shape = list(b)
        shape.insert(len(shape) + axis + 1, n)
        ops.append(draw(arrays(dtype=dt, shape=tuple(shape), min_value=-20, max_value=20)))
    return ops[0], ops[1], axis


@FAST
@given(vecdot_operands(), st.booleans())
def test_vecdot(operands, keepdims):
    a, b, axis = operands
    same(lambda m: m.vecdot(a, b, axis=axis), rtol=2e-2 if numpy.result_type(a, b) == numpy.float16 else None)
    same(lambda m: m.vecdot(a, b, axis=axis, keepdims=keepdims),
         rtol=2e-2 if numpy.result_type(a, b) == numpy.float16 else None)
    same(lambda m: m.linalg.vecdot(a, b, axis=axis), rtol=2e-2 if numpy.result_type(a, b) == numpy.float16 else None)


def test_vecdot_integer_wraps_and_dtype():
    a = numpy.full((4, 3), 100, numpy.int8)
    same(lambda m: m.vecdot(a, a))  # int8 products wrap in int8, as NumPy's vecdot
    same(lambda m: m.vecdot(a, a, dtype=numpy.int64))
    out = mnp.zeros((4,), numpy.float32)
    assert mnp.vecdot(a, a, out=out) is out
    assert_same(out, numpy.vecdot(a, a).astype(numpy.float32))


@pytest.mark.parametrize("sa, sb, kw", [
    ((2, 3), (2, 1), {}), ((2, 3), (2, 3), {"axis": 2}), ((), (), {}), ((3,), (), {}), ((2, 3), (3,), {"axis": -2}),
    ((2, 3), (4, 3), {}), ((5, 2, 3), (3,), {"axis": 1})])
def test_vecdot_errors(sa, sb, kw):
    a, b = numpy.ones(sa, numpy.float32), numpy.ones(sb, numpy.float32)
    same(lambda m: m.vecdot(a, b, **kw))
    same(lambda m: m.linalg.vecdot(a, b, **kw))


# ---------------------------------------------------------------- cumulative_sum / cumulative_prod
@FAST
@given(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5), min_value=-3, max_value=3),
       st.data())
def test_cumulative(a, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim - 1, a.ndim)))
    dtype = data.draw(st.sampled_from([None, "int64", "float64", "float32", "int32", "uint8", "bool"]))
    include_initial = data.draw(st.booleans())
    rtol = 2e-2 if a.dtype == numpy.float16 and dtype is None else None
    for name in ("cumulative_sum", "cumulative_prod"):
        same(lambda m: getattr(m, name)(a, axis=axis, dtype=dtype, include_initial=include_initial), rtol=rtol)


# ---------------------------------------------------------------- eye's diagonal offset
@pytest.mark.parametrize("n, m, k", [(0, None, 2 ** 63), (3, None, 2 ** 63), (3, 4, -2 ** 70), (3, 4, 4), (3, 4, -3),
                                     (3, 4, 3), (3, 4, -2), (4, 2, 1), (1, 1, -1)])
def test_eye_offsets(n, m, k):
    same(lambda mod: mod.eye(n, m, k=k))
    same(lambda mod: mod.eye(n, m, k=k, dtype=mod.int8))


# ---------------------------------------------------------------- signed zeros and cos near zero
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", ["sin", "expm1", "cos"])
def test_zero_special_cases(name, dtype):
    x = numpy.array([0.0, -0.0, 1e-30, -1e-30, 2.0 ** -28, -(2.0 ** -27.5), 2.0 ** -26, -1.0, 3.0, numpy.nan,
                     numpy.inf, -numpy.inf], dtype)
    with numpy.errstate(invalid="ignore"):
        expected = getattr(numpy, name)(x)
    ours = numpy.asarray(getattr(mnp, name)(x))
    assert_same(ours, expected)
    assert numpy.array_equal(numpy.signbit(ours), numpy.signbit(expected))  # sin(-0) = expm1(-0) = -0
    if name == "cos":
        assert numpy.all(ours[:6] == 1)  # exactly 1 where 1 - x*x/2 rounds to 1


@pytest.mark.parametrize("name", ["sin", "expm1", "cos"])
def test_zero_special_cases_integer_and_dtype_args(name):
    same(lambda m: getattr(m, name)(numpy.array([0, 1, -2], numpy.int8)))
    same(lambda m: getattr(m, name)(numpy.array([-0.0, 0.0], numpy.float32), dtype=numpy.float64))
