"""The rest of NumPy's (and MNN.numpy's) namespace: integer and float bit functions, bit
packing, Bessel i0, interpolation and phase unwrapping, MNN's matrix aliases, and the index
iterators."""
import builtins as _builtins
import itertools as _itertools
import math as _math

import numpy as _np

from .. import _core
from .._core import Var
from ._common import asvar, normalize_axis
from ._ufuncs import ufunc

__all__ = [
    "gcd", "lcm", "nextafter", "spacing", "frexp", "i0", "packbits", "unpackbits", "base_repr", "binary_repr",
    "real_if_close", "asscalar", "fill", "mat", "matrix", "asmatrix", "bmat", "repmat", "broadcast", "ndindex",
    "ndenumerate", "flatiter", "nditer", "nested_iters", "interp", "unwrap", "histogram2d", "histogramdd",
]


def _numpy():
    import sys
    return sys.modules["mnnpy.numpy"]


def _spacing(x):
    # Away from zero; both zeros step up, as NumPy's spacing(-0.0) is the smallest positive.
    toward = _core.binary("CopySign", _core.scalar(float("inf"), x), x)
    toward = _core.where(_core.binary("Equal", x, _core.scalar(0.0, x)), _core.scalar(float("inf"), x), toward)
    return _core.binary("Sub", _core.binary("NextAfter", x, toward), x)


def _frexp(x):
    """Mantissa in [0.5, 1) and exponent with x = m * 2**e, exact: the scaling by powers of two
    is done in float64, where every float32 exponent fits."""
    wide = _core.cast(x, _np.float64)
    magnitude = _core.unary("Abs", wide)
    special = _core.binary("LogicalOr", _core.binary("Equal", magnitude, _core.scalar(0.0, wide)),
                           _core.unary("LogicalNot", _core.unary("IsFinite", wide)))
    safe = _core.where(special, _core.scalar(1.0, wide), magnitude)
    exponent = _core.binary("Add", _core.unary("Floor", _core.unary("Log2", safe)), _core.scalar(1.0, wide))
    half_exponent = _core.unary("Floor", _core.binary("Mul", exponent, _core.scalar(0.5, wide)))
    scale = _core.binary("Mul", _core.unary("Exp2", _core.unary("Neg", half_exponent)),
                         _core.unary("Exp2", _core.unary("Neg", _core.binary("Sub", exponent, half_exponent))))
    mantissa = _core.binary("Mul", safe, scale)
    # log2 can be one off next to a power of two: move the mantissa back into [0.5, 1).
    high = _core.binary("GreaterEqual", mantissa, _core.scalar(1.0, wide))
    low = _core.binary("Less", mantissa, _core.scalar(0.5, wide))
    mantissa = _core.where(high, _core.binary("Mul", mantissa, _core.scalar(0.5, wide)),
                           _core.where(low, _core.binary("Mul", mantissa, _core.scalar(2.0, wide)), mantissa))
    exponent = _core.binary("Add", exponent, _core.binary("Sub", _core.cast(high, _np.float64),
                                                          _core.cast(low, _np.float64)))
    mantissa = _core.binary("CopySign", mantissa, wide)
    mantissa = _core.where(special, wide, mantissa)
    exponent = _core.where(special, _core.scalar(0.0, wide), exponent)
    return _core.cast(mantissa, x.dtype), _core.cast(exponent, _np.int32)


gcd = ufunc("gcd", 2, 1, lambda a, b: _core.binary("Gcd", a, b), identity=0)
lcm = ufunc("lcm", 2, 1, lambda a, b: _core.binary("Lcm", a, b))
nextafter = ufunc("nextafter", 2, 1, lambda a, b: _core.binary("NextAfter", a, b))
spacing = ufunc("spacing", 1, 1, _spacing)
frexp = ufunc("frexp", 1, 2, _frexp)


