"""Image analysis: threshold (with Otsu's and the triangle method), inRange, Canny, connected
components.

Both are one pass over the image in a SIMD kernel (ops CvThreshold, CvInRange); Otsu's and
the triangle method first count the histogram, since OpenCV returns the chosen threshold as a
number.
"""
import math as _math

import numpy as _np

from .. import _core
from ._common import as_image, channels, error, image_op

__all__ = ["threshold", "adaptiveThreshold", "inRange", "Canny", "connectedComponents", "connectedComponentsWithStats",
           "ADAPTIVE_THRESH_MEAN_C", "ADAPTIVE_THRESH_GAUSSIAN_C",
           "CC_STAT_LEFT", "CC_STAT_TOP", "CC_STAT_WIDTH", "CC_STAT_HEIGHT", "CC_STAT_AREA",
           "THRESH_BINARY", "THRESH_BINARY_INV", "THRESH_TRUNC", "THRESH_TOZERO", "THRESH_TOZERO_INV",
           "THRESH_MASK", "THRESH_OTSU", "THRESH_TRIANGLE"]

THRESH_BINARY, THRESH_BINARY_INV, THRESH_TRUNC, THRESH_TOZERO, THRESH_TOZERO_INV = 0, 1, 2, 3, 4
THRESH_MASK, THRESH_OTSU, THRESH_TRIANGLE = 7, 8, 16
ADAPTIVE_THRESH_MEAN_C, ADAPTIVE_THRESH_GAUSSIAN_C = 0, 1
CC_STAT_LEFT, CC_STAT_TOP, CC_STAT_WIDTH, CC_STAT_HEIGHT, CC_STAT_AREA = 0, 1, 2, 3, 4

_THRESHOLD_DTYPES = tuple(_np.dtype(d) for d in ("uint8", "int16", "float32", "float64"))


def _otsu_threshold(hist):
    """Otsu's threshold of a 256-bin histogram: the level that maximizes the between-class
    variance, the first one where several do (levels with an empty class are skipped)."""
    total = hist.sum()
    p = hist / total
    levels = _np.arange(hist.size, dtype=_np.float64)
    mu = (levels * p).sum()
    q1 = _np.cumsum(p)
    mu1_sum = _np.cumsum(levels * p)
    q2 = 1.0 - q1
    eps = float(_np.finfo(_np.float32).eps)
    valid = (_np.minimum(q1, q2) >= eps) & (_np.maximum(q1, q2) <= 1.0 - eps)
    with _np.errstate(divide="ignore", invalid="ignore"):
        mu1 = mu1_sum / q1
        mu2 = (mu - q1 * mu1) / q2
        sigma = q1 * q2 * (mu1 - mu2) ** 2
    sigma = _np.where(valid, sigma, -1.0)
    best = int(_np.argmax(sigma))
    return float(best) if sigma[best] > 0 else 0.0


def _triangle_threshold(hist):
    """The triangle method: the level farthest from the line joining the histogram's peak to
    the far end of its longer tail."""
    n = hist.size
    nonzero = _np.flatnonzero(hist)
    # The bounds reach one level past the outermost used levels; a right end is looked for
    # above level 0 only, so an image of zeros has the bounds 0 and 1.
    left = max(int(nonzero[0]) - 1, 0) if nonzero.size else 0
    right = int(nonzero[-1]) if nonzero.size and nonzero[-1] > 0 else 0
    right = min(right + 1, n - 1)
    peak = int(_np.argmax(hist))
    h = hist.astype(_np.int64)
    flipped = peak - left < right - peak
    if flipped:
        h = h[::-1]
        left, peak = n - 1 - right, n - 1 - peak
    thresh = left
    if peak > left:
        levels = _np.arange(left + 1, peak + 1, dtype=_np.int64)
        # The distance is compared in single precision, where close candidates can tie.
        dist = (h[peak] * levels + (left - peak) * h[left + 1:peak + 1]).astype(_np.float32)
        best = int(_np.argmax(dist))
        if dist[best] > 0:
            thresh = int(levels[best])
    thresh -= 1
    if flipped:
        thresh = n - 1 - thresh
    return float(thresh)


