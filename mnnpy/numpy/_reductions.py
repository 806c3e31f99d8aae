"""Reductions and statistics with NumPy's signatures, dtypes and errors.

Sums, extremes and logical reductions are the core's Reduce op; cumulative sums and products
the CumScan op; median, percentile and quantile the Quantile op (selection, the input never
reordered); bincount and histogram the Bincount op. Functions whose result shape or errors
depend on values (histogram's range, bincount's length, nanargmin's all-NaN check, average's
zero weights, digitize's monotonicity) read those values when called, as NumPy does.
"""
import builtins as _builtins
import operator as _operator

import numpy as _np

from .. import _core
from .._core import Var
from ._common import asvar, as_dtype, normalize_axis, normalize_axes, store

__all__ = [
    "sum", "prod", "mean", "std", "var", "min", "max", "amin", "amax", "ptp", "argmin", "argmax",
    "cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "median", "percentile", "quantile", "average",
    "nansum", "nanprod", "nanmean", "nanstd", "nanvar", "nanmin", "nanmax", "nanargmin", "nanargmax",
    "nancumsum", "nancumprod", "nanmedian", "nanpercentile", "nanquantile", "count_nonzero", "all", "any",
    "histogram", "histogram_bin_edges", "bincount", "diff", "ediff1d", "gradient", "trapezoid", "trapz",
    "cov", "corrcoef", "digitize",
]

_NoValue = _np._NoValue
_F64 = _np.dtype(_np.float64)
_F32 = _np.dtype(_np.float32)
_F16 = _np.dtype(_np.float16)
_I64 = _np.dtype(_np.int64)
_U64 = _np.dtype(_np.uint64)
_BOOL = _np.dtype(_np.bool_)


# ---------------------------------------------------------------------------- helpers

def _cast(x, dtype):
    dtype = _np.dtype(dtype)
    return x if x.dtype == dtype else _core.cast(x, dtype)


def _const(value, dtype):
    return _core.const(_np.asarray(value, dtype=dtype), None, "NCHW")


def _full(shape, value, dtype):
    return _core.broadcast_to(_const(value, dtype), tuple(shape))


def _reshape(x, shape):
    shape = tuple(int(s) for s in shape)
    return x if tuple(x.shape) == shape else _core.reshape(x, list(shape))


def _is_float(dtype):
    return _np.dtype(dtype).kind == "f"


def _isnan(x):
    return _core.unary("IsNan", x)


def _reduced_shape(shape, axes, keepdims):
    return tuple(1 if i in axes else s for i, s in enumerate(shape) if keepdims or i not in axes)


def _where_mask(where, shape):
    """``where`` as a bool Var broadcast to ``shape`` (None when it is plain True)."""
    if where is True:
        return None
    w = _cast(asvar(where), _BOOL)
    broadcast = _np.broadcast_shapes(tuple(w.shape), tuple(shape))
    if broadcast != tuple(shape):
        raise ValueError(f"operands could not be broadcast together with shapes {tuple(shape)} {tuple(w.shape)}")
    return _core.broadcast_to(w, tuple(shape)) if tuple(w.shape) != tuple(shape) else w


def _default_sum_dtype(dtype):
    """NumPy's accumulator for sum/prod/cumsum: bool and signed integers widen to int64,
    unsigned ones to uint64."""
    dtype = _np.dtype(dtype)
    if dtype.kind == "u":
        return _U64
    return _I64 if dtype.kind in "bi" else dtype


def _scalar_value(v, what):
    if isinstance(v, Var):
        v = v.read()
    return v


# ---------------------------------------------------------------------------- sum / prod

