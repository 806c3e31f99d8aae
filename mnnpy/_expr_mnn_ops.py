"""The rest of MNN's ``MNN.expr`` functions, with MNN's names, argument orders and defaults.

Layouts. MNN asks for NC4HW4 inputs in many of these (``prelu``, ``scale``, ``crop``,
``space_to_batch_nd``, ``roi_align`` ...); here they take NCHW and NC4HW4 alike (an NC4HW4 Var
shows NCHW's shape and values, see ``convert``) and NHWC where the op has a channel axis, and
the result keeps the input's layout, as MNN's does. ``channel_shuffle`` returns NC4HW4, as MNN's.

Where MNN 3.6.1 computes something else than its documentation says, these follow the
documented meaning: ``normalize`` with ``channelShared`` uses the single scale for every channel;
``space_to_batch_nd``/``batch_to_space_nd`` pad and crop as TensorFlow's ops; ``svd`` returns a
true decomposition; ``erfinv(+-1)`` is +-inf; ``quant``/``dequant`` compute
``clamp(round(x * scale) + zero)`` and ``(x - zero) * scale``; ``randomuniform`` gives ``dtype``
(MNN gives float32 for double); ``get_inputs_and_outputs`` lists as outputs only the Vars no other
Var of the dict's graph reads; ``detection_post_process`` also runs the regular (per class) NMS;
``reverse_sequence`` accepts length 0 (nothing reversed).
"""
import json as _json

import numpy as _np

from . import _core
from ._core import Var

__all__ = [
    "batch_to_space_nd", "channel_shuffle", "crop", "crop_and_resize", "depth_to_space", "dequant",
    "detection_post_process", "erfinv", "get_inputs_and_outputs", "histogram", "jsonop", "matrix_band_part",
    "normalize", "prelu", "quant", "randomuniform", "raster", "reverse_sequence", "roi_align", "roi_pooling",
    "scale", "scatter_nd", "space_to_batch_nd", "space_to_depth", "svd",
    "eltwise_sum", "eltwise_sub", "eltwise_prod", "eltwise_max",
]

_F32 = _np.dtype(_np.float32)


def _mnp():
    from . import numpy as mnp  # mnnpy.numpy imports mnnpy.expr: import it at call time
    return mnp


# ---------------------------------------------------------------- arguments as MNN reads them
def _var(x, what="x"):
    """A Var from MNN's var_like: Python ints and integer arrays become int32, floats float32."""
    if isinstance(x, Var):
        return x
    try:
        a = _np.asarray(x)
    except Exception:  # ragged lists and the like
        raise TypeError(f"{what} must be a Var, a number or a (nested) list of numbers, got {type(x).__name__}") from None
    if a.dtype.kind in "iu":
        a = a.astype(_np.int32)
    elif a.dtype.kind == "f":
        a = a.astype(_np.float32)
    elif a.dtype.kind != "b":
        raise TypeError(f"{what} must hold numbers, got {a.dtype}")
    return _core.const(a, None, "NCHW")


def _float_var(x, what="x"):
    x = _var(x, what)
    return x if x.dtype == _F32 else _core.cast(x, _F32)


def _values(x, what):
    """The value of a (small) shape-like argument, read now: a number, list, array or Var."""
    if isinstance(x, Var):
        x = x.read()
    return _np.asarray(x)


def _ints(x, what, count=None):
    a = _values(x, what)
    if a.size and a.dtype.kind not in "iub":
        raise TypeError(f"{what} must hold integers, got {a.dtype}")
    values = [int(v) for v in a.reshape(-1)]
    if count is not None and len(values) != count:
        raise ValueError(f"{what} needs {count} values, got {len(values)}")
    return values


def _floats(x, what):
    a = _values(x, what)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{what} must hold numbers, got {a.dtype}")
    return [float(v) for v in a.reshape(-1)]


def _format(x):
    return x.data_format


def _channel_axis(x):
    """The channel axis of x's layout: last for NHWC, 1 otherwise."""
    return x.ndim - 1 if _format(x) == "NHWC" else 1


def _as_nchw(x):
    """x with NCHW axis order (an NHWC Var is transposed), for ops defined on NCHW."""
    return _core.convert(x, "NCHW") if _format(x) == "NHWC" else x


def _tagged(y, fmt):
    """y's values as they are, under the layout tag fmt."""
    return y if y.data_format == fmt else _core.with_format(y, fmt)


def _in_format(y, fmt):
    """y, whose values are in NCHW order, in layout fmt."""
    y = _tagged(y, "NCHW")
    return _core.convert(y, "NHWC") if fmt == "NHWC" else _tagged(y, fmt)


def _per_channel(values, x, what):
    """A float32 Var broadcasting `values` (one, or one per channel) along x's channel axis."""
    values = _floats(values, what)
    axis = _channel_axis(x)
    channels = x.shape[axis]
    if len(values) not in (1, channels):
        raise ValueError(f"{what} needs 1 or {channels} values (the channels of x), got {len(values)}")
    shape = [1] * x.ndim
    shape[axis] = len(values)
    return _core.const(_np.asarray(values, _np.float32).reshape(shape), None, "NCHW")


def _check_rank(x, rank, op):
    if x.ndim != rank:
        raise ValueError(f"{op}: x must be {rank}-D, got shape {tuple(x.shape)}")


# ---------------------------------------------------------------- elementwise with coefficients
def _coefficients(coeff, op):
    coeff = [] if coeff is None else _floats(coeff, f"{op}: coeff")
    if coeff and len(coeff) != 2:
        raise ValueError(f"{op}: coeff needs one coefficient per input (2), or none; got {len(coeff)}")
    return coeff


def _scaled(v, c):
    return v if c == 1.0 else _core.binary("Mul", v, _core.scalar(c, v))


def eltwise_sum(x, y, coeff=[]):  # noqa: B006  (MNN's default: no coefficients)
    """``x + y``, or ``coeff[0] * x + coeff[1] * y`` (MNN's Eltwise SUM)."""
    x, y = _var(x), _var(y)
    coeff = _coefficients(coeff, "eltwise_sum")
    if coeff:
        x, y = _scaled(x, coeff[0]), _scaled(y, coeff[1])
    return _core.binary("Add", x, y)


def eltwise_sub(x, y, coeff=[]):  # noqa: B006
    """``x - y``, or ``coeff[0] * x - coeff[1] * y``."""
    x, y = _var(x), _var(y)
    coeff = _coefficients(coeff, "eltwise_sub")
    if coeff:
        x, y = _scaled(x, coeff[0]), _scaled(y, coeff[1])
    return _core.binary("Sub", x, y)


def _no_coefficients(coeff, op):
    if _coefficients(coeff, op) not in ([], [1.0, 1.0]):
        raise ValueError(f"{op}: coefficients apply to sums and differences only (MNN's Eltwise), got {coeff}")


def eltwise_prod(x, y, coeff=[]):  # noqa: B006
    """``x * y``."""
    _no_coefficients(coeff, "eltwise_prod")
    return _core.binary("Mul", _var(x), _var(y))


def eltwise_max(x, y, coeff=[]):  # noqa: B006
    """``maximum(x, y)``."""
    _no_coefficients(coeff, "eltwise_max")
    return _core.binary("Maximum", _var(x), _var(y))