def i0(x):
    """Modified Bessel function of the first kind, order 0: the power series up to |x| = 30 and
    the asymptotic expansion beyond (both accurate to a few ulp in float64)."""
    v = asvar(x)
    result_dtype = v.dtype if v.dtype.kind == "f" else _np.dtype(_np.float64)
    v = _core.cast(v, _np.float64) if v.dtype != _np.float64 else v
    a = _core.unary("Abs", v)
    # Series: sum over k of ((x/2)^2)^k / (k!)^2, every term positive.
    quarter_square = _core.binary("Mul", _core.binary("Mul", a, a), _core.scalar(0.25, a))
    term = series = _core.broadcast_to(_core.scalar(1.0, a), tuple(a.shape))
    for k in range(1, 90):
        term = _core.binary("Mul", term, _core.binary("Mul", quarter_square, _core.scalar(1.0 / (k * k), a)))
        series = _core.binary("Add", series, term)
    # Asymptotic: e^x / sqrt(2 pi x) * sum over k of prod_{j<=k} (2j-1)^2 / (8 j x).
    big = _core.binary("Maximum", a, _core.scalar(30.0, a))
    inverse = _core.unary("Reciprocal", _core.binary("Mul", big, _core.scalar(8.0, a)))
    term = tail = _core.broadcast_to(_core.scalar(1.0, a), tuple(a.shape))
    for j in range(1, 40):
        term = _core.binary("Mul", term, _core.binary("Mul", inverse, _core.scalar(float((2 * j - 1) ** 2) / j, a)))
        tail = _core.binary("Add", tail, term)
    # e^x split in two halves so that it stays finite as long as the result does.
    half = _core.unary("Exp", _core.binary("Mul", big, _core.scalar(0.5, a)))
    asymptotic = _core.binary("Mul", _core.binary("Mul", half, _core.binary(
        "Div", tail, _core.unary("Sqrt", _core.binary("Mul", big, _core.scalar(2 * _math.pi, a))))), half)
    result = _core.where(_core.binary("LessEqual", a, _core.scalar(30.0, a)), series, asymptotic)
    return result if result_dtype == result.dtype else _core.cast(result, result_dtype)


def _bit_weights(bitorder, dtype):
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    weights = 1 << _np.arange(8, dtype=_np.int64)
    return (weights[::-1] if bitorder == "big" else weights).astype(dtype)


def packbits(a, /, axis=None, bitorder="big"):
    """Packs the truth of each element into the bits of uint8, eight per byte (zero padded)."""
    v = asvar(a)
    if v.dtype.kind not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    v = _core.reshape(v, (-1,)) if axis is None else v
    axis = normalize_axis(0 if axis is None else axis, v.ndim)
    n = v.shape[axis]
    bits = _core.cast(_core.binary("NotEqual", v, _core.scalar(0, v)), _np.int64)
    if n % 8:
        pads = [[0, 0] for _ in range(v.ndim)]
        pads[axis][1] = 8 - n % 8
        bits = _core.pad(bits, pads, "constant", _core.scalar(0, bits))
    groups = bits.shape[axis] // 8
    shape = tuple(bits.shape[:axis]) + (groups, 8) + tuple(bits.shape[axis + 1:])
    weights = _bit_weights(bitorder, _np.int64).reshape((8,) + (1,) * (v.ndim - axis - 1))
    packed = _core.reduce("sum", _core.binary("Mul", _core.reshape(bits, shape),
                                              _core.const(weights, None, "NCHW")), [axis + 1], False)
    return _core.cast(packed, _np.uint8)


