"""Elementwise ops of mnnpy.expr against NumPy: values, NumPy 2 result dtypes, broadcasting."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import mnnpy
from mnnpy import expr as F

from helpers import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, RTOL_TRANSCENDENTAL, assert_same, random_array

# (our function, NumPy function, input range) for float math.
FLOAT_UNARY = [
    ("sqrt", np.sqrt, (0, 100)), ("exp", np.exp, (-20, 20)), ("expm1", np.expm1, (-5, 5)),
    ("log", np.log, (1e-3, 1e3)), ("log1p", np.log1p, (-0.9, 100)), ("log2", np.log2, (1e-3, 1e3)),
    ("log10", np.log10, (1e-3, 1e3)), ("exp2", np.exp2, (-20, 20)),
    ("sin", np.sin, (-10, 10)), ("cos", np.cos, (-10, 10)), ("tan", np.tan, (-1.4, 1.4)),
    ("asin", np.arcsin, (-1, 1)), ("acos", np.arccos, (-1, 1)), ("atan", np.arctan, (-50, 50)),
    ("sinh", np.sinh, (-10, 10)), ("cosh", np.cosh, (-10, 10)), ("tanh", np.tanh, (-10, 10)),
    ("asinh", np.arcsinh, (-50, 50)), ("acosh", np.arccosh, (1, 50)), ("atanh", np.arctanh, (-0.99, 0.99)),
    ("cbrt", np.cbrt, (-50, 50)), ("rsqrt", lambda x: 1 / np.sqrt(x), (0.01, 100)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), (-30, 30)),
    ("softplus", lambda x: np.log1p(np.exp(x)), (-10, 10)),
    ("softsign", lambda x: x / (1 + np.abs(x)), (-10, 10)),
]
EXACT_UNARY = [
    ("abs", np.abs), ("negative", np.negative), ("sign", np.sign), ("square", np.square),
    ("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc), ("round", np.rint),
]


@pytest.mark.parametrize("name,ref,domain", FLOAT_UNARY, ids=[u[0] for u in FLOAT_UNARY])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_unary_matches_numpy(rng, name, ref, domain, dtype):
    x = random_array(rng, (3, 1000), "float64", *domain).astype(dtype)
    ours = getattr(F, name)(F.const(x)).numpy()
    with np.errstate(all="ignore"):
        expected = ref(x)
    assert_same(ours, expected, rtol=RTOL_TRANSCENDENTAL[dtype], atol=1e-6 if dtype != "float16" else 1e-3)


@pytest.mark.parametrize("name,ref", EXACT_UNARY, ids=[u[0] for u in EXACT_UNARY])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"])
def test_exact_unary_matches_numpy(rng, name, ref, dtype):
    if name == "negative" and dtype == "uint8":
        pass  # wraps like NumPy
    x = random_array(rng, (257,), dtype, -100, 100)
    if np.dtype(dtype).kind == "f":
        x[:4] = [0.5, 1.5, -2.5, -0.5]  # round-half-even cases
    ours = getattr(F, name)(F.const(x)).numpy()
    assert_same(ours, ref(x))


@pytest.mark.parametrize("dtype", INT_DTYPES + ["bool"])
def test_float_math_on_integers_promotes_like_numpy(rng, dtype):
    x = random_array(rng, (50,), dtype, 0, 100)
    for name, ref in [("sqrt", np.sqrt), ("exp", np.exp), ("sin", np.sin), ("round", np.rint)]:
        ours = getattr(F, name)(F.const(x)).numpy()
        expected = ref(x)
        assert ours.dtype == expected.dtype
        np.testing.assert_allclose(ours.astype(float), expected.astype(float), rtol=2e-3)


SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e30, -1e30, 88.5, 89.0, -88.0, -104.0,
                     700.0, 710.0, -750.0, 1.0, -1.0, 40000.0, 1e10], dtype=np.float64)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,ref", [("exp", np.exp), ("log", np.log), ("sin", np.sin), ("cos", np.cos),
                                      ("tanh", np.tanh), ("sqrt", np.sqrt), ("expm1", np.expm1),
                                      ("log1p", np.log1p), ("atan", np.arctan), ("sinh", np.sinh),
                                      ("asinh", np.arcsinh), ("sigmoid", lambda v: 1 / (1 + np.exp(-v)))])
def test_special_values(name, ref, dtype):
    # Repeated so whole SIMD vectors of specials are seen, and mixed with ordinary values.
    x = np.concatenate([SPECIALS, SPECIALS[::-1], np.linspace(-3, 3, 37)]).astype(dtype)
    with np.errstate(all="ignore"):
        expected = ref(x)
    ours = getattr(F, name)(F.const(x)).numpy()
    np.testing.assert_allclose(ours, expected, rtol=RTOL_TRANSCENDENTAL[dtype], atol=1e-30, equal_nan=True)


def test_predicates(rng):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -2.0], np.float32)
    for name, ref in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                      ("logical_not", np.logical_not)]:
        assert_same(getattr(F, name)(F.const(x)).numpy(), ref(x))
    i = random_array(rng, (20,), "int32")
    assert_same(F.isnan(F.const(i)).numpy(), np.isnan(i))
    assert_same(F.bitwise_not(F.const(i)).numpy(), np.invert(i))
    b = random_array(rng, (20,), "bool")
    assert_same((~F.const(b)).numpy(), ~b)


BINARY = [
    ("__add__", np.add), ("__sub__", np.subtract), ("__mul__", np.multiply), ("__truediv__", np.true_divide),
    ("__floordiv__", np.floor_divide), ("__mod__", np.remainder), ("__pow__", np.power),
    ("__eq__", np.equal), ("__ne__", np.not_equal), ("__lt__", np.less), ("__le__", np.less_equal),
    ("__gt__", np.greater), ("__ge__", np.greater_equal),
]
BINARY_F = [("maximum", np.maximum), ("minimum", np.minimum), ("fmax", np.fmax), ("fmin", np.fmin),
            ("atan2", np.arctan2), ("hypot", np.hypot), ("logical_and", np.logical_and),
            ("logical_or", np.logical_or), ("logical_xor", np.logical_xor)]


def _operands(rng, shapes, dtypes, op):
    a = random_array(rng, shapes[0], dtypes[0], -20, 20)
    b = random_array(rng, shapes[1], dtypes[1], -20, 20)
    if op in ("__pow__",):
        a = random_array(rng, shapes[0], dtypes[0], 0, 4)
        b = random_array(rng, shapes[1], dtypes[1], 0, 4)
    return a, b


@settings(max_examples=60, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=5),
       dtypes=st.tuples(st.sampled_from(ALL_DTYPES), st.sampled_from(ALL_DTYPES)),
       op=st.sampled_from(BINARY), seed=st.integers(0, 2**31))
def test_binary_operators_match_numpy(shapes, dtypes, op, seed):
    rng = np.random.default_rng(seed)
    name, ref = op
    a, b = _operands(rng, shapes.input_shapes, dtypes, name)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = ref(a, b)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            getattr(F.const(a), name)(F.const(b))
        return
    ours = getattr(F.const(a), name)(F.const(b)).numpy()
    assert_same(ours, expected, rtol=2e-3 if "float16" in dtypes else 1e-6)


@settings(max_examples=40, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=6),
       dtype=st.sampled_from(["float32", "float64", "int32", "int8", "float16"]),
       op=st.sampled_from(BINARY_F), seed=st.integers(0, 2**31))
def test_binary_functions_match_numpy(shapes, dtype, op, seed):
    rng = np.random.default_rng(seed)
    name, ref = op
    a, b = _operands(rng, shapes.input_shapes, (dtype, dtype), name)
    if np.dtype(dtype).kind == "f":
        a.flat[::3] = np.nan  # NaN handling of maximum vs fmax
    ours = getattr(F, name)(F.const(a), F.const(b)).numpy()
    with np.errstate(all="ignore"):
        expected = ref(a, b)
    assert_same(ours, expected, rtol=2e-3 if dtype == "float16" else 1e-6)


def test_integer_division_and_modulo_edge_cases():
    a = np.array([7, -7, 7, -7, 0, -128, 5, -128], np.int8)
    b = np.array([2, 2, -2, -2, 0, -1, 0, 1], np.int8)
    with np.errstate(all="ignore"):
        assert_same((F.const(a) // F.const(b)).numpy(), a // b)
        assert_same((F.const(a) % F.const(b)).numpy(), a % b)
    x = np.array([7.5, -7.5, 7.5, -7.5, 0.0, 1.0, -0.0], np.float64)
    y = np.array([2.0, 2.0, -2.0, -2.0, 0.0, 0.0, 3.0])
    with np.errstate(all="ignore"):
        assert_same((F.const(x) // F.const(y)).numpy(), x // y)
        assert_same((F.const(x) % F.const(y)).numpy(), x % y)


def test_shifts_and_bitwise(rng):
    a = random_array(rng, (100,), "int32", -1000, 1000)
    s = random_array(rng, (100,), "int32", 0, 40)
    assert_same((F.const(a) << F.const(s)).numpy(), np.left_shift(a, s))
    assert_same((F.const(a) >> F.const(s)).numpy(), np.right_shift(a, s))
    b = random_array(rng, (100,), "int32")
    for op in ["__and__", "__or__", "__xor__"]:
        assert_same(getattr(F.const(a), op)(F.const(b)).numpy(), getattr(a, op)(b))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("scalar", [2, 2.5, True, -3])
def test_python_scalars_follow_nep50(rng, dtype, scalar):
    a = random_array(rng, (5,), dtype, 0, 20)
    for op in ["__add__", "__radd__", "__mul__", "__rmul__", "__gt__"]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = getattr(a, op)(scalar)
        except (TypeError, OverflowError) as e:
            with pytest.raises(type(e)):
                getattr(F.const(a), op)(scalar)
            continue
        if expected is NotImplemented:
            continue
        assert_same(getattr(F.const(a), op)(scalar).numpy(), expected, rtol=2e-3)


def test_python_int_out_of_range_for_dtype():
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        F.const(np.array([1], np.int8)) + 1000


def test_numpy_array_on_the_left_defers_to_var(rng):
    a = random_array(rng, (4, 3), "float32")
    b = random_array(rng, (3,), "float32")
    r = b + F.const(a)
    assert isinstance(r, mnnpy.Var)
    assert_same(r.numpy(), b + a)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_where_select(rng, dtype):
    c = random_array(rng, (4, 1, 5), "bool")
    a = random_array(rng, (3, 5), dtype)
    b = random_array(rng, (1,), dtype)
    assert_same(F.select(F.const(c), F.const(a), F.const(b)).numpy(), np.where(c, a, b))


@pytest.mark.parametrize("src", ALL_DTYPES)
@pytest.mark.parametrize("dst", ALL_DTYPES)
def test_cast_matches_numpy(rng, src, dst):
    x = random_array(rng, (300,), src, -100, 100)
    if np.dtype(src).kind == "f":
        x[:6] = [0.5, -0.5, 1.5, 2.5, 99.9, -99.9]
    if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu":
        x = np.clip(x, np.iinfo(dst).min, np.iinfo(dst).max)  # out-of-range float->int is undefined in NumPy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = x.astype(dst)
    assert_same(F.cast(F.const(x), dst).numpy(), expected)


def test_bfloat16_round_trip(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = random_array(rng, (1000,), "float32", -1e4, 1e4)
    ours = F.cast(F.const(x), "bfloat16").numpy()
    assert ours.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(ours, x.astype(ml_dtypes.bfloat16))
    y = (F.cast(F.const(x), "bfloat16") * 2).numpy()
    np.testing.assert_array_equal(y, (x.astype(ml_dtypes.bfloat16).astype(np.float32) * 2).astype(ml_dtypes.bfloat16))


def test_float16_arithmetic_rounds_like_numpy(rng):
    a = random_array(rng, (2000,), "float16", -100, 100)
    b = random_array(rng, (2000,), "float16", -100, 100)
    for op in ["__add__", "__mul__", "__truediv__", "__sub__"]:
        assert_same(getattr(F.const(a), op)(F.const(b)).numpy(), getattr(a, op)(b), rtol=0)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1,), (1, 1, 1)])
def test_zero_d_and_empty(rng, shape):
    a = random_array(rng, shape, "float32")
    b = random_array(rng, shape, "float32")
    assert_same((F.exp(F.const(a)) * F.const(b) + 1).numpy(), np.exp(a) * b + 1, rtol=1e-5)


def test_non_contiguous_inputs(rng):
    base = random_array(rng, (8, 10), "float32")
    a = base[::2, ::3]
    b = base.T[1:4]
    assert_same((F.const(a) * 2).numpy(), a * 2)
    assert_same((F.const(b) - 1).numpy(), b - 1)


@settings(max_examples=30, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=40), seed=st.integers(0, 2**31))
def test_long_fused_chain_with_broadcast(shape, seed):
    rng = np.random.default_rng(seed)
    a = random_array(rng, shape, "float32", -3, 3)
    row = random_array(rng, shape[-1:] if shape else (), "float32", -3, 3)
    ours = F.tanh(F.const(a) * F.const(row) + 1.5) * 0.5 - F.exp(-F.abs(F.const(a))) / (F.const(row) ** 2 + 1)
    expected = np.tanh(a * row + np.float32(1.5)) * np.float32(0.5) - np.exp(-np.abs(a)) / (row ** 2 + 1)
    assert_same(ours.numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,other", [
    ((1, 84, 14, 14, 8), (1, 84, 1, 1, 8)),   # a per-channel scale in the blocked layout
    ((2, 4, 3001, 5), (2, 4, 1, 5)),          # rows of 5: tiles of the fused kernel start mid-row
    ((3, 7, 2, 3), (7, 1, 3)),
    ((5, 1000, 2), (5, 1, 2)),
    ((4, 6, 9), (4, 1, 1)),
], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "int8", "int64"])
def test_short_rows_repeated_along_a_broadcast_axis(rng, shape, other, dtype):
    a = random_array(rng, shape, dtype)
    b = random_array(rng, other, dtype)
    assert_same((F.const(a) * F.const(b)).numpy(), a * b)
    assert_same((F.exp(F.const(a) * 0) * F.const(b)).numpy(), np.exp(a * 0) * b)  # fused: b gathered per tile
    assert_same((F.const(b) - F.const(a)).numpy(), b - a)


def test_large_arrays_run_on_threads_and_match(rng):
    a = random_array(rng, (3, 700_001), "float32")
    b = random_array(rng, (700_001,), "float32")
    for n in (1, 2):
        mnnpy.set_num_threads(n)
        # The product is fused into the add, so compare against the exact float64 result.
        exact = (a.astype(np.float64) * b + a).astype(np.float32)
        assert_same((F.const(a) * F.const(b) + F.const(a)).numpy(), exact, rtol=1.2e-7, atol=1e-30)
    mnnpy.set_num_threads(2)


def test_portable_kernels_agree_with_best(rng, portable_simd):
    a = random_array(rng, (5000,), "float32", -5, 5)
    b = random_array(rng, (5000,), "float32", 0.1, 5)
    exprs = [lambda x, y: F.exp(x) * y, lambda x, y: F.tanh(x) + F.log(y), lambda x, y: F.sin(x) - F.sqrt(y),
             lambda x, y: F.reduce_sum(x * y), lambda x, y: F.argmax(x, 0), lambda x, y: F.reduce_max(x)]
    assert mnnpy._core.simd_target() in ("EMU128", "SCALAR")
    portable = [f(F.const(a), F.const(b)).numpy() for f in exprs]
    mnnpy._core.force_portable_simd(False)
    assert mnnpy._core.simd_target() not in ("EMU128", "SCALAR") or True
    best = [f(F.const(a), F.const(b)).numpy() for f in exprs]
    for p, q in zip(portable, best):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