# ---------------------------------------------------------------- math
def erfinv(x):
    """The inverse error function of float32 ``x`` (integers are cast): +-inf at +-1, NaN beyond."""
    x = _float_var(x)
    mnp = _mnp()
    w64 = _core.cast(x, _np.float64)
    # Giles' approximation (single-precision polynomials in w = -log(1 - x^2)), then two Newton
    # steps on erf(y) = x in float64, which leave float32 rounding as the only error.
    w = mnp.negative(mnp.log(mnp.multiply(mnp.subtract(1.0, w64), mnp.add(1.0, w64))))
    central = mnp.subtract(w, 2.5)
    p = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p = mnp.add(mnp.multiply(p, central), c)
    tail = mnp.subtract(mnp.sqrt(w), 3.0)
    q = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        q = mnp.add(mnp.multiply(q, tail), c)
    y = mnp.multiply(mnp.where(mnp.less(w, 5.0), p, q), w64)
    inside = mnp.less(mnp.abs(w64), 1.0)
    y = mnp.where(inside, y, 0.0)
    for _ in range(2):
        err = mnp.subtract(_core.unary("Erf", y), w64)
        slope = mnp.multiply(2.0 / _np.sqrt(_np.pi), mnp.exp(mnp.negative(mnp.square(y))))
        y = mnp.subtract(y, mnp.where(inside, mnp.divide(err, slope), 0.0))
    edge = mnp.where(mnp.equal(mnp.abs(w64), 1.0), mnp.multiply(w64, _np.inf), _np.nan)
    return _core.cast(mnp.where(inside, y, edge), _F32)


def histogram(x, bin, min, max):  # noqa: A002  (MNN's names)
    """Counts (float32, ``bin`` of them) of x's values in ``bin`` equal bins over [min, max]; the
    last bin includes ``max``; values outside are not counted (NumPy's ``histogram``)."""
    bins = int(bin)
    if bins <= 0:
        raise ValueError(f"histogram: bin must be positive, got {bin}")
    low, high = float(min), float(max)
    if not low < high:
        raise ValueError(f"histogram: min must be smaller than max, got {min} and {max}")
    counts, _ = _mnp().histogram(_var(x), bins, range=(low, high))
    return _core.cast(counts, _F32)