def unpackbits(a, /, axis=None, count=None, bitorder="big"):
    """The bits of uint8 elements as 0/1 uint8 values, eight per byte."""
    v = asvar(a)
    if v.dtype != _np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    v = _core.reshape(v, (-1,)) if axis is None else v
    axis = normalize_axis(0 if axis is None else axis, v.ndim)
    wide = _core.cast(v, _np.int64)
    expanded = _core.reshape(wide, tuple(v.shape[:axis + 1]) + (1,) + tuple(v.shape[axis + 1:]))
    weights = _bit_weights(bitorder, _np.int64).reshape((8,) + (1,) * (v.ndim - axis - 1))
    bits = _core.binary("NotEqual", _core.binary("BitwiseAnd", expanded, _core.const(weights, None, "NCHW")),
                        _core.scalar(0, expanded))
    shape = list(v.shape)
    shape[axis] *= 8
    bits = _core.cast(_core.reshape(bits, tuple(shape)), _np.uint8)
    if count is not None:
        total = shape[axis]
        if count < 0 and -count > total:
            raise ValueError("-count larger than number of elements")
        keep = count if count >= 0 else total + count
        index = [slice(None)] * v.ndim
        index[axis] = slice(0, min(keep, total))
        bits = bits[tuple(index)]
        if keep > total:
            zeros_shape = list(shape)
            zeros_shape[axis] = keep - total
            zeros = _core.const(_np.zeros(zeros_shape, _np.uint8), None, "NCHW")
            bits = _core.concat([bits, zeros], axis)
    return bits


def binary_repr(num, width=None):
    """The binary string of an integer; negative numbers in two's complement when ``width`` is
    given (ValueError when it is too narrow, as NumPy)."""
    num = int(num.item() if isinstance(num, Var) else num)
    if num >= 0:
        text = format(num, "b")
        if width is not None and len(text) > width:
            raise ValueError(f"Insufficient bit width={width} provided for binwidth={len(text)}")
        return text if width is None else text.zfill(width)
    if width is None:
        return "-" + format(-num, "b")
    magnitude_bits = len(format(-num, "b"))
    if -num == 1 << (magnitude_bits - 1):  # -2**k needs no extra bit
        magnitude_bits -= 1
    text = format((1 << (magnitude_bits + 1)) + num, "b")
    if len(text) > width:
        raise ValueError(f"Insufficient bit width={width} provided for binwidth={len(text)}")
    return "1" * (width - len(text)) + text


def base_repr(number, base=2, padding=0):
    if base > 36:
        raise ValueError("Bases greater than 36 not handled in base_repr.")
    if base < 2:
        raise ValueError("Bases less than 2 not handled in base_repr.")
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    number = int(number.item() if isinstance(number, Var) else number)
    n, out = abs(number), []
    while n:
        out.append(digits[n % base])
        n //= base
    text = "0" * padding + "".join(reversed(out))
    return ("-" if number < 0 else "") + (text or "0")


def real_if_close(a, tol=100):
    """mnnpy has no complex dtypes: every array is already real."""
    return asvar(a)


def asscalar(a):
    """The value of a one-element array as a Python scalar (old NumPy's ``asscalar``)."""
    return asvar(a).item()


def fill(a, value):
    """An array shaped and typed like ``a`` with every element ``value``."""
    return _numpy().full_like(a, value)


def asmatrix(data, dtype=None):
    """A 2-D array (mnnpy has no matrix class: MNN.numpy's ``mat`` gives arrays too)."""
    v = asvar(data, dtype)
    if v.ndim > 2:
        raise ValueError("matrix must be 2-dimensional")
    return _core.reshape(v, (1,) * (2 - v.ndim) + tuple(v.shape))


def matrix(data, dtype=None, copy=True):
    return asmatrix(data, dtype)


mat = asmatrix


def bmat(obj, ldict=None, gdict=None):
    if isinstance(obj, str):
        raise TypeError("bmat: string expressions are not supported in mnnpy")
    return _numpy().block(obj)


def repmat(a, m, n):
    """``a`` as a 2-D array repeated m times down and n times across (numpy.matlib.repmat)."""
    return _numpy().tile(asmatrix(a), (m, n))


