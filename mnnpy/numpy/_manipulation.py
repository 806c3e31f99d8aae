"""Array manipulation: reshaping, joining, splitting, tiling, flipping, padding, broadcasting.

Every function returns new Vars (no views): writing into a result never changes its source.
``copyto`` rebinds its ``dst`` Var to the updated array (every Python reference to that Var
object sees the new value; Vars taken from it earlier keep the old one).
"""
import builtins as _builtins
import operator as _operator

import numpy as _np

from .. import _core
from .._core import Var
from ._common import AxisError, asvar, ints, normalize_axis, operand, store

__all__ = [
    "reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "unstack",
    "swapaxes", "moveaxis", "rollaxis", "expand_dims", "squeeze",
    "concatenate", "concat", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack", "block",
    "split", "array_split", "hsplit", "vsplit", "dsplit", "tile", "repeat", "flip", "fliplr", "flipud", "roll",
    "rot90", "pad", "broadcast_to", "broadcast_arrays", "broadcast_shapes", "atleast_1d", "atleast_2d",
    "atleast_3d", "delete", "insert", "append", "resize", "trim_zeros", "shape", "ndim", "size", "copyto",
]


# ---------------------------------------------------------------- helpers
def _shape_tuple(shape):
    try:
        return (_operator.index(shape),)
    except TypeError:
        return tuple(_operator.index(d) for d in shape)


def _full_slice(ndim, axis, item):
    index = [_builtins.slice(None)] * ndim
    index[axis] = item
    return tuple(index)


def _iota(shape, strides, start=0):
    """int64 ``start + sum(i_d * strides[d])`` over ``shape`` (no data read)."""
    return _core.op("Iota", [], {"shape": list(shape), "strides": list(strides), "start": int(start)})


def _arange(n):
    return _iota((n,), (1,))


def _gather(a, indices, axis):
    """numpy.take along ``axis`` with valid int indices; 1-D sources use the element-gather kernel."""
    if a.ndim == 1:
        return _core.op("TakeElements", [a, indices if isinstance(indices, Var) else
                                         _core.const(_np.asarray(indices, _np.int64), None, "NCHW")], {})
    return _core.gather(a, indices, axis)


def _binary(op, x, y):
    return _core.binary(op, x, y)


def _result_dtype(items):
    """NumPy's result_type of arrays (Vars by their dtype); Python scalars weak."""
    args = []
    for x in items:
        if isinstance(x, Var):
            args.append(_np.empty(0, x.dtype))
        elif isinstance(x, (bool, int, float)) and not isinstance(x, _np.generic):
            args.append(x)
        else:
            args.append(_np.asarray(x))
    return _np.result_type(*args)


def _cast(x, dtype):
    return x if x.dtype == dtype else _core.cast(x, dtype)


def _check_cast(from_dtype, to_dtype, casting):
    if not _np.can_cast(from_dtype, to_dtype, casting=casting):
        raise TypeError(f"Cannot cast array data from {_np.dtype(from_dtype)!r} to {_np.dtype(to_dtype)!r} "
                        f"according to the rule {casting!r}")


# ---------------------------------------------------------------- shapes
def shape(a):
    """The shape of ``a`` as a tuple."""
    return tuple(a.shape) if isinstance(a, Var) else _np.shape(a)


def ndim(a):
    return a.ndim if isinstance(a, Var) else _np.ndim(a)


def size(a, axis=None):
    """Number of elements (along ``axis`` when given; ``axis`` may be a tuple)."""
    s = shape(a)
    if axis is None:
        return int(_np.prod(s, dtype=_np.int64))
    axes = axis if isinstance(axis, tuple) else (axis,)
    total = 1
    for ax in axes:
        total *= s[normalize_axis(ax, len(s))]
    return total


def reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    """``a`` with a new shape (one entry may be -1); order 'C' or 'F' ('A' reads as 'C')."""
    if newshape is not None:
        if shape is not None:
            raise TypeError("You cannot specify 'newshape' and 'shape' arguments at the same time.")
        shape = newshape
    if shape is None:
        raise TypeError("reshape() missing 1 required positional argument: 'shape'")
    if copy is False:
        raise ValueError("mnnpy arrays are never views: reshape(copy=False) cannot avoid a copy")
    a = asvar(a)
    shape = _shape_tuple(shape)
    if order in ("C", "A"):
        return _core.reshape(a, shape)
    if order == "F":
        return _core.transpose(_core.reshape(_core.transpose(a, None), shape[::-1]), None)
    raise ValueError(f"order must be one of 'C', 'F', 'A' (got {order!r})")


def ravel(a, order="C"):
    """``a`` flattened to 1-D ('F' reads column-major; 'A' and 'K' read as 'C')."""
    a = asvar(a)
    if order == "F":
        a = _core.transpose(a, None)
    elif order not in ("C", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return _core.reshape(a, (a.size,))


def transpose(a, axes=None):
    a = asvar(a)
    if axes is None:
        return _core.transpose(a, None)
    axes = [normalize_axis(ax, a.ndim) for ax in (axes if isinstance(axes, (tuple, list)) else ints(axes))]
    if len(axes) != a.ndim:
        raise ValueError("axes don't match array")
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis in transpose")
    return _core.transpose(a, axes)


permute_dims = transpose  # NumPy 2's Array API name (the same function, as in NumPy)


def matrix_transpose(x, /):
    """Swaps the last two axes of a matrix or a stack of matrices."""
    x = asvar(x)
    if x.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim}")
    return swapaxes(x, -1, -2)


