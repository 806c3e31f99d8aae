"""mnnpy.numpy's ufuncs and elementwise functions against NumPy: values, dtypes (weak Python
scalars included), out=/where=/dtype=, reduce/accumulate/outer, and the exceptions NumPy raises."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mnnpy.numpy as mp
from numpy_strategies import DTYPES, arrays, broadcastable_pair

# (rtol, atol) per result dtype: transcendental kernels may differ from NumPy's by a few ulp.
TOLERANCE = {"float16": (2e-3, 2e-3), "float32": (2e-5, 2e-6), "float64": (1e-12, 1e-13)}

# Unary ufuncs and the element range they are tested on (None: the strategy's default).
UNARY = {
    "negative": None, "positive": None, "absolute": None, "fabs": None, "sign": None, "rint": None, "floor": None,
    "ceil": None, "trunc": None, "sqrt": None, "cbrt": None, "square": (-100, 100), "reciprocal": (1, 100),
    "exp": (-80, 80), "exp2": (-100, 100), "expm1": (-80, 80), "log": None, "log2": None, "log10": None,
    "log1p": None, "sin": (-100, 100), "cos": (-100, 100), "tan": (-1.5, 1.5), "arcsin": (-1, 1),
    "arccos": (-1, 1), "arctan": None, "sinh": (-80, 80), "cosh": (-80, 80), "tanh": None, "arcsinh": None,
    "arccosh": (1, 1000), "arctanh": (-0.99, 0.99), "deg2rad": None, "rad2deg": None, "radians": None,
    "degrees": None, "isnan": None, "isinf": None, "isfinite": None, "signbit": None, "logical_not": None,
    "invert": None, "conjugate": None, "modf": None,
}
BINARY = {
    "add": None, "subtract": None, "multiply": (-100, 100), "divide": None, "true_divide": None,
    "floor_divide": None, "remainder": None, "mod": None, "fmod": None, "power": (0, 5), "float_power": (0, 5),
    "arctan2": None, "hypot": None, "copysign": None, "logaddexp": None, "logaddexp2": None, "heaviside": None,
    "equal": None, "not_equal": None, "less": None, "less_equal": None, "greater": None, "greater_equal": None,
    "logical_and": None, "logical_or": None, "logical_xor": None, "bitwise_and": None, "bitwise_or": None,
    "bitwise_xor": None, "left_shift": (0, 40), "right_shift": (0, 40), "maximum": None, "minimum": None,
    "fmax": None, "fmin": None, "divmod": None, "ldexp": (-20, 20),
}


def assert_matches(ours, expected):
    if isinstance(expected, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(expected)
        for o, e in zip(ours, expected):
            assert_matches(o, e)
        return
    ours = np.asarray(ours)
    expected = np.asarray(expected)
    assert ours.dtype == expected.dtype, f"dtype {ours.dtype} != NumPy's {expected.dtype}"
    assert ours.shape == expected.shape, f"shape {ours.shape} != NumPy's {expected.shape}"
    if expected.dtype.kind == "f":
        rtol, atol = TOLERANCE[str(expected.dtype)]
        scale = max(1.0, float(np.max(np.abs(expected[np.isfinite(expected)]), initial=0)))
        np.testing.assert_allclose(ours.astype(np.float64), expected.astype(np.float64), rtol=rtol,
                                   atol=atol * scale if expected.dtype == np.float16 else atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(ours, expected)


def run_both(name, *args, **kwargs):
    """NumPy's result and ours; when NumPy raises, ours must raise the same exception type."""
    with np.errstate(all="ignore"):
        try:
            expected = getattr(np, name)(*args, **kwargs)
        except (TypeError, ValueError, OverflowError) as e:
            with pytest.raises(type(e)):
                getattr(mp, name)(*args, **kwargs)
            return None, None
        return getattr(mp, name)(*args, **kwargs), expected


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_unary_ufunc_matches_numpy(name, data):
    bounds = UNARY[name] or (None, None)
    x = data.draw(arrays(min_value=bounds[0], max_value=bounds[1]))
    if name == "reciprocal" and x.dtype == np.bool_:
        return  # NumPy's integer 1/0 is whatever the C cast of inf gives
    ours, expected = run_both(name, x)
    if expected is not None:
        assert_matches(ours, expected)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_binary_ufunc_matches_numpy(name, data):
    bounds = BINARY[name] or (None, None)
    a, b = data.draw(broadcastable_pair(min_value=bounds[0], max_value=bounds[1]))
    ours, expected = run_both(name, a, b)
    if expected is not None:
        assert_matches(ours, expected)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum",
                                  "less", "bitwise_and", "remainder", "arctan2"])