def _sum_like(kind, a, axis, dtype, out, keepdims, initial, where):
    x = asvar(a)
    axes = normalize_axes(axis, x.ndim)
    dtype = as_dtype(dtype)
    target = _default_sum_dtype(x.dtype) if dtype is None else dtype
    if target.kind not in "biuf":
        raise TypeError(f"mnnpy.numpy does not support the dtype {target}")
    identity = 0 if kind == "sum" else 1
    mask = _where_mask(where, x.shape)
    if target == _BOOL:
        # NumPy's add (multiply) on bool is logical or (and).
        x = _cast(x, _BOOL)
        if mask is not None:
            x = _core.where(mask, x, _const(kind == "prod", _BOOL))
        r = _core.reduce("any" if kind == "sum" else "all", x, list(axes), bool(keepdims))
        if initial is not _NoValue:
            r = _core.binary("LogicalOr" if kind == "sum" else "LogicalAnd", r, _const(bool(initial), _BOOL))
        return store(r, out)
    if target.kind == "f" or (x.dtype.kind == "f" and target.kind in "iu"):
        x = _cast(x, target)
    if mask is not None:
        x = _core.where(mask, x, _const(identity, x.dtype))
    r = _core.reduce(kind, x, list(axes), bool(keepdims))
    if initial is not _NoValue:
        r = _core.binary("Add" if kind == "sum" else "Mul", r, _const(initial, r.dtype))
    return store(_cast(r, target), out)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """Sum of elements over the given axes."""
    return _sum_like("sum", a, axis, dtype, out, keepdims, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """Product of elements over the given axes."""
    return _sum_like("prod", a, axis, dtype, out, keepdims, initial, where)


# ---------------------------------------------------------------------------- mean / var / std

def _mean_dtypes(x_dtype, dtype):
    """(compute dtype, result dtype) of mean/var as NumPy picks them."""
    if dtype is not None:
        dtype = _np.dtype(dtype)
        if dtype == _np.float16:
            return _np.dtype(_np.float32), dtype
        return dtype, dtype
    x_dtype = _np.dtype(x_dtype)
    if x_dtype.kind in "biu":
        return _F64, _F64
    if x_dtype == _np.float16:
        return _np.dtype(_np.float32), x_dtype
    return x_dtype, x_dtype


def _count(x, axes, mask, keepdims, dtype):
    """Number of elements summed along ``axes`` (a Var when ``where`` masks some)."""
    if mask is None:
        n = 1
        for i in axes:
            n *= x.shape[i]
        return _const(n, dtype)
    return _core.reduce("sum", _cast(mask, dtype), list(axes), bool(keepdims))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """Arithmetic mean over the given axes (integers in float64)."""
    x = asvar(a)
    axes = normalize_axes(axis, x.ndim)
    compute, result = _mean_dtypes(x.dtype, dtype)
    mask = _where_mask(where, x.shape)
    x = _cast(x, compute)
    if mask is not None:
        x = _core.where(mask, x, _const(0, compute))
    total = _core.reduce("sum", x, list(axes), bool(keepdims))
    r = _core.binary("Div", total, _count(x, axes, mask, keepdims, compute))
    return store(_cast(r, result), out)


def _var(a, axis, dtype, out, ddof, keepdims, where, mean_value, correction, skip_nan, root):
    if correction is not _NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    if ddof is None or isinstance(ddof, (str, bytes)):
        raise TypeError(f"unsupported operand type(s) for -: 'int' and '{type(ddof).__name__}'")
    x = asvar(a)
    axes = normalize_axes(axis, x.ndim)
    compute, result = _mean_dtypes(x.dtype, dtype)
    mask = _where_mask(where, x.shape)
    x = _cast(x, compute)
    fused = (mask is None and mean_value is _NoValue and not skip_nan and compute in (_F32, _F64) and len(axes) > 0
             and isinstance(ddof, (int, float, _np.integer, _np.floating)) and not isinstance(ddof, bool))
    if fused:
        # One fused pass per cache block (the Variance op) over one contiguous run of axes;
        # scattered axes are first moved to the end (one copy).
        y, first = x, int(axes[0])
        if list(axes) != list(range(axes[0], axes[0] + len(axes))):
            kept = [i for i in range(x.ndim) if i not in axes]
            y, first = _core.transpose(x, kept + list(axes)), len(kept)
        attrs = {"first": first, "count": len(axes), "ddof": float(ddof), "root": int(bool(root))}
        r = _float16_variance(y, attrs) if result == _F16 else _core.op("Variance", [y], attrs)
        r = _reshape(r, _reduced_shape(x.shape, axes, keepdims))
        return store(_cast(r, result), out)
    if skip_nan and compute.kind == "f":
        valid = _core.unary("LogicalNot", _isnan(x))
        mask = valid if mask is None else _core.binary("LogicalAnd", mask, valid)
    zero = _const(0, compute)
    xm = x if mask is None else _core.where(mask, x, zero)
    n = _count(x, axes, mask, True, compute)
    if mean_value is not _NoValue:
        m = _cast(asvar(mean_value), compute)
    else:
        m = _core.binary("Div", _core.reduce("sum", xm, list(axes), True), n)
    dev = _core.binary("Sub", x, m)
    sq = _core.binary("Mul", dev, dev)
    if mask is not None:
        sq = _core.where(mask, sq, zero)
    total = _core.reduce("sum", sq, list(axes), True)
    if result == _F16:
        total = _float16_overflow(total)
    denom = _core.binary("Maximum", _core.binary("Sub", n, _const(ddof, compute)), zero)
    r = _core.binary("Div", total, denom)
    if root:
        r = _core.unary("Sqrt", r)
    r = _reshape(r, _reduced_shape(x.shape, axes, keepdims))
    return store(_cast(r, result), out)


def _float16_overflow(total):
    """A float32 sum of squared deviations as NumPy's float16 one: inf past float16's range."""
    big = _const(65520.0, total.dtype)  # the smallest value that rounds to inf in float16
    return _core.where(_core.binary("GreaterEqual", total, big), _const(_np.inf, total.dtype), total)


def _float16_variance(x, attrs):
    """Variance of float16 data computed in float32, overflowing as NumPy's: NumPy squares and
    sums float16 deviations in float16, so a sum of squares past float16's range is inf."""
    count = 1
    for i in range(attrs["first"], attrs["first"] + attrs["count"]):
        count *= x.shape[i]
    m2 = _float16_overflow(_core.binary("Mul", _core.op("Variance", [x], dict(attrs, ddof=0.0, root=0)),
                                        _const(count, _F32)))
    r = _core.binary("Div", m2, _const(_builtins.max(count - attrs["ddof"], 0.0), _F32))
    return _core.unary("Sqrt", r) if attrs["root"] else r


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
        correction=_NoValue):
    """Variance over the given axes, divided by ``N - ddof``."""
    return _var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, False, False)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
        correction=_NoValue):
    """Standard deviation over the given axes, ``sqrt(var)``."""
    return _var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, False, True)


# ---------------------------------------------------------------------------- min / max

_NUMPY_NAME = {"min": "minimum", "max": "maximum"}


def _extreme(kind, a, axis, out, keepdims, initial, where):
    x = asvar(a)
    axes = normalize_axes(axis, x.ndim)
    mask = _where_mask(where, x.shape)
    if mask is not None and initial is _NoValue:
        raise ValueError(f"reduction operation '{_NUMPY_NAME[kind]}' does not have an identity, so to use a "
                         "where mask one has to specify 'initial'")
    count = 1
    for i in axes:
        count *= x.shape[i]
    if initial is not _NoValue:
        init = _const(initial, x.dtype) if _np.dtype(x.dtype).kind != "b" else _const(bool(initial), _BOOL)
        if count == 0:
            return store(_full(_reduced_shape(x.shape, axes, keepdims), initial, x.dtype), out)
        if mask is not None:
            x = _core.where(mask, x, init)
        r = _core.reduce(kind, x, list(axes), bool(keepdims))
        # NaN in the data wins over the initial value, as NumPy's maximum/minimum.
        return store(_core.binary("Maximum" if kind == "max" else "Minimum", r, init), out)
    return store(_core.reduce(kind, x, list(axes), bool(keepdims)), out)


