"""Image filtering: Gaussian, box, separable and general linear filters, derivatives,
morphology, median and bilateral filters.

Every filter is one graph op with borders read through index tables built when the plan is
made: CvSepFilter (a vertical pass over the source rows into a row buffer, then a horizontal
pass along it), CvFilter2D, CvMorphology, CvMedianBlur and CvBilateral8U. Kernel builders
(getGaussianKernel, getDerivKernels, getStructuringElement, getGaborKernel) compute NumPy arrays,
which mnnpy.cv gives back as Vars.
uint8 GaussianBlur runs OpenCV's bit-exact fixed-point arithmetic (8-bit taps, integer sums,
rounding half up), so its results are identical to OpenCV's.
"""
import math as _math
from fractions import Fraction as _Fraction

import numpy as _np

from .. import _core
from ._common import (BORDER_CONSTANT, BORDER_REFLECT, BORDER_REFLECT_101, BORDER_REPLICATE, BORDER_WRAP,
                      BORDER_DEFAULT, BORDER_ISOLATED, CV_8U, CV_16S, CV_32F, CV_64F, DEPTH_DTYPES,
                      as_image, channels, error, image_op)

__all__ = ["GaussianBlur", "getGaussianKernel", "sepFilter2D", "boxFilter", "blur", "sqrBoxFilter", "filter2D",
           "getDerivKernels", "Sobel", "Scharr", "Laplacian", "spatialGradient", "getStructuringElement", "erode",
           "dilate", "morphologyEx", "medianBlur", "bilateralFilter", "getGaborKernel",
           "FILTER_SCHARR", "MORPH_ERODE", "MORPH_DILATE", "MORPH_OPEN", "MORPH_CLOSE", "MORPH_GRADIENT",
           "MORPH_TOPHAT", "MORPH_BLACKHAT", "MORPH_HITMISS", "MORPH_RECT", "MORPH_CROSS", "MORPH_ELLIPSE",
           "MORPH_DIAMOND"]

# Kernels OpenCV uses for sigma <= 0 and these sizes instead of sampling the Gaussian.
_SMALL_GAUSSIAN_KERNELS = {
    1: (1.0,),
    3: (0.25, 0.5, 0.25),
    5: (0.0625, 0.25, 0.375, 0.25, 0.0625),
    7: (0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125),
    9: (0.015625, 0.05078125, 0.1171875, 0.19921875, 0.234375, 0.19921875, 0.1171875, 0.05078125, 0.015625),
}

_BORDERS = (BORDER_CONSTANT, BORDER_REPLICATE, BORDER_REFLECT, BORDER_REFLECT_101)
_DEPTH_OF_DTYPE = {_np.dtype(v): k for k, v in DEPTH_DTYPES.items()}
_FILTER_DEPTHS = (CV_8U, CV_16S, CV_32F, CV_64F)


def _is_int(value):
    return isinstance(value, (int, _np.integer)) and not isinstance(value, bool)


def _int_arg(func, name, value):
    if not _is_int(value):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be an integer, got {type(value).__name__}")
    return int(value)


def _float_arg(func, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, _np.integer, _np.floating)):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be a number, got {type(value).__name__}")
    return float(value)


def _pair(func, name, value):
    """An OpenCV Size or Point: a sequence of two integers."""
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be a pair of integers, got {type(value).__name__}") from None
    if len(items) != 2 or not all(_is_int(v) or (isinstance(v, float) and v.is_integer()) for v in items):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be a pair of integers, got {value!r}")
    return int(items[0]), int(items[1])


def _border(func, border_type, wrap=False):
    """The border type without BORDER_ISOLATED (images here are never views into larger ones)."""
    value = _int_arg(func, "borderType", border_type) & ~BORDER_ISOLATED
    allowed = _BORDERS + ((BORDER_WRAP,) if wrap else ())
    if value not in allowed:
        raise error(func, f"unsupported borderType {int(border_type)}; expected one of {sorted(allowed)} "
                          f"(optionally with BORDER_ISOLATED)")
    return value


def _depth_of(image):
    return _DEPTH_OF_DTYPE[_np.dtype(image.dtype)]


def _anchor(func, anchor, kx_size, ky_size):
    ax, ay = _pair(func, "anchor", anchor)
    ax = kx_size // 2 if ax == -1 else ax
    ay = ky_size // 2 if ay == -1 else ay
    if not (0 <= ax < kx_size and 0 <= ay < ky_size):
        raise error(func, f"anchor {tuple(anchor)} lies outside the {kx_size}x{ky_size} kernel")
    return ax, ay


def _taps(values):
    return _core.const(_np.ascontiguousarray(values, dtype=_np.float64), None, "NCHW")


