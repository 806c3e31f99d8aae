"""Array creation of mnnpy.numpy with NumPy's signatures, defaults (float64) and errors.

Constant-filled arrays are broadcasts of one value and ranges are computed by the Iota op, so
large ones cost nothing until they are used, and are then made by the executor.
"""
import math as _math
import operator as _operator

import numpy as _np

from .. import _core
from .._core import Var
from ._common import as_dtype, asvar

__all__ = [
    "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "asarray_chkfinite", "asfarray",
    "require", "copy", "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
    "arange", "linspace", "logspace", "geomspace", "eye", "identity", "tri", "tril", "triu", "meshgrid",
    "indices", "frombuffer", "fromiter", "fromfunction", "fromstring", "fromfile", "loadtxt",
]


def _shape_tuple(shape):
    if isinstance(shape, Var):
        shape = shape.read()
    if isinstance(shape, (int, _np.integer)):
        shape = (shape,)
    try:
        shape = tuple(_operator.index(d) for d in _np.asarray(shape).reshape(-1)) if not isinstance(shape, tuple) \
            else tuple(_operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"'{type(shape).__name__}' object cannot be interpreted as an integer") from None
    if any(d < 0 for d in shape):
        raise ValueError("negative dimensions are not allowed")
    return shape


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    """A Var holding ``object``'s values; ``copy=False`` raises if a cast is needed, ``copy=None``
    casts only where ``dtype`` asks for it, as NumPy."""
    dtype = as_dtype(dtype)
    if copy is False and dtype is not None and isinstance(object, _np.ndarray) and object.dtype != dtype:
        raise ValueError("Unable to avoid copy while creating an array as requested.")
    if isinstance(object, Var):
        v = object
        if dtype is not None and v.dtype != dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            v = _core.cast(v, dtype)
        elif copy:
            v = _core.unary("Identity", v)
    else:
        if copy is False and not isinstance(object, _np.ndarray):
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        v = asvar(object, dtype)
    if ndmin > v.ndim:
        v = _core.reshape(v, (1,) * (ndmin - v.ndim) + tuple(v.shape))
    return v


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    return array(a, dtype, copy=copy)


def asanyarray(a, dtype=None, order=None, *, like=None):
    return asarray(a, dtype)


def ascontiguousarray(a, dtype=None, *, like=None):
    v = asarray(a, dtype)
    return _core.reshape(v, (1,)) if v.ndim == 0 else v


def asfortranarray(a, dtype=None, *, like=None):
    """Memory order is the executor's business: the same values as ``asarray``."""
    return ascontiguousarray(a, dtype)


def asarray_chkfinite(a, dtype=None, order=None):
    v = asarray(a, dtype)
    if v.dtype.kind == "f" and not bool(_core.reduce("all", _core.unary("IsFinite", v), None, False)):
        raise ValueError("array must not contain infs or NaNs")
    return v


def asfarray(a, dtype=_np.float64):
    """``a`` as a floating array (float64 unless a float ``dtype`` is given)."""
    dtype = _np.dtype(dtype)
    return asarray(a, dtype if dtype.kind == "f" else _np.float64)


def require(a, dtype=None, requirements=None, *, like=None):
    return asarray(a, dtype)


def copy(a, order="K", subok=False):
    return array(a, copy=True)


def _fill(shape, value, dtype):
    shape = _shape_tuple(shape)
    dtype = as_dtype(dtype)
    if dtype is not None and dtype.kind in "OUSVc":
        raise TypeError(f"mnnpy.numpy does not support dtype {dtype}")
    value = _np.asarray(value.read() if isinstance(value, Var) else value, dtype=dtype)
    if value.ndim == 0:
        return _core.broadcast_to(_core.const(value, None, "NCHW"), shape)
    return _core.broadcast_to(_core.const(value, None, "NCHW"), shape)


def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    return _fill(shape, 0, _np.float64 if dtype is None else dtype)