class broadcast:
    """The broadcast shape of several arrays (NumPy's ``broadcast`` object, without iteration
    over element tuples)."""

    def __init__(self, *args):
        if len(args) > 64:
            raise ValueError("Need at most 64 array objects.")
        shapes = [tuple(a.shape) if isinstance(a, Var) else _np.shape(a) for a in args]
        self.shape = _np.broadcast_shapes(*shapes)
        self.nd = self.ndim = len(self.shape)
        self.size = int(_np.prod(self.shape, dtype=_np.int64))
        self.numiter = len(args)
        self.index = 0


class ndindex:
    """Iterates over the index tuples of an array of ``shape``, last axis fastest."""

    def __init__(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        self._shape = tuple(int(s) for s in shape)

    def __iter__(self):
        return _itertools.product(*(range(s) for s in self._shape))


class ndenumerate:
    """Pairs of (index tuple, value) over an array's elements; the array is computed once."""

    def __init__(self, arr):
        self._values = _np.asarray(asvar(arr))

    def __iter__(self):
        return iter(_np.ndenumerate(self._values))


class flatiter:
    """Iteration over the computed elements of a Var in C order (``Var.flat``)."""

    def __init__(self, var):
        self.base = var

    def __iter__(self):
        return iter(self.base.read().flat)

    def __len__(self):
        return self.base.size

    def __getitem__(self, index):
        return _core.reshape(self.base, (-1,))[index]

    def __array__(self, dtype=None, copy=None):
        return _np.asarray(self.base.read().reshape(-1), dtype=dtype)


Var.flat = property(flatiter)


def nditer(op, flags=None, op_flags=None, op_dtypes=None, order="K", casting="safe", op_axes=None, itershape=None,
           buffersize=0):
    """NumPy's iterator over the computed (read-only) values of the operands."""
    ops = [_np.asarray(asvar(o)) for o in (op if isinstance(op, (list, tuple)) else [op])]
    if op_flags and any("readwrite" in f or "writeonly" in f for f in
                        (op_flags if isinstance(op_flags[0], (list, tuple)) else [op_flags])):
        raise ValueError("nditer: mnnpy arrays are read-only to iterators; compute the new array instead")
    return _np.nditer(ops if isinstance(op, (list, tuple)) else ops[0], flags=flags, op_flags=op_flags,
                      op_dtypes=op_dtypes, order=order, casting=casting, op_axes=op_axes, itershape=itershape,
                      buffersize=buffersize)


def nested_iters(op, axes, **kwargs):
    ops = [_np.asarray(asvar(o)) for o in op]
    return _np.nested_iters(ops, axes, **kwargs)


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at x (NumPy's rules for the ends and period)."""
    npx = _numpy()
    x_v, xp_v, fp_v = asvar(x), asvar(xp), asvar(fp)
    if xp_v.ndim != 1 or fp_v.ndim != 1:
        raise ValueError("object too deep for desired array" if xp_v.ndim > 1 else "object of too small depth for "
                         "desired array")
    if xp_v.shape[0] != fp_v.shape[0]:
        raise ValueError("fp and xp are not of the same length.")
    if xp_v.shape[0] == 0:
        raise ValueError("array of sample points is empty")
    work = _np.dtype(_np.float64)
    x_v, xp_v, fp_v = (_core.cast(v, work) for v in (x_v, xp_v, fp_v))
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(float(period))
        left = right = None
        x_v = npx.mod(x_v, period)
        xp_v = npx.mod(xp_v, period)
        order = npx.argsort(xp_v)
        xp_v, fp_v = npx.take(xp_v, order), npx.take(fp_v, order)
        xp_v = npx.concatenate([xp_v[-1:] - period, xp_v, xp_v[0:1] + period])
        fp_v = npx.concatenate([fp_v[-1:], fp_v, fp_v[0:1]])
    n = xp_v.shape[0]
    j = npx.clip(npx.searchsorted(xp_v, x_v, side="right") - 1, 0, max(n - 2, 0))
    x0, x1 = npx.take(xp_v, j), npx.take(xp_v, npx.minimum(j + 1, n - 1))
    y0, y1 = npx.take(fp_v, j), npx.take(fp_v, npx.minimum(j + 1, n - 1))
    slope = (y1 - y0) / npx.where(x1 == x0, 1.0, x1 - x0)
    y = npx.where(x1 == x0, y0, y0 + slope * (x_v - x0))
    y = npx.where(x_v == x1, y1, y)  # exact at the sample points, as NumPy
    first, last = fp_v[0], fp_v[-1]
    y = npx.where(x_v < xp_v[0], first if left is None else float(left), y)
    y = npx.where(x_v > xp_v[-1], last if right is None else float(right), y)
    y = npx.where(npx.isnan(x_v), float("nan"), y)
    return y


def unwrap(p, discont=None, axis=-1, *, period=2 * _math.pi):
    """Removes jumps larger than ``discont`` by adding multiples of ``period`` (NumPy's rule)."""
    npx = _numpy()
    v = asvar(p)
    axis = normalize_axis(axis, v.ndim)
    discont = period / 2 if discont is None else discont
    diffs = npx.diff(v, axis=axis)
    work = _np.result_type(diffs.dtype, period)
    diffs = _core.cast(diffs, work)
    if work.kind in "iu":  # integer phases and period stay integers, as in NumPy
        high, odd = divmod(int(period), 2)
        ambiguous = odd == 0
    else:
        high, ambiguous = period / 2, True
    wrapped = npx.mod(diffs + high, period) - high
    if ambiguous:  # a jump of exactly half a period keeps its sign
        wrapped = npx.where((wrapped == -high) & (diffs > 0), high, wrapped)
    correction = wrapped - diffs
    correction = npx.where(npx.abs(diffs) < discont, 0, correction)
    index = [slice(None)] * v.ndim
    index[axis] = slice(1, None)
    head = [slice(None)] * v.ndim
    head[axis] = slice(0, 1)
    rest = _core.cast(v, work)[tuple(index)] + npx.cumsum(correction, axis=axis)
    return npx.concatenate([_core.cast(v, work)[tuple(head)], rest], axis=axis)


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """Counts of the rows of ``sample`` [N, D] in a D-dimensional grid of bins."""
    npx = _numpy()
    s = asvar(sample)
    if s.ndim == 1:
        s = _core.reshape(s, (-1, 1))
    n, dims = s.shape
    if isinstance(bins, int) or (not isinstance(bins, (list, tuple)) and _np.ndim(bins) == 0):
        bins = [int(bins)] * dims
    if len(bins) != dims:
        raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    edges, index, counts_shape = [], None, []
    for d in _builtins.range(dims):
        column = s[:, d]
        e = npx.histogram_bin_edges(column, bins[d], range=None if range is None else range[d])
        edges.append(e)
        nb = e.shape[0] - 1
        b = npx.clip(npx.searchsorted(e, column, side="right") - 1, 0, nb - 1)
        inside = (column >= e[0]) & (column <= e[-1])
        index = b if index is None else index * nb + b
        keep = inside if d == 0 else keep & inside
        counts_shape.append(nb)
    total = int(_np.prod(counts_shape))
    w = _core.cast(keep, _np.float64) if weights is None else npx.where(keep, asvar(weights), 0)
    hist = npx.bincount(npx.where(keep, index, 0), weights=w, minlength=total)[:total]
    hist = _core.reshape(hist, tuple(counts_shape))
    if density:
        widths = None
        for d, e in enumerate(edges):
            shape = [1] * dims
            shape[d] = counts_shape[d]
            wd = _core.reshape(npx.diff(e), tuple(shape))
            widths = wd if widths is None else widths * wd
        hist = hist / npx.sum(hist) / widths
    return hist, edges



def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    npx = _numpy()
    hist, edges = histogramdd(npx.stack([asvar(x), asvar(y)], axis=1), bins, range, density, weights)
    return hist, edges[0], edges[1]
