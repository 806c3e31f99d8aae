"""Per-pixel arithmetic and image statistics: addWeighted, convertScaleAbs, blendLinear, the
bitwise operations, copyTo, mean, meanStdDev, minMaxLoc, normalize, equalizeHist, calcHist.

They are compositions of mnnpy.numpy's graph ops. Integer results are rounded half to even and
saturated, as OpenCV's saturate_cast does; uint8, int16 and float32 inputs compute in float32
and float64 inputs in float64, as OpenCV does.
"""
import numpy as _np

from .. import _core
from .. import numpy as _mnp
from ._common import DEPTH_DTYPES, as_image, error, image_op
from ._common import channels as count_channels

__all__ = ["addWeighted", "convertScaleAbs", "blendLinear", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_not", "copyTo", "mean", "meanStdDev", "minMaxLoc", "normalize", "equalizeHist", "calcHist",
           "NORM_INF", "NORM_L1", "NORM_L2", "NORM_L2SQR", "NORM_MINMAX", "NORM_RELATIVE", "NORM_TYPE_MASK"]

NORM_INF, NORM_L1, NORM_L2, NORM_L2SQR, NORM_MINMAX, NORM_RELATIVE, NORM_TYPE_MASK = 1, 2, 4, 5, 32, 8, 7


def _work_dtype(dtype):
    return _np.dtype(_np.float64) if _np.dtype(dtype) == _np.float64 else _np.dtype(_np.float32)


def _saturate(values, dtype):
    """A float Var as ``dtype``: integers rounded half to even and clamped to the type's range."""
    dtype = _np.dtype(dtype)
    if dtype.kind in "iu":
        info = _np.iinfo(dtype)
        values = _mnp.clip(_mnp.rint(values), info.min, info.max)
    return values.astype(dtype)


def _output_dtype(func, dtype, default):
    if dtype is None or dtype < 0:
        return _np.dtype(default)
    if dtype not in DEPTH_DTYPES or DEPTH_DTYPES[dtype] == _np.uint16:
        raise error(func, f"unsupported output depth {dtype}")
    return DEPTH_DTYPES[dtype]


def _same_shape(func, a, b, names=("src1", "src2")):
    if tuple(a.shape) != tuple(b.shape):
        raise error(func, f"'{names[0]}' and '{names[1]}' must have the same size and channels, got "
                          f"{tuple(a.shape)} and {tuple(b.shape)}")


def addWeighted(src1, alpha, src2, beta, gamma, dst=None, dtype=-1):  # noqa: N802 (OpenCV's name)
    """``saturate(src1 * alpha + src2 * beta + gamma)``."""
    a, b = as_image(src1, "addWeighted", "src1"), as_image(src2, "addWeighted", "src2")
    _same_shape("addWeighted", a, b)
    out = _output_dtype("addWeighted", dtype, a.dtype)
    if a.dtype != b.dtype and (dtype is None or dtype < 0):
        raise error("addWeighted", "the inputs have different depths; give 'dtype' for the output")
    work = _work_dtype(a.dtype)
    value = a.astype(work) * work.type(alpha) + b.astype(work) * work.type(beta) + work.type(gamma)
    return _saturate(value, out)


def convertScaleAbs(src, dst=None, alpha=1.0, beta=0.0):  # noqa: N802 (OpenCV's name)
    """``saturate_uint8(|src * alpha + beta|)``."""
    image = as_image(src, "convertScaleAbs")
    work = _work_dtype(image.dtype)
    return _saturate(_mnp.abs(image.astype(work) * work.type(alpha) + work.type(beta)), _np.uint8)


def blendLinear(src1, src2, weights1, weights2, dst=None):  # noqa: N802 (OpenCV's name)
    """``(src1 * weights1 + src2 * weights2) / (weights1 + weights2 + 1e-5)`` with per-pixel float32
    weights (HxW)."""
    a, b = as_image(src1, "blendLinear", "src1"), as_image(src2, "blendLinear", "src2")
    _same_shape("blendLinear", a, b)
    f32 = (_np.dtype(_np.float32),)
    w1 = as_image(weights1, "blendLinear", "weights1", dtypes=f32)
    w2 = as_image(weights2, "blendLinear", "weights2", dtypes=f32)
    if tuple(w1.shape) != tuple(a.shape)[:2] or tuple(w2.shape) != tuple(a.shape)[:2]:
        raise error("blendLinear", f"weights must be float32 of the image's size {tuple(a.shape)[:2]}")
    if len(tuple(a.shape)) == 3:
        w1, w2 = _mnp.expand_dims(w1, -1), _mnp.expand_dims(w2, -1)
    work = _work_dtype(a.dtype)
    value = (a.astype(work) * w1 + b.astype(work) * w2) / (w1 + w2 + _np.float32(1e-5))
    return _saturate(value, a.dtype)