def threshold(src, thresh, maxval, type, dst=None):  # noqa: A002 (OpenCV's argument name)
    """OpenCV's ``threshold``: returns ``(retval, dst)``, for uint8, int16, float32 and float64
    images (uint16 is refused until the core has the type). Integer images compare against
    ``floor(thresh)`` and write ``round(maxval)`` saturated, as OpenCV does; THRESH_OTSU and
    THRESH_TRIANGLE (uint8 images, one channel) choose the threshold and return it."""
    image = as_image(src, "threshold", dtypes=_THRESHOLD_DTYPES)
    key = None
    if type.__class__ is int and thresh.__class__ in _PLAIN_NUMBERS and maxval.__class__ in _PLAIN_NUMBERS:
        key = (image.dtype.char, type, thresh, maxval)
        cached = _THRESHOLD_ATTRS.get(key)
        if cached is not None:
            return cached[0], _core.op("CvThreshold", [image], cached[1])
    if type.__class__ is not int and (not isinstance(type, (int, _np.integer)) or isinstance(type, bool)):
        raise TypeError(f"mnnpy.cv.threshold: 'type' must be an integer flag, got {type.__class__.__name__}")
    kind, automatic = int(type) & THRESH_MASK, int(type) & ~THRESH_MASK
    if kind > THRESH_TOZERO_INV or automatic not in (0, THRESH_OTSU, THRESH_TRIANGLE):
        raise error("threshold", f"unsupported threshold type {int(type)}")
    dtype = image.dtype
    if automatic:
        method = "THRESH_OTSU" if automatic == THRESH_OTSU else "THRESH_TRIANGLE"
        if dtype != _np.uint8 or channels(image) != 1:
            raise error("threshold", f"{method} needs a one-channel uint8 image, got {dtype} with "
                                     f"{channels(image)} channel(s)")
        hist = _np.asarray(image_op("CvHistogram8U", [image]))
        thresh = _otsu_threshold(hist) if automatic == THRESH_OTSU else _triangle_threshold(hist)
    thresh, maxval = float(thresh), float(maxval)
    if dtype.kind in "iu":
        low, high = _INTEGER_RANGES[dtype.char]
        thresh = float(_math.floor(thresh))
        # OpenCV's cvRound: halves to even, and INT_MIN for what int32 cannot hold (NaN, inf,
        # |x| >= 2^31), which then saturates to the type's minimum.
        rounded = round(maxval) if _math.isfinite(maxval) else _INT32_MIN
        if not _INT32_MIN <= rounded <= _INT32_MAX:
            rounded = _INT32_MIN
        maxval = float(min(max(rounded, low), high))
    attrs = {"kind": kind, "level": thresh, "maxval": maxval}
    if key is not None and not automatic:
        if len(_THRESHOLD_ATTRS) >= 256:
            _THRESHOLD_ATTRS.clear()
        _THRESHOLD_ATTRS[key] = (thresh, attrs)
    return thresh, _core.op("CvThreshold", [image], attrs)


# The (retval, attributes) of each (dtype char, type, thresh, maxval) seen lately: the integer
# rounding and saturation are worked out once for a threshold used again and again.
_PLAIN_NUMBERS = (int, float)
_THRESHOLD_ATTRS = {}


_INT32_MIN, _INT32_MAX = -2**31, 2**31 - 1
# The integer image types' value ranges, by dtype character (plain ints: cheap per call).
_INTEGER_RANGES = {_np.dtype(t).char: (int(_np.iinfo(t).min), int(_np.iinfo(t).max))
                   for t in (_np.uint8, _np.int8, _np.uint16, _np.int16, _np.int32)}


def _bound(value, image, name):
    """An inRange bound as something that broadcasts against the image: an image-shaped array
    as it is, else a number or one value per channel (OpenCV's Scalar: extra values ignored,
    missing ones 0) as a float64 array, rounded to integers for integer images as OpenCV does."""
    shape = tuple(image.shape)
    if getattr(value, "ndim", 0) >= 2:
        bound = as_image(value, "inRange", name)
        if tuple(bound.shape) != shape:
            raise error("inRange", f"'{name}' has shape {tuple(value.shape)}; an array bound must have the "
                                   f"image's shape {shape}")
        return bound
    values = _np.atleast_1d(_np.asarray(value, dtype=_np.float64)).ravel()
    c = channels(image)
    if values.size == 0 or (values.size > 4 and values.size != c):
        raise error("inRange", f"'{name}' must be a number, one value per channel or an array of the "
                               f"image's shape, got {values.size} values")
    bound = _np.zeros(c)
    bound[:min(c, values.size)] = values[:c]
    if _np.dtype(image.dtype).kind in "iu":
        bound = _np.rint(bound)
    return _core.const(bound, None, "NCHW")