def ones(shape, dtype=None, order="C", *, device=None, like=None):
    return _fill(shape, 1, _np.float64 if dtype is None else dtype)


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """Zeros: a lazy array has no uninitialized memory to show."""
    return zeros(shape, dtype)


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    if dtype is None:
        dtype = (fill_value.dtype if isinstance(fill_value, Var) else _np.asarray(fill_value).dtype)
    return _fill(shape, fill_value, dtype)


def _like(a, dtype, shape):
    ref = a if isinstance(a, Var) else _np.asarray(a)
    return (ref.dtype if dtype is None else dtype), (tuple(ref.shape) if shape is None else shape)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    dt, sh = _like(a, dtype, shape)
    return _fill(sh, 0, dt)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    dt, sh = _like(a, dtype, shape)
    return _fill(sh, 1, dt)


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return zeros_like(prototype, dtype, shape=shape)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    dt, sh = _like(a, dtype, shape)
    return _fill(sh, fill_value, dt)


def _iota(n):
    """0, 1, ..., n-1 as int64, made by the executor."""
    return _core.op("Iota", [], {"shape": [int(n)], "start": 0, "strides": [1]})


def _scalar_value(x, name):
    if isinstance(x, Var):
        x = x.item()
    if isinstance(x, (complex, _np.complexfloating)):
        raise TypeError(f"arange: complex {name} is not supported")
    return x