def matrix_band_part(x, num_lower, num_upper):
    """x with the elements outside the band zeroed: of each innermost matrix, ``num_lower``
    subdiagonals and ``num_upper`` superdiagonals are kept (a negative count keeps that whole
    triangle)."""
    x = _var(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_band_part: x must be at least 2-D, got shape {tuple(x.shape)}")
    mnp = _mnp()
    bounds = []
    for value, what in ((num_lower, "num_lower"), (num_upper, "num_upper")):
        v = _var(value, what)
        if v.size != 1 or v.dtype.kind not in "iu":
            raise TypeError(f"matrix_band_part: {what} must be a single integer, got {v.dtype} of shape {tuple(v.shape)}")
        bounds.append(_core.cast(mnp.reshape(v, ()), _np.int64))
    rows = mnp.reshape(mnp.arange(x.shape[-2], dtype=_np.int64), (-1, 1))
    cols = mnp.reshape(mnp.arange(x.shape[-1], dtype=_np.int64), (1, -1))
    lower, upper = bounds
    keep = mnp.logical_and(mnp.logical_or(mnp.less(lower, 0), mnp.less_equal(mnp.subtract(rows, cols), lower)),
                           mnp.logical_or(mnp.less(upper, 0), mnp.less_equal(mnp.subtract(cols, rows), upper)))
    return _core.where(keep, x, _core.scalar(0, x))


def svd(x):
    """``[w, u, vt]`` of a 2-D float32 ``x`` [M, N] with ``x = u @ diag(w) @ vt``: w [N]
    (descending), u [M, N], vt [N, N], as MNN shapes them (for M < N, w ends in N - M zeros
    and u in as many zero columns)."""
    x = _float_var(x)
    if x.ndim != 2:
        raise ValueError(f"svd: x must be a 2-D matrix, got shape {tuple(x.shape)}")
    mnp = _mnp()
    m, n = x.shape
    if m >= n:
        u, w, vt = mnp.linalg.svd(x, full_matrices=False)
        return [w, u, vt]
    u, w, vt = mnp.linalg.svd(x, full_matrices=True)
    w = mnp.concatenate([w, mnp.zeros((n - m,), _F32)])
    u = mnp.concatenate([u, mnp.zeros((m, n - m), _F32)], axis=1)
    return [w, u, vt]


def normalize(x, acrossSpatial, channelShared, eps, scale):  # noqa: N803  (MNN's names)
    """Caffe's Normalize: ``x / sqrt(sum(x^2) + eps) * scale``, the sum over the channels at each
    position, or over channels and positions of each batch item with ``acrossSpatial``; ``scale``
    has one value per channel, or one shared value with ``channelShared``."""
    x = _float_var(x)
    if x.ndim < 2:
        raise ValueError(f"normalize: x must have a batch and a channel axis, got shape {tuple(x.shape)}")
    mnp = _mnp()
    factors = _floats(scale, "normalize: scale")
    if channelShared:
        if len(factors) < 1:
            raise ValueError("normalize: scale needs a value")
        factors = factors[:1]
    elif len(factors) != x.shape[_channel_axis(x)]:
        raise ValueError(f"normalize: scale needs one value per channel ({x.shape[_channel_axis(x)]}), "
                         f"got {len(factors)}")
    axes = tuple(range(1, x.ndim)) if acrossSpatial else (_channel_axis(x),)
    norm = mnp.sqrt(mnp.add(mnp.sum(mnp.square(x), axis=axes, keepdims=True), _np.float32(eps)))
    return _tagged(mnp.multiply(mnp.divide(x, norm), _per_channel(factors, x, "normalize: scale")), _format(x))


def prelu(x, slopes):
    """``x`` where positive, else ``slope * x`` with one slope per channel (or one for all)."""
    x = _float_var(x)
    if x.ndim < 2:
        raise ValueError(f"prelu: x must have a channel axis, got shape {tuple(x.shape)}")
    slope = _per_channel(slopes, x, "prelu: slopes")
    return _core.where(_core.binary("Greater", x, _core.scalar(0, x)), x, _core.binary("Mul", x, slope))


def scale(x, channels, scale, bias):  # noqa: A002
    """``x * scale + bias`` per channel. ``channels`` is x's channel count or, for an NC4HW4 x,
    that count rounded up to 4 as MNN stores it; ``scale`` and ``bias`` give one value per channel
    (values beyond x's channels are the padding's and are ignored)."""
    x = _float_var(x)
    if x.ndim < 2:
        raise ValueError(f"scale: x must have a channel axis, got shape {tuple(x.shape)}")
    actual = x.shape[_channel_axis(x)]
    counts = {actual, -(-actual // 4) * 4} if _format(x) == "NC4HW4" else {actual}
    channels = int(channels)
    if channels not in counts:
        raise ValueError(f"scale: channels is {channels} but x {tuple(x.shape)} ({_format(x)}) has "
                         + " or ".join(str(c) for c in sorted(counts)))
    per_channel = []
    for values, what in ((scale, "scale"), (bias, "bias")):
        values = _floats(values, f"scale: {what}")
        if len(values) not in (actual, channels):
            raise ValueError(f"scale: {what} needs {actual} values (one per channel), got {len(values)}")
        per_channel.append(_per_channel(values[:actual], x, f"scale: {what}"))
    factor, offset = per_channel
    return _core.binary("Add", _core.binary("Mul", x, factor), offset)


def _half_away_from_zero(v):
    mnp = _mnp()
    return mnp.multiply(mnp.sign(v), mnp.floor(mnp.add(mnp.abs(v), 0.5)))


def _quant_scale(scale, x, op):
    s = _float_var(scale, f"{op}: scale")
    if s.size == 1:
        return _core.reshape(s, ())
    if x.ndim < 2 or s.size != x.shape[_channel_axis(x)]:
        raise ValueError(f"{op}: scale needs 1 value or one per channel of x {tuple(x.shape)}, got {s.size}")
    shape = [1] * x.ndim
    shape[_channel_axis(x)] = s.size
    return _core.reshape(s, tuple(shape))


def quant(x, scale, min=-128, max=127, zero=0):  # noqa: A002  (MNN's names)
    """int8 ``clamp(round(x * scale) + zero, min, max)`` (rounding half away from zero, as MNN's
    kernels); ``scale`` has one value, or one per channel."""
    x = _float_var(x)
    low, high, zero = int(min), int(max), int(zero)
    if not -128 <= low < high <= 127:
        raise ValueError(f"quant: need -128 <= min < max <= 127, got min={min}, max={max}")
    mnp = _mnp()
    q = mnp.add(_half_away_from_zero(mnp.multiply(x, _quant_scale(scale, x, "quant"))), _np.float32(zero))
    return _tagged(_core.cast(mnp.clip(q, low, high), _np.int8), _format(x))


def dequant(x, scale, zero):
    """float32 ``(x - zero) * scale`` of integer ``x``; ``scale`` has one value, or one per channel."""
    x = _var(x)
    if x.dtype.kind not in "iu":
        raise TypeError(f"dequant: x must hold integers, got {x.dtype}")
    mnp = _mnp()
    y = mnp.multiply(mnp.subtract(_core.cast(x, _F32), _np.float32(int(zero))), _quant_scale(scale, x, "dequant"))
    return _tagged(y, _format(x))


def randomuniform(shape, dtype=_F32, low=0.0, high=1.0, seed0=0, seed1=1):
    """Uniform values in [low, high) of ``shape`` and ``dtype``: the same seeds give the same
    values (integers: the floor of the uniform draw)."""
    from .numpy.random import _seed_key, _signed64
    dims = _ints(shape, "randomuniform: shape")
    if any(d < 0 for d in dims):
        raise ValueError(f"randomuniform: negative dimension in shape {dims}")
    dt = _np.dtype(dtype)
    low, high = float(low), float(high)
    if not low < high:
        raise ValueError(f"randomuniform: low must be smaller than high, got {low} and {high}")
    key = _signed64(_seed_key([int(seed0) & 0xFFFFFFFFFFFFFFFF, int(seed1) & 0xFFFFFFFFFFFFFFFF]))
    attrs = {"dtype": dt.name, "shape": dims, "seed": key, "stream": 0}
    if dt.kind in "iu":
        first = int(_np.floor(low))
        attrs.update(dist="integers", low=first, span=int(_np.ceil(high)) - first)
    elif dt.kind == "f" and dt.itemsize >= 4:
        attrs.update(dist="uniform", a=low, b=high - low)  # low + (high - low) * [0, 1)
    else:
        raise TypeError(f"randomuniform: dtype must be float, double or an integer type, got {dt}")
    values = _core.op("RandomFill", [], attrs)
    if dt.kind == "f":  # a draw just below 1 can round up to high in the result's precision
        below = _np.nextafter(dt.type(high), dt.type(low))
        values = _core.where(_core.binary("GreaterEqual", values, _core.scalar(high, values)),
                             _core.scalar(below, values), values)
    return values


# ---------------------------------------------------------------- data movement
def _block_op(x, block, op):
    x = _var(x)
    _check_rank(x, 4, op)
    block = int(block)
    if block < 1:
        raise ValueError(f"{op}: the block size must be positive, got {block}")
    return x, block


def depth_to_space(x, axis):
    """Moves channel blocks of ``axis * axis`` into space (TensorFlow's / ONNX DCR order), in x's
    layout (NCHW, NHWC or NC4HW4)."""
    x, b = _block_op(x, axis, "depth_to_space")
    fmt = _format(x)
    v = _as_nchw(x)
    n, c, h, w = v.shape
    if c % (b * b):
        raise ValueError(f"depth_to_space: {c} channels do not split into blocks of {b}x{b}")
    v = _core.transpose(_core.reshape(v, (n, b, b, c // (b * b), h, w)), [0, 3, 4, 1, 5, 2])
    return _in_format(_core.reshape(v, (n, c // (b * b), h * b, w * b)), fmt)


def space_to_depth(x, axis):
    """Moves ``axis x axis`` spatial blocks into channels (the inverse of ``depth_to_space``)."""
    x, b = _block_op(x, axis, "space_to_depth")
    fmt = _format(x)
    v = _as_nchw(x)
    n, c, h, w = v.shape
    if h % b or w % b:
        raise ValueError(f"space_to_depth: height {h} and width {w} must be multiples of the block size {b}")
    v = _core.transpose(_core.reshape(v, (n, c, h // b, b, w // b, b)), [0, 3, 5, 1, 2, 4])
    return _in_format(_core.reshape(v, (n, c * b * b, h // b, w // b)), fmt)


def channel_shuffle(x, axis):
    """Shuffles the channels of x in ``axis`` groups (ShuffleNet's: [g, C/g] -> [C/g, g]);
    the result is NC4HW4, as MNN's."""
    x = _var(x)
    groups = int(axis)
    v = _as_nchw(x)
    if v.ndim < 2:
        raise ValueError(f"channel_shuffle: x must have a channel axis, got shape {tuple(x.shape)}")
    c = v.shape[1]
    if groups < 1 or c % groups:
        raise ValueError(f"channel_shuffle: {c} channels do not split into {groups} groups")
    rest = tuple(v.shape[2:])
    v = _core.reshape(v, (v.shape[0], groups, c // groups) + rest)
    v = _core.transpose(v, [0, 2, 1] + list(range(3, v.ndim)))
    return _tagged(_core.reshape(v, (v.shape[0], c) + rest), "NC4HW4")


def _spatial_pairs(values, count, what, op):
    a = _ints(values, f"{op}: {what}")
    if len(a) != 2 * count:
        raise ValueError(f"{op}: {what} must have shape [{count}, 2], got {len(a)} values")
    return [(a[2 * i], a[2 * i + 1]) for i in range(count)]


def _block_arguments(x, block_shape, op):
    """(x's layout, x in NCHW axis order, the block sizes), checked for the block ops."""
    x = _var(x)
    v = _as_nchw(x)
    blocks = _ints(block_shape, f"{op}: block_shape")
    if not blocks or v.ndim < 2 + len(blocks):
        raise ValueError(f"{op}: {len(blocks)} block sizes do not fit x of shape {tuple(x.shape)}")
    if any(b < 1 for b in blocks):
        raise ValueError(f"{op}: block sizes must be positive, got {blocks}")
    return _format(x), v, blocks


def space_to_batch_nd(x, block_shape, paddings):
    """TensorFlow's SpaceToBatchND over the spatial axes of x (H, W ... in x's layout): pads
    them by ``paddings`` [M, 2], then moves ``block_shape`` [M] blocks into the batch."""
    op = "space_to_batch_nd"
    fmt, v, blocks = _block_arguments(x, block_shape, op)
    m = len(blocks)
    pads = _spatial_pairs(paddings, m, "paddings", op)
    if any(p < 0 for pair in pads for p in pair):
        raise ValueError(f"{op}: paddings must not be negative, got {pads}")
    v = _core.pad(v, [(0, 0), (0, 0)] + pads + [(0, 0)] * (v.ndim - 2 - m), "constant", 0.0)
    n, c = v.shape[:2]
    spatial, rest = v.shape[2:2 + m], tuple(v.shape[2 + m:])
    for size, b in zip(spatial, blocks):
        if size % b:
            raise ValueError(f"{op}: padded spatial size {size} is not a multiple of the block size {b}")
    split = [n, c]
    for size, b in zip(spatial, blocks):
        split += [size // b, b]
    v = _core.reshape(v, tuple(split) + rest)
    block_axes = [3 + 2 * i for i in range(m)]
    outer_axes = [2 + 2 * i for i in range(m)]
    rest_axes = list(range(2 + 2 * m, v.ndim))
    v = _core.transpose(v, block_axes + [0, 1] + outer_axes + rest_axes)
    out = (int(_np.prod(blocks)) * n, c) + tuple(s // b for s, b in zip(spatial, blocks)) + rest
    return _in_format(_core.reshape(v, out), fmt)


def batch_to_space_nd(x, block_shape, crops):
    """TensorFlow's BatchToSpaceND: moves ``block_shape`` [M] blocks of the batch back into the
    spatial axes of x, then crops them by ``crops`` [M, 2] (the inverse of ``space_to_batch_nd``)."""
    op = "batch_to_space_nd"
    fmt, v, blocks = _block_arguments(x, block_shape, op)
    m = len(blocks)
    cut = _spatial_pairs(crops, m, "crops", op)
    total = int(_np.prod(blocks))
    if v.shape[0] % total:
        raise ValueError(f"{op}: batch {v.shape[0]} is not a multiple of the block count {total}")
    n, c = v.shape[0] // total, v.shape[1]
    spatial, rest = v.shape[2:2 + m], tuple(v.shape[2 + m:])
    v = _core.reshape(v, tuple(blocks) + (n, c) + tuple(spatial) + rest)
    perm = [m, m + 1]
    for i in range(m):
        perm += [m + 2 + i, i]
    perm += list(range(2 * m + 2, v.ndim))
    v = _core.transpose(v, perm)
    full = [s * b for s, b in zip(spatial, blocks)]
    v = _core.reshape(v, (n, c) + tuple(full) + rest)
    for (before, after), size in zip(cut, full):
        if before < 0 or after < 0 or before + after > size:
            raise ValueError(f"{op}: crops {cut} do not fit spatial sizes {full}")
    starts = [0, 0] + [b for b, _ in cut] + [0] * len(rest)
    sizes = [n, c] + [s - b - a for (b, a), s in zip(cut, full)] + list(rest)
    return _in_format(_core.slice(v, starts, sizes), fmt)


def crop(x, size, axis, offset):
    """Caffe's Crop of a 4-D ``x``: axes ``axis``..3 cut to the shape of ``size`` (a Var whose
    shape is the target), starting at ``offset`` (one per cropped axis, or one for all)."""
    x = _var(x)
    _check_rank(x, 4, "crop")
    target = size.shape if isinstance(size, Var) else _np.shape(size)
    if len(target) != 4:
        raise ValueError(f"crop: size must be 4-D, got shape {tuple(target)}")
    axis = int(axis)
    if axis not in (2, 3):
        raise ValueError(f"crop: axis must be 2 (crop height and width) or 3 (width only), got {axis}")
    offsets = _ints(offset, "crop: offset")
    if len(offsets) not in (1, 4 - axis):
        raise ValueError(f"crop: offset needs 1 or {4 - axis} values for axis {axis}, got {len(offsets)}")
    fmt = _format(x)
    v = _as_nchw(x)
    starts, sizes = [0] * 4, list(v.shape)
    for k in range(axis, 4):
        start = offsets[0] if len(offsets) == 1 else offsets[k - axis]
        if start < 0 or start + target[k] > v.shape[k]:
            raise ValueError(f"crop: {target[k]} elements from offset {start} do not fit axis {k} of size {v.shape[k]}")
        starts[k], sizes[k] = start, int(target[k])
    return _in_format(_core.slice(v, starts, sizes), fmt)


def reverse_sequence(x, y, batch_dim, seq_dim):
    """For each slice ``b`` along ``batch_dim``, its first ``y[b]`` elements along ``seq_dim``
    reversed (TensorFlow's ReverseSequence)."""
    x = _var(x)
    lengths = _var(y, "y")
    mnp = _mnp()
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
        raise ValueError(f"reverse_sequence: y must be 1-D integers, got {lengths.dtype} of shape {tuple(lengths.shape)}")
    batch_dim, seq_dim = int(batch_dim), int(seq_dim)
    for name, d in (("batch_dim", batch_dim), ("seq_dim", seq_dim)):
        if not 0 <= d < x.ndim:
            raise ValueError(f"reverse_sequence: {name} {d} is out of range for x of {x.ndim} dimensions")
    if batch_dim == seq_dim:
        raise ValueError("reverse_sequence: batch_dim and seq_dim must differ")
    if lengths.shape[0] != x.shape[batch_dim]:
        raise ValueError(f"reverse_sequence: y needs {x.shape[batch_dim]} lengths (x's batch_dim), got {lengths.shape[0]}")
    if not lengths.reads_placeholder:
        known = lengths.read()
        if known.size and (known.min() < 0 or known.max() > x.shape[seq_dim]):
            raise ValueError(f"reverse_sequence: lengths must lie in [0, {x.shape[seq_dim]}], got {known.tolist()}")
    shape = [1] * x.ndim
    shape[batch_dim] = x.shape[batch_dim]
    length = mnp.reshape(_core.cast(lengths, _np.int64), tuple(shape))
    shape = [1] * x.ndim
    shape[seq_dim] = x.shape[seq_dim]
    t = mnp.reshape(mnp.arange(x.shape[seq_dim], dtype=_np.int64), tuple(shape))
    source = mnp.where(mnp.less(t, length), mnp.subtract(mnp.subtract(length, 1), t), t)
    return mnp.take_along_axis(x, mnp.broadcast_to(source, tuple(x.shape)), axis=seq_dim)


def scatter_nd(indices, updates, shape):
    """A Var of ``shape`` (zeros, updates' dtype) with ``updates`` written at ``indices`` [..., k]
    (each row indexes the first k axes); a repeated index keeps the last update, as MNN's."""
    idx = _var(indices, "indices")
    if idx.dtype.kind not in "iu":
        raise TypeError(f"scatter_nd: indices must be integers, got {idx.dtype}")
    upd = _var(updates, "updates")
    dims = tuple(_ints(shape, "scatter_nd: shape"))
    if any(d < 0 for d in dims):
        raise ValueError(f"scatter_nd: negative dimension in shape {dims}")
    if idx.ndim < 1 or not 1 <= idx.shape[-1] <= len(dims):
        raise ValueError(f"scatter_nd: indices {tuple(idx.shape)} must end in an axis of 1 to {len(dims)} entries")
    k = idx.shape[-1]
    expected = tuple(idx.shape[:-1]) + dims[k:]
    if tuple(upd.shape) != expected:
        raise ValueError(f"scatter_nd: updates must have shape {expected}, got {tuple(upd.shape)}")
    mnp = _mnp()
    out = mnp.zeros(dims, upd.dtype)
    columns = tuple(mnp.take(idx, i, axis=-1) for i in range(k))
    out[columns] = upd
    return out


def raster(vars, region, shape):  # noqa: A002  (MNN's names)
    """MNN's region copy: an output of ``shape`` (the first input's dtype, zeros where nothing is
    written) into which each input ``vars[i]`` copies one box, described by 11 integers of
    ``region``: source offset, 3 source strides, destination offset, 3 destination strides and
    the 3 sizes of the box (element offsets and strides of the flattened arrays)."""
    inputs = [_var(v, "vars") for v in vars]
    values = _ints(region, "raster: region")
    if not inputs or len(values) != 11 * len(inputs):
        raise ValueError(f"raster: region needs 11 integers per input ({11 * len(inputs)}), got {len(values)}")
    dims = _ints(shape, "raster: shape")
    flat = []
    for i in range(len(inputs)):
        src, s0, s1, s2, dst, d0, d1, d2, n0, n1, n2 = values[11 * i:11 * (i + 1)]
        flat += [i, 3, src, dst, n0, n1, n2, s0, s1, s2, d0, d1, d2]
    dtype = inputs[0].dtype
    inputs = [v if v.dtype == dtype else _core.cast(v, dtype) for v in inputs]
    return _core.op("Raster", inputs, {"shape": dims, "regions": flat, "fill": 0.0})


# ---------------------------------------------------------------- sampling
def _gather_pixels(image, batch, ys, xs):
    """image [N, H, W, C] values at integer (batch, ys, xs) (broadcast together): [..., C]."""
    mnp = _mnp()
    n, h, w, c = image.shape
    flat = _core.reshape(image, (n * h * w, c))
    index = mnp.add(mnp.multiply(mnp.add(mnp.multiply(batch, h), ys), w), xs)
    return _core.gather(flat, index, 0)


def _bilinear(image, batch, y, x):
    """Bilinear samples of image [N, H, W, C] at float (y, x) inside [0, H-1] x [0, W-1]
    (broadcast with batch): [..., C]."""
    mnp = _mnp()
    h, w = image.shape[1:3]
    y0 = mnp.clip(mnp.floor(y), 0, h - 1)
    x0 = mnp.clip(mnp.floor(x), 0, w - 1)
    y1, x1 = mnp.minimum(mnp.add(y0, 1), h - 1), mnp.minimum(mnp.add(x0, 1), w - 1)
    dy, dx = mnp.subtract(y, y0), mnp.subtract(x, x0)
    corners = [(y0, x0, (1, 1)), (y0, x1, (1, 0)), (y1, x0, (0, 1)), (y1, x1, (0, 0))]
    total = None
    for yy, xx, (fy, fx) in corners:
        wy = mnp.subtract(1.0, dy) if fy else dy
        wx = mnp.subtract(1.0, dx) if fx else dx
        v = _gather_pixels(image, batch, _core.cast(yy, _np.int64), _core.cast(xx, _np.int64))
        term = mnp.multiply(v, mnp.expand_dims(mnp.multiply(wy, wx), -1))
        total = term if total is None else mnp.add(total, term)
    return total


def _nhwc(x):
    """x's values with channels last, whatever its layout."""
    return x if _format(x) == "NHWC" else _core.transpose(x, [0, 2, 3, 1])


def crop_and_resize(x, boxes, box_ind, crop_size, method="BILINEAR", extrapolation_value=0.0):
    """TensorFlow's CropAndResize: for each box [y1, x1, y2, x2] (normalized) of ``boxes`` [B, 4]
    on image ``box_ind[b]`` of x, a ``crop_size`` [h, w] resampling (BILINEAR or NEAREST);
    samples outside the image take ``extrapolation_value``. x NHWC gives [B, h, w, C] (MNN's
    layout); an NCHW (or NC4HW4) x gives [B, C, h, w] in its layout."""
    op = "crop_and_resize"
    x = _float_var(x)
    _check_rank(x, 4, op)
    mnp = _mnp()
    image = _nhwc(x)
    n, h, w = image.shape[:3]
    b = _float_var(boxes, "boxes")
    if b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"{op}: boxes must have shape [num_boxes, 4], got {tuple(b.shape)}")
    ind = _var(box_ind, "box_ind")
    if ind.dtype.kind not in "iu" or tuple(ind.shape) != (b.shape[0],):
        raise ValueError(f"{op}: box_ind must be {b.shape[0]} integers, got {ind.dtype} of shape {tuple(ind.shape)}")
    if not ind.reads_placeholder:
        known = ind.read()
        if known.size and (known.min() < 0 or known.max() >= n):
            raise ValueError(f"{op}: box_ind values must lie in [0, {n}), got {known.tolist()}")
    ch, cw = _ints(crop_size, f"{op}: crop_size", 2)
    if ch < 1 or cw < 1:
        raise ValueError(f"{op}: crop_size must be positive, got {[ch, cw]}")
    name = str(getattr(method, "name", method)).upper()
    if name not in ("BILINEAR", "NEAREST"):
        raise ValueError(f"{op}: method must be BILINEAR or NEAREST, got {method!r}")

    def coords(lo, hi, count, size):  # [B, count]
        lo, hi = mnp.expand_dims(lo, 1), mnp.expand_dims(hi, 1)
        if count > 1:
            steps = mnp.reshape(mnp.arange(count, dtype=_F32), (1, count))
            return mnp.add(mnp.multiply(lo, size - 1), mnp.multiply(steps, mnp.multiply(mnp.subtract(hi, lo),
                                                                                         (size - 1) / (count - 1))))
        return mnp.multiply(mnp.add(lo, hi), 0.5 * (size - 1))

    cols = [mnp.take(b, i, axis=1) for i in range(4)]
    ys = mnp.expand_dims(coords(cols[0], cols[2], ch, h), 2)  # [B, ch, 1]
    xs = mnp.expand_dims(coords(cols[1], cols[3], cw, w), 1)  # [B, 1, cw]
    batch = mnp.reshape(_core.cast(ind, _np.int64), (-1, 1, 1))
    inside = mnp.logical_and(mnp.logical_and(mnp.greater_equal(ys, 0), mnp.less_equal(ys, h - 1)),
                             mnp.logical_and(mnp.greater_equal(xs, 0), mnp.less_equal(xs, w - 1)))
    if name == "NEAREST":
        yi = mnp.clip(_half_away_from_zero(ys), 0, h - 1)
        xi = mnp.clip(_half_away_from_zero(xs), 0, w - 1)
        values = _gather_pixels(image, batch, _core.cast(yi, _np.int64), _core.cast(xi, _np.int64))
    else:
        values = _bilinear(image, batch, mnp.clip(ys, 0, h - 1), mnp.clip(xs, 0, w - 1))
    out = mnp.where(mnp.expand_dims(inside, -1), values, _np.float32(extrapolation_value))
    out = _core.cast(out, _F32)
    if _format(x) == "NHWC":
        return _tagged(out, "NHWC")
    return _in_format(_core.transpose(out, [0, 3, 1, 2]), _format(x))


def _rois(roi, image_count, op):
    r = _float_var(roi, "roi")
    if r.ndim != 2 or r.shape[1] != 5:
        raise ValueError(f"{op}: roi must have shape [num_rois, 5] (batch index, x1, y1, x2, y2), got {tuple(r.shape)}")
    known = r.read()
    if known.size and (known[:, 0].min() < 0 or known[:, 0].max() >= image_count):
        raise ValueError(f"{op}: roi batch indices must lie in [0, {image_count}), got {known[:, 0].tolist()}")
    return r, known


def _roi_input(x, op):
    x = _float_var(x)
    _check_rank(x, 4, op)
    return x, _nhwc(x)


def _pool_mode(mode):
    name = str(getattr(mode, "name", mode)).upper()
    if name not in ("AVEPOOL", "MAXPOOL"):
        raise ValueError(f"roi_align: pooling_mode must be AVEPOOL or MAXPOOL, got {mode!r}")
    return name


def _backward(forward, x, output_grad, backward_diff, op):
    """The forward result, or with ``output_grad`` the gradient of it for x given backward_diff."""
    y = forward(x)
    if not output_grad:
        return _in_format(y, _format(x))
    if backward_diff is None:
        raise ValueError(f"{op}: output_grad needs backward_diff, the gradient of the output")
    diff = _float_var(backward_diff, "backward_diff")
    if tuple(diff.shape) != tuple(y.shape):
        raise ValueError(f"{op}: backward_diff must have the output's shape {tuple(y.shape)}, got {tuple(diff.shape)}")
    from ._expr_grad import grad
    return _in_format(grad([y], [x], [_core.convert(diff, "NCHW")])[0], _format(x))


def roi_align(input, roi, pooled_height, pooled_width, spatial_scale, sampling_ratio, aligned, pooling_mode,  # noqa: A002
              output_grad=False, backward_diff=None):
    """RoIAlign (Mask R-CNN, as torchvision's ``roi_align``) of a 4-D ``input`` over ``roi``
    [K, 5] rows (batch index, x1, y1, x2, y2 in input coordinates / spatial_scale): [K, C,
    pooled_height, pooled_width] averages (AVEPOOL) or maxima (MAXPOOL) of bilinear samples,
    ``sampling_ratio`` per bin side (adaptive when <= 0), pixel centres shifted by half with
    ``aligned``. With ``output_grad``, the gradient for ``input`` given ``backward_diff``."""
    op = "roi_align"
    x, image = _roi_input(input, op)
    n, h, w, c = image.shape
    r, known = _rois(roi, n, op)
    ph, pw = int(pooled_height), int(pooled_width)
    if ph < 1 or pw < 1:
        raise ValueError(f"{op}: pooled sizes must be positive, got {ph} x {pw}")
    mode = _pool_mode(pooling_mode)
    ratio, scale_, offset = int(sampling_ratio), float(spatial_scale), 0.5 if aligned else 0.0
    mnp = _mnp()
    k = r.shape[0]
    # Samples per bin side: fixed, or ceil(roi size / pooled size) per roi (the largest sets the grid).
    sizes = (known[:, 3:5] - known[:, 1:3]) * scale_
    if not aligned:
        sizes = _np.maximum(sizes, 1.0)
    if ratio > 0:
        grid_w = grid_h = None
        gh = gw = ratio
    else:
        grid_w = _np.maximum(_np.ceil(sizes[:, 0] / pw), 1).astype(_np.float32)
        grid_h = _np.maximum(_np.ceil(sizes[:, 1] / ph), 1).astype(_np.float32)
        gh, gw = (int(grid_h.max()), int(grid_w.max())) if k else (1, 1)

    def forward(x_in):
        img = _nhwc(x_in)
        cols = [mnp.take(r, i, axis=1) for i in range(5)]
        x1, y1 = mnp.subtract(mnp.multiply(cols[1], scale_), offset), mnp.subtract(mnp.multiply(cols[2], scale_), offset)
        rw = mnp.subtract(mnp.subtract(mnp.multiply(cols[3], scale_), offset), x1)
        rh = mnp.subtract(mnp.subtract(mnp.multiply(cols[4], scale_), offset), y1)
        if not aligned:
            rw, rh = mnp.maximum(rw, 1.0), mnp.maximum(rh, 1.0)
        cnt_h = _core.const(grid_h, None, "NCHW") if grid_h is not None else _np.float32(gh)
        cnt_w = _core.const(grid_w, None, "NCHW") if grid_w is not None else _np.float32(gw)

        def samples(start, length, pooled, count, grid):  # [K, pooled, grid]
            bin_ = mnp.reshape(mnp.divide(length, pooled), (-1, 1, 1))
            cells = mnp.reshape(mnp.arange(pooled, dtype=_F32), (1, -1, 1))
            steps = mnp.reshape(mnp.add(mnp.arange(grid, dtype=_F32), 0.5), (1, 1, -1))
            per = count if not isinstance(count, Var) else mnp.reshape(count, (-1, 1, 1))
            pos = mnp.add(mnp.reshape(start, (-1, 1, 1)),
                          mnp.add(mnp.multiply(cells, bin_), mnp.divide(mnp.multiply(steps, bin_), per)))
            valid = mnp.less(steps, per)
            return pos, valid

        ys, vy = samples(y1, rh, ph, cnt_h, gh)
        xs, vx = samples(x1, rw, pw, cnt_w, gw)
        Y = mnp.reshape(ys, (k, ph, gh, 1, 1))
        X = mnp.reshape(xs, (k, 1, 1, pw, gw))
        valid = mnp.logical_and(mnp.reshape(vy, (k if grid_h is not None else 1, 1, gh, 1, 1)),
                                mnp.reshape(vx, (k if grid_w is not None else 1, 1, 1, 1, gw)))
        # torchvision's rule: samples beyond one pixel outside the image count as zero.
        outside = mnp.logical_or(mnp.logical_or(mnp.less(Y, -1.0), mnp.greater(Y, float(h))),
                                 mnp.logical_or(mnp.less(X, -1.0), mnp.greater(X, float(w))))
        batch = mnp.reshape(_core.cast(cols[0], _np.int64), (k, 1, 1, 1, 1))
        v = _bilinear(img, batch, mnp.clip(Y, 0, h - 1), mnp.clip(X, 0, w - 1))  # [K, ph, gh, pw, gw, C]
        v = mnp.where(mnp.expand_dims(outside, -1), 0.0, v)
        if mode == "AVEPOOL":
            v = mnp.where(mnp.expand_dims(valid, -1), v, 0.0)
            per = mnp.reshape(mnp.multiply(cnt_h, cnt_w), (-1, 1, 1, 1)) if grid_h is not None else float(gh * gw)
            pooled = mnp.divide(mnp.sum(v, axis=(2, 4)), per)
        else:
            v = mnp.where(mnp.expand_dims(valid, -1), v, -_np.inf)
            pooled = mnp.max(v, axis=(2, 4))
        return _core.cast(mnp.transpose(pooled, (0, 3, 1, 2)), _F32)

    if k == 0:
        return _in_format(mnp.zeros((0, c, ph, pw), _F32), _format(x))
    return _backward(forward, _as_nchw(x), output_grad, backward_diff, op)


def roi_pooling(input, roi, pooled_height, pooled_width, spatial_scale, output_grad=False,  # noqa: A002
                backward_diff=None):
    """RoIPool (Fast R-CNN, as torchvision's ``roi_pool``): the maximum of each of
    pooled_height x pooled_width bins of each roi [batch index, x1, y1, x2, y2] (rounded to
    pixels after ``spatial_scale``); empty bins give 0. With ``output_grad``, the gradient for
    ``input`` given ``backward_diff``."""
    op = "roi_pooling"
    x, image = _roi_input(input, op)
    n, h, w, c = image.shape
    r, known = _rois(roi, n, op)
    ph, pw = int(pooled_height), int(pooled_width)
    if ph < 1 or pw < 1:
        raise ValueError(f"{op}: pooled sizes must be positive, got {ph} x {pw}")
    scale_ = float(spatial_scale)
    mnp = _mnp()
    k = r.shape[0]
    if k == 0:
        return _in_format(mnp.zeros((0, c, ph, pw), _F32), _format(x))
    # The widest bin over all rois sets how many pixels each bin reads (the rest are masked).
    corners = _np.sign(known[:, 1:] * scale_) * _np.floor(_np.abs(known[:, 1:] * scale_) + 0.5)
    extent = _np.maximum(corners[:, 2:] - corners[:, :2] + 1, 1)
    th = int(min(_np.ceil(extent[:, 1] / ph).max() + 1, h))
    tw = int(min(_np.ceil(extent[:, 0] / pw).max() + 1, w))

    def forward(x_in):
        img = _nhwc(x_in)
        cols = [mnp.take(r, i, axis=1) for i in range(5)]
        start = [_half_away_from_zero(mnp.multiply(cols[i], scale_)) for i in (1, 2, 3, 4)]
        rw = mnp.maximum(mnp.add(mnp.subtract(start[2], start[0]), 1.0), 1.0)
        rh = mnp.maximum(mnp.add(mnp.subtract(start[3], start[1]), 1.0), 1.0)

        def bins(origin, length, pooled, size, taps):  # first pixel [K, pooled, 1], taps [K, pooled, taps], valid
            cells = mnp.reshape(mnp.arange(pooled, dtype=_F32), (1, -1))
            bin_ = mnp.reshape(mnp.divide(length, pooled), (-1, 1))
            org = mnp.reshape(origin, (-1, 1))
            lo = mnp.clip(mnp.add(mnp.floor(mnp.multiply(cells, bin_)), org), 0, size)
            hi = mnp.clip(mnp.add(mnp.ceil(mnp.multiply(mnp.add(cells, 1.0), bin_)), org), 0, size)
            t = mnp.reshape(mnp.arange(taps, dtype=_F32), (1, 1, -1))
            pos = mnp.add(mnp.expand_dims(lo, -1), t)
            valid = mnp.less(pos, mnp.expand_dims(hi, -1))
            return mnp.clip(pos, 0, size - 1), valid, mnp.greater(hi, lo)

        ys, vy, ny = bins(start[1], rh, ph, h, th)
        xs, vx, nx = bins(start[0], rw, pw, w, tw)
        Y = mnp.reshape(ys, (k, ph, th, 1, 1))
        X = mnp.reshape(xs, (k, 1, 1, pw, tw))
        valid = mnp.logical_and(mnp.reshape(vy, (k, ph, th, 1, 1)), mnp.reshape(vx, (k, 1, 1, pw, tw)))
        batch = mnp.reshape(_core.cast(cols[0], _np.int64), (k, 1, 1, 1, 1))
        v = _gather_pixels(img, batch, _core.cast(Y, _np.int64), _core.cast(X, _np.int64))
        v = mnp.max(mnp.where(mnp.expand_dims(valid, -1), v, -_np.inf), axis=(2, 4))  # [K, ph, pw, C]
        nonempty = mnp.logical_and(mnp.reshape(ny, (k, ph, 1, 1)), mnp.reshape(nx, (k, 1, pw, 1)))
        v = mnp.where(nonempty, v, 0.0)
        return _core.cast(mnp.transpose(v, (0, 3, 1, 2)), _F32)

    return _backward(forward, _as_nchw(x), output_grad, backward_diff, op)


# ---------------------------------------------------------------- detection
def detection_post_process(encode_boxes, class_predictions, anchors, num_classes, max_detections,
                           max_class_per_detection, detections_per_class, nms_threshold, iou_threshold,
                           use_regular_nms, centersize_encoding):
    """SSD post-processing (TFLite's Detection_PostProcess): decodes ``encode_boxes`` [1, A, 4]
    (ty, tx, th, tw) against ``anchors`` [A, 4] (y, x, h, w centres and sizes) with the
    ``centersize_encoding`` scales [y, x, h, w], then keeps boxes by non-maximum suppression
    (IoU above ``iou_threshold`` suppresses; scores must reach ``nms_threshold``): across
    classes on each box's best classes (fast), or per class with ``use_regular_nms``.
    ``class_predictions`` [1, A, num_classes (+ 1 background, first)]. Returns
    [boxes [1, D, 4] (ymin, xmin, ymax, xmax), classes [1, D], scores [1, D], count [1]], all
    float32, D = max_detections * max_class_per_detection (fast) or max_detections (regular),
    unused rows zero."""
    op = "detection_post_process"
    enc = _float_var(encode_boxes, "encode_boxes").read()
    scores = _float_var(class_predictions, "class_predictions").read()
    anc = _float_var(anchors, "anchors").read()
    if enc.ndim != 3 or enc.shape[0] != 1 or enc.shape[2] != 4:
        raise ValueError(f"{op}: encode_boxes must have shape [1, num_anchors, 4], got {enc.shape}")
    count = enc.shape[1]
    if anc.shape != (count, 4):
        raise ValueError(f"{op}: anchors must have shape [{count}, 4], got {anc.shape}")
    num_classes = int(num_classes)
    if scores.ndim != 3 or scores.shape[:2] != (1, count) or scores.shape[2] not in (num_classes, num_classes + 1):
        raise ValueError(f"{op}: class_predictions must have shape [1, {count}, {num_classes} or {num_classes + 1}], "
                         f"got {scores.shape}")
    factors = _floats(centersize_encoding, f"{op}: centersize_encoding")
    if len(factors) != 4 or min(factors) <= 0:
        raise ValueError(f"{op}: centersize_encoding needs 4 positive scales (y, x, h, w), got {factors}")
    max_det, per_box, per_class = int(max_detections), int(max_class_per_detection), int(detections_per_class)
    if max_det < 0 or per_box < 1 or per_class < 0:
        raise ValueError(f"{op}: max_detections, max_class_per_detection and detections_per_class must be "
                         f"non-negative (max_class_per_detection positive)")
    mnp = _mnp()
    # Decoding on the graph: centre offsets scale with the anchor size, sizes are exponents.
    e, a = mnp.asarray(enc[0]), mnp.asarray(anc)
    centre = mnp.add(mnp.multiply(mnp.divide(e[:, 0:2], _np.asarray(factors[:2], _np.float32)), a[:, 2:4]), a[:, 0:2])
    size = mnp.multiply(mnp.exp(mnp.divide(e[:, 2:4], _np.asarray(factors[2:], _np.float32))), a[:, 2:4])
    half = mnp.multiply(size, 0.5)
    boxes = mnp.concatenate([mnp.subtract(centre, half), mnp.add(centre, half)], axis=1)  # [A, 4]
    class_scores = mnp.asarray(scores[0, :, scores.shape[2] - num_classes:])  # [A, classes]
    from ._expr_sort import _non_max_suppression_onnx
    threshold, iou = float(nms_threshold), float(iou_threshold)
    # A score equal to the threshold is kept (TFLite's >=): ONNX's threshold keeps only greater ones.
    below = float(_np.nextafter(_np.float32(threshold), _np.float32(-_np.inf)))
    if use_regular_nms:
        picked = _non_max_suppression_onnx(mnp.expand_dims(boxes, 0), mnp.expand_dims(mnp.transpose(class_scores), 0),
                                           per_class, iou, below)
        anchor_idx, class_idx = picked[:, 2], picked[:, 1]
        rows = 0 if not len(anchor_idx) else min(max_det, len(anchor_idx))
        width = max_det
    else:
        best = mnp.max(class_scores, axis=1)
        picked = _non_max_suppression_onnx(mnp.reshape(boxes, (1, count, 4)), mnp.reshape(best, (1, 1, count)),
                                           max_det, iou, below)
        chosen = picked[:, 2]
        k = min(per_box, num_classes)
        top = mnp.argsort(mnp.negative(class_scores), axis=1, stable=True)[:, :k].read()  # best classes first
        anchor_idx = _np.repeat(chosen, k)
        class_idx = top[chosen].reshape(-1)
        rows = len(anchor_idx)
        width = max_det * per_box
    anchor_idx = _np.asarray(anchor_idx, _np.int64)
    class_idx = _np.asarray(class_idx, _np.int64)
    flat_scores = mnp.reshape(class_scores, (-1,))
    picked_scores = _core.gather(flat_scores, mnp.asarray(anchor_idx * num_classes + class_idx), 0)
    if use_regular_nms:
        order = mnp.argsort(mnp.negative(picked_scores), stable=True)[:rows].read()
        anchor_idx, class_idx = anchor_idx[order], class_idx[order]
        picked_scores = _core.gather(picked_scores, mnp.asarray(order), 0)
    pad = width - rows
    out_boxes = mnp.pad(_core.gather(boxes, mnp.asarray(anchor_idx), 0), ((0, pad), (0, 0)))
    out_classes = mnp.pad(mnp.asarray(class_idx.astype(_np.float32)), (0, pad))
    out_scores = mnp.pad(picked_scores, (0, pad))
    return [_core.cast(mnp.reshape(out_boxes, (1, width, 4)), _F32), _core.cast(mnp.reshape(out_classes, (1, width)), _F32),
            _core.cast(mnp.reshape(out_scores, (1, width)), _F32), _core.const(_np.asarray([rows], _np.float32), None, "NCHW")]


# ---------------------------------------------------------------- graphs
def get_inputs_and_outputs(var_dict):
    """``(inputs, outputs)`` of the graph of ``var_dict`` (name -> Var, as ``load_as_dict``
    gives): the placeholders among its Vars, and the Vars no other Var of the graph reads;
    both as dicts keyed by the Vars' names (the dict's keys for unnamed Vars)."""
    if not isinstance(var_dict, dict):
        raise TypeError(f"get_inputs_and_outputs: expected a dict of name -> Var, got {type(var_dict).__name__}")
    for key, v in var_dict.items():
        if not isinstance(v, Var):
            raise TypeError(f"get_inputs_and_outputs: {key!r} is a {type(v).__name__}, not a Var")
    read, seen = set(), set()
    pending = list(var_dict.values())
    while pending:  # every node the dict's Vars reach, once
        v = pending.pop()
        if v.node_id in seen:
            continue
        seen.add(v.node_id)
        for source in v.inputs:
            read.add((source.node_id, source.output_index))
            pending.append(source)
    inputs, outputs = {}, {}
    for key, v in var_dict.items():
        name = v.name or key
        if v.is_placeholder:
            inputs[name] = v
        if (v.node_id, v.output_index) not in read:
            outputs[name] = v
    return inputs, outputs


_BINARY_JSON = {
    "ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div", "REALDIV": "Div", "POW": "Pow", "MINIMUM": "Minimum",
    "MAXIMUM": "Maximum", "GREATER": "Greater", "GREATER_EQUAL": "GreaterEqual", "LESS": "Less",
    "LESS_EQUAL": "LessEqual", "EQUAL": "Equal", "NOTEQUAL": "NotEqual", "FLOORDIV": "FloorDiv",
    "FLOORMOD": "Mod", "MOD": "Fmod", "SquaredDifference": "SquaredDifference", "ATAN2": "Atan2",
    "LOGICALOR": "LogicalOr", "LOGICALXOR": "LogicalXor", "BITWISE_AND": "BitwiseAnd", "BITWISE_OR": "BitwiseOr",
    "BITWISE_XOR": "BitwiseXor", "LEFTSHIFT": "LeftShift", "RIGHTSHIFT": "RightShift",
}
_UNARY_JSON = {
    "ABS": "Abs", "NEG": "Neg", "FLOOR": "Floor", "CEIL": "Ceil", "SQUARE": "Square", "SQRT": "Sqrt", "RSQRT": "Rsqrt",
    "EXP": "Exp", "LOG": "Log", "SIN": "Sin", "COS": "Cos", "TAN": "Tan", "ASIN": "Asin", "ACOS": "Acos", "ATAN": "Atan",
    "RECIPROCAL": "Reciprocal", "LOG1P": "Log1p", "ACOSH": "Acosh", "SINH": "Sinh", "ASINH": "Asinh", "ATANH": "Atanh",
    "SIGN": "Sign", "ROUND": "Round", "COSH": "Cosh", "ERF": "Erf", "ERFC": "Erfc", "EXPM1": "Expm1",
    "SIGMOID": "Sigmoid", "TANH": "Tanh", "GELU": "GeluTanh", "GELU_STANDARD": "Gelu",
}
_JSON_DTYPES = {"DT_FLOAT": _np.float32, "DT_DOUBLE": _np.float64, "DT_INT32": _np.int32, "DT_INT64": _np.int64,
                "DT_UINT8": _np.uint8, "DT_INT8": _np.int8, "DT_BOOL": _np.bool_, "DT_INT16": _np.int16}


def _json_op(kind, main, ins):
    """The Vars an MNN op description computes (type, its parameters ``main``, the inputs)."""
    from . import expr as F

    def need(count):
        if len(ins) != count:
            raise ValueError(f"jsonop: {kind} takes {count} input(s), got {len(ins)}")

    def enum(table, key, default=None):
        name = main.get(key, default)
        if name not in table:
            raise ValueError(f"jsonop: {kind} has no {key} {name!r}; known: {sorted(table)}")
        return table[name]

    if kind == "BinaryOp":
        need(2)
        return [_core.binary(enum(_BINARY_JSON, "opType", "ADD"), ins[0], ins[1])]
    if kind == "UnaryOp":
        need(1)
        name = main.get("opType", "ABS")
        if name == "ERFINV":
            return [erfinv(ins[0])]
        return [_core.unary(enum(_UNARY_JSON, "opType", "ABS"), ins[0])]
    if kind in ("ReLU", "Relu"):
        need(1)
        return [F.relu(ins[0], float(main.get("slope", 0.0)))]
    if kind == "ReLU6":
        need(1)
        return [F.relu6(ins[0], float(main.get("minValue", 0.0)), float(main.get("maxValue", 6.0)))]
    if kind == "Sigmoid":
        need(1)
        return [_core.unary("Sigmoid", ins[0])]
    if kind == "TanH":
        need(1)
        return [_core.unary("Tanh", ins[0])]
    if kind == "Softmax":
        need(1)
        return [F.softmax(ins[0], int(main.get("axis", -1)))]
    if kind == "Concat":
        return [F.concat(ins, int(main.get("axis", 0)))]
    if kind == "Reshape":
        need(1)
        return [F.reshape(ins[0], [int(d) for d in main.get("dims", [])])]
    if kind == "Permute":
        need(1)
        return [F.transpose(ins[0], [int(d) for d in main.get("dims", [])])]
    if kind == "Cast":
        need(1)
        return [_core.cast(ins[0], enum(_JSON_DTYPES, "dstT", "DT_FLOAT"))]
    if kind == "Eltwise":
        table = {"SUM": eltwise_sum, "SUB": eltwise_sub, "PROD": eltwise_prod, "MAXIMUM": eltwise_max}
        fn = enum(table, "type", "SUM")
        if len(ins) < 2:
            raise ValueError(f"jsonop: Eltwise takes at least 2 inputs, got {len(ins)}")
        coeff = [float(c) for c in main.get("coeff", [])]
        if coeff and len(coeff) != len(ins):
            raise ValueError(f"jsonop: Eltwise needs one coefficient per input ({len(ins)}), got {len(coeff)}")
        out = ins[0] if not coeff else _scaled(ins[0], coeff[0])
        for i, v in enumerate(ins[1:], 1):
            out = fn(out, v if not coeff else _scaled(v, coeff[i]))
        return [out]
    if kind in ("Squeeze", "Unsqueeze"):
        need(1)
        axes = [int(d) for d in main.get("squeezeDims", [])]
        return [F.squeeze(ins[0], axes) if kind == "Squeeze" else F.unsqueeze(ins[0], axes)]
    raise ValueError(f"jsonop: op type {kind!r} is not supported; supported: BinaryOp, UnaryOp, ReLU, ReLU6, "
                     "Sigmoid, TanH, Softmax, Concat, Reshape, Permute, Cast, Eltwise, Squeeze, Unsqueeze")


def jsonop(vars, json_str, output_number):  # noqa: A002  (MNN's names)
    """The outputs (a list of ``output_number`` Vars) of the MNN op described by ``json_str``:
    an Op table as JSON (``{"type": "BinaryOp", "main": {"opType": "ADD"}}``; ``main_type`` is
    optional) applied to ``vars``. Types an mnnpy op computes are supported; others raise
    ValueError naming the type."""
    ins = [_var(v, "vars") for v in vars]
    try:
        desc = _json.loads(json_str)
    except (TypeError, ValueError) as e:
        raise ValueError(f"jsonop: json_str is not valid JSON ({e})") from None
    if not isinstance(desc, dict) or not isinstance(desc.get("type"), str):
        raise ValueError('jsonop: json_str must describe an op object with a "type", e.g. {"type": "BinaryOp", ...}')
    main = desc.get("main", {}) or {}
    if not isinstance(main, dict):
        raise ValueError(f'jsonop: "main" must be an object of op parameters, got {type(main).__name__}')
    outs = _json_op(desc["type"], main, ins)
    if int(output_number) != len(outs):
        raise ValueError(f"jsonop: a {desc['type']} op has {len(outs)} output(s), not {output_number}")
    return outs