@settings(max_examples=25, deadline=None)
@given(x=arrays(max_value=100, min_value=0),
       scalar=st.one_of(st.booleans(), st.integers(-300, 300), st.floats(-50, 50, allow_nan=False)),
       scalar_first=st.booleans())
def test_python_scalars_are_weak_as_in_numpy(name, x, scalar, scalar_first):
    args = (scalar, x) if scalar_first else (x, scalar)
    ours, expected = run_both(name, *args)
    if expected is not None:
        assert_matches(ours, expected)


@settings(max_examples=30, deadline=None)
@given(pair=broadcastable_pair(dtypes=["int8", "int32", "int64", "float32", "float64"], min_value=-50,
                               max_value=50),
       op=st.sampled_from(["+", "-", "*", "/", "//", "%", "<", "<=", "==", "!=", ">", ">=", "&", "|", "^"]))
def test_var_operators_match_numpy(pair, op):
    a, b = pair
    if op in "&|^" and (a.dtype.kind == "f" or b.dtype.kind == "f"):
        a, b = a.astype(np.int32), b.astype(np.int64)
    with np.errstate(all="ignore"):
        expected = eval(f"a {op} b")
        ours = eval(f"va {op} vb", {"va": mp.asarray(a), "vb": mp.asarray(b)})
    assert_matches(ours, expected)


@settings(max_examples=30, deadline=None)
@given(x=arrays(dtypes=["int8", "int16", "int32", "int64", "float32", "float64"], min_value=-50, max_value=50))
def test_unary_operators_match_numpy(x):
    v = mp.asarray(x)
    assert_matches(-v, -x)
    assert_matches(abs(v), abs(x))
    assert_matches(+v, +x)
    if x.dtype.kind == "i":
        assert_matches(~v, ~x)


def test_out_where_and_dtype_arguments(rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((5,)).astype(np.float32)
    mask = a > 0
    out = mp.full((4, 5), -1.0)  # float64: the float32 result is cast into it
    result = mp.add(a, b, out=out, where=mask)
    assert result is out
    expected = np.full((4, 5), -1.0)
    np.add(a, b, out=expected, where=mask)
    assert_matches(out, expected)
    assert_matches(mp.multiply(a, b, dtype=np.float64), np.multiply(a, b, dtype=np.float64))
    assert_matches(mp.sqrt(np.arange(5, dtype=np.int16), dtype=np.float64),
                   np.sqrt(np.arange(5, dtype=np.int16), dtype=np.float64))
    quotient, remainder = mp.zeros(5, dtype=np.int64), mp.zeros(5, dtype=np.int64)
    mp.divmod(np.arange(5), 2, out=(quotient, remainder))
    assert_matches(quotient, np.arange(5) // 2)
    assert_matches(remainder, np.arange(5) % 2)
    positional = mp.zeros(3)
    mp.exp(np.zeros(3), positional)
    assert_matches(positional, np.ones(3))


def test_casting_errors_are_numpys():
    ints = mp.zeros(3, dtype=np.int32)
    with pytest.raises(np.exceptions.UFuncTypeError if hasattr(np.exceptions, "UFuncTypeError") else TypeError):
        np.add(np.zeros(3, np.int32), 1.5, out=np.zeros(3, np.int32), casting="same_kind")
    with pytest.raises(TypeError):
        mp.add(ints, 1.5, dtype=np.int32, casting="same_kind")
    with pytest.raises(TypeError):
        mp.bitwise_and(np.ones(2), np.ones(2))
    with pytest.raises(TypeError):
        mp.negative(np.array([True]))
    with pytest.raises(OverflowError):
        mp.add(np.zeros(2, np.int8), 1000)
    with pytest.raises(TypeError):
        mp.add(np.ones(2), np.ones(2), np.ones(2), np.ones(2))
    with pytest.raises(ValueError):
        mp.add(np.ones((2, 3)), np.ones((3, 2)))


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "logical_and", "logical_or"])
def test_reduce_accumulate_outer(name, rng):
    x = rng.integers(-5, 6, size=(3, 4)).astype(np.int32)
    if name.startswith("logical"):
        x = x > 0
    ufunc, ours = getattr(np, name), getattr(mp, name)
    for axis in (0, 1, None):
        assert_matches(ours.reduce(x, axis=axis), ufunc.reduce(x, axis=axis))
    assert_matches(ours.reduce(x, axis=1, keepdims=True), ufunc.reduce(x, axis=1, keepdims=True))
    if name in ("add", "multiply"):
        assert_matches(ours.accumulate(x, axis=1), ufunc.accumulate(x, axis=1))
    assert_matches(ours.outer(x[0], x[1]), ufunc.outer(x[0], x[1]))
    assert ours.identity == ufunc.identity
    assert (ours.nin, ours.nout, ours.nargs) == (ufunc.nin, ufunc.nout, ufunc.nargs)