def arange(start_or_stop, /, stop=None, step=None, *, dtype=None, device=None, like=None, start=None):
    """Evenly spaced values in [start, stop), NumPy's length ``ceil((stop - start) / step)`` and
    dtype (int64 for integer arguments, float64 when any is a float)."""
    if stop is None:
        begin, end = 0, _scalar_value(start_or_stop, "stop")
    else:
        begin, end = _scalar_value(start_or_stop, "start"), _scalar_value(stop, "stop")
    step = 1 if step is None else _scalar_value(step, "step")
    if step == 0:
        raise ZeroDivisionError("division by zero")
    natural = _np.result_type(*(_np.asarray(v) if isinstance(v, _np.generic) else v for v in (begin, end, step)))
    if natural == _np.bool_:
        raise TypeError("arange() is only supported for booleans when the result has at most length 2.")
    dtype = natural if dtype is None else _np.dtype(dtype)
    length = max(0, _math.ceil((end - begin) / step))
    idx = _iota(length)
    if dtype == natural and natural.kind in "iu":
        first, delta = int(begin), int(step)
    else:
        # NumPy fills with first + i * delta, both taken from the first two values in the result
        # dtype (so arange(0, 4, 1.5, dtype=int) is 0, 1, 2).
        work = dtype if dtype != natural else _np.dtype(_np.float64)
        with _np.errstate(all="ignore"):
            first = work.type(begin)
            delta = work.type(_np.float64(begin) + _np.float64(step) if work.kind == "f" else begin + step) - first
        idx = _core.cast(idx, work)
    values = _core.binary("Add", _core.binary("Mul", idx, _core.const(_np.asarray(delta, idx.dtype), None, "NCHW")),
                          _core.const(_np.asarray(first, idx.dtype), None, "NCHW"))
    return values if values.dtype == dtype else _core.cast(values, dtype)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """``num`` evenly spaced samples over [start, stop] (or [start, stop)), computed as NumPy
    does: start + i * step, with the last sample exactly ``stop`` when ``endpoint``."""
    num = _operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start_v, stop_v = asvar(start), asvar(stop)
    work = _np.result_type(start_v.dtype, stop_v.dtype, _np.float64)
    start_v, stop_v = _core.cast(start_v, work), _core.cast(stop_v, work)
    div = (num - 1) if endpoint else num
    shape = _np.broadcast_shapes(tuple(start_v.shape), tuple(stop_v.shape))
    span = _core.binary("Sub", stop_v, start_v)
    i = _core.cast(_iota(num), work)
    i = _core.reshape(i, (num,) + (1,) * len(shape))
    if div > 0:
        step = _core.binary("Div", span, _core.scalar(float(div), span))
        y = _core.binary("Add", _core.binary("Mul", i, step), start_v)
    else:
        step = _core.binary("Mul", span, _core.scalar(float("nan"), span))
        y = _core.binary("Add", _core.binary("Mul", i, span), start_v)
    y = _core.broadcast_to(y, (num,) + shape)
    if endpoint and num > 1:
        y = _core.index_assign(y, num - 1, _core.broadcast_to(stop_v, shape))
    if axis != 0:
        from ._common import normalize_axis
        axis = normalize_axis(axis, y.ndim)
        perm = list(range(1, y.ndim))
        perm.insert(axis, 0)
        y = _core.transpose(y, perm)
    out_dtype = work if dtype is None else _np.dtype(dtype)
    if out_dtype.kind in "iu":
        y = _core.unary("Floor", y)
    y = y if y.dtype == out_dtype else _core.cast(y, out_dtype)
    if retstep:
        return y, (step.item() if step.ndim == 0 else step)
    return y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    exponents = linspace(start, stop, num, endpoint, axis=axis)
    base_v = asvar(base)
    if base_v.ndim:  # NumPy puts base's axes around the sample axis, like start's and stop's
        from ._common import normalize_axis
        at = normalize_axis(axis, base_v.ndim + 1)
        base_v = _core.reshape(base_v, tuple(base_v.shape[:at]) + (1,) + tuple(base_v.shape[at:]))
    y = _core.binary("Pow", base_v if base_v.dtype.kind == "f" else _core.cast(base_v, _np.float64), exponents)
    return y if dtype is None else _core.cast(y, _np.dtype(dtype))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Samples evenly spaced on a log scale, ends exact (NumPy's rule), sign of the ends kept."""
    start_a = _np.asarray(start.read() if isinstance(start, Var) else start, dtype=_np.float64)
    stop_a = _np.asarray(stop.read() if isinstance(stop, Var) else stop, dtype=_np.float64)
    if _np.any(start_a == 0) or _np.any(stop_a == 0):
        raise ValueError("Geometric sequence cannot include zero")
    sign = _np.where((start_a < 0) & (stop_a < 0), -1.0, 1.0)
    log_start, log_stop = _np.log10(start_a * sign), _np.log10(stop_a * sign)
    y = logspace(log_start, log_stop, num, endpoint, 10.0, axis=0)
    ends = [(0, start_a * sign)] + ([(num - 1, stop_a * sign)] if endpoint and num > 1 else [])
    for pos, value in ends:
        if num > 0:
            y = _core.index_assign(y, pos, _core.const(_np.asarray(value), None, "NCHW"))
    y = _core.binary("Mul", y, _core.const(sign, None, "NCHW"))
    if axis != 0:
        from ._common import normalize_axis
        axis = normalize_axis(axis, y.ndim)
        perm = list(range(1, y.ndim))
        perm.insert(axis, 0)
        y = _core.transpose(y, perm)
    return y if dtype is None else _core.cast(y, _np.dtype(dtype))


def _tri_mask(n, m, k):
    """bool [n, m]: column <= row + k."""
    rows = _core.reshape(_iota(n), (n, 1))
    cols = _core.reshape(_iota(m), (1, m))
    return _core.binary("LessEqual", cols, _core.binary("Add", rows, _core.scalar(int(k), rows)))


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    M = N if M is None else M
    N, M, k = _operator.index(N), _operator.index(M), _operator.index(k)
    if N < 0 or M < 0:
        raise ValueError("negative dimensions are not allowed")
    k = min(max(k, -N), M)  # any diagonal outside the matrix leaves it all zeros (k may exceed int64)
    rows = _core.reshape(_iota(N), (N, 1))
    cols = _core.reshape(_iota(M), (1, M))
    on = _core.binary("Equal", cols, _core.binary("Add", rows, _core.scalar(k, rows)))
    return _core.cast(on, _np.dtype(dtype))


def identity(n, dtype=None, *, like=None):
    return eye(n, dtype=_np.float64 if dtype is None else dtype)


def tri(N, M=None, k=0, dtype=float, *, like=None):
    M = N if M is None else M
    return _core.cast(_tri_mask(_operator.index(N), _operator.index(M), _operator.index(k)), _np.dtype(dtype))


def _triangle(m, k, lower):
    v = asvar(m)
    if v.ndim < 2:
        if v.ndim == 1:  # NumPy treats a 1-D input as a row repeated
            v = _core.broadcast_to(_core.reshape(v, (1, v.shape[0])), (v.shape[0], v.shape[0]))
        else:  # NumPy fails the same way, on unpacking the missing axes
            raise TypeError(f"{'tril' if lower else 'triu'}: input array must be at least 1-d")
    n, mm = v.shape[-2], v.shape[-1]
    keep = _tri_mask(n, mm, k) if lower else _core.unary("LogicalNot", _tri_mask(n, mm, k - 1))
    return _core.where(keep, v, _core.const(_np.zeros((), v.dtype), None, "NCHW"))


def tril(m, k=0):
    return _triangle(m, _operator.index(k), True)


def triu(m, k=0):
    return _triangle(m, _operator.index(k), False)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    vs = [_core.reshape(asvar(x), (-1,)) for x in xi]
    ndim = len(vs)
    out = []
    for i, v in enumerate(vs):
        shape = [1] * ndim
        shape[i] = v.shape[0]
        if indexing == "xy" and ndim > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        out.append(_core.reshape(v, tuple(shape)))
    if not sparse:
        full_shape = tuple(_np.broadcast_shapes(*(tuple(o.shape) for o in out)))
        out = [_core.broadcast_to(o, full_shape) for o in out]
    return tuple(out)


def indices(dimensions, dtype=int, sparse=False):
    dimensions = tuple(_operator.index(d) for d in dimensions)
    dtype = _np.dtype(dtype)
    grids = []
    for axis, n in enumerate(dimensions):
        shape = [1] * len(dimensions)
        shape[axis] = n
        g = _core.cast(_core.reshape(_iota(n), tuple(shape)), dtype)
        grids.append(g if sparse else _core.broadcast_to(g, dimensions))
    if sparse:
        return tuple(grids)
    if not grids:
        return _core.const(_np.zeros((0,), dtype), None, "NCHW")
    return _core.stack(grids, 0)


def frombuffer(buffer, dtype=float, count=-1, offset=0, *, like=None):
    return asvar(_np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromiter(iter, dtype, count=-1, *, like=None):
    return asvar(_np.fromiter(iter, dtype=dtype, count=count))


def fromstring(string, dtype=float, count=-1, *, sep, like=None):
    return asvar(_np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfile(file, dtype=float, count=-1, sep="", offset=0, *, like=None):
    return asvar(_np.fromfile(file, dtype=dtype, count=count, sep=sep, offset=offset))


def loadtxt(fname, dtype=float, comments="#", delimiter=None, converters=None, skiprows=0, usecols=None,
            unpack=False, ndmin=0, encoding=None, max_rows=None, *, quotechar=None, like=None):
    """Parses a text file (the parsing is NumPy's) into a Var."""
    a = _np.loadtxt(fname, dtype=dtype, comments=comments, delimiter=delimiter, converters=converters,
                    skiprows=skiprows, usecols=usecols, unpack=unpack, ndmin=ndmin, encoding=encoding,
                    max_rows=max_rows, quotechar=quotechar)
    return tuple(asvar(x) for x in a) if unpack else asvar(a)


def fromfunction(function, shape, *, dtype=float, like=None, **kwargs):
    """Calls ``function`` once with one coordinate array per axis (as NumPy does)."""
    return function(*indices(shape, dtype=dtype), **kwargs)
