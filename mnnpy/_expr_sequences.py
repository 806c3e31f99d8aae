"""MNN's expr functions over whole arrays that mnnpy.numpy computes, with MNN's names, argument
orders and defaults: ``zeros_like(x)``, ``fill(shape, value)``, ``range(start, limit, delta)``,
``cumsum(x, axis=0)``, ``cumprod(x, axis=0)``, ``sort(x, axis=-1, arg=False, descend=False)``,
``where(x)``, ``setdiff1d(x, y)`` and ``unravel_index(indices, shape)``; and ``Var.read_as_tuple()``.

Python scalars take MNN's types (int -> int32, float -> float32); cumulative results keep the
input's dtype, as MNN's do. ``where(x)`` is MNN's: the int32 indices ``[n, x.ndim]`` of the
elements greater than zero (NumPy's ``argwhere`` takes the nonzero ones). ``sort`` with
``descend=True`` orders equal values by index, as ``torch.sort(descending=True, stable=True)``.
``setdiff1d`` is MNN's too: the elements of ``x`` not in ``y``, in ``x``'s order with repeats
(NumPy's sorts and removes repeats). ``unravel_index`` gives one int32 Var ``[len(shape), n]``.
``range`` is served as ``expr.range`` without shadowing the builtin inside mnnpy.expr.
"""
import numpy as _np

from ._core import Var
from ._expr_shape import _ints
from .expr import _as_var

__all__ = ["zeros_like", "fill", "cumsum", "cumprod", "sort", "where", "setdiff1d", "unravel_index"]


def _mnp():
    from . import numpy as mnp  # mnnpy.numpy imports mnnpy.expr: import it at call time
    return mnp


def _mnn_dtype(value):
    """The dtype MNN gives a Python scalar (or a Var's own)."""
    if isinstance(value, Var):
        return value.dtype
    if isinstance(value, (bool, _np.bool_)):
        return _np.dtype(_np.bool_)
    if isinstance(value, (int, _np.integer)):
        return _np.dtype(_np.int32)
    if isinstance(value, (float, _np.floating)):
        return _np.dtype(_np.float32)
    raise TypeError(f"expected a number or a Var, got {type(value).__name__}")


def _number(value, what):
    if isinstance(value, Var):
        if value.size != 1:
            raise ValueError(f"{what} must be a single value, got a Var of shape {tuple(value.shape)}")
        return value.read().reshape(()).item()
    return value


def zeros_like(x):
    """Zeros of ``x``'s shape and dtype."""
    x = _as_var(x)
    return _mnp().zeros_like(x)


def fill(shape, value):
    """A Var of ``shape`` holding ``value`` everywhere."""
    dims = _ints(shape)
    if any(d < 0 for d in dims):
        raise ValueError(f"fill: negative dimension in shape {dims}")
    return _mnp().full(dims, _number(value, "fill's value"), dtype=_mnn_dtype(value))


def range(start, limit, delta):  # noqa: A001 (MNN's name; mnnpy.expr serves it without shadowing)
    """``start, start + delta, ...`` up to ``limit`` (excluded), as NumPy's arange: int32 when all
    three are integers, else float32."""
    values = [_number(v, name) for v, name in ((start, "start"), (limit, "limit"), (delta, "delta"))]
    if values[2] == 0:
        raise ValueError("range: delta must not be zero")
    dtypes = [_mnn_dtype(v) for v in (start, limit, delta)]
    dtype = _np.dtype(_np.int32) if all(d.kind in "iub" for d in dtypes) else _np.dtype(_np.float32)
    return _mnp().arange(*values, dtype=dtype)


def cumsum(x, axis=0):
    """Running sums along ``axis``, in ``x``'s dtype."""
    x = _as_var(x)
    return _mnp().cumsum(x, axis=axis, dtype=x.dtype)


def cumprod(x, axis=0):
    """Running products along ``axis``, in ``x``'s dtype."""
    x = _as_var(x)
    return _mnp().cumprod(x, axis=axis, dtype=x.dtype)


def sort(x, axis=-1, arg=False, descend=False):
    """``x`` sorted along ``axis`` (``arg``: the int32 indices that sort it), ascending unless
    ``descend``; equal values keep their order by index either way."""
    mnp = _mnp()
    x = _as_var(x)
    if not descend:
        return mnp.argsort(x, axis=axis, stable=True).astype(_np.int32) if arg else mnp.sort(x, axis=axis)
    # Stable descending: the ascending stable order of the reversed axis, reversed, counts equal
    # values from the highest index; mapping the indices back restores index order among them.
    n = x.shape[axis]
    order = (n - 1) - mnp.flip(mnp.argsort(mnp.flip(x, axis=axis), axis=axis, stable=True), axis=axis)
    return order.astype(_np.int32) if arg else mnp.take_along_axis(x, order, axis=axis)


def where(x):
    """The int32 indices ``[n, x.ndim]`` of the elements of ``x`` greater than zero, in C order."""
    mnp = _mnp()
    x = _as_var(x)
    return mnp.argwhere(mnp.greater(x, 0)).astype(_np.int32)


def setdiff1d(x, y):
    """The elements of ``x`` (flattened) that ``y`` does not hold, in ``x``'s order."""
    mnp = _mnp()
    x, y = mnp.ravel(_as_var(x)), _as_var(y)
    return x[mnp.logical_not(mnp.isin(x, y))]


def unravel_index(indices, shape):
    """The coordinates of flat ``indices`` in an array of ``shape``: int32 ``[len(shape), n]``."""
    mnp = _mnp()
    coords = mnp.unravel_index(mnp.ravel(_as_var(indices)), tuple(_ints(shape)))
    return mnp.stack(coords).astype(_np.int32)


def _read_as_tuple(self):
    """The values, flattened, as a tuple of Python numbers (MNN's ``Var.read_as_tuple``)."""
    return tuple(self.read().reshape(-1).tolist())


Var.read_as_tuple = _read_as_tuple