def inRange(src, lowerb, upperb, dst=None):  # noqa: N802 (OpenCV's name)
    """OpenCV's ``inRange``: an HxW uint8 mask, 255 where every channel lies within
    [lowerb, upperb] (inclusive), else 0. Integer images compare against the bounds rounded
    to the nearest integer (halves to even)."""
    image = as_image(src, "inRange")
    lo, hi = _bound(lowerb, image, "lowerb"), _bound(upperb, image, "upperb")
    arrays = [getattr(b, "ndim", 0) >= 2 for b in (lo, hi)]
    if arrays[0] != arrays[1]:
        raise error("inRange", "the bounds must both be scalars (one value per channel) or both arrays")
    if arrays[0]:
        lo, hi = (as_image(b, "inRange", name) for b, name in ((lo, "lowerb"), (hi, "upperb")))
        if lo.dtype != image.dtype or hi.dtype != image.dtype:
            raise error("inRange", f"array bounds must have the image's dtype {_np.dtype(image.dtype)}")
    return image_op("CvInRange", [image, lo, hi])


_NUMBER = (int, float, _np.integer, _np.floating)


def _canny_threshold(value, name):
    if isinstance(value, bool) or not isinstance(value, _NUMBER):
        raise TypeError(f"mnnpy.cv.Canny: '{name}' must be a number, got {type(value).__name__}")
    return float(value)


def _canny_image(image, threshold1, threshold2, edges=None, apertureSize=3, L2gradient=False):  # noqa: N803
    src = as_image(image, "Canny", "image", dtypes=(_np.dtype(_np.uint8),))
    if isinstance(apertureSize, bool) or not isinstance(apertureSize, (int, _np.integer)):
        raise TypeError(f"mnnpy.cv.Canny: 'apertureSize' must be an integer, got {type(apertureSize).__name__}")
    if apertureSize not in (3, 5, 7):
        raise error("Canny", f"Aperture size should be odd between 3 and 7, got {apertureSize}")
    low, high = sorted((_canny_threshold(threshold1, "threshold1"), _canny_threshold(threshold2, "threshold2")))
    return image_op("CvCanny", [src], low=low, high=high, aperture=int(apertureSize), l2=int(bool(L2gradient)))


def _canny_derivatives(dx, dy, threshold1, threshold2, edges=None, L2gradient=False):  # noqa: N803
    int16 = (_np.dtype(_np.int16),)
    gx = as_image(dx, "Canny", "dx", dtypes=int16)
    gy = as_image(dy, "Canny", "dy", dtypes=int16)
    if channels(gx) not in (1, 3):
        raise error("Canny", f"'dx' must have 1 or 3 channels (CV_16SC1 or CV_16SC3), got {channels(gx)}")
    if tuple(gx.shape) != tuple(gy.shape):
        raise error("Canny", f"'dx' and 'dy' must have the same size and type, got shapes {tuple(gx.shape)} "
                             f"and {tuple(gy.shape)}")
    low, high = sorted((_canny_threshold(threshold1, "threshold1"), _canny_threshold(threshold2, "threshold2")))
    return image_op("CvCannyDerivatives", [gx, gy], low=low, high=high, l2=int(bool(L2gradient)))


def Canny(*args, **kwargs):  # noqa: N802 (OpenCV's name)
    """OpenCV's Canny edge detector, identical to OpenCV's output (an HxW uint8 map of 0 and 255).

    ``Canny(image, threshold1, threshold2, edges=None, apertureSize=3, L2gradient=False)``: a
    uint8 image of 1 to 4 channels (the channel with the largest gradient counts), apertures
    3, 5 and 7 (7-tap derivatives and thresholds scaled by 1/16, as OpenCV does).
    ``Canny(dx, dy, threshold1, threshold2, edges=None, L2gradient=False)``: int16 derivative
    images of one shape, 1 or 3 channels."""
    second = args[1] if len(args) > 1 else kwargs.get("dy", kwargs.get("threshold1"))
    derivatives = "dx" in kwargs or "dy" in kwargs or (
        len(args) > 1 and not isinstance(second, _NUMBER) and second is not None)
    try:
        if derivatives:
            return _canny_derivatives(*args, **kwargs)
        return _canny_image(*args, **kwargs)
    except TypeError as exc:
        if str(exc).startswith("mnnpy.cv."):
            raise
        raise TypeError(f"mnnpy.cv.Canny: {exc}") from None