def _mask_of(mask, image, func):
    """An HxW mask as a boolean Var (nonzero = selected), or None."""
    if mask is None:
        return None
    m = as_image(mask, func, "mask", dtypes=(_np.dtype(_np.uint8), _np.dtype(_np.int8)))
    if tuple(m.shape) != tuple(image.shape)[:2]:
        raise error(func, f"'mask' must be an HxW 8-bit array of the image's size {tuple(image.shape)[:2]}, "
                          f"got shape {tuple(m.shape)}")
    return m != 0


def _masked(result, mask, base):
    if mask is None:
        return result
    if len(tuple(result.shape)) == 3:
        mask = _mnp.expand_dims(mask, -1)
    return _mnp.where(mask, result, base)


def _bitwise(func, op, src1, src2, mask):
    a = as_image(src1, func, "src1", dtypes=(_np.dtype(_np.uint8), _np.dtype(_np.int16)))
    if _np.isscalar(src2) or (isinstance(src2, tuple) and not hasattr(src2, "shape")):
        values = _np.atleast_1d(_np.asarray(src2, dtype=_np.float64))[:count_channels(a)]
        b = _np.rint(values).astype(a.dtype) if len(tuple(a.shape)) == 3 else a.dtype.type(_np.rint(values[0]))
    else:
        b = as_image(src2, func, "src2", dtypes=(_np.dtype(_np.uint8), _np.dtype(_np.int16)))
        _same_shape(func, a, b)
    return _masked(op(a, b), _mask_of(mask, a, func), a.dtype.type(0))


def bitwise_and(src1, src2, dst=None, mask=None):
    """Bitwise AND of two integer images (or an image and a scalar); 0 where ``mask`` is 0."""
    return _bitwise("bitwise_and", _mnp.bitwise_and, src1, src2, mask)


def bitwise_or(src1, src2, dst=None, mask=None):
    """Bitwise OR of two integer images (or an image and a scalar); 0 where ``mask`` is 0."""
    return _bitwise("bitwise_or", _mnp.bitwise_or, src1, src2, mask)


def bitwise_xor(src1, src2, dst=None, mask=None):
    """Bitwise XOR of two integer images (or an image and a scalar); 0 where ``mask`` is 0."""
    return _bitwise("bitwise_xor", _mnp.bitwise_xor, src1, src2, mask)


def bitwise_not(src, dst=None, mask=None):
    """Bitwise NOT of an integer image; 0 where ``mask`` is 0."""
    a = as_image(src, "bitwise_not", dtypes=(_np.dtype(_np.uint8), _np.dtype(_np.int16)))
    return _masked(_mnp.invert(a), _mask_of(mask, a, "bitwise_not"), a.dtype.type(0))


def copyTo(src, mask, dst=None):  # noqa: N802 (OpenCV's name)
    """``src`` where ``mask`` is nonzero, else ``dst`` (zeros when not given)."""
    image = as_image(src, "copyTo")
    m = _mask_of(mask, image, "copyTo")
    if dst is None:
        base = image.dtype.type(0)
    else:
        base = as_image(dst, "copyTo", "dst")
        _same_shape("copyTo", image, base, ("src", "dst"))
    return _masked(image, m, base)


def _per_channel(values, image):
    """Per-pixel values as [H, W, C] (a one-channel image gets its channel axis)."""
    return values if len(tuple(image.shape)) == 3 else _mnp.expand_dims(values, -1)


def mean(src, mask=None):
    """Per-channel means as a 4-tuple (OpenCV's Scalar), over the pixels where ``mask`` is nonzero."""
    image = as_image(src, "mean")
    c = count_channels(image)
    data = _per_channel(image.astype(_np.float64), image)
    m = _mask_of(mask, image, "mean")
    if m is None:
        means = _np.asarray(_mnp.mean(data, axis=(0, 1)))
    else:
        weights = m.astype(_np.float64)
        count = float(_mnp.sum(weights))
        if count == 0:
            return (0.0, 0.0, 0.0, 0.0)
        means = _np.asarray(_mnp.sum(data * _mnp.expand_dims(weights, -1), axis=(0, 1))) / count
    out = [0.0] * 4
    out[:min(c, 4)] = [float(v) for v in means[:4]]
    return tuple(out)


