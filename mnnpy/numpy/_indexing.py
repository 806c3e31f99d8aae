"""Indexing routines: take/put families, where/nonzero, choose/select, searchsorted, diagonals,
triangle indices and index conversions.

Functions whose result shape depends on values (nonzero, where with one argument, argwhere,
flatnonzero, compress, extract, tril/triu indices, boolean masks) evaluate those values when
called and return constant Vars.

In-place functions (put, place, putmask, put_along_axis, fill_diagonal) cannot write through
memory in a lazy graph: given a Var they rebind that Var object to the updated array (every
Python reference to the same Var sees it; Vars derived from it earlier keep the old value), and
return it. Given a writable NumPy array they compute the result and write it into that array.

Computed (non-constant) integer indices are not range checked: out-of-range positions read as
zeros and are skipped when writing. Constant indices raise IndexError as NumPy does.
"""
import builtins as _builtins

import numpy as _np

from .. import _core
from .._core import Var
from ._common import asvar, normalize_axis, operand, store
from ._manipulation import _arange, _cast, _gather, _iota, _result_dtype, resize

__all__ = [
    "take", "take_along_axis", "put_along_axis", "put", "place", "putmask", "where", "nonzero", "flatnonzero",
    "argwhere", "compress", "extract", "select", "choose", "searchsorted", "diag", "diagonal", "diagflat",
    "diag_indices", "diag_indices_from", "tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from",
    "mask_indices", "fill_diagonal", "ravel_multi_index", "unravel_index", "ix_",
]


# ---------------------------------------------------------------- helpers
def _flat(x):
    return _core.reshape(x, (x.size,))


def _i64(value):
    return _core.const(_np.asarray(value, _np.int64), None, "NCHW")


def _scalar_like(value, partner):
    return _core.scalar(value, partner)


def _index_var(indices, lenient=False):
    """Integer indices as a Var. Float or bool arrays raise TypeError; with ``lenient`` (take,
    put) Python lists of numbers convert as NumPy converts them (truncating, bool as 0/1)."""
    if lenient and isinstance(indices, (list, tuple, bool, float)):
        raw = _np.asarray(indices)
        if raw.dtype.kind in "fb":
            return asvar(raw.astype(_np.int64))
    v = asvar(indices)
    if v.dtype == _np.bool_ or v.dtype.kind not in "iu":
        if v.size == 0 and not isinstance(indices, (Var, _np.ndarray)):
            return _cast(v, _np.int64)
        raise TypeError(f"Cannot cast array data from {v.dtype!r} to dtype('int64') according to the rule 'safe'")
    return v


def _known(v):
    """The value of a constant Var, else None."""
    return v.read() if v.is_const else None