def _labels(image, connectivity, ltype, func):
    from ._common import CV_32S
    src = as_image(image, func, "image", dtypes=(_np.dtype(_np.uint8), _np.dtype(_np.int8)))
    if channels(src) != 1:
        raise error(func, f"the image must have one channel, got {channels(src)}")
    if connectivity not in (4, 8):
        raise error(func, f"connectivity must be 4 or 8, got {connectivity}")
    if ltype != CV_32S:
        raise error(func, "only ltype=CV_32S labels are supported (the core has no uint16)")
    labels, count = image_op("CvLabelComponents", [src], connectivity=int(connectivity))
    return labels, int(_np.asarray(count)[0])


def connectedComponents(image, labels=None, connectivity=8, ltype=4):  # noqa: N802 (OpenCV's name)
    """``(count, labels)``: int32 labels of the 4- or 8-connected nonzero regions, numbered as
    OpenCV numbers them; count includes the background label 0."""
    labels, count = _labels(image, connectivity, ltype, "connectedComponents")
    return count, labels


def connectedComponentsWithStats(image, labels=None, stats=None, centroids=None, connectivity=8,  # noqa: N802
                                 ltype=4, ccltype=-1):
    """``(count, labels, stats, centroids)``: as connectedComponents, with each label's bounding
    box and area (int32 rows of CC_STAT_LEFT ... CC_STAT_AREA) and centroid (float64 x, y)."""
    labels, count = _labels(image, connectivity, ltype, "connectedComponentsWithStats")
    stats, centroids = image_op("CvComponentStats", [labels], count=count)
    return count, labels, stats, centroids


def adaptiveThreshold(src, maxValue, adaptiveMethod, thresholdType, blockSize, C, dst=None):  # noqa: N802,N803
    """OpenCV's adaptiveThreshold of a one-channel uint8 image: each pixel against the mean
    (ADAPTIVE_THRESH_MEAN_C) or Gaussian-weighted mean (ADAPTIVE_THRESH_GAUSSIAN_C) of its
    blockSize x blockSize neighbourhood (borders replicated) minus C, the mean rounded to uint8
    as OpenCV rounds it."""
    from .. import numpy as _mnp
    from . import _filters
    from ._common import BORDER_ISOLATED, BORDER_REPLICATE
    image = as_image(src, "adaptiveThreshold", dtypes=(_np.dtype(_np.uint8),))
    if channels(image) != 1:
        raise error("adaptiveThreshold", f"the image must be one-channel uint8, got {channels(image)} channels")
    if not isinstance(blockSize, (int, _np.integer)) or blockSize % 2 != 1 or blockSize <= 1:
        raise error("adaptiveThreshold", f"blockSize must be odd and greater than 1, got {blockSize}")
    if adaptiveMethod not in (ADAPTIVE_THRESH_MEAN_C, ADAPTIVE_THRESH_GAUSSIAN_C):
        raise error("adaptiveThreshold", f"unknown adaptiveMethod {adaptiveMethod}")
    if thresholdType not in (THRESH_BINARY, THRESH_BINARY_INV):
        raise error("adaptiveThreshold", f"thresholdType must be THRESH_BINARY or THRESH_BINARY_INV, got "
                                         f"{thresholdType}")
    if maxValue < 0:
        return image_op("CvThreshold", [image], kind=THRESH_BINARY, level=255.0, maxval=0.0)
    border = BORDER_REPLICATE | BORDER_ISOLATED
    size = (int(blockSize), int(blockSize))
    if adaptiveMethod == ADAPTIVE_THRESH_MEAN_C:
        mean = _filters.boxFilter(image, -1, size, normalize=True, borderType=border)
    else:
        # OpenCV blurs in float32 here and rounds, not through its 8-bit fixed-point Gaussian.
        blurred = _filters.GaussianBlur(image.astype(_np.float32), size, 0, sigmaY=0, borderType=border)
        mean = _mnp.clip(_mnp.rint(blurred), 0, 255).astype(_np.uint8)
    top = _np.uint8(min(max(int(_np.rint(maxValue)), 0), 255))
    difference = image.astype(_np.int16) - mean.astype(_np.int16)
    if thresholdType == THRESH_BINARY:
        selected = difference > _np.int16(-_math.ceil(C))
    else:
        selected = difference <= _np.int16(-_math.floor(C))
    return _mnp.where(selected, top, _np.uint8(0))