def max(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """Largest element over the given axes (a NaN wins)."""
    return _extreme("max", a, axis, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """Smallest element over the given axes (a NaN wins)."""
    return _extreme("min", a, axis, out, keepdims, initial, where)


amax = max
amin = min


def ptp(a, axis=None, out=None, keepdims=False):
    """Range (max - min) over the given axes, in the input's dtype."""
    x = asvar(a)
    if x.dtype == _BOOL:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, "
                        "the `^` operator, or the logical_xor function instead.")
    axes = normalize_axes(axis, x.ndim)
    hi = _core.reduce("max", x, list(axes), bool(keepdims))
    lo = _core.reduce("min", x, list(axes), bool(keepdims))
    return store(_cast(_core.binary("Sub", hi, lo), x.dtype), out)


def _arg(kind, a, axis, out, keepdims):
    x = asvar(a)
    if axis is None:
        r = _core.reduce(kind, x, None, False)
        if keepdims:
            r = _reshape(r, (1,) * x.ndim)
        return store(r, out)
    if x.ndim == 0:
        normalize_axis(axis, 1)
        return store(_core.reduce(kind, x, None, False), out)
    ax = normalize_axis(axis, x.ndim)
    if x.shape[ax] == 0:
        raise ValueError(f"attempt to get {kind} of an empty sequence")
    return store(_core.reduce(kind, x, [ax], bool(keepdims)), out)


def argmax(a, axis=None, out=None, *, keepdims=False):
    """Index of the first largest element (a NaN wins); the flat index when ``axis`` is None."""
    return _arg("argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the first smallest element (a NaN wins); the flat index when ``axis`` is None."""
    return _arg("argmin", a, axis, out, keepdims)


# ---------------------------------------------------------------------------- cumulative

def _scan_dtype(dtype):
    """The dtype CumScan runs in for a result dtype."""
    dtype = _np.dtype(dtype)
    if dtype.kind == "u":
        return _U64
    if dtype.kind in "bi":
        return _I64
    return _np.dtype(_np.float32) if dtype == _np.float16 else dtype


def _cumulative(kind, a, axis, dtype, out, skip_nan, include_initial=False):
    x = asvar(a)
    dtype = as_dtype(dtype)
    target = _default_sum_dtype(x.dtype) if dtype is None else dtype
    if target.kind not in "biuf":
        raise TypeError(f"mnnpy.numpy does not support the dtype {target}")
    if axis is None:
        x = _reshape(x, (x.size,))
        ax = 0
    elif x.ndim == 0:
        normalize_axis(axis, 1)
        x = _reshape(x, (1,))
        ax = 0
    else:
        ax = normalize_axis(axis, x.ndim)
    compute = _scan_dtype(target)
    if skip_nan and target.kind != "f":
        # NaNs become the identity before the cast to an integer type, as NumPy replaces them.
        x = _nan_replaced(x, 0 if kind == "sum" else 1)
    if target == _BOOL:
        # Accumulating bools: logical or (and), i.e. a running count (product) above zero.
        x = _cast(x, _BOOL)
    if target.kind == "f" or x.dtype.kind == "f":
        x = _cast(x, target)
    x = _cast(x, compute)
    if x.size == 0:
        r = x
    else:
        r = _core.op("CumScan", [x], {"kind": 0 if kind == "sum" else 1, "axis": ax,
                                       "skip_nan": int(bool(skip_nan))})
    if include_initial:
        pad = [[0, 0] for _ in range(r.ndim)]
        pad[ax][0] = 1
        r = _core.pad(r, pad, "constant", 0 if kind == "sum" else 1) if r.size else _full(
            tuple(1 if i == ax else s for i, s in enumerate(r.shape)), 0 if kind == "sum" else 1, compute)
    if target == _BOOL:
        r = _core.binary("NotEqual", r, _const(0, r.dtype))
    return store(_cast(r, target), out)


def cumsum(a, axis=None, dtype=None, out=None):
    """Running sum along ``axis`` (the flattened array when None)."""
    return _cumulative("sum", a, axis, dtype, out, False)


def cumprod(a, axis=None, dtype=None, out=None):
    """Running product along ``axis`` (the flattened array when None)."""
    return _cumulative("prod", a, axis, dtype, out, False)


def nancumsum(a, axis=None, dtype=None, out=None):
    """Running sum with NaNs counted as zero."""
    return _cumulative("sum", a, axis, dtype, out, True)


def nancumprod(a, axis=None, dtype=None, out=None):
    """Running product with NaNs counted as one."""
    return _cumulative("prod", a, axis, dtype, out, True)


def _cumulative_api(kind, x, axis, dtype, out, include_initial):
    v = asvar(x)
    if v.ndim == 0:  # NumPy reads a 0-d array as one of shape (1,)
        v = _reshape(v, (1,))
    if axis is None:
        if v.ndim > 1:
            raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
        axis = 0
    return _cumulative(kind, v, axis, dtype, out, False, include_initial)


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """Array API running sum (``include_initial`` prepends the zero)."""
    return _cumulative_api("sum", x, axis, dtype, out, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """Array API running product (``include_initial`` prepends the one)."""
    return _cumulative_api("prod", x, axis, dtype, out, include_initial)


# ---------------------------------------------------------------------------- quantiles

_QUANTILE_METHODS = {
    # name: (Quantile op method, alpha, beta)
    "linear": (0, 1.0, 1.0), "lower": (1, 1.0, 1.0), "higher": (2, 1.0, 1.0), "nearest": (3, 1.0, 1.0),
    "midpoint": (4, 1.0, 1.0), "interpolated_inverted_cdf": (0, 0.0, 1.0), "hazen": (0, 0.5, 0.5),
    "weibull": (0, 0.0, 0.0), "median_unbiased": (0, 1 / 3, 1 / 3), "normal_unbiased": (0, 3 / 8, 3 / 8),
}
_DISCONTINUOUS = {"inverted_cdf", "averaged_inverted_cdf", "closest_observation"}
_KEEPS_DTYPE = {"lower", "higher", "nearest"}
_MEDIAN = 5


def _moved_to_last(x, axis):
    """(x with the reduced axes merged into its last axis, the reduced axes)."""
    if axis is None:
        return _reshape(x, (x.size,)), tuple(range(x.ndim))
    axes = normalize_axes(axis, x.ndim)
    kept = [i for i in range(x.ndim) if i not in axes]
    if list(axes) != list(range(x.ndim - len(axes), x.ndim)):
        x = _core.transpose(x, kept + list(axes))
    rest = tuple(int(x.shape[i]) for i in range(len(kept)))
    n = 1
    for i in range(len(kept), x.ndim):
        n *= int(x.shape[i])
    return _reshape(x, rest + (n,)), axes


def _first_lane_all_nan(x, axis):
    """Whether the first 1-D slice NumPy's nan-quantiles take (the whole array when ``axis`` is
    None or ``x`` is 1-D) holds only NaNs."""
    if axis is None or x.ndim <= 1:
        lane = x
    elif isinstance(axis, (tuple, list)):
        return False
    else:
        flat, _ = _moved_to_last(x, axis)
        lane = _reshape(flat, (-1, flat.shape[-1]))[0]
    return bool(_core.reduce("all", _core.unary("IsNan", lane), None, False))


def _quantile(a, q, axis, out, method, keepdims, skip_nan, q_scale, what, weights=None, interpolation=None):
    if interpolation is not None:
        method = interpolation
    if weights is not None:
        raise NotImplementedError(f"{what}: weights are not supported by mnnpy.numpy")
    x = asvar(a)
    q_given = q
    q_arr = _np.asarray(_scalar_value(q, "q"))
    if q_arr.dtype.kind not in "biuf":
        raise TypeError(f"{what}: q must be real numbers, got {q_arr.dtype}")
    qf = q_arr.astype(_np.float64) / q_scale
    if not (_np.all(qf >= 0) and _np.all(qf <= 1)):
        if q_scale == 100:
            raise ValueError("Percentiles must be in the range [0, 100]")
        raise ValueError("Quantiles must be in the range [0, 1]")
    if method in _DISCONTINUOUS:
        raise NotImplementedError(f"{what}: method {method!r} is not supported by mnnpy.numpy")
    if method not in _QUANTILE_METHODS and method != _MEDIAN:
        raise ValueError(f"{method!r} is not a valid method. Use one of: "
                         f"{sorted(set(_QUANTILE_METHODS) | _DISCONTINUOUS)}")
    # Result dtype as NumPy's (a Python float q is weak).
    q_for_type = q_given if isinstance(q_given, (int, float)) and not isinstance(q_given, _np.generic) else q_arr
    if method in _KEEPS_DTYPE:
        result = _np.dtype(x.dtype)
    else:
        base = _F64 if _np.dtype(x.dtype).kind in "biu" else _np.dtype(x.dtype)
        if isinstance(q_for_type, (int, float)):
            result = base
        elif skip_nan and base.kind == "f" and x.size and _first_lane_all_nan(x, axis):
            # NumPy fills its result from the first 1-D slice's answer, and an all-NaN slice
            # answers NaNs of the input's dtype.
            result = base
        else:
            result = _np.result_type(base, q_arr.dtype)
    if result.kind not in "biuf":
        raise TypeError(f"{what}: unsupported dtype {result}")
    compute = _F64 if result.kind in "biu" or result == _F64 else _np.dtype(_np.float32)
    if method in _KEEPS_DTYPE and result.kind == "f":
        compute = _F64 if result == _F64 else _np.dtype(_np.float32)
    flat, axes = _moved_to_last(x, axis)
    rest = tuple(flat.shape[:-1])
    out_shape = q_arr.shape + (_reduced_shape(x.shape, axes, True) if keepdims else rest)
    flat = _cast(flat, compute)
    if flat.shape[-1] == 0:
        if _np.prod(rest, dtype=_np.int64) and method not in _KEEPS_DTYPE:
            r = _full(out_shape, _np.nan, compute)
            return store(_cast(r, result), out)
        if _np.prod(rest, dtype=_np.int64):
            raise IndexError("index -1 is out of bounds for axis 0 with size 0")
        return store(_full(out_shape, 0, result), out)
    if method == _MEDIAN:
        op_method, alpha, beta = _MEDIAN, 1.0, 1.0
    else:
        op_method, alpha, beta = _QUANTILE_METHODS[method]
    qv = _const(qf.reshape(-1), _F64)
    r = _core.op("Quantile", [flat, qv], {"axis": flat.ndim - 1, "method": op_method, "alpha": float(alpha),
                                          "beta": float(beta), "skip_nan": int(bool(skip_nan))})
    return store(_cast(_reshape(r, out_shape), result), out)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median over the given axes (NaN when the slice holds a NaN)."""
    x = asvar(a)
    dtype = _F64 if _np.dtype(x.dtype).kind in "biu" else x.dtype
    return _quantile(_cast(x, dtype), 0.5, axis, out, _MEDIAN, keepdims, False, 1, "median")


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median ignoring NaNs (NaN for an all-NaN slice)."""
    x = asvar(a)
    dtype = _F64 if _np.dtype(x.dtype).kind in "biu" else x.dtype
    return _quantile(_cast(x, dtype), 0.5, axis, out, _MEDIAN, keepdims, True, 1, "nanmedian")


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
               weights=None, interpolation=None):
    """The q-th percentiles (q in [0, 100]) over the given axes."""
    return _quantile(a, q, axis, out, method, keepdims, False, 100, "percentile", weights, interpolation)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             weights=None, interpolation=None):
    """The q-th quantiles (q in [0, 1]) over the given axes."""
    return _quantile(a, q, axis, out, method, keepdims, False, 1, "quantile", weights, interpolation)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                  weights=None, interpolation=None):
    """Percentiles ignoring NaNs."""
    return _quantile(a, q, axis, out, method, keepdims, True, 100, "nanpercentile", weights, interpolation)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                weights=None, interpolation=None):
    """Quantiles ignoring NaNs."""
    return _quantile(a, q, axis, out, method, keepdims, True, 1, "nanquantile", weights, interpolation)