def _apply_mode(indices, n, mode, axis):
    """Indices as ``mode`` treats them: 'raise' (checked when known), 'wrap' or 'clip'."""
    if mode == "raise":
        known = _known(indices)
        if known is not None and known.size:
            bad = (known < -n) | (known >= n)
            if bad.any():
                raise IndexError(f"index {int(known[bad].reshape(-1)[0])} is out of bounds for axis {axis} "
                                 f"with size {n}")
        return indices
    if mode not in ("wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if n == 0:
        if indices.size:
            raise IndexError("cannot do a non-empty take from an empty axes.")
        return indices
    i = _cast(indices, _np.int64)
    if mode == "wrap":
        return _core.binary("Mod", i, _core.scalar(n, i))
    return _core.binary("Minimum", _core.binary("Maximum", i, _core.scalar(0, i)), _core.scalar(n - 1, i))


def _in_place(arr, result):
    """Finishes an in-place function: rebinds a Var, writes into a NumPy array; returns the result."""
    if isinstance(arr, Var):
        _core.rebind(arr, result)
        return arr
    if isinstance(arr, _np.ndarray):
        if not arr.flags.writeable:
            raise ValueError("assignment destination is read-only")
        _np.copyto(arr, result.numpy(), casting="unsafe")
        return result
    raise TypeError(f"argument 1 must be an mnnpy Var or a numpy.ndarray, not {type(arr).__name__}")


def _flat_positions(mask):
    """int64 positions of the nonzero elements of ``mask`` flattened (evaluated now)."""
    m = asvar(mask)
    if m.dtype != _np.bool_:
        m = _core.binary("NotEqual", m, _core.scalar(0, m))
    picked = _arange(m.size)[_flat(m)]
    # The index built the positions as a constant (the gather's indices): use them directly.
    if picked.op_type in ("Gather", "TakeElements") and picked.inputs[1].is_const and \
            picked.inputs[1].dtype == _np.int64 and picked.inputs[1].ndim == 1:
        return picked.inputs[1]
    return picked


# ---------------------------------------------------------------- take / put
def take(a, indices, axis=None, out=None, mode="raise"):
    a = asvar(a)
    if mode == "raise" and isinstance(indices, (_np.ndarray, list, tuple)):
        # Known values and a NumPy integer index: gathered now, reading the index in place.
        raw = indices if isinstance(indices, _np.ndarray) else _np.asarray(indices)
        taken = _core.take_now(a, raw, None if axis is None or a.ndim == 0 else normalize_axis(axis, a.ndim))
        if taken is not None:
            return store(taken, out)
    idx = _index_var(indices, lenient=True)
    if axis is None or a.ndim == 0:  # NumPy reads a 0-d array as 1-d here
        a = _flat(a)
        axis = 0 if axis is None else axis
    axis = normalize_axis(axis, a.ndim)
    out_shape = tuple(a.shape[:axis]) + tuple(idx.shape) + tuple(a.shape[axis + 1:])
    outer = int(_np.prod(a.shape[:axis], dtype=_np.int64))
    # As NumPy: no index is checked when no row is read (leading axes empty), and an empty axis
    # is an error for wrap/clip only when the result has elements.
    if (mode == "raise" and outer == 0) or (mode in ("wrap", "clip") and 0 in out_shape):
        return store(_core.const(_np.zeros(out_shape, a.dtype), None, "NCHW"), out)
    idx = _apply_mode(idx, a.shape[axis], mode, axis)
    return store(_gather(a, idx, axis), out)


def _along_axis_positions(arr_shape, indices, axis):
    """Flat positions in an array of ``arr_shape`` (broadcast against ``indices`` off ``axis``)
    for take/put_along_axis, and the shape they have."""
    n = arr_shape[axis]
    shape = list(_np.broadcast_shapes(tuple(d for k, d in enumerate(arr_shape)),
                                      tuple(1 if k == axis else d for k, d in enumerate(indices.shape))))
    shape[axis] = indices.shape[axis]
    arr_full = list(shape)
    arr_full[axis] = n
    strides = [0] * len(shape)
    step = 1
    for k in range(len(shape) - 1, -1, -1):
        strides[k] = step
        step *= arr_full[k]
    axis_stride = strides[axis]
    strides[axis] = 0
    known = _known(indices)
    if known is not None and known.size:
        bad = (known < -n) | (known >= n)
        if bad.any():
            raise IndexError(f"index {int(known[bad].reshape(-1)[0])} is out of bounds for size {n}")
    i = _cast(indices, _np.int64)
    i = _core.where(_core.binary("Less", i, _core.scalar(0, i)), _core.binary("Add", i, _core.scalar(n, i)), i)
    pos = _core.binary("Add", _iota(shape, strides), _core.binary("Mul", i, _core.scalar(axis_stride, i)))
    return _core.broadcast_to(pos, tuple(shape)), tuple(arr_full), tuple(shape)


def _along_axis_args(arr, indices, axis, name):
    arr = asvar(arr)
    idx = _index_var(indices)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(f"when axis=None, `indices` must have a single dimension.")
        arr = _flat(arr)
        axis = 0
    if idx.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    return arr, idx, normalize_axis(axis, arr.ndim)


def take_along_axis(arr, indices, axis=-1):
    arr, idx, axis = _along_axis_args(arr, indices, axis, "take_along_axis")
    pos, full, shape = _along_axis_positions(tuple(arr.shape), idx, axis)
    source = arr if tuple(arr.shape) == full else _core.broadcast_to(arr, full)
    return _core.reshape(_gather(_flat(source), _flat(pos), 0), shape)


def put_along_axis(arr, indices, values, axis):
    """Writes ``values`` at ``indices`` along ``axis``; rebinds a Var ``arr`` (see the module doc)."""
    target = arr
    a, idx, ax = _along_axis_args(arr, indices, axis, "put_along_axis")
    pos, full, shape = _along_axis_positions(tuple(a.shape), idx, ax)
    if full != tuple(a.shape):
        raise ValueError(f"shape mismatch: indices of shape {tuple(idx.shape)} do not fit an array of shape "
                         f"{tuple(a.shape)}")
    v = _cast(operand(values, a) if not isinstance(values, Var) else values, a.dtype)
    v = _core.broadcast_to(v, shape)
    result = _core.reshape(_core.op("Scatter", [_flat(a), _flat(pos), _flat(v)], {"axis": 0}), tuple(a.shape))
    if axis is None and isinstance(target, Var):
        result = _core.reshape(result, tuple(target.shape))
    elif axis is None:
        result = _core.reshape(result, _np.shape(target))
    return _in_place(target, result)


def put(a, ind, v, mode="raise"):
    """``a.flat[ind] = v`` (``v`` repeated as needed); rebinds a Var ``a``."""
    target = asvar(a)
    idx = _flat(_index_var(ind, lenient=True))
    n = target.size
    if idx.size == 0 or asvar(v).size == 0:
        return _in_place(a, _core.unary("Identity", target))
    idx = _apply_mode(idx, n, mode, 0)
    values = resize(_cast(asvar(v), target.dtype), (idx.size,))
    result = _core.op("Scatter", [_flat(target), _cast(idx, _np.int64), values], {"axis": 0})
    return _in_place(a, _core.reshape(result, tuple(target.shape)))


def place(arr, mask, vals):
    """``arr[mask] = vals`` with ``vals`` repeated over the selected positions; rebinds a Var."""
    target = asvar(arr)
    m = asvar(mask)
    if m.size != target.size:
        raise ValueError("place: mask and data must be the same size")
    positions = _flat_positions(m)
    values = asvar(vals)
    if positions.size == 0:
        return _in_place(arr, _core.unary("Identity", target))
    if values.size == 0:
        raise ValueError("Cannot insert from an empty array!")
    values = resize(_cast(values, target.dtype), (positions.size,))
    result = _core.op("Scatter", [_flat(target), positions, values], {"axis": 0})
    return _in_place(arr, _core.reshape(result, tuple(target.shape)))


def putmask(a, mask, values):
    """``a.flat[n] = values.flat[n % len(values)]`` where ``mask.flat[n]``; rebinds a Var."""
    target = asvar(a)
    m = asvar(mask)
    if m.size != target.size:
        raise ValueError("putmask: mask and data must be the same size")
    v = asvar(values) if not isinstance(values, (bool, int, float)) else operand(values, target)
    if v.size == 0:
        return _in_place(a, _core.unary("Identity", target))
    if m.dtype != _np.bool_:
        m = _core.binary("NotEqual", m, _core.scalar(0, m))
    filled = resize(_cast(v, target.dtype), tuple(target.shape))
    return _in_place(a, _core.where(_core.reshape(m, tuple(target.shape)), filled, target))


# ---------------------------------------------------------------- nonzero and selections
def nonzero(a):
    a = asvar(a)
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.")
    flat = _flat_positions(a)
    flat.fix_as_const()
    out = []
    for d in range(a.ndim):
        inner = int(_np.prod(a.shape[d + 1:], dtype=_np.int64))
        coord = _core.binary("FloorDiv", flat, _core.scalar(inner, flat)) if inner != 1 else flat
        if d > 0:
            coord = _core.binary("Mod", coord, _core.scalar(a.shape[d], flat))
        out.append(coord)
    return tuple(out)


def flatnonzero(a):
    return _flat_positions(a)


def argwhere(a):
    a = asvar(a)
    if a.ndim == 0:
        count = int(bool(a.read()))
        return _core.const(_np.zeros((count, 0), _np.int64), None, "NCHW")
    coords = nonzero(a)
    return _core.stack(list(coords), 1)


def where(condition, x=None, y=None, /):
    """``x`` where ``condition`` else ``y`` (broadcast, NumPy's promotion); one argument: nonzero."""
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    cond = asvar(condition)
    if cond.dtype != _np.bool_:
        cond = _core.binary("NotEqual", cond, _core.scalar(0, cond))
    dtype = _result_dtype([x, y])
    xv = _cast(operand(x, None) if not isinstance(x, Var) else x, dtype)
    yv = _cast(operand(y, None) if not isinstance(y, Var) else y, dtype)
    return _core.where(cond, xv, yv)


def compress(condition, a, axis=None, out=None):
    cond = asvar(condition)
    if cond.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    a = asvar(a)
    if axis is None:
        a = _flat(a)
        axis = 0
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    positions = _flat_positions(cond)
    if positions.size and int(positions.read()[-1]) >= n:
        if _np.prod(a.shape[:axis]) == 0:
            # NumPy checks the positions while walking the axes before `axis`; with none of
            # those there is nothing to check: the result is empty, one entry per True.
            shape = tuple(a.shape[:axis]) + (positions.size,) + tuple(a.shape[axis + 1:])
            return store(_core.const(_np.zeros(shape, a.dtype), None, "NCHW"), out)
        raise IndexError(f"index {int(positions.read()[-1])} is out of bounds for axis {axis} with size {n}")
    return store(_gather(a, positions, axis), out)


def extract(condition, arr):
    return _gather(_flat(asvar(arr)), _flat_positions(condition), 0)


def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    conds = [asvar(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != _np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    choices = [x if isinstance(x, Var) else asvar(x) if not isinstance(x, (bool, int, float)) else x
               for x in choicelist]
    dtype = _result_dtype(list(choices) + [default])
    as_var = [_cast(operand(c, None) if not isinstance(c, Var) else c, dtype) for c in choices]
    result = _cast(operand(default, None) if not isinstance(default, Var) else default, dtype)
    shape = _np.broadcast_shapes(*(tuple(v.shape) for v in as_var + conds + [result]))
    for c, v in zip(reversed(conds), reversed(as_var)):
        result = _core.where(c, v, result)
    return _core.broadcast_to(result, shape) if tuple(result.shape) != shape else result


def choose(a, choices, out=None, mode="raise"):
    a = _index_var(a)
    choices = [asvar(c) for c in choices]
    if not choices:
        raise ValueError("0-length sequence.")
    n = len(choices)
    dtype = _result_dtype(choices)
    shape = _np.broadcast_shapes(tuple(a.shape), *(tuple(c.shape) for c in choices))
    if mode == "raise":
        values = a.read()
        if values.size and ((values < 0) | (values >= n)).any():
            raise ValueError("invalid entry in choice array")
    elif mode in ("wrap", "clip"):
        a = _apply_mode(a, n, mode, 0)
    else:
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    stacked = _core.stack([_core.broadcast_to(_cast(c, dtype), shape) for c in choices], 0)
    index = _core.reshape(_core.broadcast_to(a, shape), (1,) + shape)
    result = _core.reshape(take_along_axis(stacked, index, 0), shape)
    return store(result, out)


# ---------------------------------------------------------------- searchsorted
def searchsorted(a, v, side="left", sorter=None):
    a = asvar(a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array" if a.ndim > 1 else "object of too small depth for "
                         "desired array")
    if side not in ("left", "right", "l", "r", "L", "R") and not (isinstance(side, str) and side[:1].lower() in "lr"
                                                                  and side):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    right = side[0].lower() == "r"
    if sorter is not None:
        order = _index_var(sorter)
        if order.ndim != 1 or order.size != a.size:
            raise ValueError("sorter.size must equal a.size")
        known = _known(order)
        if known is not None and known.size and ((known < 0) | (known >= a.size)).any():
            raise ValueError("Sorter index out of range.")
        a = _gather(a, order, 0)
    weak = isinstance(v, (bool, int, float)) and not isinstance(v, _np.generic)
    if weak:
        # NumPy converts a Python number to its default array type (bool, int64, float64)
        # and compares in the common type.
        dtype = _np.promote_types(a.dtype, _np.asarray(v).dtype)
        values = _core.const(_np.asarray(v, dtype), None, "NCHW")
    else:
        values = asvar(v)
        dtype = _np.dtype(_core.promote_types(a.dtype, values.dtype))
    if dtype == _np.float16:
        dtype = _np.dtype(_np.float32)  # exact widening; the kernel has no half type
    return _core.op("SearchSorted", [_cast(a, dtype), _cast(values, dtype)], {"right": int(right)})


# ---------------------------------------------------------------- diagonals
def diagonal(a, offset=0, axis1=0, axis2=1):
    a = asvar(a)
    if a.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    ax1, ax2 = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 cannot be the same")
    rest = [d for d in range(a.ndim) if d not in (ax1, ax2)]
    moved = _core.transpose(a, rest + [ax1, ax2])
    n1, n2 = a.shape[ax1], a.shape[ax2]
    offset = int(offset)
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    lead = tuple(moved.shape[:-2])
    merged = _core.reshape(moved, lead + (n1 * n2,))
    if length == 0:
        return merged[..., 0:0]
    start = offset if offset >= 0 else -offset * n2
    return merged[..., start:start + (length - 1) * (n2 + 1) + 1:n2 + 1]


def diag(v, k=0):
    v = asvar(v)
    k = int(k)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0]
    size = n + abs(k)
    if n == 0:
        return _core.const(_np.zeros((size, size), v.dtype), None, "NCHW")
    # Rows [v_i, 0 * n] flattened put v_i at i * (n + 1): the diagonal of an n x n matrix.
    rows = _core.pad(_core.reshape(v, (n, 1)), [(0, 0), (0, n)], "constant", 0.0)
    square = _core.reshape(_flat(rows)[:n * n], (n, n))
    if k == 0:
        return square
    pads = [(0, k), (k, 0)] if k > 0 else [(-k, 0), (0, -k)]
    return _core.pad(square, pads, "constant", 0.0)


def diagflat(v, k=0):
    return diag(_flat(asvar(v)), k)


def diag_indices(n, ndim=2):
    idx = _arange(int(n))
    return (idx,) * ndim


def diag_indices_from(arr):
    shape = tuple(arr.shape) if isinstance(arr, Var) else _np.shape(arr)
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def _triangle_indices(n, k, m, lower):
    m = n if m is None else m
    rows = _iota((n, m), (1, 0))
    cols = _iota((n, m), (0, 1))
    shifted = _core.binary("Add", rows, _core.scalar(int(k), rows))
    mask = _core.binary("GreaterEqual" if lower else "LessEqual", shifted, cols)
    return nonzero(mask)


def tril_indices(n, k=0, m=None):
    return _triangle_indices(int(n), k, None if m is None else int(m), True)


def triu_indices(n, k=0, m=None):
    return _triangle_indices(int(n), k, None if m is None else int(m), False)


def _shape2(arr):
    shape = tuple(arr.shape) if isinstance(arr, Var) else _np.shape(arr)
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return shape


def tril_indices_from(arr, k=0):
    n, m = _shape2(arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    n, m = _shape2(arr)
    return triu_indices(n, k, m)


def mask_indices(n, mask_func, k=0):
    ones = _core.broadcast_to(_i64(1), (int(n), int(n)))
    return nonzero(asvar(mask_func(ones, k)))


def fill_diagonal(a, val, wrap=False):
    """Sets the main diagonal (``val`` repeated as needed); rebinds a Var ``a``."""
    target = asvar(a)
    if target.ndim < 2:
        raise ValueError("array must be at least 2-d")
    shape = tuple(target.shape)
    if target.ndim == 2:
        step = shape[1] + 1
        end = None if wrap else shape[1] * shape[1]
    else:
        if len(set(shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(_np.cumprod(shape[:-1]).sum())
        end = None
    flat = _flat(target)
    count = len(range(*_builtins.slice(None, end, step).indices(target.size)))
    if count == 0:
        return _in_place(a, _core.unary("Identity", target))
    values = asvar(val) if not isinstance(val, (bool, int, float)) else operand(val, target)
    if values.size == 0:
        return _in_place(a, _core.unary("Identity", target))
    values = resize(_cast(_flat(values), target.dtype), (count,))
    flat[_builtins.slice(None, end, step)] = values
    return _in_place(a, _core.reshape(flat, shape))


# ---------------------------------------------------------------- index conversions
def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    dims = tuple(int(d) for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
    coords = [_index_var(c) for c in multi_index]
    if len(coords) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = mode if isinstance(mode, (tuple, list)) else (mode,) * len(dims)
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    strides = [0] * len(dims)
    step = 1
    for k in (range(len(dims) - 1, -1, -1) if order == "C" else range(len(dims))):
        strides[k] = step
        step *= dims[k]
    total = None
    for c, n, s, md in zip(coords, dims, strides, modes):
        if md == "raise":
            known = c.read()
            if known.size and ((known < 0) | (known >= n)).any():
                raise ValueError("invalid entry in coordinates array")
            c = _cast(c, _np.int64)
        else:
            c = _apply_mode(c, n, md, 0)
            c = _cast(c, _np.int64)
        term = _core.binary("Mul", c, _core.scalar(s, c)) if s != 1 else c
        total = term if total is None else _core.binary("Add", total, term)
    return total


def unravel_index(indices, shape, order="C"):
    shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    idx = _index_var(indices)
    size = int(_np.prod(shape, dtype=_np.int64))
    known = idx.read()
    if known.size and ((known < 0) | (known >= size)).any():
        bad = known[(known < 0) | (known >= size)].reshape(-1)[0]
        raise ValueError(f"index {int(bad)} is out of bounds for array with size {size}")
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    idx = _cast(idx, _np.int64)
    out = []
    for d in range(len(shape)):
        inner = int(_np.prod(shape[d + 1:] if order == "C" else shape[:d], dtype=_np.int64))
        coord = _core.binary("FloorDiv", idx, _core.scalar(inner, idx)) if inner != 1 else idx
        if (order == "C" and d > 0) or (order == "F" and d < len(shape) - 1):
            coord = _core.binary("Mod", coord, _core.scalar(shape[d], idx))
        out.append(coord)
    return tuple(out)


def ix_(*args):
    out = []
    nd = len(args)
    for k, new in enumerate(args):
        if not isinstance(new, (Var, _np.ndarray)):
            new = _np.asarray(new)
            if new.size == 0:
                new = new.astype(_np.intp)
        v = asvar(new)
        if v.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if v.dtype == _np.bool_:
            v = _flat_positions(v)
        out.append(_core.reshape(v, (1,) * k + (v.size,) + (1,) * (nd - k - 1)))
    return tuple(out)

