"""Shape and data-movement ops of mnnpy.expr, and Var indexing.

Functions keep the names, argument orders and defaults of MNN's ``MNN.expr`` (reshape,
transpose, broadcast_to, concat, stack, split, slice, strided_slice, gather, gather_nd, pad,
expand_dims, squeeze, unsqueeze, tile, convert); values follow NumPy's rules and error
messages.

Indexing. ``Var.__getitem__`` takes everything NumPy does: integers, slices (negative steps
too), ``...``, ``None``, integer arrays (several broadcast together; the indexed axes go where
NumPy puts them) and boolean masks. A boolean mask decides the shape of the result, so it is
evaluated when the index is built; a mask computed from a placeholder needs its value
written first, and the selection does not follow later writes. Integer indices that are
known (constants) are checked at once and raise ``IndexError``; computed ones that turn out
to be out of range read as zeros instead of failing at run time.

Assignment. ``x[index] = value`` makes ``x`` refer to a new node that holds the updated array
(every Python reference to that same Var object sees it). Nothing is written through views:
after ``b = a[0:2]; b[0] = 1``, ``a`` is unchanged, unlike NumPy. Repeated integer indices
keep the last value, as NumPy does in practice. ``x[mask] = scalar`` is a lazy select and does
not evaluate the mask.

Data formats. ``convert(x, format)`` moves a Var between layouts and sets its
``data_format``: NCHW <-> NHWC is a transpose of the channel axis. NC4HW4 is MNN's blocked
layout of an NCHW tensor, and a Var in it shows what MNN shows: NCHW's shape (N, C, H, W) and
values under the tag "NC4HW4", so NCHW <-> NC4HW4 changes only the tag (the blocking is the
core's business: it picks blocked layouts for convolution chains itself).
"""
import numpy as _np

from . import _core
from ._core import Var
from .expr import NCHW, _as_var, _check_format

__all__ = [
    "reshape", "transpose", "broadcast_to", "concat", "stack", "split", "unstack", "slice", "strided_slice",
    "gather", "gather_nd", "pad", "expand_dims", "squeeze", "unsqueeze", "tile", "convert", "reverse",
]


def _ints(v):
    """A list of Python ints from an int, a sequence, an array or a Var (evaluated)."""
    if isinstance(v, Var):
        v = v.read()
    a = _np.asarray(v)
    if a.dtype.kind not in "iub" and a.size:
        raise TypeError(f"expected integers, got {a.dtype}")
    return [int(i) for i in a.reshape(-1)]


def reshape(x, shape, original_format=NCHW):
    """``x`` with a new shape (one entry may be -1). An NC4HW4 input is first converted to
    ``original_format``."""
    x = _as_var(x)
    if x.data_format == "NC4HW4":
        x = convert(x, original_format)
    return _core.reshape(x, tuple(_ints(shape)))


def transpose(x, perm=None):
    """Permutes the axes (reversed when ``perm`` is None)."""
    return _core.transpose(_as_var(x), None if perm is None else _ints(perm))


def broadcast_to(input, shape):  # noqa: A002  (MNN's argument name)
    return _core.broadcast_to(_as_var(input), _ints(shape))


def concat(values, axis):
    """Joins Vars along an existing axis; dtypes are promoted to a common one."""
    return _core.concat(list(values), int(axis))


def stack(values, axis=0):
    """Joins same-shape Vars along a new axis."""
    return _core.stack(list(values), int(axis))


def split(input, size_splits, axis=0):  # noqa: A002
    """Pieces along ``axis``: ``size_splits`` is the list of sizes (MNN), or a number of equal
    pieces (NumPy's ``split`` rule: it must divide the axis)."""
    input = _as_var(input)
    if isinstance(size_splits, (int, _np.integer)):
        return _core.split_sections(input, int(size_splits), int(axis), True)
    return _core.split(input, _ints(size_splits), int(axis))


def unstack(value, axis=0):
    """The slices of ``value`` along ``axis``, each without that axis."""
    value = _as_var(value)
    axis = int(axis)
    return [_core.squeeze(p, [axis]) for p in _core.split_sections(value, value.shape[axis], axis, True)]


def slice(input, starts, sizes):  # noqa: A001,A002  (MNN's names)
    """``input[starts[i] : starts[i] + sizes[i]]`` on every axis; a size of -1 runs to the end."""
    return _core.slice(_as_var(input), _ints(starts), _ints(sizes))