def test_ufuncs_without_reduce_say_so():
    with pytest.raises(AttributeError):
        mp.subtract.reduce  # noqa: B018


@settings(max_examples=40, deadline=None)
@given(x=arrays(dtypes=["float16", "float32", "float64"], allow_nan=True),
       decimals=st.integers(-2, 3))
def test_around_matches_numpy(x, decimals):
    assert_matches(mp.around(x, decimals), np.around(x, decimals))
    assert_matches(mp.round(x), np.round(x))
    assert_matches(mp.fix(x), np.fix(x))


@settings(max_examples=30, deadline=None)
@given(x=arrays(dtypes=["int8", "int16", "int32", "int64"], min_value=-1000, max_value=1000),
       decimals=st.integers(-3, 2))
def test_around_of_integers_matches_numpy(x, decimals):
    assert_matches(mp.around(x, decimals), np.around(x, decimals))


@settings(max_examples=40, deadline=None)
@given(x=arrays(dtypes=["int8", "int32", "int64", "float32", "float64"], min_value=-100, max_value=100),
       lo=st.one_of(st.none(), st.integers(-50, 0), st.floats(-50, 0)),
       hi=st.one_of(st.none(), st.integers(1, 50), st.floats(1, 50)))
def test_clip_matches_numpy(x, lo, hi):
    ours, expected = run_both("clip", x, lo, hi)
    if expected is not None:
        assert_matches(ours, expected)


@settings(max_examples=30, deadline=None)
@given(x=arrays(dtypes=["float16", "float32", "float64"], allow_nan=True))
def test_nan_to_num_sinc_and_closeness(x):
    with np.errstate(all="ignore"):
        x = np.concatenate([x.reshape(-1), np.array([np.inf, -np.inf, np.nan], x.dtype)])
        assert_matches(mp.nan_to_num(x), np.nan_to_num(x))
        assert_matches(mp.nan_to_num(x, nan=1.5, posinf=7.0, neginf=-7.0),
                       np.nan_to_num(x, nan=1.5, posinf=7.0, neginf=-7.0))
        assert_matches(mp.sinc(x[np.isfinite(x)]), np.sinc(x[np.isfinite(x)]))
        y = x[::-1].copy()
        for equal_nan in (False, True):
            assert_matches(mp.isclose(x, y, equal_nan=equal_nan), np.isclose(x, y, equal_nan=equal_nan))
            assert mp.allclose(x, x, equal_nan=equal_nan) == np.allclose(x, x, equal_nan=equal_nan)
            assert mp.array_equal(x, x, equal_nan=equal_nan) == np.array_equal(x, x, equal_nan=equal_nan)
        assert mp.array_equiv(x[:1], x) == np.array_equiv(x[:1], x)
        assert mp.array_equal(x, x[:1]) is False


def test_real_imag_and_aliases(rng):
    x = rng.standard_normal(6)
    assert_matches(mp.real(x), np.real(x))
    assert_matches(mp.imag(x), np.imag(x))
    for alias, name in [("abs", "absolute"), ("acos", "arccos"), ("atan2", "arctan2"), ("pow", "power"),
                        ("bitwise_invert", "invert"), ("conj", "conjugate"), ("round_", "around")]:
        assert getattr(mp, alias) is getattr(mp, name)
