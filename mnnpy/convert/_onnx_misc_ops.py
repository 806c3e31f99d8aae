"""ONNX normalization, pooling, cropping, selection and signal-window operators as mnnpy.expr
calls: GroupNormalization, MeanVarianceNormalization, LpPool, CenterCropPad, Compress,
ReverseSequence, Unique, Det and the Hann/Hamming/Blackman windows."""
import numpy as np

from .. import expr as F
from .. import numpy as mnp
from ._graph import Node
from ._onnx_ops import HANDLERS, UnsupportedOperator, _attr, _axis, handles


def _all_but(x, keep):
    return [d for d in range(x.ndim) if d not in keep]


@handles("MeanVarianceNormalization")
def _mean_variance_normalization(ctx, node, ins):
    x = ins[0]
    axes = [_axis(a, x.ndim) for a in _attr(node, "axes", [0, 2, 3])]
    mean = F.reduce_mean(x, axes, True)
    centred = F.subtract(x, mean)
    deviation = F.sqrt(F.reduce_mean(F.square(centred), axes, True))
    # ONNX adds its epsilon to the standard deviation, not to the variance.
    return F.divide(centred, F.add(deviation, F.const(np.dtype(x.dtype).type(1e-9))))


@handles("GroupNormalization")
def _group_normalization(ctx, node, ins):
    x, scale, bias = ins[0], ins[1], ins[2]
    groups = int(node.attrs["num_groups"])
    n, channels = x.shape[0], x.shape[1]
    if groups < 1 or channels % groups:
        raise ValueError(f"num_groups {groups} must divide the {channels} channels")
    epsilon = float(_attr(node, "epsilon", 1e-5))
    dtype = np.dtype(x.dtype)
    compute = np.float32 if _attr(node, "stash_type", 1) == 1 else dtype
    grouped = F.reshape(F.cast(x, compute), [n, groups, -1])
    mean = F.reduce_mean(grouped, [2], True)
    centred = F.subtract(grouped, mean)
    variance = F.reduce_mean(F.square(centred), [2], True)
    normalized = F.cast(F.reshape(F.multiply(centred, F.rsqrt(F.add(variance, F.const(np.dtype(compute).type(epsilon))))),
                                  list(x.shape)), dtype)
    affine_shape = [1, channels] + [1] * (x.ndim - 2)
    if scale.shape == (groups,) and groups != channels:
        # Opset 18: one scale and bias per group, shared by its channels.
        index = F.const(np.arange(channels, dtype=np.int64) // (channels // groups))
        scale, bias = F.gather(scale, index, 0), F.gather(bias, index, 0)
    elif scale.shape != (channels,) or bias.shape != (channels,):
        raise ValueError(f"scale and bias must hold {channels} (or {groups}) values, got shapes "
                         f"{list(scale.shape)} and {list(bias.shape)}")
    return F.add(F.multiply(normalized, F.reshape(scale, affine_shape)), F.reshape(bias, affine_shape))


@handles("LpPool")
def _lp_pool(ctx, node, ins):
    """(sum over each window of |x|^p)^(1/p), the window sums pooled as in pool_by_windows."""
    x = ins[0]
    p = float(_attr(node, "p", 2))
    dtype = np.dtype(x.dtype).type
    powered = F.square(x) if p == 2 else F.pow(F.abs(x), F.const(dtype(p)))
    sums = pool_by_windows(ctx, node, powered, "sum")
    return F.sqrt(sums) if p == 2 else F.pow(sums, F.const(dtype(1.0 / p)))


@handles("CenterCropPad")
def _center_crop_pad(ctx, node, ins):
    x = ins[0]
    target = [int(v) for v in np.asarray(ctx.static(ins[1], node, "shape")).reshape(-1)]
    axes = [_axis(a, x.ndim) for a in _attr(node, "axes", list(range(x.ndim)))]
    if len(axes) != len(target):
        raise ValueError(f"shape has {len(target)} values for {len(axes)} axes")
    begin, extent = [0] * x.ndim, list(x.shape)
    pads = [[0, 0] for _ in range(x.ndim)]
    for axis, size in zip(axes, target):
        if size < 0:
            raise ValueError(f"the target size {size} of axis {axis} is negative")
        dim = x.shape[axis]
        if size < dim:  # crop: the extra element of an odd difference comes off the end
            begin[axis], extent[axis] = (dim - size) // 2, size
        elif size > dim:  # pad with zeros: the extra element of an odd difference goes at the end
            pads[axis] = [(size - dim) // 2, size - dim - (size - dim) // 2]
    y = F.slice(x, begin, extent)
    if any(a or b for a, b in pads):
        y = F.pad(y, F.const(np.asarray(pads, np.int32)))
    return y


@handles("Compress")
def _compress(ctx, node, ins):
    # The output's length depends on the condition's value, which is read when building.
    x = ins[0]
    condition = np.asarray(ctx.static(ins[1], node, "condition")).reshape(-1).astype(bool)
    axis = _attr(node, "axis")
    if axis is None:
        x, axis = F.reshape(x, [-1]), 0
    axis = _axis(axis, x.ndim)
    if condition.size > x.shape[axis]:
        raise ValueError(f"the condition has {condition.size} values, axis {axis} has {x.shape[axis]}")
    return F.gather(x, F.const(np.flatnonzero(condition).astype(np.int64)), axis)


@handles("ReverseSequence")
def _reverse_sequence(ctx, node, ins):
    x, lengths = ins
    return F.reverse_sequence(x, lengths, _axis(_attr(node, "batch_axis", 1), x.ndim),
                              _axis(_attr(node, "time_axis", 0), x.ndim))


@handles("Det")
def _det(ctx, node, ins):
    x = ins[0]
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"Det needs square matrices in the last two dimensions, got shape {list(x.shape)}")
    return mnp.linalg.det(x)


@handles("Unique")
def _unique(ctx, node, ins):
    """Unique values with their first indices, the inverse map and the counts; the output size
    depends on the values, which are read when building. ``sorted=0`` orders by first
    occurrence."""
    x = ins[0]
    value = np.asarray(ctx.static(x, node, "input (Unique's output size depends on it)"))
    axis = _attr(node, "axis")
    if axis is not None:
        axis = _axis(axis, value.ndim)
    uniques, first, inverse, counts = mnp.unique(mnp.asarray(value), return_index=True, return_inverse=True,
                                                 return_counts=True, axis=axis)
    first, inverse, counts = (np.asarray(v.numpy() if hasattr(v, "numpy") else v).astype(np.int64).reshape(-1)
                              for v in (first, inverse, counts))
    uniques = np.asarray(uniques.numpy() if hasattr(uniques, "numpy") else uniques)
    if not _attr(node, "sorted", 1):
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        uniques = np.take(uniques, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return [F.const(np.ascontiguousarray(uniques.astype(value.dtype))), F.const(first), F.const(inverse),
            F.const(counts)]


# Generalized cosine windows: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N).
_WINDOWS = {"HannWindow": (0.5, 0.5, 0.0), "HammingWindow": (25.0 / 46.0, 21.0 / 46.0, 0.0),
            "BlackmanWindow": (0.42, 0.5, 0.08)}


@handles(*_WINDOWS)
def _window(ctx, node, ins):
    from .onnx import ONNX_DTYPES
    size = int(np.asarray(ctx.static(ins[0], node, "size")).reshape(-1)[0])
    if size < 0:
        raise ValueError(f"the window size must not be negative, got {size}")
    dtype = np.dtype(ONNX_DTYPES[_attr(node, "output_datatype", 1)])
    period = size if _attr(node, "periodic", 1) else size - 1
    a0, a1, a2 = _WINDOWS[node.op]
    n = F.cast(F.const(np.arange(size, dtype=np.int64)), np.float32)
    angle = F.multiply(n, F.const(np.float32(2.0 * np.pi / period if period > 0 else 0.0)))
    w = F.subtract(F.const(np.float32(a0)), F.multiply(F.cos(angle), F.const(np.float32(a1))))
    if a2:
        w = F.add(w, F.multiply(F.cos(F.multiply(angle, F.const(np.float32(2.0)))), F.const(np.float32(a2))))
    return F.cast(w, dtype)


def _f32(v):
    return F.const(np.float32(v))


def _reflect(v, low, high):
    """Coordinates outside [low, high] folded back in by repeated reflection at the borders."""
    span = high - low
    if span <= 0:
        return F.multiply(v, _f32(0.0)) if low == 0 else F.add(F.multiply(v, _f32(0.0)), _f32(low))
    below, above = F.less(v, _f32(low)), F.greater(v, _f32(high))
    distance = F.select(below, F.subtract(_f32(low), v), F.subtract(v, _f32(high)))
    folds = F.floor(F.divide(distance, _f32(span)))
    rest = F.subtract(distance, F.multiply(folds, _f32(span)))
    even = F.equal(F.floormod(folds, _f32(2.0)), _f32(0.0))
    from_low, from_high = F.add(_f32(low), rest), F.subtract(_f32(high), rest)
    return F.select(below, F.select(even, from_low, from_high), F.select(above, F.select(even, from_high, from_low), v))


def _cubic_weights(t):
    """Keys' cubic convolution weights (a = -0.75) of the taps at -1, 0, 1, 2 for fraction ``t``."""
    a = -0.75
    one = _f32(1.0)

    def near(d):  # |d| <= 1
        return F.add(F.multiply(F.multiply(F.subtract(F.multiply(_f32(a + 2), d), _f32(a + 3)), d), d), one)

    def far(d):  # 1 < |d| < 2
        return F.subtract(F.multiply(F.add(F.multiply(F.subtract(F.multiply(_f32(a), d), _f32(5 * a)), d), _f32(8 * a)), d),
                          _f32(4 * a))
    return [far(F.add(t, one)), near(t), near(F.subtract(one, t)), far(F.subtract(_f32(2.0), t))]


@handles("GridSample")
def _grid_sample(ctx, node, ins):
    """Samples ``x`` (N, C, *spatial) at ``grid`` (N, *out, D) with PyTorch's grid_sample
    semantics (ONNX follows them): the taps of each output point are gathered from the flattened
    spatial axes and summed with their weights."""
    x, grid = ins[0], ins[1]
    spatial = x.ndim - 2
    if spatial < 1 or grid.ndim != x.ndim or grid.shape[-1] != spatial or grid.shape[0] != x.shape[0]:
        raise ValueError(f"grid must be (N, *output, {spatial}) for an input of shape {list(x.shape)}, "
                         f"got {list(grid.shape)}")
    mode = _attr(node, "mode", "linear" if ctx.opset >= 20 else "bilinear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    if mode not in ("linear", "nearest", "cubic"):
        raise ValueError(f"mode must be linear, nearest or cubic, got '{mode}'")
    padding = _attr(node, "padding_mode", "zeros")
    if padding not in ("zeros", "border", "reflection"):
        raise ValueError(f"padding_mode must be zeros, border or reflection, got '{padding}'")
    if mode == "cubic" and spatial != 2:
        raise ValueError("cubic GridSample needs a 4-D input")
    align = bool(_attr(node, "align_corners", 0))
    n, channels, dims = x.shape[0], x.shape[1], list(x.shape[2:])
    out_shape = list(grid.shape[1:-1])
    points = int(np.prod(out_shape)) if out_shape else 1
    g = F.reshape(F.cast(grid, np.float32), [n, points, spatial])
    taps_per_dim = []  # for each spatial axis: [(index Var int64, weight Var or None, valid Var or None)]
    for i, size in enumerate(dims):
        # The grid's last axis lists coordinates innermost first (x, y, z).
        coord = F.squeeze(F.slice(g, [0, 0, spatial - 1 - i], [n, points, 1]), [2])
        if align:
            pos = F.multiply(F.add(coord, _f32(1.0)), _f32((size - 1) / 2.0))
            low, high = 0.0, size - 1.0
        else:
            pos = F.divide(F.subtract(F.multiply(F.add(coord, _f32(1.0)), _f32(size)), _f32(1.0)), _f32(2.0))
            low, high = -0.5, size - 0.5
        if mode == "nearest":
            pos = F.round(pos)
        # Cubic taps are bounded one by one below; the other modes bound the coordinate first
        # (PyTorch's grid_sample, which onnxruntime follows).
        if padding == "border" and mode != "cubic":
            pos = F.clip(pos, 0.0, float(size - 1))
        elif padding == "reflection" and mode != "cubic":
            pos = _reflect(pos, low, high)
        if mode == "nearest":
            offsets, weights = [0], [None]
            base = F.trunc(pos)
        else:
            base = F.floor(pos)
            fraction = F.subtract(pos, base)
            if mode == "linear":
                offsets, weights = [0, 1], [F.subtract(_f32(1.0), fraction), fraction]
            else:
                offsets, weights = [-1, 0, 1, 2], _cubic_weights(fraction)
        taps = []
        for offset, weight in zip(offsets, weights):
            index = F.add(base, _f32(offset)) if offset else base
            valid = None
            if padding == "zeros":
                valid = F.logical_and(F.greater_equal(index, _f32(0.0)), F.less_equal(index, _f32(size - 1)))
            elif padding == "border":
                index = F.clip(index, 0.0, float(size - 1))
            else:
                index = F.clip(F.trunc(_reflect(index, low, high)), 0.0, float(size - 1))
            index = F.cast(F.clip(index, 0.0, float(size - 1)), np.int64)
            taps.append((index, weight, valid))
        taps_per_dim.append(taps)
    flat = F.reshape(x, [n, channels, int(np.prod(dims))])
    strides = [int(np.prod(dims[i + 1:])) for i in range(spatial)]
    total = None
    for combo in np.ndindex(*[len(t) for t in taps_per_dim]):
        index, weight, valid = None, None, None
        for i, k in enumerate(combo):
            ti, tw, tv = taps_per_dim[i][k]
            term = F.multiply(ti, F.const(np.int64(strides[i]))) if strides[i] != 1 else ti
            index = term if index is None else F.add(index, term)
            if tw is not None:
                weight = tw if weight is None else F.multiply(weight, tw)
            if tv is not None:
                valid = tv if valid is None else F.logical_and(valid, tv)
        if valid is not None:
            weight = F.cast(valid, np.float32) if weight is None else F.select(valid, weight, _f32(0.0))
        gathered = mnp.take_along_axis(flat, F.broadcast_to(F.unsqueeze(index, [1]), [n, channels, points]), axis=2)
        gathered = F.cast(gathered, np.float32)
        if weight is not None:
            gathered = F.multiply(gathered, F.unsqueeze(weight, [1]))
        total = gathered if total is None else F.add(total, gathered)
    return F.cast(F.reshape(total, [n, channels] + out_shape), x.dtype)


@handles("AffineGrid")
def _affine_grid(ctx, node, ins):
    """The sampling grid (N, *size, D) of affine matrices ``theta`` (N, D, D + 1) over the
    normalized output positions, innermost coordinate first, as GridSample reads it."""
    theta = ins[0]
    size = [int(v) for v in np.asarray(ctx.static(ins[1], node, "size")).reshape(-1)]
    spatial = len(size) - 2
    if spatial not in (2, 3) or theta.shape[1:] != (spatial, spatial + 1) or theta.shape[0] != size[0]:
        raise ValueError(f"theta must be (N, {spatial}, {spatial + 1}) for size {size}, got {list(theta.shape)}")
    align = bool(_attr(node, "align_corners", 0))
    dims = size[2:]

    def positions(length):
        steps = np.arange(length, dtype=np.float32)
        if align:
            return steps * np.float32(2.0 / (length - 1)) - 1 if length > 1 else np.zeros(1, np.float32)
        return (steps * 2 + 1) / np.float32(length) - 1
    axes = np.meshgrid(*[positions(d) for d in dims], indexing="ij")
    # Homogeneous coordinates (x, y[, z], 1) of every output position: a constant of the shapes.
    base = np.stack([a.reshape(-1) for a in reversed(axes)] + [np.ones(axes[0].size, np.float32)], axis=1)
    grid = F.matmul(F.const(base), F.transpose(F.cast(theta, np.float32), [0, 2, 1]))
    return F.cast(F.reshape(grid, [size[0]] + dims + [spatial]), theta.dtype)


def _fourier_matrices(inputs, outputs, length, weights=None):
    """cos and sin of 2 pi k n / length for ``inputs`` rows n and ``outputs`` columns k, each row
    scaled by ``weights`` (float64 at build time, float32 constants)."""
    angle = 2.0 * np.pi * np.outer(np.arange(inputs), np.arange(outputs)) / length
    cos, sin = np.cos(angle), np.sin(angle)
    if weights is not None:
        cos, sin = cos * weights[:, None], sin * weights[:, None]
    return F.const(cos.astype(np.float32)), F.const(sin.astype(np.float32))


def _fit_last(v, size):
    """``v`` cut or zero-padded to ``size`` along its last axis."""
    have = v.shape[-1]
    if have > size:
        return F.slice(v, [0] * v.ndim, list(v.shape[:-1]) + [size])
    if have < size:
        return F.pad(v, F.const(np.asarray([[0, 0]] * (v.ndim - 1) + [[0, size - have]], np.int32)))
    return v


def _fourier_last_axis(real, imag, length, inverse, onesided):
    """The DFT of complex signals along the last axis (``imag`` None: real signals): (real,
    imaginary) parts, or only the real part for an inverse one-sided (Hermitian) transform."""
    if inverse and onesided:
        bins = length // 2 + 1
        weights = np.full(bins, 2.0)
        weights[0] = 1.0
        if length % 2 == 0:
            weights[-1] = 1.0
        cos, sin = _fourier_matrices(bins, length, length, weights / length)
        real = _fit_last(real, bins)
        y = F.matmul(real, cos)
        if imag is not None:
            y = F.subtract(y, F.matmul(_fit_last(imag, bins), sin))
        return y, None
    outputs = length // 2 + 1 if onesided else length
    cos, sin = _fourier_matrices(length, outputs, length, np.full(length, 1.0 / length) if inverse else None)
    real = _fit_last(real, length)
    sign = 1.0 if inverse else -1.0
    y_real = F.matmul(real, cos)
    y_imag = F.matmul(real, sin)
    if imag is not None:
        imag = _fit_last(imag, length)
        y_real = F.subtract(y_real, F.matmul(imag, sin)) if inverse else F.add(y_real, F.matmul(imag, sin))
        y_imag = F.add(y_imag, F.matmul(imag, cos)) if inverse else F.subtract(F.matmul(imag, cos), y_imag)
    elif not inverse:
        y_imag = F.multiply(y_imag, _f32(sign))
    return y_real, y_imag


def _complex_parts(x):
    """(real, imaginary or None) of a tensor whose last axis holds 1 (real) or 2 (complex) values."""
    if x.shape[-1] not in (1, 2):
        raise ValueError(f"the last axis must hold 1 (real) or 2 (complex) values, got {x.shape[-1]}")
    lead = list(x.shape[:-1])
    real = F.reshape(F.slice(x, [0] * x.ndim, lead + [1]), lead)
    imag = F.reshape(F.slice(x, [0] * (x.ndim - 1) + [1], lead + [1]), lead) if x.shape[-1] == 2 else None
    return real, imag


@handles("DFT")
def _dft(ctx, node, ins):
    x = ins[0]
    inverse, onesided = bool(_attr(node, "inverse", 0)), bool(_attr(node, "onesided", 0))
    if ctx.opset >= 20:
        axis = int(np.asarray(ctx.static(ins[2], node, "axis")).reshape(-1)[0]) if len(ins) > 2 and ins[2] is not None else -2
    else:
        axis = _attr(node, "axis", 1)
    axis = _axis(axis, x.ndim)
    if axis == x.ndim - 1:
        raise ValueError("axis must not be the last axis (it holds the real and imaginary parts)")
    if onesided and not inverse and x.shape[-1] == 2:
        raise ValueError("a one-sided DFT needs a real input")
    if len(ins) > 1 and ins[1] is not None:
        length = int(np.asarray(ctx.static(ins[1], node, "dft_length")).reshape(-1)[0])
    else:
        length = 2 * (x.shape[axis] - 1) if inverse and onesided else x.shape[axis]
    if length < 1:
        raise ValueError(f"dft_length must be positive, got {length}")
    dtype = np.dtype(x.dtype)
    real, imag = _complex_parts(F.cast(x, np.float32))
    rank = real.ndim
    order = [d for d in range(rank) if d != axis] + [axis]
    back = list(np.argsort(order))
    real = F.transpose(real, order)
    imag = F.transpose(imag, order) if imag is not None else None
    y_real, y_imag = _fourier_last_axis(real, imag, length, inverse, onesided)
    y_real = F.transpose(y_real, back)
    if y_imag is None:
        return F.cast(F.unsqueeze(y_real, [rank]), dtype)
    return F.cast(F.stack([y_real, F.transpose(y_imag, back)], rank), dtype)


@handles("STFT")
def _stft(ctx, node, ins):
    """Frames of ``frame_length`` every ``frame_step`` samples, windowed, each transformed:
    (batch, frames, bins, 2)."""
    signal, step = ins[0], int(np.asarray(ctx.static(ins[1], node, "frame_step")).reshape(-1)[0])
    window = ins[2] if len(ins) > 2 else None
    frame_length = (int(np.asarray(ctx.static(ins[3], node, "frame_length")).reshape(-1)[0])
                    if len(ins) > 3 and ins[3] is not None else None)
    if frame_length is None:
        frame_length = window.shape[0] if window is not None else signal.shape[1]
    if window is not None and window.shape != (frame_length,):
        raise ValueError(f"the window must hold frame_length={frame_length} values, got shape {list(window.shape)}")
    if signal.ndim != 3 or step < 1 or not 1 <= frame_length <= signal.shape[1]:
        raise ValueError(f"needs a (batch, length, 1|2) signal, a positive frame_step and 1 <= frame_length <= length; "
                         f"got shape {list(signal.shape)}, step {step}, frame_length {frame_length}")
    onesided = bool(_attr(node, "onesided", 1))
    frames = (signal.shape[1] - frame_length) // step + 1
    starts = np.arange(frames)[:, None] * step + np.arange(frame_length)[None, :]
    real, imag = _complex_parts(F.cast(signal, np.float32))
    index = F.const(starts.astype(np.int64))
    real = F.gather(real, index, 1)
    imag = F.gather(imag, index, 1) if imag is not None else None
    if window is not None:
        w = F.cast(window, np.float32)
        real = F.multiply(real, w)
        imag = F.multiply(imag, w) if imag is not None else None
    y_real, y_imag = _fourier_last_axis(real, imag, frame_length, False, onesided and imag is None)
    return F.cast(F.stack([y_real, y_imag], 3), signal.dtype)


@handles("MelWeightMatrix")
def _mel_weight_matrix(ctx, node, ins):
    """Triangular mel filters (num_spectrogram_bins, num_mel_bins), from the node's scalar inputs
    alone: a constant."""
    from .onnx import ONNX_DTYPES
    mels, length, rate, low, high = (np.asarray(ctx.static(v, node, "argument")).reshape(-1)[0] for v in ins[:5])
    mels, length, rate = int(mels), int(length), int(rate)
    if mels < 1 or length < 1 or rate < 1:
        raise ValueError(f"num_mel_bins, dft_length and sample_rate must be positive, got {mels}, {length}, {rate}")
    bins = length // 2 + 1
    low_mel = 2595 * np.log1p(low / 700) / np.log(10)
    high_mel = 2595 * np.log1p(high / 700) / np.log(10)
    edges = np.arange(mels + 2) * ((high_mel - low_mel) / (mels + 2)) + low_mel
    edges = (((length + 1) * (700 * np.expm1(edges / 2595 * np.log(10)))) // rate).astype(np.int64)
    if edges.min() < 0 or edges.max() >= bins:
        raise ValueError(f"the mel edges fall outside the {bins} spectrogram bins (check the frequencies and sample rate)")
    j = np.arange(bins)[:, None]
    left, centre, right = edges[None, :-2], edges[None, 1:-1], edges[None, 2:]
    rising = np.where((j >= left) & (j <= centre) & (centre > left), (j - left) / np.maximum(centre - left, 1), 0.0)
    rising = np.where((centre == left) & (j == centre), 1.0, rising)
    falling_span = (j >= centre) & (j < right) & (right > centre)
    weights = np.where(falling_span, (right - j) / np.maximum(right - centre, 1), rising)
    return F.const(weights.astype(ONNX_DTYPES[_attr(node, "output_datatype", 1)]))


def _window_starts(length, kernel, stride, dilation, before, after, ceil_mode):
    """The output length of one pooled axis and, for every output position and tap, the tap's
    position in the axis padded by ``before`` (and by whatever ceil mode adds after)."""
    span = (kernel - 1) * dilation + 1
    padded = length + before + after
    if padded < span:
        raise ValueError(f"the pooling window ({span}) is larger than the padded input ({padded})")
    steps = padded - span
    out = (-(-steps // stride) if ceil_mode else steps // stride) + 1
    if ceil_mode and (out - 1) * stride >= length + before:
        out -= 1  # a last window starting in the end padding is dropped
    taps = np.arange(out)[:, None] * stride + np.arange(kernel)[None, :] * dilation
    return out, taps


def _pool_geometry(node, x):
    """kernel, strides, dilations, pads and ceil mode of a pooling node over ``x``."""
    from ._onnx_ops import _pool_args
    if x.ndim != len(node.attrs["kernel_shape"]) + 2:
        raise ValueError(f"kernel_shape has {len(node.attrs['kernel_shape'])} dimensions, the input "
                         f"{x.ndim - 2} spatial ones")
    return (*_pool_args(node, x), bool(_attr(node, "ceil_mode", 0)))


def pool_by_windows(ctx, node, x, kind):
    """MaxPool, AveragePool (or window sums: ``kind`` max, average or sum) of any rank, dtype,
    dilation and ceil mode, one axis at a time:
    the taps of every window are gathered from the padded axis and reduced (max and box sums
    are separable; a box's count of counted taps is the product of its per-axis counts)."""
    kernel, strides, dilations, pads, ceil_mode = _pool_geometry(node, x)
    spatial = len(kernel)
    include_pad = bool(_attr(node, "count_include_pad", 0))
    dtype = np.dtype(x.dtype)
    y = x if kind == "max" else F.cast(x, np.float32 if dtype != np.float64 else np.float64)
    for i in range(spatial):
        axis = i + 2
        length = y.shape[axis]
        out, taps = _window_starts(length, kernel[i], strides[i], dilations[i], pads[i], pads[i + spatial], ceil_mode)
        extent = int(taps.max()) + 1
        after = extent - length - pads[i]
        if pads[i] or after > 0:
            if kind == "max":
                fill = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min if dtype.kind in "iu" else False
            else:
                fill = 0
            widths = [[0, 0] for _ in range(y.ndim)]
            widths[axis] = [pads[i], max(after, 0)]
            y = F.pad(y, widths, "CONSTANT", fill)
        gathered = F.gather(y, F.const(taps.astype(np.int64)), axis)  # (..., out, kernel, ...)
        if kind == "max":
            y = F.reduce_max(gathered, [axis + 1], False)
            continue
        y = F.reduce_sum(gathered, [axis + 1], False)
        if kind == "average":
            counted_end = length + pads[i] + (pads[i + spatial] if include_pad else 0)
            counted_begin = 0 if include_pad else pads[i]
            counts = ((taps >= counted_begin) & (taps < counted_end)).sum(axis=1).astype(np.float64)
            shape = [1] * y.ndim
            shape[axis] = out
            y = F.divide(y, F.const(counts.reshape(shape).astype(np.dtype(y.dtype))))
    return y if kind == "max" else F.cast(y, dtype)


def max_pool_with_indices(ctx, node, x):
    """MaxPool's values and Indices: every window's taps gathered whole, the first largest
    taken, its position mapped back to a flat index of the input (row-major, or column-major
    over the spatial axes with storage_order=1)."""
    kernel, strides, dilations, pads, ceil_mode = _pool_geometry(node, x)
    spatial = len(kernel)
    dims = list(x.shape[2:])
    dtype = np.dtype(x.dtype)
    fill = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
    y = x
    outs, positions = [], []
    for i in range(spatial):
        axis = 2 + 2 * i  # each earlier axis became (out, kernel)
        out, taps = _window_starts(dims[i], kernel[i], strides[i], dilations[i], pads[i], pads[i + spatial], ceil_mode)
        after = max(int(taps.max()) + 1 - dims[i] - pads[i], 0)
        widths = [[0, 0] for _ in range(y.ndim)]
        widths[axis] = [pads[i], after]
        y = F.pad(y, widths, "CONSTANT", fill)
        y = F.gather(y, F.const(taps.astype(np.int64)), axis)
        outs.append(out)
        positions.append(taps - pads[i])  # positions in the unpadded axis (outside: a pad)
    n, channels = x.shape[:2]
    order = [0, 1] + [2 + 2 * i for i in range(spatial)] + [3 + 2 * i for i in range(spatial)]
    windows = F.reshape(F.transpose(y, order), [n, channels] + outs + [int(np.prod(kernel))])
    best = F.argmax(windows, -1)
    values = F.reduce_max(windows, [-1], False)
    # The flat spatial index of each (output position, tap), a constant of the shapes.
    grids = np.meshgrid(*[np.arange(o) for o in outs], *[np.arange(k) for k in kernel], indexing="ij")
    coords = [positions[i][grids[i], grids[spatial + i]] for i in range(spatial)]
    sizes = dims[::-1] if _attr(node, "storage_order", 0) else dims
    ordered = coords[::-1] if _attr(node, "storage_order", 0) else coords
    flat = np.zeros_like(coords[0])
    for c, size in zip(ordered, sizes):
        flat = flat * size + c
    table = F.const(flat.reshape(outs + [-1]).astype(np.int64))
    spatial_index = F.squeeze(mnp.take_along_axis(F.broadcast_to(table, [n, channels] + outs + [flat.size // int(np.prod(outs))]),
                                                  F.unsqueeze(F.cast(best, np.int64), [-1]), axis=-1), [-1])
    base = np.arange(n * channels, dtype=np.int64).reshape([n, channels] + [1] * spatial) * int(np.prod(dims))
    return [values, F.add(spatial_index, F.const(base))]


@handles("Col2Im")
def _col2im(ctx, node, ins):
    """Sums sliding blocks back into images: a grouped transposed convolution whose kernel
    places each of a block's K columns at its own offset (C groups of K input channels)."""
    x = ins[0]
    image = [int(v) for v in np.asarray(ctx.static(ins[1], node, "image_shape")).reshape(-1)]
    block = [int(v) for v in np.asarray(ctx.static(ins[2], node, "block_shape")).reshape(-1)]
    spatial = len(image)
    if len(block) != spatial or x.ndim != 3:
        raise ValueError(f"needs a (N, C*K, L) input and image_shape and block_shape of one length, got input "
                         f"{list(x.shape)}, image_shape {image}, block_shape {block}")
    strides = list(_attr(node, "strides", [1] * spatial))
    dilations = list(_attr(node, "dilations", [1] * spatial))
    pads = list(_attr(node, "pads", [0] * 2 * spatial))
    per_block = int(np.prod(block))
    if x.shape[1] % per_block:
        raise ValueError(f"the input's {x.shape[1]} rows are not a multiple of the block size {per_block}")
    channels = x.shape[1] // per_block
    grid = [(image[i] + pads[i] + pads[i + spatial] - (block[i] - 1) * dilations[i] - 1) // strides[i] + 1
            for i in range(spatial)]
    if int(np.prod(grid)) != x.shape[2]:
        raise ValueError(f"the input has {x.shape[2]} blocks, the image and block shapes give {int(np.prod(grid))}")
    kernel = np.zeros([channels * per_block, 1] + block, np.dtype(x.dtype))
    kernel.reshape(channels, per_block, per_block)[:, np.arange(per_block), np.arange(per_block)] = 1
    # Rows and columns past the last block (a stride not dividing the padded image) get zeros.
    produced = [(grid[i] - 1) * strides[i] + (block[i] - 1) * dilations[i] + 1 - pads[i] - pads[i + spatial]
                for i in range(spatial)]
    transposed = Node("ConvTranspose", ["", ""], [""], {"strides": strides, "dilations": dilations, "pads": pads,
                                                         "group": channels, "kernel_shape": block,
                                                         "output_padding": [i - p for i, p in zip(image, produced)]},
                      node.name)
    return HANDLERS["ConvTranspose"](ctx, transposed, [F.reshape(x, [x.shape[0], x.shape[1]] + grid), F.const(kernel)])


@handles("RoiAlign")
def _roi_align(ctx, node, ins):
    x, rois, batch_indices = ins
    if x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4 or batch_indices.shape != (rois.shape[0],):
        raise ValueError(f"needs a 4-D input, (R, 4) rois and R batch indices, got {list(x.shape)}, "
                         f"{list(rois.shape)} and {list(batch_indices.shape)}")
    mode = _attr(node, "coordinate_transformation_mode", "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    if mode not in ("half_pixel", "output_half_pixel"):
        raise ValueError(f"coordinate_transformation_mode must be half_pixel or output_half_pixel, got '{mode}'")
    pooling = _attr(node, "mode", "avg")
    if pooling == "max":
        # ONNX's max mode takes the largest weighted corner of each sample, not the largest
        # interpolated value; refused rather than computed differently.
        raise UnsupportedOperator(f"node '{node.name}': RoiAlign with mode 'max' is not supported (mode 'avg' is)")
    if pooling != "avg":
        raise ValueError(f"mode must be avg or max, got '{pooling}'")
    # The sampling grid is sized from the boxes: they are read when building (a module given
    # boxes as inputs rebuilds its graph per call, as for other data-dependent shapes).
    known_rois = np.asarray(ctx.static(rois, node, "rois"), np.float32)
    known_batch = np.asarray(ctx.static(batch_indices, node, "batch_indices"))
    if known_batch.size and (known_batch.min() < 0 or known_batch.max() >= x.shape[0]):
        raise ValueError(f"batch_indices must lie in [0, {x.shape[0]}), got {known_batch.tolist()}")
    boxes = F.const(np.concatenate([known_batch.astype(np.float32)[:, None], known_rois], 1))
    return F.roi_align(F.cast(x, np.float32), boxes, int(_attr(node, "output_height", 1)),
                       int(_attr(node, "output_width", 1)), float(_attr(node, "spatial_scale", 1.0)),
                       int(_attr(node, "sampling_ratio", 0)), mode == "half_pixel", F.AVEPOOL)


def crop_and_resize_linear(x, out, starts, ends, extrapolation):
    """Resize's tf_crop_and_resize in linear mode: the box [starts, ends] (fractions of each
    axis) sampled at ``out`` points per axis, one axis at a time; points outside the input take
    ``extrapolation``."""
    y = F.cast(x, np.float32)
    outside = None
    for axis, (length, size) in enumerate(zip(x.shape, out)):
        if size == length and starts[axis] == 0 and ends[axis] == 1:
            continue
        if size > 1:
            coords = starts[axis] * (length - 1) + np.arange(size) * ((ends[axis] - starts[axis]) * (length - 1) / (size - 1))
        else:
            coords = np.full(size, 0.5 * (starts[axis] + ends[axis]) * (length - 1))
        base = np.floor(coords)
        fraction = (coords - base).astype(np.float32)
        low = np.clip(base, 0, length - 1).astype(np.int64)
        high = np.clip(base + 1, 0, length - 1).astype(np.int64)
        shape = [1] * x.ndim
        shape[axis] = size
        weight = F.const(fraction.reshape(shape))
        a, b = F.gather(y, F.const(low), axis), F.gather(y, F.const(high), axis)
        y = F.add(a, F.multiply(F.subtract(b, a), weight))
        beyond = F.const(((coords < 0) | (coords > length - 1)).reshape(shape))
        outside = beyond if outside is None else F.logical_or(outside, beyond)
    if outside is not None:
        y = F.select(outside, F.const(np.float32(extrapolation)), y)
    return F.cast(y, x.dtype)
