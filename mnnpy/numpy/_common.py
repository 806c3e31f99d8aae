"""What every part of mnnpy.numpy shares: turning array-likes into Vars, axis checks, ``out=``.

Values follow NumPy 2: Python numbers are "weak" (they take the other operand's dtype), lists
and NumPy arrays keep NumPy's dtype. A function that in NumPy returns a scalar returns a 0-d
Var; ``float()``, ``int()``, ``item()`` and ``numpy.asarray`` read it.
"""
import operator as _operator

import numpy as _np

from .. import _core
from .._core import Var

AxisError = _np.exceptions.AxisError

# Element types the core computes in (NumPy's names).
SUPPORTED_DTYPES = tuple(_np.dtype(d) for d in
                         ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                          "float16", "float32", "float64"))


def is_var(x):
    return isinstance(x, Var)


def as_dtype(dtype):
    """A NumPy dtype from anything NumPy accepts as one (``None`` stays ``None``)."""
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype == "bfloat16":
        return dtype
    return _np.dtype(dtype)


def asvar(x, dtype=None):
    """``x`` as a Var: a Var as it is (cast when ``dtype`` differs), anything else through
    ``numpy.asarray`` (so lists, tuples and scalars get NumPy's dtypes)."""
    dtype = as_dtype(dtype)
    if isinstance(x, Var):
        return x if dtype is None or x.dtype == dtype else _core.cast(x, dtype)
    if isinstance(x, (list, tuple)) and any(isinstance(e, Var) for e in _flat_items(x)):
        return _stack_nested(x, dtype)
    a = _np.asarray(x, dtype=dtype)
    if a.dtype.kind in "OUSV":
        raise TypeError(f"mnnpy.numpy does not support arrays of dtype {a.dtype}")
    return _core.const(a, None, "NCHW")


def _flat_items(seq):
    for e in seq:
        if isinstance(e, (list, tuple)):
            yield from _flat_items(e)
        else:
            yield e


def _stack_nested(seq, dtype):
    parts = [asvar(e) if not isinstance(e, (list, tuple)) else _stack_nested(e, None) for e in seq]
    dt = parts[0].dtype
    for p in parts[1:]:
        dt = _core.promote_types(dt, p.dtype)
    if dtype is not None:
        dt = dtype
    parts = [p if p.dtype == dt else _core.cast(p, dt) for p in parts]
    return _core.stack(parts, 0)


def operand(x, partner=None):
    """An operand of an elementwise function: Vars and arrays as they are, Python numbers weak
    (taking ``partner``'s dtype, as NumPy 2 does)."""
    if isinstance(x, Var):
        return x
    if isinstance(x, (bool, int, float)) and not isinstance(x, _np.generic):
        return _core.scalar(x, partner if isinstance(partner, Var) else None)
    return asvar(x)


def normalize_axis(axis, ndim, argname="axis"):
    """``axis`` in [0, ndim) or AxisError as NumPy raises it."""
    try:
        axis = _operator.index(axis)
    except TypeError:
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer") from None
    if not -ndim <= axis < ndim:
        raise AxisError(axis, ndim)
    return axis % ndim if ndim else 0


def normalize_axes(axis, ndim, allow_duplicate=False):
    """A sorted tuple of axes from None (all), an int or a sequence; NumPy's errors."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
    else:
        axes = (normalize_axis(axis, ndim),)
    if not allow_duplicate and len(set(axes)) != len(axes):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(axes))


def ints(v, what="value"):
    """Python ints from an int, a sequence, an array or a Var (evaluated)."""
    if isinstance(v, Var):
        v = v.read()
    a = _np.asarray(v)
    if a.size and a.dtype.kind not in "iub":
        raise TypeError(f"{what} must be integers, got {a.dtype}")
    return [int(i) for i in a.reshape(-1)]


def store(result, out):
    """Finishes a function that takes ``out=``: ``out`` (a Var, or a 1-tuple of one) now refers
    to ``result`` cast to ``out``'s dtype, and is returned. Without ``out`` the result is."""
    if out is None:
        return result
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError("'out' tuple must have exactly one entry")
        out = out[0]
    if not isinstance(out, Var):
        raise TypeError(f"return arrays must be of mnnpy Var type, got {type(out).__name__}")
    if tuple(out.shape) != tuple(result.shape):
        broadcast = _np.broadcast_shapes(tuple(result.shape), tuple(out.shape))
        if broadcast != tuple(out.shape):
            raise ValueError(f"non-broadcastable output operand with shape {tuple(out.shape)} doesn't match "
                             f"the broadcast shape {broadcast}")
        result = _core.broadcast_to(result, tuple(out.shape))
    if result.dtype != out.dtype:
        result = _core.cast(result, out.dtype)
    _core.rebind(out, result)
    return out