def meanStdDev(src, mean=None, stddev=None, mask=None):  # noqa: N802 (OpenCV's name)
    """Per-channel mean and standard deviation (of the population) as two Cx1 float64 arrays."""
    image = as_image(src, "meanStdDev")
    c = count_channels(image)
    data = _per_channel(image.astype(_np.float64), image)
    m = _mask_of(mask, image, "meanStdDev")
    if m is None:
        mu = _mnp.mean(data, axis=(0, 1))
        sigma = _mnp.sqrt(_mnp.mean(_mnp.square(data - mu), axis=(0, 1)))
    else:
        weights = _mnp.expand_dims(m.astype(_np.float64), -1)
        count = _mnp.maximum(_mnp.sum(weights), 1.0)
        mu = _mnp.sum(data * weights, axis=(0, 1)) / count
        sigma = _mnp.sqrt(_mnp.sum(_mnp.square(data - mu) * weights, axis=(0, 1)) / count)
    mu, sigma = _core.evaluate([mu, sigma])
    return _np.asarray(mu).reshape(c, 1), _np.asarray(sigma).reshape(c, 1)


def minMaxLoc(src, mask=None):  # noqa: N802 (OpenCV's name)
    """``(minVal, maxVal, minLoc, maxLoc)`` of a one-channel image; locations are (x, y) of the
    first extreme in row-major order, (-1, -1) when the mask selects nothing."""
    image = as_image(src, "minMaxLoc")
    if count_channels(image) != 1:
        raise error("minMaxLoc", f"the image must have one channel, got {count_channels(image)}")
    width = tuple(image.shape)[1]
    m = _mask_of(mask, image, "minMaxLoc")
    data = image.astype(_np.float64)
    if m is None:
        flat = _mnp.ravel(data)
        low, high = flat, flat
    else:
        if not bool(_mnp.any(m)):
            return 0.0, 0.0, (-1, -1), (-1, -1)
        flat, selected = _mnp.ravel(data), _mnp.ravel(m)
        low = _mnp.where(selected, flat, _np.inf)
        high = _mnp.where(selected, flat, -_np.inf)
    lo_at, hi_at = _mnp.argmin(low), _mnp.argmax(high)
    lo_at, hi_at, lo, hi = (int(v) if i < 2 else float(v) for i, v in
                            enumerate(_core.evaluate([lo_at, hi_at, _mnp.min(low), _mnp.max(high)])))
    return lo, hi, (lo_at % width, lo_at // width), (hi_at % width, hi_at // width)


def normalize(src, dst=None, alpha=1.0, beta=0.0, norm_type=NORM_L2, dtype=-1, mask=None):
    """Scale and shift ``src`` so that its norm is ``alpha`` (NORM_INF, NORM_L1, NORM_L2) or its
    range is [min(alpha, beta), max(alpha, beta)] (NORM_MINMAX)."""
    image = as_image(src, "normalize")
    out = _output_dtype("normalize", dtype, image.dtype)
    m = _mask_of(mask, image, "normalize")
    data = image.astype(_np.float64)
    if norm_type == NORM_MINMAX:
        if m is None:
            lo, hi = (float(v) for v in _core.evaluate([_mnp.min(data), _mnp.max(data)]))
        else:
            mm = _mnp.expand_dims(m, -1) if len(tuple(image.shape)) == 3 else m
            lo = float(_mnp.min(_mnp.where(mm, data, _np.inf)))
            hi = float(_mnp.max(_mnp.where(mm, data, -_np.inf)))
        dmin, dmax = min(alpha, beta), max(alpha, beta)
        scale = (dmax - dmin) / (hi - lo) if hi - lo > _np.finfo(_np.float64).eps else 0.0
        shift = dmin - lo * scale
    elif norm_type in (NORM_INF, NORM_L1, NORM_L2):
        values = data if m is None else _masked(data, m, 0.0)
        if norm_type == NORM_INF:
            norm = _mnp.max(_mnp.abs(values))
        elif norm_type == NORM_L1:
            norm = _mnp.sum(_mnp.abs(values))
        else:
            norm = _mnp.sqrt(_mnp.sum(_mnp.square(values)))
        norm = float(norm)
        scale = alpha / norm if norm > _np.finfo(_np.float64).eps else 0.0
        shift = 0.0
    else:
        raise error("normalize", f"unsupported norm_type {norm_type}; expected NORM_INF, NORM_L1, NORM_L2 "
                                 f"or NORM_MINMAX")
    work = _work_dtype(image.dtype) if out != _np.float64 else _np.dtype(_np.float64)
    result = _saturate(image.astype(work) * work.type(scale) + work.type(shift), out)
    if m is None:
        return result
    base = as_image(dst, "normalize", "dst") if dst is not None else out.type(0)
    return _masked(result, m, base)


def equalizeHist(src, dst=None):  # noqa: N802 (OpenCV's name)
    """Histogram equalization of a one-channel uint8 image."""
    image = as_image(src, "equalizeHist", dtypes=(_np.dtype(_np.uint8),))
    if count_channels(image) != 1:
        raise error("equalizeHist", f"the image must be one-channel uint8, got {count_channels(image)} channels")
    hist = _np.asarray(image_op("CvHistogram8U", [image]))
    total = int(hist.sum())
    first = int(_np.flatnonzero(hist)[0])
    if hist[first] == total:
        return _mnp.full(image.shape, _np.uint8(first))
    # OpenCV scales the running counts in single precision before rounding.
    scale = _np.float32(255.0) / _np.float32(total - hist[first])
    running = _np.cumsum(hist).astype(_np.int64) - hist[first]
    lut = _np.clip(_np.rint(running.astype(_np.float32) * scale), 0, 255).astype(_np.uint8)
    lut[:first + 1] = 0
    return _mnp.take(_core.const(lut, None, "NCHW"), image)


def calcHist(images, channels, mask, histSize, ranges, hist=None, accumulate=False):  # noqa: N802,A002
    """One-dimensional histograms (OpenCV's calcHist with one channel): float32 [histSize] counts
    of ``images[0][..., channels[0]]`` over the uniform bins of [ranges[0], ranges[1])."""
    if not isinstance(images, (list, tuple)) or len(images) == 0:
        raise TypeError("mnnpy.cv.calcHist: 'images' must be a non-empty list of images")
    channel_list, sizes, bounds = list(channels), list(histSize), list(ranges)
    if len(channel_list) != 1 or len(sizes) != 1 or len(bounds) != 2:
        raise error("calcHist", "only one-dimensional histograms (one channel, one size, two range values) "
                                "are supported")
    image = as_image(images[0], "calcHist", "images")
    c = channel_list[0]
    if not 0 <= c < count_channels(image):
        raise error("calcHist", f"channel {c} is out of range for an image of {count_channels(image)} channel(s)")
    bins, (low, high) = int(sizes[0]), (float(bounds[0]), float(bounds[1]))
    if bins <= 0 or not high > low:
        raise error("calcHist", f"histSize must be positive and the range increasing, got {bins}, {bounds}")
    plane = image[..., c] if len(tuple(image.shape)) == 3 else image
    m = _mask_of(mask, image, "calcHist")
    scale = bins / (high - low)
    if _np.dtype(image.dtype) == _np.uint8:
        # Bins of the 256 possible values, counted from the value histogram.
        level_bins = _np.floor(_np.arange(256) * scale - low * scale).astype(_np.int64)
        source = plane if m is None else _mnp.where(m, plane, _np.uint8(0))
        counts = _np.asarray(image_op("CvHistogram8U", [source])).astype(_np.float64)
        if m is not None:
            counts[0] -= float(_mnp.sum(~m))
        valid = (level_bins >= 0) & (level_bins < bins)
        result = _np.bincount(level_bins[valid], weights=counts[valid], minlength=bins)[:bins]
    else:
        values = plane.astype(_np.float64)
        index = _mnp.floor(values * scale - low * scale)
        inside = (values >= low) & (values < high) & (index >= 0) & (index < bins)
        if m is not None:
            inside = inside & m
        index = _mnp.where(inside, index, float(bins)).astype(_np.int64)
        result = _np.asarray(_mnp.bincount(_mnp.ravel(index), minlength=bins + 1))[:bins].astype(_np.float64)
    result = result.astype(_np.float32)
    if accumulate and hist is not None:
        result = result + _np.asarray(hist, dtype=_np.float32).reshape(bins)
    return result