def _sep_filter(image, kx, ky, ddepth, border, anchor=None, scale=1.0, delta=0.0, fixed_point=False,
                square=False):
    kx = _np.asarray(kx, dtype=_np.float64).ravel()
    ky = _np.asarray(ky, dtype=_np.float64).ravel()
    ax, ay = anchor if anchor is not None else (kx.size // 2, ky.size // 2)
    return image_op("CvSepFilter", [image, _taps(kx), _taps(ky)], border=int(border), ddepth=int(ddepth),
                    anchor_x=int(ax), anchor_y=int(ay), scale=float(scale), delta=float(delta),
                    fixed_point=int(bool(fixed_point)), square=int(bool(square)))


def _gaussian_taps(n, sigma):
    """OpenCV's Gaussian kernel of n taps (summing to 1) as float64 values: the fixed tables for
    sigma <= 0 and small odd n, else the sampled Gaussian with sigma = 0.3 ((n - 1) / 2 - 1) + 0.8
    when sigma <= 0, computed in the same order of double operations as OpenCV."""
    if sigma <= 0 and n in _SMALL_GAUSSIAN_KERNELS:
        return _np.array(_SMALL_GAUSSIAN_KERNELS[n])
    # 0.15 n + 0.35 with one rounding (a fused multiply-add), as OpenCV computes it.
    s = sigma if sigma > 0 else float(_Fraction(n) * _Fraction(0.15) + _Fraction(0.35))
    scale = -0.125 / (s * s)  # positions are counted in half steps: x = 2 (i - (n - 1) / 2)
    half = (n - 1) // 2
    values = []
    total = 0.0
    for i in range(half):
        x = 1 - n + 2 * i
        t = _math.exp(float(x * x) * scale)
        values.append(t)
        total += t
    total = total * 2.0 + 1.0
    if n % 2 == 0:
        total += 1.0
    inverse = 1.0 / total
    taps = _np.empty(n)
    for i, t in enumerate(values):
        taps[i] = taps[n - 1 - i] = t * inverse
    taps[half] = inverse
    if n % 2 == 0:
        taps[half + 1] = inverse
    return taps


def _fixed_point_taps(taps, fraction_bits=8):
    """Integer taps summing to 2^fraction_bits: rounded from the outside in, each carrying the
    previous one's rounding error forward, the center taking what is left."""
    n = taps.size
    one = 1 << fraction_bits
    out = _np.empty(n)
    carried = 0.0
    outer = 0
    for i in range(n // 2):
        wanted = float(taps[i]) * one + carried
        value = int(_np.rint(wanted))
        carried = wanted - value
        out[i] = out[n - 1 - i] = value
        outer += value
    out[n // 2] = one - 2 * outer
    return out


def getGaussianKernel(ksize, sigma, ktype=CV_64F):  # noqa: N802 (OpenCV's name)
    """OpenCV's ``getGaussianKernel``: a ksize x 1 array of Gaussian taps summing to 1."""
    n = _int_arg("getGaussianKernel", "ksize", ksize)
    sigma = _float_arg("getGaussianKernel", "sigma", sigma)
    ktype = _int_arg("getGaussianKernel", "ktype", ktype)
    if n <= 0:
        raise error("getGaussianKernel", f"ksize must be positive, got {n}")
    if ktype not in (CV_32F, CV_64F):
        raise error("getGaussianKernel", f"ktype must be CV_32F or CV_64F, got {ktype}")
    return _gaussian_taps(n, sigma).astype(DEPTH_DTYPES[ktype]).reshape(n, 1)


def GaussianBlur(src, ksize, sigmaX, dst=None, sigmaY=0, borderType=BORDER_DEFAULT):  # noqa: N802,N803
    """OpenCV's ``GaussianBlur``. Sizes of 0 are derived from the sigmas (3 sigma each side for
    uint8, 4 otherwise), a sigma of 0 from the size; sigmaY 0 means sigmaX. uint8 images give
    OpenCV's exact bits; other types agree to float rounding."""
    image = as_image(src, "GaussianBlur")
    kw, kh = _pair("GaussianBlur", "ksize", ksize)
    sx = _float_arg("GaussianBlur", "sigmaX", sigmaX)
    sy = _float_arg("GaussianBlur", "sigmaY", sigmaY)
    border = _border("GaussianBlur", borderType)
    depth = _depth_of(image)
    if sy <= 0:
        sy = sx
    reach = 3 if depth == CV_8U else 4
    if kw <= 0 and sx > 0:
        kw = int(_np.rint(sx * reach * 2 + 1)) | 1
    if kh <= 0 and sy > 0:
        kh = int(_np.rint(sy * reach * 2 + 1)) | 1
    if kw <= 0 or kw % 2 == 0 or kh <= 0 or kh % 2 == 0:
        raise error("GaussianBlur", f"ksize must be odd and positive (or 0 with a positive sigma), got "
                                    f"{(kw, kh)}")
    kx, ky = _gaussian_taps(kw, max(sx, 0.0)), _gaussian_taps(kh, max(sy, 0.0))
    if depth == CV_8U:
        return _sep_filter(image, _fixed_point_taps(kx), _fixed_point_taps(ky), CV_8U, border, fixed_point=True)
    return _sep_filter(image, kx, ky, depth, border)


# Result depths each source depth may be filtered into (OpenCV's supported combinations).
_SEP_DEPTHS = {CV_8U: (CV_8U, CV_16S, CV_32F, CV_64F), CV_16S: (CV_8U, CV_16S, CV_32F, CV_64F),
               CV_32F: (CV_8U, CV_16S, CV_32F, CV_64F), CV_64F: (CV_8U, CV_16S, CV_64F)}
_BOX_DEPTHS = {CV_8U: _FILTER_DEPTHS, CV_16S: _FILTER_DEPTHS, CV_32F: _FILTER_DEPTHS, CV_64F: _FILTER_DEPTHS}


def _ddepth(func, ddepth, image, table, default=None):
    ddepth = _int_arg(func, "ddepth", ddepth)
    depth = _depth_of(image)
    if ddepth < 0:
        return default if default is not None else depth
    if ddepth not in table[depth]:
        raise error(func, f"unsupported combination of source depth {depth} and ddepth {ddepth}")
    return ddepth


def _kernel_vector(func, name, kernel):
    k = _np.asarray(kernel)
    if k.dtype.kind not in "biuf":
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be a numerical array")
    if k.size == 0 or (k.ndim == 2 and 1 not in k.shape) or k.ndim > 2:
        raise error(func, f"'{name}' must be a non-empty row or column vector, got shape {k.shape}")
    return k.astype(_np.float64).ravel()


def sepFilter2D(src, ddepth, kernelX, kernelY, dst=None, anchor=(-1, -1), delta=0,  # noqa: N802,N803
                borderType=BORDER_DEFAULT):
    """OpenCV's ``sepFilter2D``: kernelX along rows, kernelY along columns (correlation)."""
    image = as_image(src, "sepFilter2D")
    out = _ddepth("sepFilter2D", ddepth, image, _SEP_DEPTHS)
    kx = _kernel_vector("sepFilter2D", "kernelX", kernelX)
    ky = _kernel_vector("sepFilter2D", "kernelY", kernelY)
    border = _border("sepFilter2D", borderType)
    ax, ay = _anchor("sepFilter2D", anchor, kx.size, ky.size)
    return _sep_filter(image, kx, ky, out, border, (ax, ay), delta=_float_arg("sepFilter2D", "delta", delta))


def _box(func, src, ddepth, ksize, anchor, normalize, border_type, square):
    image = as_image(src, func)
    if square:
        out = _ddepth(func, ddepth, image, _BOX_DEPTHS,
                      default=CV_32F if _depth_of(image) in (CV_8U, CV_16S) else CV_64F)
    else:
        out = _ddepth(func, ddepth, image, _BOX_DEPTHS)
    kw, kh = _pair(func, "ksize", ksize)
    if kw <= 0 or kh <= 0:
        raise error(func, f"ksize must be positive, got {(kw, kh)}")
    border = _border(func, border_type)
    ax, ay = _anchor(func, anchor, kw, kh)
    scale = 1.0 / (kw * kh) if normalize else 1.0
    return _sep_filter(image, _np.ones(kw), _np.ones(kh), out, border, (ax, ay), scale=scale, square=square)


def boxFilter(src, ddepth, ksize, dst=None, anchor=(-1, -1), normalize=True,  # noqa: N802
              borderType=BORDER_DEFAULT):  # noqa: N803
    """OpenCV's ``boxFilter``: the sum (or, normalized, the mean) over a ksize window."""
    return _box("boxFilter", src, ddepth, ksize, anchor, normalize, borderType, False)


def blur(src, ksize, dst=None, anchor=(-1, -1), borderType=BORDER_DEFAULT):  # noqa: N803
    """OpenCV's ``blur``: the normalized box filter in the source's type."""
    return _box("blur", src, -1, ksize, anchor, True, borderType, False)


def sqrBoxFilter(src, ddepth, ksize, dst=None, anchor=(-1, -1), normalize=True,  # noqa: N802
                 borderType=BORDER_DEFAULT):  # noqa: N803
    """OpenCV's ``sqrBoxFilter``: the sum (or mean) of squared values over a ksize window;
    ddepth -1 gives float32 for uint8 and int16 images, else float64."""
    return _box("sqrBoxFilter", src, ddepth, ksize, anchor, normalize, borderType, True)


# filter2D's supported (source depth -> result depth) combinations.
_FILTER2D_DEPTHS = {CV_8U: _FILTER_DEPTHS, CV_16S: (CV_16S, CV_32F, CV_64F), CV_32F: (CV_32F,), CV_64F: (CV_64F,)}


def _filter_2d(image, kernel, ddepth, border, anchor, scale=1.0, delta=0.0):
    kernel = _np.ascontiguousarray(kernel, dtype=_np.float64)
    return image_op("CvFilter2D", [image, _core.const(kernel, None, "NCHW")], border=int(border),
                    ddepth=int(ddepth), anchor_x=int(anchor[0]), anchor_y=int(anchor[1]), scale=float(scale),
                    delta=float(delta))


def filter2D(src, ddepth, kernel, dst=None, anchor=(-1, -1), delta=0, borderType=BORDER_DEFAULT):  # noqa: N802,N803
    """OpenCV's ``filter2D``: correlation with a single-channel kernel (a 1-D kernel is a row)."""
    image = as_image(src, "filter2D")
    out = _ddepth("filter2D", ddepth, image, _FILTER2D_DEPTHS)
    k = _np.asarray(kernel)
    if k.dtype.kind not in "biuf":
        raise TypeError("mnnpy.cv.filter2D: 'kernel' must be a numerical array")
    if k.ndim == 1:
        k = k.reshape(1, -1)
    if k.ndim != 2 or k.size == 0:
        raise error("filter2D", f"'kernel' must be a non-empty single-channel matrix, got shape {k.shape}")
    border = _border("filter2D", borderType)
    anchor = _anchor("filter2D", anchor, k.shape[1], k.shape[0])
    return _filter_2d(image, k, out, border, anchor, delta=_float_arg("filter2D", "delta", delta))


FILTER_SCHARR = -1


def _deriv_taps(order, size, normalize):
    """One direction of OpenCV's Sobel kernels: binomial smoothing of size - order taps
    differenced order times ([-1, 0, 1] and [1, -2, 1] at size 3)."""
    taps = _np.array([1.0])
    for _ in range(size - order - 1):
        taps = _np.convolve(taps, [1.0, 1.0])
    for _ in range(order):
        taps = _np.convolve(taps, [-1.0, 1.0])
    if normalize:
        taps = taps / float(1 << (size - order - 1))
    return taps


def _deriv_kernels(func, dx, dy, ksize, normalize=False):
    dx, dy, ksize = (_int_arg(func, name, v) for name, v in (("dx", dx), ("dy", dy), ("ksize", ksize)))
    if dx < 0 or dy < 0 or dx + dy <= 0:
        raise error(func, f"dx and dy must be non-negative and not both 0, got dx={dx}, dy={dy}")
    if ksize == FILTER_SCHARR:
        if dx + dy != 1:
            raise error(func, f"the Scharr kernel needs dx + dy == 1, got dx={dx}, dy={dy}")
        derivative, smoothing = _np.array([-1.0, 0.0, 1.0]), _np.array([3.0, 10.0, 3.0])
        if normalize:
            smoothing = smoothing / 32.0
        return (derivative, smoothing) if dx else (smoothing, derivative)
    if ksize <= 0 or ksize % 2 == 0 or ksize > 31:
        raise error(func, f"ksize must be odd, between 1 and 31 (or FILTER_SCHARR), got {ksize}")
    kernels = []
    for order in (dx, dy):
        size = 3 if ksize == 1 and order > 0 else ksize
        if order >= size:
            raise error(func, f"derivative order {order} needs a larger ksize than {ksize}")
        kernels.append(_deriv_taps(order, size, normalize))
    return tuple(kernels)


def getDerivKernels(dx, dy, ksize, kx=None, ky=None, normalize=False, ktype=CV_32F):  # noqa: N802
    """OpenCV's ``getDerivKernels``: the (kx, ky) column vectors of the Sobel (or, for ksize
    FILTER_SCHARR, Scharr) derivative of orders dx, dy."""
    ktype = _int_arg("getDerivKernels", "ktype", ktype)
    if ktype not in (CV_32F, CV_64F):
        raise error("getDerivKernels", f"ktype must be CV_32F or CV_64F, got {ktype}")
    taps = _deriv_kernels("getDerivKernels", dx, dy, ksize, bool(normalize))
    return tuple(t.astype(DEPTH_DTYPES[ktype]).reshape(-1, 1) for t in taps)


def Sobel(src, ddepth, dx, dy, dst=None, ksize=3, scale=1, delta=0, borderType=BORDER_DEFAULT):  # noqa: N802,N803
    """OpenCV's ``Sobel``: the (dx, dy) derivative by separable Sobel (or Scharr) kernels, times
    scale, plus delta."""
    image = as_image(src, "Sobel")
    out = _ddepth("Sobel", ddepth, image, _SEP_DEPTHS)
    kx, ky = _deriv_kernels("Sobel", dx, dy, ksize)
    border = _border("Sobel", borderType)
    return _sep_filter(image, kx, ky, out, border, scale=_float_arg("Sobel", "scale", scale),
                       delta=_float_arg("Sobel", "delta", delta))


def Scharr(src, ddepth, dx, dy, dst=None, scale=1, delta=0, borderType=BORDER_DEFAULT):  # noqa: N802,N803
    """OpenCV's ``Scharr``: the first derivative by the 3x3 Scharr kernels."""
    image = as_image(src, "Scharr")
    out = _ddepth("Scharr", ddepth, image, _SEP_DEPTHS)
    kx, ky = _deriv_kernels("Scharr", dx, dy, FILTER_SCHARR)
    border = _border("Scharr", borderType)
    return _sep_filter(image, kx, ky, out, border, scale=_float_arg("Scharr", "scale", scale),
                       delta=_float_arg("Scharr", "delta", delta))


def Laplacian(src, ddepth, dst=None, ksize=1, scale=1, delta=0, borderType=BORDER_DEFAULT):  # noqa: N802,N803
    """OpenCV's ``Laplacian``: d2/dx2 + d2/dy2, by the 3x3 kernels for ksize 1 and 3, else by
    Sobel's second derivatives."""
    image = as_image(src, "Laplacian")
    out = _ddepth("Laplacian", ddepth, image, _SEP_DEPTHS)
    ksize = _int_arg("Laplacian", "ksize", ksize)
    if ksize <= 0 or ksize % 2 == 0 or ksize > 31:
        raise error("Laplacian", f"ksize must be odd, between 1 and 31, got {ksize}")
    border = _border("Laplacian", borderType)
    if ksize == 1:
        kernel = _np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], _np.float64)
    elif ksize == 3:
        kernel = _np.array([[2, 0, 2], [0, -8, 0], [2, 0, 2]], _np.float64)
    else:
        second, smooth = _deriv_taps(2, ksize, False), _deriv_taps(0, ksize, False)
        kernel = _np.outer(smooth, second) + _np.outer(second, smooth)
    center = (kernel.shape[1] // 2, kernel.shape[0] // 2)
    return _filter_2d(image, kernel, out, border, center, scale=_float_arg("Laplacian", "scale", scale),
                      delta=_float_arg("Laplacian", "delta", delta))


def spatialGradient(src, dx=None, dy=None, ksize=3, borderType=BORDER_DEFAULT):  # noqa: N802,N803
    """OpenCV's ``spatialGradient``: the int16 3x3 Sobel derivatives (dx, dy) of a one-channel
    uint8 image (borders BORDER_DEFAULT or BORDER_REPLICATE)."""
    image = as_image(src, "spatialGradient", dtypes=(_np.dtype(_np.uint8),))
    if len(tuple(image.shape)) != 2:
        raise error("spatialGradient", f"the image must have one channel, got shape {tuple(image.shape)}")
    if _int_arg("spatialGradient", "ksize", ksize) != 3:
        raise error("spatialGradient", f"only ksize 3 is supported, got {ksize}")
    border = _int_arg("spatialGradient", "borderType", borderType)
    if border not in (BORDER_DEFAULT, BORDER_REPLICATE):
        raise error("spatialGradient", f"borderType must be BORDER_DEFAULT or BORDER_REPLICATE, got {border}")
    return (_sep_filter(image, [-1.0, 0.0, 1.0], [1.0, 2.0, 1.0], CV_16S, border),
            _sep_filter(image, [1.0, 2.0, 1.0], [-1.0, 0.0, 1.0], CV_16S, border))



MORPH_ERODE, MORPH_DILATE, MORPH_OPEN, MORPH_CLOSE = 0, 1, 2, 3
MORPH_GRADIENT, MORPH_TOPHAT, MORPH_BLACKHAT, MORPH_HITMISS = 4, 5, 6, 7
MORPH_RECT, MORPH_CROSS, MORPH_ELLIPSE, MORPH_DIAMOND = 0, 1, 2, 3


def getStructuringElement(shape, ksize, anchor=(-1, -1)):  # noqa: N802 (OpenCV's name)
    """OpenCV's ``getStructuringElement``: a uint8 (height x width) mask of 0 and 1."""
    shape = _int_arg("getStructuringElement", "shape", shape)
    if shape not in (MORPH_RECT, MORPH_CROSS, MORPH_ELLIPSE, MORPH_DIAMOND):
        raise error("getStructuringElement", f"unknown shape {shape}; expected MORPH_RECT, MORPH_CROSS, "
                                             "MORPH_ELLIPSE or MORPH_DIAMOND")
    width, height = _pair("getStructuringElement", "ksize", ksize)
    if width <= 0 or height <= 0:
        raise error("getStructuringElement", f"ksize must be positive, got {(width, height)}")
    ax, ay = _anchor("getStructuringElement", anchor, width, height)
    if (width, height) == (1, 1):
        shape = MORPH_RECT
    element = _np.zeros((height, width), _np.uint8)
    r, c = height // 2, width // 2
    for i in range(height):
        if shape == MORPH_RECT or (shape == MORPH_CROSS and i == ay):
            j1, j2 = 0, width
        elif shape == MORPH_CROSS:
            j1, j2 = ax, ax + 1
        else:
            dy = i - r
            if abs(dy) > r:
                continue
            if shape == MORPH_ELLIPSE:
                reach = int(_np.rint(c * _math.sqrt((r * r - dy * dy) / (r * r)))) if r else c
            else:
                reach = r - abs(dy)
            j1, j2 = max(c - reach, 0), min(c + reach + 1, width)
        element[i, j1:j2] = 1
    return element


# What OpenCV's default border value means for erosion and dilation: the border never wins.
_DEFAULT_BORDER_VALUE = float(_np.finfo(_np.float64).max)


def _border_values(func, value, image):
    """OpenCV's Scalar border value as one float64 per channel (a number v is (v, 0, 0, 0))."""
    count = channels(image)
    if value is None:
        return None
    values = _np.atleast_1d(_np.asarray(value, dtype=_np.float64)).ravel()
    if values.size == 0 or values.size > 4:
        raise error(func, f"borderValue must be a number or up to 4 values, got {values.size}")
    out = _np.zeros(count)
    out[:min(count, values.size)] = values[:count]
    return out


def _morph_once(image, element, anchor, dilate, border, values):
    if values is None:
        values = _np.full(channels(image), -_DEFAULT_BORDER_VALUE if dilate else _DEFAULT_BORDER_VALUE)
    return image_op("CvMorphology", [image, _core.const(_np.ascontiguousarray(element, dtype=_np.uint8), None, "NCHW"),
                                     _taps(values)],
                    dilate=int(dilate), border=int(border), anchor_x=int(anchor[0]), anchor_y=int(anchor[1]))


def _morph_arguments(func, src, kernel, anchor, iterations, border_type, border_value):
    image = as_image(src, func)
    if kernel is None or _np.asarray(kernel).size == 0:
        element = _np.ones((3, 3), _np.uint8)
    else:
        element = _np.asarray(kernel)
        if element.dtype.kind not in "biuf":
            raise TypeError(f"mnnpy.cv.{func}: 'kernel' must be a numerical array")
        if element.ndim == 1:
            element = element.reshape(1, -1)
        if element.ndim != 2:
            raise error(func, f"'kernel' must be a 2-D matrix, got shape {element.shape}")
        element = (element != 0).astype(_np.uint8)
    iterations = _int_arg(func, "iterations", iterations)
    border = _border(func, border_type)
    anchor = _anchor(func, anchor, element.shape[1], element.shape[0])
    values = _border_values(func, border_value, image) if border == BORDER_CONSTANT else None
    return image, element, anchor, iterations, border, values


def _morph(image, element, anchor, iterations, border, values, dilate):
    if iterations <= 0 or element.size == 1:
        # Nothing to do, but the result is still a value of its own (a 1x1 window copies).
        return _morph_once(image, _np.ones((1, 1), _np.uint8), (0, 0), dilate, border, values)
    if iterations > 1 and element.all():
        # Repeated rectangles are one larger rectangle, as OpenCV computes them.
        h, w = element.shape
        element = _np.ones((h + (iterations - 1) * (h - 1), w + (iterations - 1) * (w - 1)), _np.uint8)
        anchor, iterations = (anchor[0] * iterations, anchor[1] * iterations), 1
    result = image
    for _ in range(iterations):
        result = _morph_once(result, element, anchor, dilate, border, values)
    return result


def erode(src, kernel, dst=None, anchor=(-1, -1), iterations=1, borderType=BORDER_CONSTANT,  # noqa: N803
          borderValue=None):  # noqa: N803
    """OpenCV's ``erode``: the minimum over the kernel's nonzero entries (None: 3x3), iterated."""
    args = _morph_arguments("erode", src, kernel, anchor, iterations, borderType, borderValue)
    return _morph(*args, dilate=False)


def dilate(src, kernel, dst=None, anchor=(-1, -1), iterations=1, borderType=BORDER_CONSTANT,  # noqa: N803
           borderValue=None):  # noqa: N803
    """OpenCV's ``dilate``: the maximum over the kernel's nonzero entries (None: 3x3), iterated."""
    args = _morph_arguments("dilate", src, kernel, anchor, iterations, borderType, borderValue)
    return _morph(*args, dilate=True)


def _difference(a, b):
    """a - b, saturated at 0 for integer images (b <= a wherever they are used here, except on
    borders where OpenCV saturates too)."""
    from .. import numpy as mnp
    if _np.dtype(a.dtype).kind == "f":
        return mnp.subtract(a, b)
    return mnp.subtract(a, mnp.minimum(a, b))


def _hit_or_miss(src, kernel, anchor, iterations):
    """Where the kernel's 1 entries all fall on set pixels and its -1 entries on clear ones: the
    AND of two erosions (of the image by the 1s, of its complement by the -1s), borders ignored."""
    from .. import numpy as mnp
    image = as_image(src, "morphologyEx", dtypes=(_np.dtype(_np.uint8),))
    if channels(image) != 1:
        raise error("morphologyEx", f"MORPH_HITMISS needs a one-channel image, got {channels(image)} channels")
    if kernel is None:
        raise error("morphologyEx", "MORPH_HITMISS needs a kernel of 1, -1 and 0 entries")
    k = _np.asarray(kernel)
    if k.dtype.kind not in "iuf":
        raise TypeError("mnnpy.cv.morphologyEx: 'kernel' must be a numerical array")
    k = k.reshape(1, -1) if k.ndim == 1 else k
    if k.ndim != 2 or k.size == 0:
        raise error("morphologyEx", f"'kernel' must be a non-empty 2-D matrix, got shape {k.shape}")
    anchor = _anchor("morphologyEx", anchor, k.shape[1], k.shape[0])
    iterations = _int_arg("morphologyEx", "iterations", iterations)
    hits, misses = (k == 1).astype(_np.uint8), (k == -1).astype(_np.uint8)
    parts = []
    if hits.any():
        parts.append(_morph(image, hits, anchor, iterations, BORDER_CONSTANT, None, False))
    if misses.any():
        parts.append(_morph(mnp.invert(image), misses, anchor, iterations, BORDER_CONSTANT, None, False))
    if not parts:
        # A kernel of zeros matches everywhere; OpenCV then returns the image as it is.
        return _morph(image, _np.ones((1, 1), _np.uint8), (0, 0), 1, BORDER_CONSTANT, None, False)
    return parts[0] if len(parts) == 1 else mnp.bitwise_and(parts[0], parts[1])


def morphologyEx(src, op, kernel, dst=None, anchor=(-1, -1), iterations=1,  # noqa: N802
                 borderType=BORDER_CONSTANT, borderValue=None):  # noqa: N803
    """OpenCV's ``morphologyEx``: MORPH_ERODE, DILATE, OPEN, CLOSE, GRADIENT, TOPHAT, BLACKHAT and
    HITMISS (one-channel uint8 images; kernel entries 1 must be set, -1 must be clear)."""
    op = _int_arg("morphologyEx", "op", op)
    if op == MORPH_HITMISS:
        return _hit_or_miss(src, kernel, anchor, iterations)
    if op not in range(MORPH_ERODE, MORPH_BLACKHAT + 1):
        raise error("morphologyEx", f"unknown morphological operation {op}")
    image, element, anchor, iterations, border, values = _morph_arguments(
        "morphologyEx", src, kernel, anchor, iterations, borderType, borderValue)

    def run(x, dilating):
        return _morph(x, element, anchor, iterations, border, values, dilating)

    if op in (MORPH_ERODE, MORPH_DILATE):
        return run(image, op == MORPH_DILATE)
    if op == MORPH_OPEN:
        return run(run(image, False), True)
    if op == MORPH_CLOSE:
        return run(run(image, True), False)
    if op == MORPH_GRADIENT:
        return _difference(run(image, True), run(image, False))
    if op == MORPH_TOPHAT:
        return _difference(image, run(run(image, False), True))
    return _difference(run(run(image, True), False), image)



def getGaborKernel(ksize, sigma, theta, lambd, gamma, psi=_math.pi * 0.5, ktype=CV_64F):  # noqa: N802
    """OpenCV's ``getGaborKernel``: a Gaussian envelope (sigma, aspect gamma) times a cosine wave of
    wavelength lambd and phase psi along direction theta; sizes of 0 span 3 sigma. The kernel is
    stored flipped (kernel[ymax - y, xmax - x] holds the value at (x, y)), as OpenCV stores it."""
    width, height = _pair("getGaborKernel", "ksize", ksize)
    sigma, theta, lambd, gamma, psi = (_float_arg("getGaborKernel", n, v) for n, v in
                                       (("sigma", sigma), ("theta", theta), ("lambd", lambd), ("gamma", gamma),
                                        ("psi", psi)))
    ktype = _int_arg("getGaborKernel", "ktype", ktype)
    if ktype not in (CV_32F, CV_64F):
        raise error("getGaborKernel", f"ktype must be CV_32F or CV_64F, got {ktype}")
    sigma_x, sigma_y = sigma, sigma / gamma
    c, s = _math.cos(theta), _math.sin(theta)
    spread = 3.0
    xmax = width // 2 if width > 0 else int(_np.rint(max(abs(spread * sigma_x * c), abs(spread * sigma_y * s))))
    ymax = height // 2 if height > 0 else int(_np.rint(max(abs(spread * sigma_x * s), abs(spread * sigma_y * c))))
    ys, xs = _np.mgrid[ymax:-ymax - 1:-1, xmax:-xmax - 1:-1].astype(_np.float64)
    xr = xs * c + ys * s
    yr = -xs * s + ys * c
    ex, ey = -0.5 / (sigma_x * sigma_x), -0.5 / (sigma_y * sigma_y)
    kernel = _np.exp(ex * xr * xr + ey * yr * yr) * _np.cos(2.0 * _math.pi / lambd * xr + psi)
    return kernel.astype(DEPTH_DTYPES[ktype])



def medianBlur(src, ksize, dst=None):  # noqa: N802 (OpenCV's name)
    """OpenCV's ``medianBlur``: the median of each ksize x ksize window, borders replicated;
    ksize 3 and 5 for every image type, 7 for uint8 (larger sizes are not supported yet)."""
    image = as_image(src, "medianBlur")
    ksize = _int_arg("medianBlur", "ksize", ksize)
    if ksize < 1 or ksize % 2 == 0:
        raise error("medianBlur", f"ksize must be odd and positive, got {ksize}")
    if ksize == 1:
        return _sep_filter(image, [1.0], [1.0], _depth_of(image), BORDER_REPLICATE)
    if ksize > 5 and _depth_of(image) != CV_8U:
        raise error("medianBlur", f"ksize {ksize} needs a uint8 image (3 and 5 work for every type)")
    if ksize > 7:
        raise error("medianBlur", f"ksize {ksize} is not supported yet; use 3, 5 or 7")
    return image_op("CvMedianBlur", [image], ksize=ksize)



def bilateralFilter(src, d, sigmaColor, sigmaSpace, dst=None, borderType=BORDER_DEFAULT):  # noqa: N802,N803
    """OpenCV's ``bilateralFilter`` for uint8 images of 1 or 3 channels: each pixel becomes the
    mean of its disc of diameter d (from sigmaSpace when d <= 0), weighted by a Gaussian of the
    distance and one of the summed channel differences (float32 weights, as OpenCV's)."""
    image = as_image(src, "bilateralFilter")
    d = _int_arg("bilateralFilter", "d", d)
    sigma_color = _float_arg("bilateralFilter", "sigmaColor", sigmaColor)
    sigma_space = _float_arg("bilateralFilter", "sigmaSpace", sigmaSpace)
    border = _border("bilateralFilter", borderType)
    count = channels(image)
    if _depth_of(image) != CV_8U:
        raise error("bilateralFilter", f"only uint8 images are supported yet, got {_np.dtype(image.dtype)}")
    if count not in (1, 3):
        raise error("bilateralFilter", f"the image must have 1 or 3 channels, got {count}")
    if sigma_color <= 0:
        sigma_color = 1.0
    if sigma_space <= 0:
        sigma_space = 1.0
    radius = int(_np.rint(sigma_space * 1.5)) if d <= 0 else d // 2
    radius = max(radius, 1)
    color_coeff = -0.5 / (sigma_color * sigma_color)
    space_coeff = -0.5 / (sigma_space * sigma_space)
    levels = _np.arange(count * 256, dtype=_np.float64)
    color_weight = _np.exp(levels * levels * color_coeff).astype(_np.float32)
    window = []
    for i in range(-radius, radius + 1):
        for j in range(-radius, radius + 1):
            r = _math.sqrt(float(i * i) + float(j * j))
            if r > radius:
                continue
            window.append((i, j, float(_np.float32(_math.exp(r * r * space_coeff)))))
    window = _np.array(window, dtype=_np.float64)
    return image_op("CvBilateral8U", [image, _core.const(color_weight, None, "NCHW"), _taps(window)],
                    radius=radius, border=border)