def unstack(x, /, *, axis=0):
    """The arrays along ``axis``, as a tuple (the inverse of ``stack(..., axis=axis)``)."""
    x = asvar(x)
    if x.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    axis = normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    if n == 0:
        return ()
    parts = _core.split_sections(x, n, axis, False) if n > 1 else [x]
    rest = tuple(s for i, s in enumerate(x.shape) if i != axis)
    return tuple(_core.reshape(p, rest) for p in parts)


def swapaxes(a, axis1, axis2):
    a = asvar(a)
    axis1, axis2 = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    perm = list(range(a.ndim))
    perm[axis1], perm[axis2] = axis2, axis1
    return _core.transpose(a, perm)


def _axis_list(axis, ndim, argname):
    items = [axis] if not isinstance(axis, (tuple, list)) else list(axis)
    out = [normalize_axis(ax, ndim) for ax in items]
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in `{argname}` argument")
    return out


def moveaxis(a, source, destination):
    a = asvar(a)
    src = _axis_list(source, a.ndim, "source")
    dst = _axis_list(destination, a.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _core.transpose(a, order)


def rollaxis(a, axis, start=0):
    a = asvar(a)
    n = a.ndim
    axis = normalize_axis(axis, n)
    if not -n <= start <= n:
        raise AxisError(f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if start < 0:
        start += n
    if axis < start:
        start -= 1
    if axis == start:
        return a
    order = list(range(n))
    order.remove(axis)
    order.insert(start, axis)
    return _core.transpose(a, order)


def expand_dims(a, axis):
    a = asvar(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out_ndim = a.ndim + len(axes)
    axes = [normalize_axis(ax, out_ndim) for ax in axes]
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    dims = iter(a.shape)
    return _core.reshape(a, tuple(1 if d in axes else next(dims) for d in range(out_ndim)))


def squeeze(a, axis=None):
    a = asvar(a)
    if axis is None:
        return _core.reshape(a, tuple(d for d in a.shape if d != 1))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = [normalize_axis(ax, a.ndim) for ax in axes]
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    if any(a.shape[ax] != 1 for ax in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return _core.reshape(a, tuple(d for k, d in enumerate(a.shape) if k not in axes))


# ---------------------------------------------------------------- joining
def _join_inputs(arrays, name):
    if isinstance(arrays, Var) or isinstance(arrays, _np.ndarray):
        arrays = [arrays[i] for i in range(arrays.shape[0])] if arrays.ndim else [arrays]
    arrays = [asvar(x) for x in arrays]
    if not arrays:
        raise ValueError(f"need at least one array to {name}")
    return arrays


def concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Joins arrays along an existing axis (all flattened first when ``axis`` is None)."""
    arrays = _join_inputs(arrays, "concatenate")
    if axis is None:
        arrays = [_core.reshape(x, (x.size,)) for x in arrays]
        axis = 0
    first = arrays[0]
    if first.ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis(axis, first.ndim)
    for i, x in enumerate(arrays[1:], 1):
        if x.ndim != first.ndim:
            raise ValueError("all the input array dimensions except for the concatenation axis must match exactly, "
                             f"but the array at index 0 has {first.ndim} dimension(s) and the array at index {i} has "
                             f"{x.ndim} dimension(s)")
        for d in range(first.ndim):
            if d != axis and x.shape[d] != first.shape[d]:
                raise ValueError("all the input array dimensions except for the concatenation axis must match "
                                 f"exactly, but along dimension {d}, the array at index 0 has size {first.shape[d]} "
                                 f"and the array at index {i} has size {x.shape[d]}")
    if out is not None and dtype is not None:
        raise TypeError("concatenate() only takes `out` or `dtype` as an argument, but both were provided.")
    target = _result_dtype(arrays) if dtype is None else _np.dtype(dtype)
    if out is not None:
        target = (out[0] if isinstance(out, tuple) else out).dtype
    for x in arrays:
        _check_cast(x.dtype, target, casting)
    arrays = [_cast(x, target) for x in arrays]
    result = arrays[0] if len(arrays) == 1 else _core.concat(arrays, axis)
    if len(arrays) == 1:
        result = _core.unary("Identity", result)
    return store(result, out)


concat = concatenate


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Joins same-shape arrays along a new axis."""
    arrays = _join_inputs(arrays, "stack")
    if any(tuple(x.shape) != tuple(arrays[0].shape) for x in arrays):
        raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis(axis, arrays[0].ndim + 1)
    inner = int(_np.prod(arrays[0].shape[axis:], dtype=_np.int64))
    # Runs of one element from 2-4 arrays have a vector interleaving kernel.
    if axis == 0 or inner >= 64 or len(arrays) == 1 or (inner == 1 and len(arrays) <= 4):
        return concatenate([expand_dims(x, axis) for x in arrays], axis=axis, out=out, dtype=dtype, casting=casting)
    # Other short runs per array interleave slowly: join along a new first axis, then one transpose.
    joined = concatenate([expand_dims(x, 0) for x in arrays], axis=0, dtype=dtype, casting=casting)
    perm = list(range(1, joined.ndim))
    perm.insert(axis, 0)
    return store(_core.transpose(joined, perm), out)


def atleast_1d(*arys):
    res = [asvar(a) if asvar(a).ndim >= 1 else _core.reshape(asvar(a), (1,)) for a in arys]
    return res[0] if len(res) == 1 else tuple(res)


def atleast_2d(*arys):
    res = []
    for a in arys:
        a = asvar(a)
        res.append(a if a.ndim >= 2 else _core.reshape(a, (1,) * (2 - a.ndim) + tuple(a.shape)))
    return res[0] if len(res) == 1 else tuple(res)


def atleast_3d(*arys):
    res = []
    for a in arys:
        a = asvar(a)
        if a.ndim == 0:
            a = _core.reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = _core.reshape(a, (1, a.shape[0], 1))
        elif a.ndim == 2:
            a = _core.reshape(a, tuple(a.shape) + (1,))
        res.append(a)
    return res[0] if len(res) == 1 else tuple(res)


def _as_list(tup, name):
    if isinstance(tup, (Var, _np.ndarray)) or not hasattr(tup, "__iter__"):
        raise TypeError(f"arrays to {name} must be passed as a sequence type such as list or tuple.")
    return list(tup)


def vstack(tup, *, dtype=None, casting="same_kind"):
    arrs = atleast_2d(*_as_list(tup, "stack"))
    return concatenate(arrs if isinstance(arrs, tuple) else [arrs], 0, dtype=dtype, casting=casting)


row_stack = vstack


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = atleast_1d(*_as_list(tup, "stack"))
    arrs = list(arrs) if isinstance(arrs, tuple) else [arrs]
    axis = 0 if arrs and arrs[0].ndim == 1 else 1
    return concatenate(arrs, axis, dtype=dtype, casting=casting)


def dstack(tup):
    arrs = atleast_3d(*_as_list(tup, "stack"))
    return concatenate(arrs if isinstance(arrs, tuple) else [arrs], 2)


def column_stack(tup):
    arrays = []
    for v in _as_list(tup, "stack"):
        v = asvar(v)
        if v.ndim < 2:
            v = _core.transpose(atleast_2d(v), None)
        arrays.append(v)
    return concatenate(arrays, 1)


def _block_depth(x, index):
    """Nesting depth of ``block``'s list argument (lists only), checking it is even."""
    if isinstance(x, tuple):
        raise TypeError(f"{index} is a tuple. Only lists can be used to arrange blocks, and np.block does not "
                        "allow implicit conversion from tuple to ndarray.")
    if not isinstance(x, list):
        return 0, ndim(x)
    if not x:
        raise ValueError(f"List at {index} cannot be empty")
    depths = [_block_depth(e, f"{index}[{i}]") for i, e in enumerate(x)]
    if len({d for d, _ in depths}) != 1:
        raise ValueError(f"List depths are mismatched. First element was at depth {depths[0][0] + 1}, "
                         f"but there is an element at depth {depths[-1][0] + 1}")
    return depths[0][0] + 1, max(nd for _, nd in depths)


def block(arrays):
    """Assembles an array from nested lists of blocks (innermost lists join along the last axis)."""
    depth, max_ndim = _block_depth(arrays, "arrays")
    result_ndim = max(depth, max_ndim)

    def assemble(x, level):
        if level == depth:
            x = asvar(x)
            return _core.reshape(x, (1,) * (result_ndim - x.ndim) + tuple(x.shape))
        parts = [assemble(e, level + 1) for e in x]
        return concatenate(parts, axis=-(depth - level))

    if depth == 0:
        return _core.unary("Identity", atleast_1d(arrays) if result_ndim else asvar(arrays))
    return assemble(arrays, 0)


# ---------------------------------------------------------------- splitting
def array_split(ary, indices_or_sections, axis=0):
    ary = asvar(ary)
    axis = normalize_axis(axis, ary.ndim)
    if isinstance(indices_or_sections, (int, _np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        return _core.split_sections(ary, sections, axis, False)
    return _core.split_at(ary, ints(indices_or_sections, "indices"), axis)


def split(ary, indices_or_sections, axis=0):
    ary = asvar(ary)
    axis = normalize_axis(axis, ary.ndim)
    if isinstance(indices_or_sections, (int, _np.integer)):
        sections = int(indices_or_sections)
        if sections == 0:
            raise ZeroDivisionError("integer modulo by zero")  # what numpy.split raises
        if sections < 0:
            raise ValueError("number sections must be larger than 0.")
        if ary.shape[axis] % sections:
            raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    ary = asvar(ary)
    if ary.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    ary = asvar(ary)
    if ary.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    ary = asvar(ary)
    if ary.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


# ---------------------------------------------------------------- repeating
def tile(A, reps):
    A = asvar(A)
    reps = ints(reps, "reps")
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    n = max(A.ndim, len(reps))
    A = _core.reshape(A, (1,) * (n - A.ndim) + tuple(A.shape))
    reps = [1] * (n - len(reps)) + reps
    if all(r == 1 for r in reps):
        return _core.unary("Identity", A)
    return _core.tile(A, reps)


def repeat(a, repeats, axis=None):
    """Each element repeated (``repeats`` one count, or one per element along ``axis``)."""
    a = asvar(a)
    if axis is None or a.ndim == 0:
        a = _core.reshape(a, (a.size,))
    axis = normalize_axis(0 if axis is None else axis, a.ndim)
    counts = _np.asarray(repeats.read() if isinstance(repeats, Var) else repeats)
    if counts.size == 0 and counts.dtype.kind == "f":
        counts = counts.astype(_np.int64)
    if counts.dtype.kind not in "iub":
        raise TypeError(f"Cannot cast array data from {counts.dtype!r} to dtype('int64') according to the rule 'safe'")
    counts = counts.astype(_np.int64)
    n = a.shape[axis]
    if counts.ndim == 0 or counts.size == 1:
        r = int(counts.reshape(-1)[0])
        if r < 0 and n:
            raise ValueError("negative dimensions are not allowed")
        return _core.op("RepeatElements", [a], {"axis": axis, "repeats": [max(r, 0)]})
    if counts.ndim != 1 or counts.size != n:
        raise ValueError(f"operands could not be broadcast together with shape ({n},) ({counts.size},)")
    if (counts < 0).any():
        raise ValueError("repeats may not contain negative values.")
    return _core.op("RepeatElements", [a], {"axis": axis, "repeats": [int(c) for c in counts]})


def resize(a, new_shape):
    """``a``'s elements repeated in order to fill ``new_shape`` (numpy.resize)."""
    a = asvar(a)
    new_shape = _shape_tuple(new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    total = int(_np.prod(new_shape, dtype=_np.int64))
    if a.size == 0 or total == 0:
        return _core.broadcast_to(_core.const(_np.zeros((), a.dtype), None, "NCHW"), new_shape)
    flat = _core.reshape(a, (a.size,))
    copies = -(-total // a.size)
    if copies > 1:
        flat = _core.tile(flat, [copies])
    if copies * a.size != total:
        flat = flat[:total]
    return _core.reshape(flat, new_shape)


# ---------------------------------------------------------------- flipping and rolling
def flip(m, axis=None):
    m = asvar(m)
    axes = range(m.ndim) if axis is None else _axis_list(axis, m.ndim, "axis")
    if m.ndim == 0:
        return _core.unary("Identity", m)
    index = [_builtins.slice(None)] * m.ndim
    for ax in axes:
        index[ax] = _builtins.slice(None, None, -1)
    return m[tuple(index)]


def fliplr(m):
    m = asvar(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return m[:, ::-1]


def flipud(m):
    m = asvar(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return m[::-1]


def roll(a, shift, axis=None):
    a = asvar(a)
    if axis is None:
        return _core.reshape(roll(_core.reshape(a, (a.size,)), shift, 0), tuple(a.shape))
    axes = [normalize_axis(ax, a.ndim) for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    shifts = _np.broadcast(_np.asarray(shift), _np.asarray(axes if isinstance(axis, (tuple, list)) else axes[0]))
    if shifts.nd > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    total = {}
    for sh, ax in shifts:
        total[int(ax)] = total.get(int(ax), 0) + int(sh)
    result = a
    for ax, sh in total.items():
        n = a.shape[ax]
        k = sh % n if n else 0
        if k:
            head = result[_full_slice(a.ndim, ax, _builtins.slice(n - k, None))]
            tail = result[_full_slice(a.ndim, ax, _builtins.slice(None, n - k))]
            result = _core.concat([head, tail], ax)
    return result if result is not a else _core.unary("Identity", a)


def rot90(m, k=1, axes=(0, 1)):
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    m = asvar(m)
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("Axes must be different.")
    if axes[0] >= m.ndim or axes[0] < -m.ndim or axes[1] >= m.ndim or axes[1] < -m.ndim:
        raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
    k %= 4
    if k == 0:
        return _core.unary("Identity", m)
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    perm = list(range(m.ndim))
    a0, a1 = axes[0] % m.ndim, axes[1] % m.ndim
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return _core.transpose(flip(m, axes[1]), perm)
    return flip(_core.transpose(m, perm), axes[1])


# ---------------------------------------------------------------- broadcasting
def broadcast_shapes(*args):
    return _np.broadcast_shapes(*args)


def broadcast_to(array, shape, subok=False):
    array = asvar(array)
    shape = _shape_tuple(shape)
    if any(d < 0 for d in shape):
        raise ValueError("all elements of broadcast shape must be non-negative")
    try:
        target = _np.broadcast_shapes(tuple(array.shape), shape)
    except ValueError:
        target = None
    if target != shape:
        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {tuple(array.shape)} and requested shape {shape}")
    return _core.broadcast_to(array, shape)


def broadcast_arrays(*args, subok=False):
    arrays = [asvar(a) for a in args]
    target = _np.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    return tuple(a if tuple(a.shape) == target else _core.broadcast_to(a, target) for a in arrays)


# ---------------------------------------------------------------- inserting and deleting
def _positions_along(obj, n, what):
    """``obj`` (int, slice, int or bool array) as a NumPy int64 array of positions in [0, n)."""
    if isinstance(obj, _builtins.slice):
        return _np.arange(*obj.indices(n), dtype=_np.int64), False
    if isinstance(obj, Var):
        obj = obj.read()
    idx = _np.asarray(obj)
    if idx.dtype == bool:
        if idx.ndim != 1 or idx.size != n:
            raise ValueError(f"boolean array argument obj to {what} must be one dimensional and match the axis "
                             f"length of {n}")
        return _np.flatnonzero(idx).astype(_np.int64), False
    if idx.size == 0:
        return idx.astype(_np.int64).reshape(-1), idx.ndim == 0
    if idx.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    return idx.astype(_np.int64), idx.ndim == 0


def delete(arr, obj, axis=None):
    arr = asvar(arr)
    if axis is None:
        arr = _core.reshape(arr, (arr.size,))
        axis = 0
    if arr.ndim == 0:
        raise AxisError(axis, 0)
    axis = normalize_axis(axis, arr.ndim)
    n = arr.shape[axis]
    positions, _ = _positions_along(obj, n, "delete")
    positions = positions.reshape(-1)
    bad = (positions < -n) | (positions >= n)
    if bad.any():
        raise IndexError(f"index {int(positions[bad][0])} is out of bounds for axis {axis} with size {n}")
    keep = _np.ones(n, bool)
    keep[positions] = False
    if keep.all():
        return _core.unary("Identity", arr)
    return _gather(arr, _np.flatnonzero(keep).astype(_np.int64), axis)


def _values_like(values, dtype):
    """``values`` as a Var of ``dtype`` (NumPy arrays and lists cast as ``numpy.array(v, dtype)`` does)."""
    if isinstance(values, Var):
        return _cast(values, dtype)
    return asvar(_np.array(values.read() if isinstance(values, Var) else values, dtype=dtype))


def insert(arr, obj, values, axis=None):
    arr = asvar(arr)
    if axis is None:
        if arr.ndim != 1:
            arr = _core.reshape(arr, (arr.size,))
        axis = 0
    axis = normalize_axis(axis, arr.ndim)
    n = arr.shape[axis]
    if isinstance(obj, _builtins.slice):
        indices = _np.arange(*obj.indices(n), dtype=_np.int64)
    else:
        indices = _np.array(obj.read() if isinstance(obj, Var) else obj)
        if indices.dtype == bool:
            if indices.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one dimensional")
            indices = _np.flatnonzero(indices)
        elif indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or scalar")
        if indices.size and indices.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
    values = _values_like(values, arr.dtype)
    if indices.size == 1:
        index = int(indices.item())
        if index < -n or index > n:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
        if index < 0:
            index += n
        if values.ndim < arr.ndim:
            values = _core.reshape(values, (1,) * (arr.ndim - values.ndim) + tuple(values.shape))
        if indices.ndim == 0:
            values = moveaxis(values, 0, axis)
        numnew = values.shape[axis]
        target = tuple(arr.shape[:axis]) + (numnew,) + tuple(arr.shape[axis + 1:])
        values = _assignable(values, target)
        parts = [arr[_full_slice(arr.ndim, axis, _builtins.slice(None, index))], values,
                 arr[_full_slice(arr.ndim, axis, _builtins.slice(index, None))]]
        return _joined(parts, axis)
    indices = indices.astype(_np.int64)
    numnew = indices.size
    bad = (indices < -n) | (indices >= n + numnew)
    if bad.any():
        raise IndexError(f"index {int(indices[bad][0])} is out of bounds for axis {axis} with size {n + numnew}")
    indices = _np.where(indices < 0, indices + n, indices)
    order = _np.argsort(indices, kind="mergesort")
    new_positions = indices.copy()
    new_positions[order] += _np.arange(numnew)
    # Gather from [arr, values] joined along the axis: new slots read the values block
    # (a repeated slot keeps the last value, as NumPy's assignment does).
    source = _np.full(n + numnew, -1, _np.int64)
    source[new_positions] = n + _np.arange(numnew)
    old = source < 0
    if old.sum() != n:
        raise IndexError(f"index {int(indices.max())} is out of bounds for axis {axis} with size {n + numnew}")
    source[old] = _np.arange(n)
    target = tuple(arr.shape[:axis]) + (numnew,) + tuple(arr.shape[axis + 1:])
    values = _assignable(values, target)
    return _gather(_core.concat([arr, values], axis), source, axis)


def _assignable(values, target):
    """``values`` broadcast to ``target`` as an assignment does (extra leading 1s dropped)."""
    vs = tuple(values.shape)
    while len(vs) > len(target) and vs[0] == 1:
        vs = vs[1:]
    try:
        ok = _np.broadcast_shapes(vs, target) == target
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"shape mismatch: value array of shape {tuple(values.shape)} could not be broadcast to "
                         f"indexing result of shape {target}")
    return _core.broadcast_to(_core.reshape(values, vs), target)


def append(arr, values, axis=None):
    arr, values = asvar(arr), asvar(values)
    if axis is None:
        arr = _core.reshape(arr, (arr.size,))
        values = _core.reshape(values, (values.size,))
        axis = arr.ndim - 1
    return concatenate((arr, values), axis=axis)


def trim_zeros(filt, trim="fb", axis=None):
    """``filt`` without its leading ('f') and/or trailing ('b') zeros (zero hyperplanes for n-d input)."""
    filt = asvar(filt)
    trim = trim.lower()
    if any(c not in "fb" for c in trim):
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    axes = range(filt.ndim) if axis is None else [normalize_axis(axis, filt.ndim)]
    nonzero = _core.binary("NotEqual", filt, _core.scalar(0, filt))
    index = [_builtins.slice(None)] * filt.ndim
    for ax in axes:
        others = [d for d in range(filt.ndim) if d != ax]
        along = _core.reduce("any", nonzero, others, False) if others else nonzero
        hits = _np.flatnonzero(along.read())
        if hits.size == 0:
            start = stop = 0
        else:
            start = int(hits[0]) if "f" in trim else 0
            stop = int(hits[-1]) + 1 if "b" in trim else filt.shape[ax]
        if hits.size == 0 and trim == "":
            start, stop = 0, filt.shape[ax]
        index[ax] = _builtins.slice(start, stop)
    return filt[tuple(index)] if filt.ndim else _core.unary("Identity", filt)


def _drop_leading_ones(x, ndim):
    s = tuple(x.shape)
    while len(s) > ndim and s[0] == 1:
        s = s[1:]
    return x if s == tuple(x.shape) else _core.reshape(x, s)


def _fits(shape, target):
    try:
        return _np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def copyto(dst, src, casting="same_kind", where=True):
    """``dst`` (a Var) rebound to ``src`` broadcast and cast into it where ``where`` holds."""
    if not isinstance(dst, Var):
        raise TypeError(f"copyto() argument 1 must be an mnnpy Var, not {type(dst).__name__}")
    weak = isinstance(src, (bool, int, float)) and not isinstance(src, _np.generic)
    if weak:
        # NumPy's own rules for a Python scalar (its kind, overflow) on a one-element stand-in.
        _np.copyto(_np.empty((), dst.dtype), src, casting=casting)
    src_var = operand(src, dst) if weak else asvar(src)
    if not weak:
        _check_cast(src_var.dtype, dst.dtype, casting)
    src_var = _cast(src_var, dst.dtype)
    target = tuple(dst.shape)
    src_var = _drop_leading_ones(src_var, len(target))
    if not _fits(tuple(src_var.shape), target):
        raise ValueError(f"could not broadcast input array from shape {tuple(src_var.shape)} into shape {target}")
    if where is True:
        result = _core.broadcast_to(src_var, target)
    else:
        mask = asvar(where)
        if mask.dtype != _np.bool_:
            _check_cast(mask.dtype, _np.bool_, "safe")
        if not _fits(tuple(mask.shape), target):
            raise ValueError(f"could not broadcast where mask from shape {tuple(mask.shape)} into shape {target}")
        result = _core.broadcast_to(_core.where(mask, src_var, dst), target)
    _core.rebind(dst, result)


# ---------------------------------------------------------------- padding
def _as_pairs(x, ndim, as_index=False):
    """NumPy's pad argument forms (scalar, (v,), (before, after), per-axis pairs) as ndim pairs."""
    if x is None:
        return ((None, None),) * ndim
    x = _np.array(x.read() if isinstance(x, Var) else x)
    if as_index:
        x = _np.round(x).astype(_np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x[0] < 0:
                raise ValueError("index can't contain negative values")
            return ((x[0].item(), x[0].item()),) * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ValueError("index can't contain negative values")
            return ((x[0].item(), x[1].item()),) * ndim
    if as_index and x.size and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return _np.broadcast_to(x, (ndim, 2)).tolist()


_PAD_KWARGS = {
    "empty": [], "edge": [], "wrap": [], "constant": ["constant_values"], "linear_ramp": ["end_values"],
    "maximum": ["stat_length"], "mean": ["stat_length"], "median": ["stat_length"], "minimum": ["stat_length"],
    "reflect": ["reflect_type"], "symmetric": ["reflect_type"],
}


def _filled(value, dtype, shape):
    """A constant ``value`` cast to ``dtype`` (as NumPy's assignment casts it), broadcast to ``shape``."""
    with _np.errstate(all="ignore"):
        v = _np.asarray(value).astype(dtype)
    return _core.broadcast_to(_core.const(v, None, "NCHW"), tuple(shape))


def _joined(parts, axis):
    parts = [p for p in parts if p is not None and p.shape[axis] > 0] or [parts[1]]
    return parts[0] if len(parts) == 1 else _core.concat(parts, axis)


def _side_shape(x, axis, width):
    s = list(x.shape)
    s[axis] = width
    return s


def _pad_constant(x, pairs, values):
    vals = _as_pairs(values, x.ndim)
    flat = {v for pair in vals for v in pair}
    if len(flat) == 1:
        (value,) = flat
        v = _np.asarray(value)
        with _np.errstate(all="ignore"):
            cast_value = v.astype(x.dtype)
        if _np.isfinite(cast_value).all() if x.dtype.kind == "f" else True:
            if float(cast_value) == cast_value or x.dtype.kind != "i":
                # One value: the core's Pad (it converts through float64, exact here).
                if x.dtype.kind != "i" or abs(int(cast_value)) < 2 ** 53:
                    return _core.pad(x, [tuple(p) for p in pairs], "constant", float(cast_value))
    for axis, ((before, after), (vb, va)) in enumerate(zip(pairs, vals)):
        if before or after:
            x = _joined([_filled(vb, x.dtype, _side_shape(x, axis, before)) if before else None, x,
                          _filled(va, x.dtype, _side_shape(x, axis, after)) if after else None], axis)
    return x


def _edge(x, axis, first):
    n = x.shape[axis]
    return x[_full_slice(x.ndim, axis, _builtins.slice(0, 1) if first else _builtins.slice(n - 1, n))]


def _linear_ramp(x, axis, end_value, width, left):
    """NumPy's linspace(end_value, edge, width, endpoint=False) along ``axis`` (reversed on the right)."""
    edge = _edge(x, axis, left)
    work = _np.result_type(end_value, _np.empty(0, x.dtype), 1.0)
    if x.dtype.kind == "f":
        work = _np.result_type(x.dtype, _np.float16)
    stop = _cast(edge, work)
    start = _core.scalar(end_value, stop)
    delta = _binary("Sub", stop, start)
    step = _binary("Div", delta, _core.scalar(width, stop))
    ramp_shape = [1] * x.ndim
    ramp_shape[axis] = width
    strides = [0] * x.ndim
    strides[axis] = 1
    steps = _cast(_iota(ramp_shape, strides), work)
    if not left:
        steps = steps[_full_slice(x.ndim, axis, _builtins.slice(None, None, -1))]
    by_step = _binary("Mul", steps, step)
    by_delta = _binary("Mul", _binary("Div", steps, _core.scalar(width, stop)), delta)
    # NumPy switches formula when any step is zero; follow it so the roundings match.
    any_zero = _core.reduce("any", _binary("Equal", step, _core.scalar(0, step)), None, False)
    y = _binary("Add", _core.where(any_zero, by_delta, by_step), start)
    if x.dtype.kind in "iu":
        # Through int64, so that ramps outside the dtype's range wrap as NumPy's cast does.
        return _cast(_cast(_core.unary("Floor", y), _np.int64), x.dtype)
    if x.dtype.kind == "b":
        y = _core.unary("Floor", y)
    return _cast(y, x.dtype)


def _round_for(stat, dtype):
    if dtype.kind in "iub" and stat.dtype.kind == "f":
        stat = _core.unary("Round", stat)
    return stat


def _median(chunk, axis):
    """Median along ``axis`` (keepdims), float64 for integers as numpy.median gives."""
    n = chunk.shape[axis]
    work = _np.dtype(_np.float64) if chunk.dtype.kind in "iub" else chunk.dtype
    data = _cast(chunk, _np.float32 if work == _np.float16 else work)
    moved = moveaxis(data, axis, -1)
    k = n // 2 + 1
    smallest, _ = _core.op("TopK", [moved], {"k": k, "axis": -1, "largest": 0, "sorted": 1}), None
    values = smallest[0] if isinstance(smallest, (list, tuple)) else smallest
    upper = values[..., k - 1:k]
    med = upper if n % 2 else _binary("Mul", _binary("Add", values[..., k - 2:k - 1], upper), _core.scalar(0.5, upper))
    has_nan = _core.reduce("any", _core.unary("IsNan", moved), [-1], True) if data.dtype.kind == "f" else None
    if has_nan is not None:
        med = _core.where(has_nan, _core.scalar(float("nan"), med), med)
    med = _cast(med, work)
    return moveaxis(med, -1, axis)


def _stat(chunk, axis, mode):
    if mode == "maximum":
        return _core.reduce("max", chunk, [axis], True)
    if mode == "minimum":
        return _core.reduce("min", chunk, [axis], True)
    if mode == "mean":
        if chunk.dtype.kind in "iub":
            return _core.reduce("mean", _cast(chunk, _np.float64), [axis], True)
        return _core.reduce("mean", chunk, [axis], True)
    return _median(chunk, axis)


def _pad_stat(x, axis, before, after, lengths, mode):
    n = x.shape[axis]
    left_len, right_len = lengths
    left_len = n if left_len is None or left_len > n else left_len
    right_len = n if right_len is None or right_len > n else right_len
    if (left_len == 0 or right_len == 0) and mode in ("maximum", "minimum"):
        raise ValueError("stat_length of 0 yields no value for padding")
    left = _stat(x[_full_slice(x.ndim, axis, _builtins.slice(0, left_len))], axis, mode)
    right = left if left_len == right_len == n else \
        _stat(x[_full_slice(x.ndim, axis, _builtins.slice(n - right_len, n))], axis, mode)
    left, right = (_cast(_round_for(s, x.dtype), x.dtype) for s in (left, right))
    return _joined([_core.broadcast_to(left, _side_shape(x, axis, before)) if before else None, x,
                    _core.broadcast_to(right, _side_shape(x, axis, after)) if after else None], axis)


def _odd(chunk, edge, dtype):
    """2 * edge - chunk in ``dtype``'s arithmetic (bool through int64, as NumPy computes it)."""
    if dtype == _np.bool_:
        value = _binary("Sub", _binary("Mul", _cast(edge, _np.int64), _core.scalar(2, None)), _cast(chunk, _np.int64))
        return _cast(value, _np.bool_)
    return _binary("Sub", _binary("Mul", edge, _core.scalar(2, edge)), chunk)


def _pad_reflect_odd(x, axis, before, after, method):
    """Odd reflection, grown chunk by chunk from the array padded so far, as NumPy does (for
    wide pads the chunks reflect earlier chunks, so this is not periodic)."""
    period = x.shape[axis]
    symmetric = method == "symmetric"

    def along(start, stop):
        return _full_slice(x.ndim, axis, _builtins.slice(start, None if stop < 0 else stop, -1))

    grown, left_pad, right_pad = x, before, after
    while left_pad > 0 or right_pad > 0:
        length = grown.shape[axis]
        if symmetric:
            usable = length // period * period
        else:
            usable = (length - 1) // (period - 1) * (period - 1)
        new_left = new_right = None
        if left_pad > 0:
            chunk = min(usable, left_pad)
            piece = grown[along(chunk - 1, -1)] if symmetric else grown[along(chunk, 0)]
            new_left = _odd(piece, _edge(grown, axis, True), x.dtype)
            left_pad -= chunk
        if right_pad > 0:
            chunk = min(usable, right_pad)
            last = length - 1 if symmetric else length - 2
            new_right = _odd(grown[along(last, last - chunk)], _edge(grown, axis, False), x.dtype)
            right_pad -= chunk
        grown = _joined([new_left, grown, new_right], axis)
    return grown


def pad(array, pad_width, mode="constant", **kwargs):
    """numpy.pad: every mode (constant, edge, linear_ramp, maximum, mean, median, minimum, reflect,
    symmetric, wrap, empty) with NumPy's argument forms. 'empty' pads with zeros."""
    x = asvar(array)
    pw = _np.asarray(pad_width.read() if isinstance(pad_width, Var) else pad_width)
    if pw.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    if callable(mode):
        raise TypeError("mnnpy.numpy.pad does not take a function as mode")
    if mode not in _PAD_KWARGS:
        raise ValueError(f"mode '{mode}' is not supported")
    unsupported = set(kwargs) - set(_PAD_KWARGS[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    pairs = _as_pairs(pw, x.ndim, as_index=True)
    pairs = [(int(b), int(a)) for b, a in pairs]
    if mode in ("constant", "empty"):
        return _pad_constant(x, pairs, kwargs.get("constant_values", 0) if mode == "constant" else 0)
    for axis, (b, a) in enumerate(pairs):
        if x.shape[axis] == 0 and (b or a):
            raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
    if x.size == 0:
        return _core.pad(x, pairs, "constant", 0.0)
    if mode in ("edge", "wrap"):
        return _core.pad(x, pairs, mode, 0.0)
    if mode in ("reflect", "symmetric"):
        reflect_type = kwargs.get("reflect_type", "even")
        if reflect_type not in ("even", "odd"):
            raise ValueError(f"reflect_type must be 'even' or 'odd', got {reflect_type!r}")
        if reflect_type == "even":
            return _core.pad(x, pairs, mode, 0.0)
        for axis, (b, a) in enumerate(pairs):
            if b or a:
                if x.shape[axis] == 1:
                    x = _core.pad(x, [(b, a) if d == axis else (0, 0) for d in range(x.ndim)], "edge", 0.0)
                else:
                    x = _pad_reflect_odd(x, axis, b, a, mode)
        return x
    if mode == "linear_ramp":
        ends = _as_pairs(kwargs.get("end_values", 0), x.ndim)
        for axis, ((b, a), (eb, ea)) in enumerate(zip(pairs, ends)):
            if b or a:
                x = _joined([_linear_ramp(x, axis, eb, b, True) if b else None, x,
                             _linear_ramp(x, axis, ea, a, False) if a else None], axis)
        return x
    lengths = _as_pairs(kwargs.get("stat_length"), x.ndim, as_index=True)
    for axis, ((b, a), ls) in enumerate(zip(pairs, lengths)):
        if b or a:
            x = _pad_stat(x, axis, b, a, ls, mode)
    return x
