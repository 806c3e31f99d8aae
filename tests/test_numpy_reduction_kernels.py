"""The blocked reduction kernels against NumPy on arrays long enough to cross their block and
thread boundaries: argmax/argmin (block scan, vector search, NaN-first) and the fused Variance
op behind var/std (blockwise corrected two-pass, Chan merge, the column path)."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import mnnpy
import mnnpy.numpy as mnp
from helpers import assert_same

# The thread-count fixture is meant to hold for every generated input.
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
INT_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64"]
# Row lengths around the kernels' block sizes (256 float32 / 128 float64 per block, 4 vectors a step).
LENGTHS = st.one_of(st.integers(1, 70), st.sampled_from([127, 128, 129, 255, 256, 257, 511, 512, 513, 1024, 1031,
                                                          2047, 2048, 4099]))


class _ignore_warnings:
    """NumPy's RuntimeWarnings (degrees of freedom, invalid values) are not under test here."""

    def __enter__(self):
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


@pytest.fixture(params=[1, 2], ids=["1T", "2T"])
def threads(request):
    previous = mnnpy.get_num_threads()
    mnnpy.set_num_threads(request.param)
    yield request.param
    mnnpy.set_num_threads(previous)


@st.composite
def float_rows(draw, dtype=None):
    """A [rows, n] float array with a few NaN, inf, ties and signed zeros planted at drawn places."""
    dtype = draw(st.sampled_from(["float32", "float64", "float16"])) if dtype is None else dtype
    rows, n = draw(st.integers(1, 4)), draw(LENGTHS)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scale = draw(st.sampled_from([1.0, 1e3]))
    a = (rng.standard_normal((rows, n)) * scale).astype(dtype)
    size = rows * n
    for value in draw(st.lists(st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, "tie"]), max_size=4)):
        flat = a.reshape(-1)
        i = draw(st.integers(0, size - 1))
        flat[i] = flat[draw(st.integers(0, size - 1))] if value == "tie" else value
    return a


@FAST
@given(float_rows(), st.booleans())
def test_argmax_argmin_float_rows(threads, a, keepdims):
    for fn_np, fn in ((np.argmax, mnp.argmax), (np.argmin, mnp.argmin)):
        for axis in (None, -1, 0):
            assert_same(fn(a, axis=axis, keepdims=keepdims), fn_np(a, axis=axis, keepdims=keepdims))


@FAST
@given(st.sampled_from(INT_DTYPES), LENGTHS, st.integers(1, 3), st.integers(0, 2**32 - 1), st.booleans())
def test_argmax_argmin_integer_rows(threads, dtype, n, rows, seed, narrow):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype) if dtype != "bool" else None
    if dtype == "bool":
        a = rng.random((rows, n)) < (0.001 if narrow else 0.5)
    else:
        lo, hi = (-3, 4) if narrow else (info.min, info.max)
        a = rng.integers(max(lo, info.min), min(hi, info.max), size=(rows, n), endpoint=True).astype(dtype)
    for fn_np, fn in ((np.argmax, mnp.argmax), (np.argmin, mnp.argmin)):
        for axis in (None, -1):
            assert_same(fn(a, axis=axis), fn_np(a, axis=axis))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
@pytest.mark.parametrize("cols", [300, 1000, 2053])
def test_axis0_reductions_split_columns_over_threads(threads, dtype, cols):
    # One [R, cols] slice: at 2 threads its columns are cut into tiles of at least 256.
    rng = np.random.default_rng(cols)
    a = (rng.standard_normal((700, cols)) * 100).astype(dtype)
    if dtype.startswith("float"):
        a[3, 17] = np.nan
    for name in ("sum", "max", "min", "argmax", "any", "all") if dtype == "bool" else ("sum", "max", "min", "argmax"):
        expected = getattr(np, name)(a, axis=0)
        ours = getattr(mnp, name)(a, axis=0)
        if name == "sum" and dtype.startswith("float"):
            np.testing.assert_allclose(np.asarray(ours), expected, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-2)
        else:
            assert_same(ours, expected)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_argmax_long_row_split_over_threads(threads, dtype):
    # One row of 300k elements goes to the threaded chunked path at 2 threads.
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(300_000) * 100).astype(dtype)
    a[[10, 150_000, 299_999]] = a.max()  # ties in different chunks: the first wins
    for fn_np, fn in ((np.argmax, mnp.argmax), (np.argmin, mnp.argmin)):
        assert_same(fn(a), fn_np(a))
    if dtype != "int32":
        b = a.copy()
        b[[200_000, 250_000]] = np.nan
        assert_same(mnp.argmax(b), np.argmax(b))
        assert_same(mnp.argmin(b), np.argmin(b))
        c = a.copy()
        c[::1000] = np.inf
        c[1::1000] = -np.inf  # inf - inf in the NaN probe: the exact scan must still be right
        assert_same(mnp.argmax(c), np.argmax(c))
        assert_same(mnp.argmin(c), np.argmin(c))


def test_argmax_sorted_and_constant_rows():
    # Ascending rows beat the best in every block (every block is searched); constant rows never do.
    a = np.arange(5000, dtype=np.float32).reshape(2, 2500)
    for x in (a, -a, np.ones_like(a), np.zeros((3, 777), np.float64)):
        assert_same(mnp.argmax(x, axis=1), np.argmax(x, axis=1))
        assert_same(mnp.argmin(x, axis=1), np.argmin(x, axis=1))