# ---------------------------------------------------------------------------- average

def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted mean; with ``returned`` also the sum of the weights."""
    x = asvar(a)
    axes = normalize_axes(axis, x.ndim)
    if weights is None:
        avg = mean(x, axis=axis, keepdims=keepdims)
        n = 1
        for i in axes:
            n *= x.shape[i]
        scl = _full(tuple(avg.shape), n, avg.dtype)
    else:
        w = asvar(weights)
        if _np.dtype(x.dtype).kind in "biu":
            result = _np.result_type(x.dtype, w.dtype, "f8")
        else:
            result = _np.result_type(x.dtype, w.dtype)
        if tuple(x.shape) != tuple(w.shape):
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if w.shape != tuple(x.shape[i] for i in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            # Put the weights' axes where they are in a, the others of length one.
            order = _np.argsort(_np.argsort(axes)) if len(axes) > 1 else [0]
            w = _core.transpose(w, [int(i) for i in order]) if len(axes) > 1 else w
            w = _reshape(w, tuple(x.shape[i] if i in axes else 1 for i in range(x.ndim)))
            w = _core.broadcast_to(w, tuple(x.shape))
        compute = _np.dtype(_np.float32) if result == _np.float16 else result
        wc = _cast(w, compute)
        scl = _core.reduce("sum", wc, list(axes), bool(keepdims))
        if bool(_np.any(_np.asarray(scl.read()) == 0.0)):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        total = _core.reduce("sum", _core.binary("Mul", _cast(x, compute), wc), list(axes), bool(keepdims))
        avg = _cast(_core.binary("Div", total, scl), result)
        scl = _cast(scl, result)
    if returned:
        if tuple(scl.shape) != tuple(avg.shape):
            scl = _core.broadcast_to(scl, tuple(avg.shape))
        return avg, scl
    return avg


# ---------------------------------------------------------------------------- NaN-ignoring

def _nan_replaced(x, value):
    """x with NaNs replaced by ``value`` (x as it is for non-float dtypes)."""
    if not _is_float(x.dtype):
        return x
    return _core.where(_isnan(x), _const(value, x.dtype), x)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """Sum treating NaNs as zero."""
    return sum(_nan_replaced(asvar(a), 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """Product treating NaNs as one."""
    return prod(_nan_replaced(asvar(a), 1), axis, dtype, out, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """Mean of the non-NaN elements (NaN for an all-NaN slice)."""
    x = asvar(a)
    if not _is_float(x.dtype):
        return mean(x, axis, dtype, out, keepdims, where=where)
    valid = _core.unary("LogicalNot", _isnan(x))
    mask = _where_mask(where, x.shape)
    mask = valid if mask is None else _core.binary("LogicalAnd", mask, valid)
    return mean(x, axis, dtype, out, keepdims, where=mask)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
           correction=_NoValue):
    """Variance of the non-NaN elements."""
    return _var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, True, False)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
           correction=_NoValue):
    """Standard deviation of the non-NaN elements."""
    return _var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, True, True)


def _nan_extreme(kind, a, axis, out, keepdims, initial, where):
    x = asvar(a)
    if not _is_float(x.dtype):
        return _extreme(kind, x, axis, out, keepdims, initial, where)
    axes = normalize_axes(axis, x.ndim)
    nan = _isnan(x)
    fill = -_np.inf if kind == "max" else _np.inf
    r = _extreme(kind, _core.where(nan, _const(fill, x.dtype), x), axis, None, keepdims, initial, where)
    if initial is _NoValue:
        all_nan = _core.reduce("all", nan, list(axes), bool(keepdims))
        r = _core.where(all_nan, _const(_np.nan, x.dtype), r)
    return store(r, out)


def nanmax(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """Largest element ignoring NaNs (NaN for an all-NaN slice)."""
    return _nan_extreme("max", a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """Smallest element ignoring NaNs (NaN for an all-NaN slice)."""
    return _nan_extreme("min", a, axis, out, keepdims, initial, where)


def _nan_arg(kind, a, axis, out, keepdims):
    x = asvar(a)
    if _is_float(x.dtype) and x.size:
        nan = _isnan(x)
        all_nan = _core.reduce("all", nan, None if axis is None else [normalize_axis(axis, _builtins.max(x.ndim, 1))]
                               if x.ndim else None, False)
        if bool(_np.any(_np.asarray(all_nan.read()))):
            raise ValueError("All-NaN slice encountered")
        x = _core.where(nan, _const(_np.inf if kind == "argmin" else -_np.inf, x.dtype), x)
    return _arg(kind, x, axis, out, keepdims)


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """Index of the largest element ignoring NaNs (ValueError for an all-NaN slice)."""
    return _nan_arg("argmax", a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the smallest element ignoring NaNs (ValueError for an all-NaN slice)."""
    return _nan_arg("argmin", a, axis, out, keepdims)


