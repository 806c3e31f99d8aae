"""mnnpy.numpy reductions and statistics against NumPy itself: values, dtypes, shapes, errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mnnpy.numpy as mnp
from helpers import assert_same
from numpy_strategies import DTYPES, FLOAT_DTYPES, NUMERIC_DTYPES, arrays, axis_for, nonempty_shapes, shapes

FAST = settings(max_examples=25, deadline=None)


def check(ours, expected, rtol=None, atol=0.0, check_dtype=True):
    expected = np.asarray(expected)
    assert_same(ours, expected, rtol=rtol, atol=atol, check_dtype=check_dtype)


def sum_tolerance(a, expected_dtype):
    """float16 sums: NumPy accumulates in float16 along strided axes and in float32 in
    contiguous runs; allow a few float16 ulps of the magnitude involved."""
    if np.dtype(expected_dtype) == np.float16:
        return 2e-3 * (float(np.abs(a.astype(np.float64)).sum()) + 1)
    return 1e-9 * (float(np.abs(a.astype(np.float64)).sum()) + 1) if np.dtype(expected_dtype).kind == "f" else 0.0


def raises_like(fn_ours, fn_numpy):
    """Both calls raise, and the same exception type."""
    with pytest.raises(Exception) as numpy_err:
        fn_numpy()
    with pytest.raises(numpy_err.type):
        np.asarray(fn_ours())


@st.composite
def array_and_axis(draw, dtypes=DTYPES, shape=shapes, allow_nan=False, allow_tuple=True, **kw):
    a = draw(arrays(dtypes=dtypes, shape=shape, allow_nan=allow_nan, **kw))
    return a, axis_for(draw, a.ndim, allow_tuple=allow_tuple)


# ------------------------------------------------------------------ sum / prod / mean

@FAST
@given(array_and_axis(), st.booleans())
def test_sum(case, keepdims):
    a, axis = case
    expected = np.sum(a, axis=axis, keepdims=keepdims)
    check(mnp.sum(a, axis=axis, keepdims=keepdims), expected, atol=sum_tolerance(a, expected.dtype))


@FAST
@given(array_and_axis(min_value=-3, max_value=3), st.booleans())
def test_prod(case, keepdims):
    a, axis = case
    expected = np.prod(a, axis=axis, keepdims=keepdims)
    check(mnp.prod(a, axis=axis, keepdims=keepdims), expected, rtol=1e-2 if expected.dtype == np.float16 else None)


@FAST
@given(array_and_axis(dtypes=NUMERIC_DTYPES), st.sampled_from([None, "int8", "int32", "float32", "float64", "bool"]))
def test_sum_dtype_and_initial(case, dtype):
    a, axis = case
    if a.dtype.kind == "f" and dtype in ("int8", "int32"):
        a = np.clip(a, -100, 100)  # float -> int casts out of range are undefined in NumPy
    expected = np.sum(a, axis=axis, dtype=dtype, initial=3)
    check(mnp.sum(a, axis=axis, dtype=dtype, initial=3), expected, atol=sum_tolerance(a, expected.dtype),
          rtol=1e-5 if expected.dtype == np.float32 else None)


@FAST
@given(arrays(dtypes=NUMERIC_DTYPES, shape=nonempty_shapes), st.data())
def test_sum_where_and_out(a, data):
    where = data.draw(arrays(dtype="bool", shape=a.shape[1:] if a.ndim else ()))
    expected = np.sum(a, axis=0 if a.ndim else None, where=where)
    out = mnp.zeros(expected.shape, expected.dtype) if hasattr(mnp, "zeros") else None
    got = mnp.sum(a, axis=0 if a.ndim else None, where=where, out=out)
    check(got, expected, atol=sum_tolerance(a, expected.dtype))
    if out is not None:
        check(out, expected, atol=sum_tolerance(a, expected.dtype))


def test_integer_sums_wrap_as_numpy():
    a = np.array([2**62, 2**62, 2**62], dtype=np.int64)
    check(mnp.sum(a), np.sum(a))
    check(mnp.prod(a), np.prod(a))
    b = np.array([100, 100, 100], dtype=np.int8)
    check(mnp.sum(b, dtype=np.int8), np.sum(b, dtype=np.int8))
    check(mnp.cumsum(b, dtype=np.int8), np.cumsum(b, dtype=np.int8))


def test_empty_sum_is_zero_and_float16_sum():
    check(mnp.sum(np.zeros((0, 3), np.float32), axis=0), np.sum(np.zeros((0, 3), np.float32), axis=0))
    check(mnp.sum(np.zeros(0, np.int8)), np.sum(np.zeros(0, np.int8)))
    a = (np.random.default_rng(1).random(10000) * 10).astype(np.float16)
    check(mnp.sum(a), np.sum(a), rtol=1e-3)


@FAST
@given(array_and_axis(), st.booleans())
def test_mean(case, keepdims):
    a, axis = case
    with np.errstate(all="ignore"), pytest.warns(None) if False else _quiet():
        expected = np.mean(a, axis=axis, keepdims=keepdims)
    check(mnp.mean(a, axis=axis, keepdims=keepdims), expected,
          atol=sum_tolerance(a, expected.dtype) / max(1, a.size) if expected.dtype == np.float16 else 1e-9)


class _quiet:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


@FAST
@given(array_and_axis(dtypes=NUMERIC_DTYPES), st.integers(0, 2), st.booleans(), st.booleans())
def test_var_std(case, ddof, keepdims, root):
    a, axis = case
    fn_np, fn = (np.std, mnp.std) if root else (np.var, mnp.var)
    with np.errstate(all="ignore"), _quiet():
        expected = fn_np(a, axis=axis, ddof=ddof, keepdims=keepdims)
    atol = 1e-2 * (float(np.abs(a.astype(np.float64)).max(initial=0)) + 1) if expected.dtype == np.float16 else 1e-6
    if expected.dtype == np.float32:
        atol = 1e-4 * (float(np.abs(a.astype(np.float64)).max(initial=0)) + 1)
    check(fn(a, axis=axis, ddof=ddof, keepdims=keepdims), expected,
          rtol=2e-3 if expected.dtype == np.float16 else 1e-5, atol=atol)


@FAST
@given(arrays(dtypes=FLOAT_DTYPES, shape=nonempty_shapes), st.data())
def test_mean_var_where(a, data):
    where = data.draw(arrays(dtype="bool", shape=a.shape))
    with np.errstate(all="ignore"), _quiet():
        check(mnp.mean(a, where=where), np.mean(a, where=where), rtol=1e-2 if a.dtype == np.float16 else 1e-5,
              atol=1e-2)
        if a.dtype != np.float16:  # NumPy's masked float16 variance overflows where ours does not
            check(mnp.var(a, where=where), np.var(a, where=where), rtol=1e-2, atol=1.0)


def test_var_errors():
    a = np.ones(3)
    raises_like(lambda: mnp.var(a, ddof=1, correction=1), lambda: np.var(a, ddof=1, correction=1))
    check(mnp.std(a, correction=1), np.std(a, correction=1))


# ------------------------------------------------------------------ min / max / arg

@FAST
@given(array_and_axis(shape=nonempty_shapes, allow_nan=True), st.booleans())
def test_min_max_ptp(case, keepdims):
    a, axis = case
    for fn_np, fn in ((np.max, mnp.max), (np.min, mnp.min), (np.amax, mnp.amax), (np.amin, mnp.amin)):
        check(fn(a, axis=axis, keepdims=keepdims), fn_np(a, axis=axis, keepdims=keepdims))
        check(fn(a, axis=axis, initial=5), fn_np(a, axis=axis, initial=5))
    if a.dtype != np.bool_:
        with np.errstate(all="ignore"):
            check(mnp.ptp(a, axis=axis, keepdims=keepdims), np.ptp(a, axis=axis, keepdims=keepdims))


def test_min_max_empty_and_where():
    e = np.zeros((0, 3), np.float32)
    raises_like(lambda: mnp.max(e), lambda: np.max(e))
    raises_like(lambda: mnp.min(e, axis=0), lambda: np.min(e, axis=0))
    check(mnp.max(e, initial=-1), np.max(e, initial=-1))
    check(mnp.max(e, axis=1), np.max(e, axis=1))
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    w = np.array([True, False, True])
    check(mnp.max(a, axis=1, where=w, initial=0), np.max(a, axis=1, where=w, initial=0))
    raises_like(lambda: mnp.max(a, where=w), lambda: np.max(a, where=w))
    raises_like(lambda: mnp.ptp(np.array([True])), lambda: np.ptp(np.array([True])))


@FAST
@given(array_and_axis(shape=nonempty_shapes, allow_nan=True, allow_tuple=False), st.booleans())
def test_argmin_argmax(case, keepdims):
    a, axis = case
    for fn_np, fn in ((np.argmax, mnp.argmax), (np.argmin, mnp.argmin)):
        check(fn(a, axis=axis, keepdims=keepdims), fn_np(a, axis=axis, keepdims=keepdims))


def test_arg_nan_first_wins_and_errors():
    a = np.array([1.0, np.nan, 5.0, np.nan, -1.0])
    check(mnp.argmax(a), np.argmax(a))
    check(mnp.argmin(a), np.argmin(a))
    check(mnp.max(a), np.max(a))
    raises_like(lambda: mnp.argmax(np.zeros(0)), lambda: np.argmax(np.zeros(0)))
    raises_like(lambda: mnp.argmax(np.zeros((2, 2)), axis=2), lambda: np.argmax(np.zeros((2, 2)), axis=2))
    raises_like(lambda: mnp.argmax(np.zeros((2, 2)), axis=(0, 1)), lambda: np.argmax(np.zeros((2, 2)), axis=(0, 1)))
    raises_like(lambda: mnp.sum(np.zeros((2, 2)), axis=(0, 0)), lambda: np.sum(np.zeros((2, 2)), axis=(0, 0)))
    raises_like(lambda: mnp.sum(np.zeros((2, 2)), axis=3), lambda: np.sum(np.zeros((2, 2)), axis=3))


# ------------------------------------------------------------------ cumulative

@FAST
@given(arrays(dtypes=DTYPES, min_value=-3, max_value=3), st.data())
def test_cumsum_cumprod(a, data):
    axis = data.draw(st.none() | (st.integers(-a.ndim, a.ndim - 1) if a.ndim else st.none()))
    for fn_np, fn in ((np.cumsum, mnp.cumsum), (np.cumprod, mnp.cumprod), (np.nancumsum, mnp.nancumsum),
                      (np.nancumprod, mnp.nancumprod)):
        expected = fn_np(a, axis=axis)
        tol = 2e-2 * (float(np.abs(a.astype(np.float64)).sum()) + 1) if expected.dtype == np.float16 else 0
        check(fn(a, axis=axis), expected, atol=tol, rtol=1e-2 if expected.dtype == np.float16 else 1e-5)


@FAST
@given(arrays(dtypes=FLOAT_DTYPES, allow_nan=True, shape=nonempty_shapes), st.sampled_from([None, "float64", "int32"]))
def test_nancumsum_and_dtype(a, dtype):
    with np.errstate(all="ignore"):
        expected = np.nancumsum(a, dtype=dtype)
    tol = 2e-2 * (float(np.nansum(np.abs(a.astype(np.float64)))) + 1)
    with np.errstate(all="ignore"):
        check(mnp.nancumsum(a, dtype=dtype), expected, atol=tol if expected.dtype.kind == "f" else 0, rtol=1e-2)


def test_cumsum_long_rows_threaded():
    import mnnpy
    rng = np.random.default_rng(0)
    a = rng.random(2_000_000)
    b = rng.integers(-5, 5, size=(3, 300_001))
    for n in (1, 2):
        mnnpy.set_num_threads(n) if hasattr(mnnpy, "set_num_threads") else None
        check(mnp.cumsum(a), np.cumsum(a), rtol=1e-9)
        check(mnp.cumsum(b, axis=1), np.cumsum(b, axis=1))
        check(mnp.cumsum(b, axis=0), np.cumsum(b, axis=0))
    check(mnp.cumulative_sum(b, axis=1, include_initial=True), np.cumulative_sum(b, axis=1, include_initial=True))
    check(mnp.cumulative_prod(np.arange(1, 6)), np.cumulative_prod(np.arange(1, 6)))


# ------------------------------------------------------------------ median / quantiles

METHODS = ["linear", "lower", "higher", "nearest", "midpoint", "hazen", "weibull", "median_unbiased",
           "normal_unbiased", "interpolated_inverted_cdf"]


@FAST
@given(array_and_axis(dtypes=NUMERIC_DTYPES, shape=nonempty_shapes, allow_nan=True), st.booleans())
def test_median(case, keepdims):
    a, axis = case
    with _quiet():
        check(mnp.median(a, axis=axis, keepdims=keepdims), np.median(a, axis=axis, keepdims=keepdims))
        check(mnp.nanmedian(a, axis=axis, keepdims=keepdims), np.nanmedian(a, axis=axis, keepdims=keepdims))


@FAST
@given(array_and_axis(dtypes=NUMERIC_DTYPES, shape=nonempty_shapes, allow_nan=True, min_value=-60, max_value=60),
       st.sampled_from(METHODS), st.one_of(st.floats(0, 1), st.lists(st.floats(0, 1), min_size=1, max_size=3)))
def test_quantile_percentile(case, method, q):
    a, axis = case
    # float16: NumPy interpolates in float16, mnnpy in float32 then rounds; near zero the
    # difference is a float16 ulp of the operands, not of the result.
    scale = float(np.nanmax(np.abs(a.astype(np.float64)), initial=0.0))

    def tolerances(expected):
        return {"rtol": 1e-5} if expected.dtype != np.float16 else {"atol": 2e-3 * (scale + 1)}

    with _quiet():
        expected = np.quantile(a, q, axis=axis, method=method)
        check(mnp.quantile(a, q, axis=axis, method=method), expected, **tolerances(expected))
        qp = np.multiply(q, 100).tolist() if isinstance(q, list) else q * 100
        expected = np.percentile(a, qp, axis=axis, method=method)
        check(mnp.percentile(a, qp, axis=axis, method=method), expected, **tolerances(expected))
        expected = np.nanquantile(a, q, axis=axis, method=method)
        check(mnp.nanquantile(a, q, axis=axis, method=method), expected, **tolerances(expected))
        expected = np.nanpercentile(a, qp, axis=axis, keepdims=True)
        check(mnp.nanpercentile(a, qp, axis=axis, keepdims=True), expected, **tolerances(expected))


def test_quantile_errors_and_empty():
    a = np.arange(5.0)
    raises_like(lambda: mnp.quantile(a, 1.5), lambda: np.quantile(a, 1.5))
    raises_like(lambda: mnp.percentile(a, -1), lambda: np.percentile(a, -1))
    raises_like(lambda: mnp.quantile(a, 0.5, method="nope"), lambda: np.quantile(a, 0.5, method="nope"))
    raises_like(lambda: mnp.median(np.zeros((2, 2)), axis=2), lambda: np.median(np.zeros((2, 2)), axis=2))
    with _quiet():
        check(mnp.median(np.zeros(0)), np.median(np.zeros(0)))
        check(mnp.median(np.zeros((0, 3)), axis=0), np.median(np.zeros((0, 3)), axis=0))
    big = np.random.default_rng(3).random((3, 100_001)).astype(np.float32)
    check(mnp.median(big, axis=1), np.median(big, axis=1))
    check(mnp.percentile(big, [5, 50, 95], axis=0), np.percentile(big, [5, 50, 95], axis=0), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_quantiles_long_rows(dtype):
    """Rows long enough to split their first pass across threads: duplicates, NaNs, infinities,
    odd and even counts, several q at once (far apart and neighbouring)."""
    import mnnpy
    rng = np.random.default_rng(5)
    normal = rng.standard_normal(300_001)
    dups = rng.integers(-20, 20, size=300_000).astype(np.float64)
    wide = normal * np.exp(rng.uniform(-30, 30, size=normal.size))
    with_nan = normal.copy()
    with_nan[rng.integers(0, normal.size, 999)] = np.nan
    with_inf = normal[:-1].copy()
    with_inf[rng.integers(0, with_inf.size, 50)] = np.inf
    with_inf[rng.integers(0, with_inf.size, 70)] = -np.inf
    rows = [normal, normal[:-1], dups, dups[:-1] + 0.5, wide, with_nan, with_nan[:-1], with_inf]
    q = [0.0, 0.01, 0.25, 0.5, 0.500001, 0.75, 0.999, 1.0]
    threads = mnnpy.get_num_threads()
    try:
        for n in (1, 2):
            mnnpy.set_num_threads(n)
            for row in rows:
                a = row.astype(dtype)
                with _quiet():
                    check(mnp.median(a), np.median(a))
                    check(mnp.nanmedian(a), np.nanmedian(a))
                    # (q = 0 or 1 with infinities: NumPy's interpolation gives inf - inf = NaN)
                    qs = q[1:-1] if np.isinf(row).any() else q
                    check(mnp.quantile(a, qs), np.quantile(a, qs), rtol=1e-6)
                    check(mnp.nanquantile(a, q, method="lower"), np.nanquantile(a, q, method="lower"))
                    check(mnp.nanpercentile(a, [10, 90], method="midpoint"),
                          np.nanpercentile(a, [10, 90], method="midpoint"), rtol=1e-6)
            b = np.stack([rows[0][:-1], rows[2], rows[6]]).astype(dtype)
            with _quiet():
                check(mnp.nanmedian(b, axis=1), np.nanmedian(b, axis=1))
                check(mnp.quantile(b, q, axis=1), np.quantile(b, q, axis=1), rtol=1e-6)
    finally:
        mnnpy.set_num_threads(threads)


# ------------------------------------------------------------------ average

@FAST
@given(array_and_axis(dtypes=NUMERIC_DTYPES, shape=nonempty_shapes, allow_tuple=False), st.data(), st.booleans())
def test_average(case, data, returned):
    a, axis = case
    if axis is None:
        w = data.draw(arrays(dtype="float64", shape=a.shape, min_value=0.5, max_value=2))
    else:
        w = data.draw(arrays(dtype="float64", shape=(a.shape[axis],), min_value=0.5, max_value=2))
    expected = np.average(a, axis=axis, weights=w, returned=returned)
    ours = mnp.average(a, axis=axis, weights=w, returned=returned)
    if returned:
        check(ours[0], expected[0], rtol=1e-5 if expected[0].dtype != np.float16 else 1e-2, atol=1e-6)
        check(ours[1], expected[1], rtol=1e-9)
    else:
        check(ours, expected, rtol=1e-5 if expected.dtype != np.float16 else 1e-2, atol=1e-6)
    with _quiet():
        check(mnp.average(a, axis=axis), np.average(a, axis=axis),
              rtol=1e-5 if np.average(a, axis=axis).dtype != np.float16 else 1e-2, atol=1e-6)


def test_average_errors():
    a = np.ones((2, 3))
    raises_like(lambda: mnp.average(a, weights=np.ones(3)), lambda: np.average(a, weights=np.ones(3)))
    raises_like(lambda: mnp.average(a, axis=1, weights=np.ones(2)), lambda: np.average(a, axis=1, weights=np.ones(2)))
    raises_like(lambda: mnp.average(a, axis=1, weights=np.zeros(3)), lambda: np.average(a, axis=1, weights=np.zeros(3)))


# ------------------------------------------------------------------ NaN-ignoring

@FAST
@given(array_and_axis(dtypes=NUMERIC_DTYPES, allow_nan=True), st.booleans())
def test_nan_reductions(case, keepdims):
    a, axis = case
    with np.errstate(all="ignore"), _quiet():
        for fn_np, fn in ((np.nansum, mnp.nansum), (np.nanmean, mnp.nanmean)):
            expected = fn_np(a, axis=axis, keepdims=keepdims)
            check(fn(a, axis=axis, keepdims=keepdims), expected, rtol=1e-2 if expected.dtype == np.float16 else 1e-5,
                  atol=sum_tolerance(np.nan_to_num(a), expected.dtype) + 1e-6)
        if a.size:
            expected = np.nanprod(np.clip(a, -2, 2), axis=axis)
            check(mnp.nanprod(np.clip(a, -2, 2), axis=axis), expected, rtol=1e-2 if expected.dtype == np.float16
                  else 1e-5)
        expected = np.nanvar(a, axis=axis, keepdims=keepdims)
        check(mnp.nanvar(a, axis=axis, keepdims=keepdims), expected, rtol=1e-4,
              atol=1e-2 * (float(np.nanmax(np.abs(a), initial=0)) ** 2 + 1) if expected.dtype != np.float64 else 1e-6)
        expected = np.nanstd(a, axis=axis, ddof=1)
        check(mnp.nanstd(a, axis=axis, ddof=1), expected, rtol=1e-4,
              atol=1e-2 * (float(np.nanmax(np.abs(a), initial=0)) + 1) if expected.dtype != np.float64 else 1e-6)


@FAST
@given(array_and_axis(shape=nonempty_shapes, dtypes=NUMERIC_DTYPES, allow_nan=True, allow_tuple=False))
def test_nanmin_nanmax_nanarg(case):
    a, axis = case
    with _quiet():
        check(mnp.nanmax(a, axis=axis), np.nanmax(a, axis=axis))
        check(mnp.nanmin(a, axis=axis, keepdims=True), np.nanmin(a, axis=axis, keepdims=True))
    for fn_np, fn in ((np.nanargmax, mnp.nanargmax), (np.nanargmin, mnp.nanargmin)):
        try:
            expected = fn_np(a, axis=axis)
        except ValueError:
            with pytest.raises(ValueError):
                np.asarray(fn(a, axis=axis))
            continue
        check(fn(a, axis=axis), expected)


# ------------------------------------------------------------------ logical / counting

@FAST
@given(array_and_axis(allow_nan=True), st.booleans())
def test_all_any_count_nonzero(case, keepdims):
    a, axis = case
    check(mnp.all(a, axis=axis, keepdims=keepdims), np.all(a, axis=axis, keepdims=keepdims))
    check(mnp.any(a, axis=axis, keepdims=keepdims), np.any(a, axis=axis, keepdims=keepdims))
    check(mnp.count_nonzero(a, axis=axis, keepdims=keepdims), np.count_nonzero(a, axis=axis, keepdims=keepdims))
    where = np.ones(a.shape[-1:], bool) if a.ndim else True
    if a.ndim:
        where[::2] = False
    check(mnp.any(a, axis=axis, where=where), np.any(a, axis=axis, where=where))
    check(mnp.all(a, axis=axis, where=where), np.all(a, axis=axis, where=where))


# ------------------------------------------------------------------ histogram / bincount / digitize

@FAST
@given(arrays(dtypes=NUMERIC_DTYPES, shape=shapes, min_value=-100, max_value=100), st.integers(1, 12),
       st.booleans(), st.booleans(), st.data())
def test_histogram(a, bins, density, use_range, data):
    range_ = (-50.0, 60.0) if use_range else None
    weights = data.draw(arrays(dtype="float64", shape=a.shape, min_value=0, max_value=3)) if data.draw(
        st.booleans()) else None
    with np.errstate(all="ignore"), _quiet():
        h, e = np.histogram(a, bins=bins, range=range_, density=density, weights=weights)
        ours_h, ours_e = mnp.histogram(a, bins=bins, range=range_, density=density, weights=weights)
    check(ours_e, e)
    check(ours_h, h, rtol=1e-9)
    check(mnp.histogram_bin_edges(a, bins=bins, range=range_), np.histogram_bin_edges(a, bins=bins, range=range_))
    edges = np.array([-60.0, -3.0, 0.0, 2.5, 40.0])
    h, _ = np.histogram(a, bins=edges, weights=weights)
    # NumPy sums weights into uneven bins by differences of a cumulative sum (rounding errors).
    check(mnp.histogram(a, bins=edges, weights=weights)[0], h, rtol=1e-9, atol=1e-12)


def test_histogram_errors():
    a = np.arange(5.0)
    raises_like(lambda: mnp.histogram(a, bins=0)[0], lambda: np.histogram(a, bins=0))
    raises_like(lambda: mnp.histogram(a, range=(3, 1))[0], lambda: np.histogram(a, range=(3, 1)))
    raises_like(lambda: mnp.histogram(a, bins=[3, 1, 2])[0], lambda: np.histogram(a, bins=[3, 1, 2]))
    raises_like(lambda: mnp.histogram(np.array([1.0, np.inf]))[0], lambda: np.histogram(np.array([1.0, np.inf])))


@FAST
@given(arrays(dtypes=["bool", "int8", "uint8", "int16", "int32", "int64"], shape=st.integers(0, 30).map(lambda n: (n,)),
              min_value=0, max_value=20), st.integers(0, 25), st.booleans())
def test_bincount(x, minlength, weighted):
    w = np.linspace(-1, 2, x.size) if weighted else None
    check(mnp.bincount(x, weights=w, minlength=minlength), np.bincount(x, weights=w, minlength=minlength))


def test_bincount_errors():
    raises_like(lambda: mnp.bincount(np.array([1, -1])), lambda: np.bincount(np.array([1, -1])))
    raises_like(lambda: mnp.bincount(np.ones((2, 2), int)), lambda: np.bincount(np.ones((2, 2), int)))
    raises_like(lambda: mnp.bincount(np.array([1.5])), lambda: np.bincount(np.array([1.5])))
    raises_like(lambda: mnp.bincount(np.array([1]), minlength=-1), lambda: np.bincount(np.array([1]), minlength=-1))


@FAST
@given(arrays(dtypes=NUMERIC_DTYPES, allow_nan=True), st.booleans(), st.booleans())
def test_digitize(x, right, decreasing):
    bins = np.array([-5.0, -1.0, 0.0, 0.0, 3.5, 100.0])
    if decreasing:
        bins = bins[::-1].copy()
    check(mnp.digitize(x, bins, right=right), np.digitize(x, bins, right=right))
    raises_like(lambda: mnp.digitize(x, np.array([1, 3, 2])), lambda: np.digitize(x, np.array([1, 3, 2])))


# ------------------------------------------------------------------ differences / integrals

@FAST
@given(arrays(dtypes=DTYPES, shape=nonempty_shapes.filter(lambda s: len(s) >= 1)), st.integers(0, 3), st.data())
def test_diff(a, n, data):
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    with np.errstate(all="ignore"):
        check(mnp.diff(a, n=n, axis=axis), np.diff(a, n=n, axis=axis))
        if a.dtype != np.bool_:
            check(mnp.diff(a, axis=axis, prepend=0, append=a.take([0], axis=axis)),
                  np.diff(a, axis=axis, prepend=0, append=a.take([0], axis=axis)))
            if a.dtype.kind != "u":  # NumPy refuses int64 ends for unsigned arrays
                check(mnp.ediff1d(a, to_begin=[1], to_end=2), np.ediff1d(a, to_begin=[1], to_end=2))
    raises_like(lambda: mnp.diff(a, n=-1), lambda: np.diff(a, n=-1))


@FAST
@given(arrays(dtypes=NUMERIC_DTYPES, shape=nonempty_shapes.filter(lambda s: len(s) >= 1 and min(s) >= 3)),
       st.sampled_from([1, 2]), st.floats(0.5, 3))
def test_gradient(a, edge_order, h):
    expected = np.gradient(a, h, edge_order=edge_order)
    ours = mnp.gradient(a, h, edge_order=edge_order)
    if a.ndim == 1:
        ours, expected = [ours], [expected]
    # float16: NumPy subtracts neighbours in float16, so its error is an ulp of the operands.
    half_atol = 4e-3 * (float(np.abs(a.astype(np.float64)).max(initial=0)) + 1) / min(h, 1.0)
    for o, e in zip(ours, expected):
        check(o, e, rtol=1e-2 if e.dtype == np.float16 else 1e-5, atol=1e-3 if e.dtype != np.float16 else half_atol)
    check(mnp.gradient(a, axis=0), np.gradient(a, axis=0), rtol=1e-2 if a.dtype == np.float16 else 1e-5,
          atol=half_atol if a.dtype == np.float16 else 1e-3)


def test_gradient_errors():
    raises_like(lambda: mnp.gradient(np.ones(2), edge_order=2), lambda: np.gradient(np.ones(2), edge_order=2))
    raises_like(lambda: mnp.gradient(np.ones(4), edge_order=3), lambda: np.gradient(np.ones(4), edge_order=3))


@FAST
@given(arrays(dtypes=NUMERIC_DTYPES, shape=nonempty_shapes.filter(lambda s: len(s) >= 1)), st.data(), st.booleans())
def test_trapezoid(a, data, with_x):
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    x = np.cumsum(np.arange(1, a.shape[axis] + 1, dtype=np.float64)) if with_x else None
    expected = np.trapezoid(a, x=x, axis=axis)
    # float16 operands: NumPy adds neighbours in float16 before widening; mnnpy widens first.
    tol = 2e-2 * (float(np.abs(a.astype(np.float64)).sum()) + 1) if np.float16 in (a.dtype, expected.dtype) else 1e-6
    check(mnp.trapezoid(a, x=x, axis=axis), expected, rtol=1e-5, atol=tol * (10 if with_x else 1))
    check(mnp.trapz(a, dx=0.5, axis=axis), np.trapezoid(a, dx=0.5, axis=axis), rtol=1e-5, atol=tol)


# ------------------------------------------------------------------ cov / corrcoef

@FAST
@given(arrays(dtypes=NUMERIC_DTYPES, shape=st.tuples(st.integers(1, 4), st.integers(2, 6)), min_value=-50,
              max_value=50), st.booleans(), st.booleans(), st.sampled_from([None, 0, 2]))
def test_cov_corrcoef(m, rowvar, bias, ddof):
    with np.errstate(all="ignore"), _quiet():
        expected = np.cov(m, rowvar=rowvar, bias=bias, ddof=ddof)
        check(mnp.cov(m, rowvar=rowvar, bias=bias, ddof=ddof), expected, rtol=1e-6, atol=1e-9)
        expected = np.corrcoef(m, rowvar=rowvar)
        check(mnp.corrcoef(m, rowvar=rowvar), expected, rtol=1e-6, atol=1e-9)
        y = m[::-1]
        try:
            expected = np.cov(m, y, rowvar=rowvar)
        except ValueError:
            raises_like(lambda: mnp.cov(m, y, rowvar=rowvar), lambda: np.cov(m, y, rowvar=rowvar))
            return
        check(mnp.cov(m, y, rowvar=rowvar), expected, rtol=1e-6, atol=1e-9)


def test_cov_errors():
    raises_like(lambda: mnp.cov(np.ones((2, 2, 2))), lambda: np.cov(np.ones((2, 2, 2))))
    raises_like(lambda: mnp.cov(np.ones((2, 2)), ddof=1.5), lambda: np.cov(np.ones((2, 2)), ddof=1.5))


# ------------------------------------------------------------------ Vars as inputs

def test_accepts_vars_and_lists():
    import mnnpy
    from mnnpy import _core
    v = _core.const(np.arange(12.0).reshape(3, 4), None, "NCHW")
    check(mnp.sum(v, axis=1), np.arange(12.0).reshape(3, 4).sum(axis=1))
    check(mnp.cumsum(mnp.sum(v, axis=0)), np.cumsum(np.arange(12.0).reshape(3, 4).sum(axis=0)))
    check(mnp.median([3, 1, 2]), np.median([3, 1, 2]))
    check(mnp.percentile(v, 30), np.percentile(np.arange(12.0), 30))
    assert mnnpy is not None