def strided_slice(input, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0,  # noqa: A002
                  new_axis_mask=0, shrink_axis_mask=0):
    """TensorFlow's strided_slice: bit i of a mask changes the meaning of entry i."""
    return _core.strided_slice(_as_var(input), _ints(begin), _ints(end), _ints(strides), int(begin_mask),
                               int(end_mask), int(ellipsis_mask), int(new_axis_mask), int(shrink_axis_mask))


def gather(params, indices, axis=0):
    """``numpy.take(params, indices, axis)``; negative indices count from the end."""
    return _core.gather(_as_var(params), indices, int(axis))


def gather_nd(params, indices):
    """``params[indices[..., 0], indices[..., 1], ...]`` (the last axis of ``indices`` picks
    leading axes of ``params``)."""
    return _core.gather_nd(_as_var(params), indices)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "symmetric": "symmetric", "edge": "edge", "wrap": "wrap"}


def pad(x, paddings, mode="CONSTANT", constant_values=0):
    """Pads every axis: ``paddings`` is ``[[before, after], ...]`` (a Var, a nested list or
    its flattened form) or any ``pad_width`` NumPy's ``pad`` takes. Modes: CONSTANT (with
    ``constant_values``), REFLECT, SYMMETRIC, and NumPy's edge and wrap."""
    x = _as_var(x)
    key = str(mode).lower()
    if key not in _PAD_MODES:
        raise ValueError(f"mode '{mode}' is not supported")
    if isinstance(paddings, Var):
        paddings = paddings.read()
    widths = _np.asarray(paddings)
    if widths.dtype.kind not in "iu":
        if widths.size:
            raise TypeError("`pad_width` must be of integral type.")
        widths = widths.astype(_np.int64)
    rank = x.ndim
    if widths.ndim == 1 and widths.size == 2 * rank and rank != 1:
        widths = widths.reshape(rank, 2)
    try:
        widths = _np.broadcast_to(widths, (rank, 2))
    except ValueError:
        raise ValueError(f"paddings of shape {widths.shape} do not fit an array of {rank} dimensions") from None
    pairs = [(int(b), int(a)) for b, a in widths]
    return _core.pad(x, pairs, _PAD_MODES[key], float(constant_values))


def expand_dims(x, axis):
    """Inserts axes of length 1 at ``axis`` (an int or several)."""
    return _core.expand_dims(_as_var(x), _ints(axis))


def squeeze(input, axis=[]):  # noqa: A002,B006  (MNN's default: every length-1 axis)
    axes = None if axis is None else _ints(axis)
    return _core.squeeze(_as_var(input), axes or None)


def unsqueeze(input, axis=[]):  # noqa: A002,B006
    return _core.expand_dims(_as_var(input), _ints(axis))


def tile(input, multiples):  # noqa: A002
    """``numpy.tile``: repeats ``input`` ``multiples[i]`` times along axis i."""
    return _core.tile(_as_var(input), _ints(multiples))


def reverse(x, axis):
    """``x`` reversed along the given axis (or axes)."""
    x = _as_var(x)
    index = [_np.s_[:]] * x.ndim
    for a in _ints(axis):
        if not -x.ndim <= a < x.ndim:
            raise _np.exceptions.AxisError(a, x.ndim)
        index[a] = _np.s_[::-1]
    return x[tuple(index)]


def convert(input, format):  # noqa: A002  (MNN's names)
    """``input`` in data format ``format`` (NCHW, NHWC or NC4HW4); see the module docstring."""
    _check_format(format)
    return _core.convert(_as_var(input), format)


# ---------------------------------------------------------------- Var methods
def _shape_args(args):
    if len(args) == 1 and not isinstance(args[0], (int, _np.integer)):
        return _ints(args[0])
    return _ints(args)


def _var_reshape(self, *shape):
    """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``."""
    return _core.reshape(self, tuple(_shape_args(shape)))


def _var_transpose(self, *axes):
    """``x.transpose()``, ``x.transpose(1, 0)`` or ``x.transpose((1, 0))``."""
    if not axes or (len(axes) == 1 and axes[0] is None):
        return _core.transpose(self, None)
    return _core.transpose(self, _shape_args(axes))


def _var_flatten(self):
    return _core.reshape(self, (self.size,))


Var.reshape = _var_reshape
Var.transpose = _var_transpose
Var.flatten = _var_flatten
Var.T = property(lambda self: _core.transpose(self, None))