# ---------------------------------------------------------------------------- logical / counting

def count_nonzero(a, axis=None, *, keepdims=False):
    """Number of non-zero elements over the given axes (int64)."""
    x = asvar(a)
    axes = normalize_axes(axis, x.ndim)
    nz = _cast(x, _BOOL)
    return _core.reduce("sum", _cast(nz, _I64), list(axes), bool(keepdims))


def _logical(kind, a, axis, out, keepdims, where):
    x = asvar(a)
    axes = normalize_axes(axis, x.ndim)
    b = _cast(x, _BOOL)
    mask = _where_mask(where, x.shape)
    if mask is not None:
        b = _core.where(mask, b, _const(kind == "all", _BOOL))
    return store(_core.reduce(kind, b, list(axes), bool(keepdims)), out)


def all(a, axis=None, out=None, keepdims=False, *, where=True):
    """Whether every element over the given axes is true."""
    return _logical("all", a, axis, out, keepdims, where)


def any(a, axis=None, out=None, keepdims=False, *, where=True):
    """Whether any element over the given axes is true."""
    return _logical("any", a, axis, out, keepdims, where)


# ---------------------------------------------------------------------------- bincount / histogram

def bincount(x, weights=None, minlength=0):
    """Occurrences of each non-negative integer in the 1-D ``x`` (or the sums of ``weights``)."""
    v = asvar(x)
    if v.ndim != 1:
        raise ValueError("object too deep for desired array" if v.ndim > 1 else "object of too small depth for "
                         "desired array")
    if _np.dtype(v.dtype).kind == "f":
        raise TypeError("Cannot cast array data from dtype('float64') to dtype('int64') according to the rule 'safe'")
    minlength = _operator.index(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    idx = _cast(v, _I64)
    if v.size == 0:
        return _full((minlength,), 0, _I64)
    length = minlength
    if v.size:
        lo = int(_np.asarray(_core.reduce("min", idx, None, False).read()))
        if lo < 0:
            raise ValueError("'list' argument must have no negative elements")
        length = _builtins.max(minlength, int(_np.asarray(_core.reduce("max", idx, None, False).read())) + 1)
    inputs = [idx]
    if weights is not None:
        w = _cast(asvar(weights), _F64)
        if tuple(w.shape) != tuple(v.shape):
            raise ValueError("The weights and list don't have the same length.")
        inputs.append(w)
    return _core.op("Bincount", inputs, {"length": int(length)})


def _range_of(x, range_):
    if range_ is not None:
        first, last = (float(e) for e in range_)
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (_np.isfinite(first) and _np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif x.size == 0:
        first, last = 0.0, 1.0
    else:
        first = _np.asarray(_core.reduce("min", x, None, False).read())
        last = _np.asarray(_core.reduce("max", x, None, False).read())
        if not (_np.isfinite(first) and _np.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _edges_dtype(x_dtype):
    return _np.dtype(x_dtype) if _np.dtype(x_dtype).kind == "f" else _F64


def _bin_edges(x, bins, range_, weights):
    """(edges as a NumPy array, number of equal bins or None, first, last)."""
    if isinstance(bins, str):
        raise NotImplementedError(f"histogram: bin estimator {bins!r} is not supported by mnnpy.numpy")
    b = _np.asarray(_scalar_value(bins, "bins"))
    if b.ndim == 0:
        try:
            n = _operator.index(bins if not isinstance(bins, Var) else int(b))
        except TypeError:
            raise TypeError("`bins` must be an integer, a string, or an array") from None
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        first, last = _range_of(x, range_)
        dtype = _edges_dtype(x.dtype)
        edges = _np.linspace(first, last, n + 1, endpoint=True, dtype=dtype)
        return edges, n, first, last
    if b.ndim != 1:
        raise ValueError("`bins` must be 1d, when an array")
    if _np.any(b[:-1] > b[1:]):
        raise ValueError("`bins` must increase monotonically, when an array")
    return b, None, None, None


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The bin edges ``histogram`` would use."""
    x = _reshape(asvar(a), (asvar(a).size,))
    edges, _, _, _ = _bin_edges(x, bins, range, weights)
    return _const(edges, edges.dtype)


def histogram(a, bins=10, range=None, density=None, weights=None):
    """(counts, bin edges); the last bin includes its right edge."""
    x = asvar(a)
    x = _reshape(x, (x.size,))
    edges, n_equal, first, last = _bin_edges(x, bins, range, weights)
    w = None
    if weights is not None:
        w = asvar(weights)
        if tuple(w.shape) != tuple(asvar(a).shape):
            raise ValueError("weights should have the same shape as a.")
        w = _cast(_reshape(w, (w.size,)), _F64)
    nbins = len(edges) - 1
    xf = _cast(x, _F64)
    if n_equal is not None:
        # Equal bins: the bin from the scaled position, corrected by one where rounding put a
        # value across an edge (as NumPy does); values outside the range go to a spill bin.
        e = _const(edges.astype(_F64), _F64)
        scaled = _core.binary("Mul", _core.binary("Sub", xf, _const(first, _F64)),
                              _const(n_equal / (last - first), _F64))
        idx = _cast(_core.unary("Floor", scaled), _I64)
        idx = _core.binary("Minimum", _core.binary("Maximum", idx, _const(0, _I64)), _const(n_equal - 1, _I64))
        below = _core.binary("Less", xf, _core.gather(e, idx, 0))
        idx = _core.binary("Sub", idx, _cast(below, _I64))
        above = _core.binary("LogicalAnd", _core.binary("GreaterEqual", xf,
                                                        _core.gather(e, _core.binary("Add", idx, _const(1, _I64)), 0)),
                             _core.binary("NotEqual", idx, _const(n_equal - 1, _I64)))
        idx = _core.binary("Add", idx, _cast(above, _I64))
        keep = _core.binary("LogicalAnd", _core.binary("GreaterEqual", xf, _const(edges[0], _F64)),
                            _core.binary("LessEqual", xf, _const(edges[-1], _F64)))
    else:
        e = _const(edges.astype(_F64), _F64)
        pos = _core.op("SearchSorted", [e, xf], {"right": 1})
        # The last edge belongs to the last bin.
        at_last = _core.binary("Equal", xf, _const(float(edges[-1]), _F64))
        idx = _core.binary("Sub", _core.binary("Sub", pos, _const(1, _I64)), _cast(at_last, _I64))
        keep = _core.binary("LogicalAnd", _core.binary("GreaterEqual", idx, _const(0, _I64)),
                            _core.binary("Less", idx, _const(nbins, _I64)))
        keep = _core.binary("LogicalAnd", keep, _core.unary("LogicalNot", _isnan(xf)))
    idx = _core.where(keep, idx, _const(nbins, _I64))
    inputs = [idx] if w is None else [idx, w]
    counts = _core.op("Bincount", inputs, {"length": nbins + 1})
    counts = _core.slice(counts, [0], [nbins])
    if density:
        widths = _const(_np.diff(edges).astype(_F64), _F64)
        c = _cast(counts, _F64)
        counts = _core.binary("Div", _core.binary("Div", c, widths), _core.reduce("sum", c, None, False))
    elif w is not None:
        # NumPy sums weights in their own dtype (integers stay integers).
        counts = _cast(counts, _np.dtype(asvar(weights).dtype))
    return counts, _const(edges, edges.dtype)


def digitize(x, bins, right=False):
    """Index of the bin each value of ``x`` falls in (``bins`` increasing or decreasing)."""
    v = asvar(x)
    b = _np.asarray(_scalar_value(bins, "bins"))
    if b.ndim != 1:
        raise ValueError("object too deep for desired array" if b.ndim > 1 else "object of too small depth for "
                         "desired array")
    if _np.dtype(v.dtype).kind == "c" or b.dtype.kind == "c":
        raise TypeError("x may not be complex")
    increasing = b.size < 2 or bool(_np.all(b[:-1] <= b[1:]))
    decreasing = b.size >= 2 and bool(_np.all(b[:-1] >= b[1:]))
    if not (increasing or decreasing):
        raise ValueError("bins must be monotonically increasing or decreasing")
    common = _F64 if _np.dtype(v.dtype).kind == "f" or b.dtype.kind == "f" else _I64
    side_right = 0 if right else 1
    if increasing:
        sb = b.astype(common)
        r = _core.op("SearchSorted", [_const(sb, common), _cast(v, common)], {"right": side_right})
        return r
    sb = b[::-1].astype(common)
    r = _core.op("SearchSorted", [_const(sb, common), _cast(v, common)], {"right": side_right})
    return _core.binary("Sub", _const(len(b), _I64), r)


# ---------------------------------------------------------------------------- differences / integrals

def _slice_axis(x, axis, start, stop):
    begins = [0] * x.ndim
    ends = list(x.shape)
    begins[axis] = start
    ends[axis] = stop
    return _core.slice(x, begins, [e - b for b, e in zip(begins, ends)])


def _sub(a, b):
    if a.dtype == _BOOL:
        return _core.binary("NotEqual", a, b)
    return _core.binary("Sub", a, b)


def diff(a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
    """n-th discrete difference along ``axis``."""
    if n == 0:
        return asvar(a)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    x = asvar(a)
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = normalize_axis(axis, x.ndim)
    parts = []
    for extra in (prepend, append):
        if extra is _NoValue:
            parts.append(None)
            continue
        e = asvar(extra)
        if e.ndim == 0:
            shape = list(x.shape)
            shape[ax] = 1
            e = _core.broadcast_to(e, tuple(shape))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        seq = [p for p in (parts[0], x, parts[1]) if p is not None]
        dt = seq[0].dtype
        for p in seq[1:]:
            dt = _np.result_type(dt, p.dtype)
        x = _core.concat([_cast(p, dt) for p in seq], ax)
    for _ in range(n):
        length = x.shape[ax]
        if length <= 1:
            shape = list(x.shape)
            shape[ax] = 0
            return _full(tuple(shape), 0, x.dtype)
        x = _sub(_slice_axis(x, ax, 1, length), _slice_axis(x, ax, 0, length - 1))
    return x


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened array, with optional ends."""
    x = asvar(ary)
    x = _reshape(x, (x.size,))
    if x.dtype == _BOOL:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported")
    d = _core.binary("Sub", _slice_axis(x, 0, 1, x.size), _slice_axis(x, 0, 0, x.size - 1)) if x.size > 1 else \
        _full((0,), 0, x.dtype)
    seq = []
    for extra, is_data in ((to_begin, False), (None, True), (to_end, False)):
        if is_data:
            seq.append(d)
        elif extra is not None:
            e = asvar(extra)
            if _np.dtype(e.dtype).kind == "f" and _np.dtype(x.dtype).kind in "iu":
                raise TypeError("dtype of `to_begin` must be compatible with input `ary` under the `same_kind` rule.")
            seq.append(_cast(_reshape(e, (e.size,)), x.dtype))
    return seq[0] if len(seq) == 1 else _core.concat(seq, 0)


def gradient(f, *varargs, axis=None, edge_order=1):
    """Gradient by central differences inside and one-sided differences at the ends."""
    x = asvar(f)
    nd = x.ndim
    axes = tuple(range(nd)) if axis is None else normalize_axes(axis, nd)
    if not axes and nd == 0:
        raise ValueError("Shape of array too small to calculate a numerical gradient, "
                         "at least (edge_order + 1) elements are required.")
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    n_args = len(varargs)
    if n_args == 0:
        spacings = [1.0] * len(axes)
    elif n_args == 1 and _np.ndim(_scalar_value(varargs[0], "spacing")) == 0:
        spacings = [float(_np.asarray(_scalar_value(varargs[0], "spacing")))] * len(axes)
    elif n_args == len(axes):
        spacings = []
        for i, s in enumerate(varargs):
            s = _np.asarray(_scalar_value(s, "spacing"))
            if s.ndim == 0:
                spacings.append(float(s))
            else:
                raise NotImplementedError("gradient: coordinate arrays are not supported by mnnpy.numpy")
    else:
        raise TypeError("invalid number of arguments")
    dtype = _np.dtype(x.dtype)
    out_dtype = dtype if dtype.kind == "f" else _F64
    compute = _np.dtype(_np.float32) if out_dtype == _np.float16 else out_dtype
    xc = _cast(x, compute)
    results = []
    for ax, h in zip(axes, spacings):
        length = x.shape[ax]
        if length < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")
        inner = _core.binary("Div", _core.binary("Sub", _slice_axis(xc, ax, 2, length), _slice_axis(xc, ax, 0, length - 2)),
                             _const(2.0 * h, compute)) if length > 2 else None
        if edge_order == 1:
            first = _core.binary("Div", _core.binary("Sub", _slice_axis(xc, ax, 1, 2), _slice_axis(xc, ax, 0, 1)),
                                 _const(h, compute))
            last = _core.binary("Div", _core.binary("Sub", _slice_axis(xc, ax, length - 1, length),
                                                    _slice_axis(xc, ax, length - 2, length - 1)), _const(h, compute))
        else:
            def comb(i0, i1, i2, c0, c1, c2):
                t = _core.binary("Add", _core.binary("Mul", _slice_axis(xc, ax, i0, i0 + 1), _const(c0, compute)),
                                 _core.binary("Mul", _slice_axis(xc, ax, i1, i1 + 1), _const(c1, compute)))
                t = _core.binary("Add", t, _core.binary("Mul", _slice_axis(xc, ax, i2, i2 + 1), _const(c2, compute)))
                return _core.binary("Div", t, _const(h, compute))
            first = comb(0, 1, 2, -1.5, 2.0, -0.5)
            last = comb(length - 3, length - 2, length - 1, 0.5, -2.0, 1.5)
        parts = [first] + ([inner] if inner is not None else []) + [last]
        results.append(_cast(_core.concat(parts, ax), out_dtype))
    if len(results) == 1:
        return results[0]
    return tuple(results)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule."""
    v = asvar(y)
    ax = normalize_axis(axis, v.ndim)
    length = v.shape[ax]
    dtype = _np.dtype(v.dtype)
    result = dtype if dtype.kind == "f" else _F64
    if x is not None:
        xv = asvar(x)
        result = _np.result_type(result, xv.dtype if _np.dtype(xv.dtype).kind == "f" else _F64)
    compute = _np.dtype(_np.float32) if result == _np.float16 else result
    if length < 2:
        shape = tuple(s for i, s in enumerate(v.shape) if i != ax)
        return _full(shape, 0, result)
    # Neighbours are added in y's own dtype (integers wrap) before scaling, as NumPy does.
    pair = _core.binary("LogicalOr" if dtype == _BOOL else "Add", _slice_axis(v, ax, 1, length),
                        _slice_axis(v, ax, 0, length - 1))
    pair = _cast(pair, compute)
    if x is None:
        d = _const(dx, compute)
    else:
        xv = _cast(asvar(x), compute)
        if xv.ndim == 1:
            d = _core.binary("Sub", _slice_axis(xv, 0, 1, length), _slice_axis(xv, 0, 0, length - 1))
            shape = [1] * v.ndim
            shape[ax] = length - 1
            d = _reshape(d, shape)
        else:
            axx = normalize_axis(axis, xv.ndim)
            d = _core.binary("Sub", _slice_axis(xv, axx, 1, xv.shape[axx]),
                             _slice_axis(xv, axx, 0, xv.shape[axx] - 1))
    total = _core.reduce("sum", _core.binary("Mul", pair, d), [ax], False)
    return _cast(_core.binary("Mul", total, _const(0.5, compute)), result)


def trapz(y, x=None, dx=1.0, axis=-1):
    """Alias of ``trapezoid`` (MNN's name)."""
    return trapezoid(y, x, dx, axis)


# ---------------------------------------------------------------------------- cov / corrcoef

def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """Covariance matrix of the variables in the rows (``rowvar``) or columns of ``m``."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov: fweights and aweights are not supported by mnnpy.numpy")
    x = asvar(m)
    if x.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    base = _np.result_type(x.dtype, _F64) if dtype is None else _np.dtype(dtype)
    if y is not None:
        yv = asvar(y)
        if yv.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
        if dtype is None:
            base = _np.result_type(base, yv.dtype)
    compute = _np.dtype(_np.float32) if base == _np.float16 else base
    x = _cast(x, compute)
    transpose = not rowvar and x.ndim != 1
    x = _reshape(x, (1, x.size)) if x.ndim < 2 else x
    if transpose:
        x = _core.transpose(x, [1, 0])
    if y is not None:
        yv = _cast(yv, compute)
        yv = _reshape(yv, (1, yv.size)) if yv.ndim < 2 else yv
        if not rowvar and yv.shape[0] != 1:
            yv = _core.transpose(yv, [1, 0])
        if x.shape[1] != yv.shape[1]:
            raise ValueError("all the input array dimensions except for the concatenation axis must match exactly")
        x = _core.concat([x, yv], 0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1]
    fact = _builtins.max(n - ddof, 0)
    avg = _core.reduce("mean", x, [1], True)
    xc = _core.binary("Sub", x, avg)
    c = _core.matmul(xc, _core.transpose(xc, [1, 0]))
    c = _core.binary("Div", c, _const(fact, compute))
    c = _reshape(c, tuple(d for d in c.shape if d != 1))
    return _cast(c, base)


def corrcoef(x, y=None, rowvar=True, bias=_NoValue, ddof=_NoValue, *, dtype=None):
    """Pearson correlation coefficients (values clipped to [-1, 1])."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return _core.binary("Div", c, c)
    d = _core.gather_nd(c, _const(_np.stack([_np.arange(c.shape[0])] * 2, axis=1), _I64))
    s = _core.unary("Sqrt", d)
    c = _core.binary("Div", c, _reshape(s, (c.shape[0], 1)))
    c = _core.binary("Div", c, _reshape(s, (1, c.shape[0])))
    one = _const(1, c.dtype)
    return _core.binary("Maximum", _core.binary("Minimum", c, one), _core.unary("Neg", one))