def _variance_tolerance(a, expected):
    data = a.astype(np.float64)
    spread = float(np.nanmax(np.abs(data))) if data.size and np.isfinite(data).any() else 1.0
    if expected.dtype == np.float16:
        return 5e-3, 1e-2 * (spread + 1)
    if expected.dtype == np.float32:
        return 1e-4, 1e-5 * (spread + 1)
    return 1e-9, 1e-12 * (spread + 1)


@st.composite
def variance_case(draw):
    dtype = draw(st.sampled_from(["float32", "float64", "float16", "int32", "int8", "bool"]))
    ndim = draw(st.integers(1, 3))
    sides = [draw(st.sampled_from([1, 2, 3, 7, 64, 300])) for _ in range(ndim)]
    if np.prod(sides) > 100_000:
        sides[0] = 1
    if draw(st.booleans()):
        sides[-1] = draw(LENGTHS)
        if np.prod(sides) > 200_000:
            sides = sides[-1:]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    offset = draw(st.sampled_from([0.0, 1e3])) if dtype in ("float32", "float64") else 0.0
    if dtype == "bool":
        a = rng.random(sides) < 0.5
    elif dtype in ("int32", "int8"):
        a = rng.integers(-100, 100, size=sides).astype(dtype)
    else:
        a = (rng.standard_normal(sides) * (1 if dtype == "float16" else 10) + offset).astype(dtype)
    if draw(st.booleans()) and a.ndim > 1:
        a = a[::-1, ...]  # a non-contiguous view
    ndim = a.ndim
    axes = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                          st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple)))
    return a, axes


@FAST
@given(variance_case(), st.sampled_from([0, 1, 2, 0.5]), st.booleans(), st.sampled_from([None, "float64", "float32"]))
def test_var_std_fused(threads, case, ddof, keepdims, dtype):
    a, axis = case
    for fn_np, fn in ((np.var, mnp.var), (np.std, mnp.std)):
        with np.errstate(all="ignore"), _ignore_warnings():
            expected = np.asarray(fn_np(a, axis=axis, ddof=ddof, keepdims=keepdims, dtype=dtype))
        rtol, atol = _variance_tolerance(a, expected)
        ours = np.asarray(fn(a, axis=axis, ddof=ddof, keepdims=keepdims, dtype=dtype))
        if dtype is not None and np.dtype(dtype) != a.dtype:
            # With no degrees of freedom left NumPy divides a sum of squares by zero, and that
            # sum is zero or not depending on how a mean rounded to `dtype` meets the unrounded
            # input: inf or NaN, both "undefined". Compare the defined entries only.
            undefined = ~np.isfinite(expected) & ~np.isfinite(ours)
            expected, ours = np.where(undefined, 0, expected), np.where(undefined, 0, ours)
        assert_same(ours, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_var_long_row_and_large_offset(threads, dtype):
    # 400k elements: the threaded chunk path; an offset of 1e4 over unit spread: a naive
    # sum-of-squares formula would lose every digit in float32.
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(400_000) + 1e4).astype(dtype)
    exact = np.var(a.astype(np.float64))
    assert_same(mnp.var(a), np.var(a), rtol=1e-4 if dtype == "float32" else 1e-10)
    assert abs(float(np.asarray(mnp.var(a))) - exact) <= (1e-5 if dtype == "float32" else 1e-12) * exact
    assert_same(mnp.std(a, ddof=1), np.std(a, ddof=1), rtol=1e-4 if dtype == "float32" else 1e-10)
    b = a.reshape(400, 1000)
    assert_same(mnp.std(b, axis=0), np.std(b, axis=0), rtol=1e-4 if dtype == "float32" else 1e-10)
    assert_same(mnp.var(b, axis=1, ddof=3), np.var(b, axis=1, ddof=3), rtol=1e-4 if dtype == "float32" else 1e-10)


def test_var_nan_inf_and_degenerate_counts():
    a = np.random.default_rng(6).standard_normal((4, 3000))
    a[0, 2999] = np.nan
    a[1, 5] = np.inf
    a[2, 7], a[2, 2000] = -np.inf, np.inf
    with np.errstate(all="ignore"), _ignore_warnings():
        for axis in (None, 0, 1):
            assert_same(mnp.var(a, axis=axis), np.var(a, axis=axis))
        for x, ddof in ((np.ones((3, 1)), 1), (np.ones((3, 1)), 2), (np.zeros((2, 0)), 0), (np.zeros((2, 0)), -1),
                        (np.arange(5.0), 4.5), (np.arange(5.0), -1)):
            assert_same(mnp.var(x, axis=-1, ddof=ddof), np.var(x, axis=-1, ddof=ddof))
            assert_same(mnp.std(x, ddof=ddof), np.std(x, ddof=ddof))


def test_var_ddof_errors_and_out():
    a = np.arange(12.0).reshape(3, 4)
    for bad in ("x", None):
        with pytest.raises(TypeError):
            np.var(a, ddof=bad)
        with pytest.raises(TypeError):
            np.asarray(mnp.var(a, ddof=bad))
    out = mnp.zeros(4) if hasattr(mnp, "zeros") else None
    if out is not None:
        got = mnp.std(a, axis=0, out=out)
        assert_same(got, np.std(a, axis=0))
        assert_same(out, np.std(a, axis=0))
