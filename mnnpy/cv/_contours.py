"""Contours and shape analysis: findContours, contourArea, arcLength, boundingRect, minAreaRect,
boxPoints, convexHull, approxPolyDP, isContourConvex, moments, pointPolygonTest.

These return data whose size depends on the pixels or a few numbers, so they run when called, on
NumPy arrays (a Var argument is computed first), as OpenCV's do; mnnpy.cv gives the arrays
back as Vars (point arrays, hulls, hierarchies), numbers and tuples as OpenCV gives them.
Border following, the hull, the rotating calipers, Douglas-Peucker, moments and the polygon
test are C++ (``_core.cv_*``); area, perimeter and box corners are a few vectorized NumPy steps
with OpenCV's float32/float64 order of operations. Point sets are Nx2, Nx1x2 or 1xNx2 int32 or float32 arrays (int64 is narrowed to
int32, as OpenCV's bindings do).
"""
import math as _math

import numpy as _np

from .. import _core
from ._common import error, unbatched

__all__ = ["findContours", "contourArea", "arcLength", "boundingRect", "minAreaRect", "boxPoints", "convexHull",
           "approxPolyDP", "isContourConvex", "moments", "pointPolygonTest",
           "RETR_EXTERNAL", "RETR_LIST", "RETR_CCOMP", "RETR_TREE", "RETR_FLOODFILL",
           "CHAIN_APPROX_NONE", "CHAIN_APPROX_SIMPLE", "CHAIN_APPROX_TC89_L1", "CHAIN_APPROX_TC89_KCOS"]

RETR_EXTERNAL, RETR_LIST, RETR_CCOMP, RETR_TREE, RETR_FLOODFILL = 0, 1, 2, 3, 4
CHAIN_APPROX_NONE, CHAIN_APPROX_SIMPLE, CHAIN_APPROX_TC89_L1, CHAIN_APPROX_TC89_KCOS = 1, 2, 3, 4

_MOMENT_KEYS = ("m00", "m10", "m01", "m20", "m11", "m02", "m30", "m21", "m12", "m03",
                "mu20", "mu11", "mu02", "mu30", "mu21", "mu12", "mu03",
                "nu20", "nu11", "nu02", "nu30", "nu21", "nu12", "nu03")
_POINT_DTYPES = (_np.dtype(_np.int32), _np.dtype(_np.float32))


def _array(value, func, name):
    """``value`` as a NumPy array (Vars are computed); TypeError for non-numerical values."""
    if value is None:
        raise TypeError(f"mnnpy.cv.{func}: '{name}' is None, expected an array")
    a = _np.asarray(value)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"mnnpy.cv.{func}: '{name}' is not a numerical array (dtype {a.dtype})")
    return a


def _is_point_shape(shape):
    return ((len(shape) == 2 and shape[1] == 2) or (len(shape) == 3 and shape[2] == 2 and 1 in shape[:2]))


def _points(value, func, name="points"):
    """A C-contiguous Nx2 int32 or float32 array of the points in ``value``."""
    a = _array(value, func, name)
    if a.dtype == _np.int64:
        a = a.astype(_np.int32)
    if a.dtype not in _POINT_DTYPES:
        raise error(func, f"'{name}' must hold int32 or float32 points, got dtype {a.dtype}")
    if not _is_point_shape(a.shape):
        raise error(func, f"'{name}' must be an Nx2, Nx1x2 or 1xNx2 array of points, got shape {a.shape}")
    return _np.ascontiguousarray(a.reshape(-1, 2))


def _int(value, func, name):
    if not isinstance(value, (int, _np.integer)) or isinstance(value, bool):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be an integer, got {type(value).__name__}")
    return int(value)


def _number(value, func, name):
    if not isinstance(value, (int, float, _np.integer, _np.floating)) or isinstance(value, bool):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be a number, got {type(value).__name__}")
    return float(value)


def _pair(value, func, name, kind=float):
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be a pair of numbers, got {type(value).__name__}") from None
    if len(items) != 2 or not all(isinstance(v, (int, float, _np.integer, _np.floating)) and not isinstance(v, bool)
                                  for v in items):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be a pair of numbers, got {value!r}")
    if kind is int and not all(isinstance(v, (int, _np.integer)) for v in items):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be a pair of integers, got {value!r}")
    return tuple(kind(v) for v in items)


def _single_channel(a, func, name):
    """A 2-D view of an HxW, HxWx1 or 1xHxWx1 image, else ``error``."""
    a = unbatched(a, func, name)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim != 2:
        raise error(func, f"'{name}' must be a one-channel HxW image, got shape {a.shape}")
    if a.strides[1] != a.itemsize or a.strides[0] % a.itemsize or a.strides[0] < a.shape[1] * a.itemsize:
        a = _np.ascontiguousarray(a)
    return a


def findContours(image, mode, method, contours=None, hierarchy=None, offset=None):  # noqa: N802,N803
    """``(contours, hierarchy)`` of a one-channel uint8 image (nonzero pixels are the objects), as
    OpenCV gives them: a tuple of Nx1x2 int32 point arrays and a 1xNx4 int32 array of [next,
    previous, first child, parent] per contour (None without contours). RETR_CCOMP on an int32
    label image is RETR_FLOODFILL, which traces every region of equal labels. The output
    arguments ``contours`` and ``hierarchy`` are ignored."""
    func = "findContours"
    a = unbatched(_array(image, func, "image"), func, "image")
    mode = _int(mode, func, "mode")
    method = _int(method, func, "method")
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    labels = a.dtype == _np.int32 and a.ndim == 2
    if labels and mode == RETR_CCOMP:
        mode = RETR_FLOODFILL
    if mode == RETR_FLOODFILL and not labels:
        raise error(func, f"RETR_FLOODFILL needs a one-channel int32 image, got {a.dtype} with shape {a.shape}")
    if mode != RETR_FLOODFILL and not (a.dtype == _np.uint8 and a.ndim == 2):
        raise error(func, "modes other than RETR_FLOODFILL and RETR_CCOMP need a one-channel uint8 image, "
                          f"got {a.dtype} with shape {a.shape}")
    if mode not in (RETR_EXTERNAL, RETR_LIST, RETR_CCOMP, RETR_TREE, RETR_FLOODFILL):
        raise error(func, f"wrong retrieval mode {mode}; expected one of RETR_EXTERNAL .. RETR_FLOODFILL (0..4)")
    if method == 0 or method == 5:
        raise error(func, f"method {method} (chain codes / LINK_RUNS) is not supported; use CHAIN_APPROX_NONE, "
                          "CHAIN_APPROX_SIMPLE, CHAIN_APPROX_TC89_L1 or CHAIN_APPROX_TC89_KCOS")
    if method not in (CHAIN_APPROX_NONE, CHAIN_APPROX_SIMPLE, CHAIN_APPROX_TC89_L1, CHAIN_APPROX_TC89_KCOS):
        raise error(func, f"wrong approximation method {method}")
    dx, dy = (0, 0) if offset is None else _pair(offset, func, "offset", int)
    if 0 in a.shape:
        raise error(func, f"'image' is empty (shape {a.shape})")
    a = _single_channel(a, func, "image")
    return _core.cv_find_contours(a, mode, method, dx, dy)


def contourArea(contour, oriented=False):  # noqa: N802
    """Area of the polygon (shoelace formula over float32 coordinates, summed in float64 in order);
    signed by orientation when ``oriented``."""
    p = _points(contour, "contourArea", "contour").astype(_np.float32, copy=False)
    if len(p) == 0:
        return 0.0
    x, y = p[:, 0].astype(_np.float64), p[:, 1].astype(_np.float64)
    terms = _np.roll(x, 1) * y - _np.roll(y, 1) * x
    area = float(_np.cumsum(terms)[-1]) * 0.5
    return area if oriented else abs(area)


def arcLength(curve, closed):  # noqa: N802
    """Length of the polyline (closed: with the edge back to the start); each edge in float32."""
    p = _points(curve, "arcLength", "curve").astype(_np.float32, copy=False)
    if len(p) <= 1:
        return 0.0
    prev = _np.roll(p, 1, axis=0)
    if not closed:
        prev[0] = p[0]
    d = p - prev
    edges = _np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1])
    return float(_np.cumsum(edges.astype(_np.float64))[-1])


def boundingRect(array):  # noqa: N802
    """``(x, y, width, height)`` of a point set (float coordinates floored), or of the nonzero
    pixels of a one-channel uint8 image."""
    a = _array(array, "boundingRect", "array")
    if a.dtype == _np.uint8:
        image = _single_channel(a, "boundingRect", "array")
        if 0 in image.shape:
            return (0, 0, 0, 0)
        return _core.cv_mask_bounding_rect(image)
    p = _points(a, "boundingRect", "array")
    if len(p) == 0:
        return (0, 0, 0, 0)
    if p.dtype == _np.float32:
        p = _np.floor(p).astype(_np.int64)
    lo, hi = p.min(axis=0), p.max(axis=0)
    return (int(lo[0]), int(lo[1]), int(hi[0] - lo[0] + 1), int(hi[1] - lo[1] + 1))


def minAreaRect(points):  # noqa: N802
    """``((cx, cy), (width, height), angle)``: the smallest rotated rectangle around the points,
    with OpenCV 5's angle in [-90, 0) degrees."""
    p = _points(points, "minAreaRect")
    cx, cy, w, h, angle = _core.cv_min_area_rect(p)
    return ((cx, cy), (w, h), angle)


def boxPoints(box, points=None):  # noqa: N802
    """The 4x2 float32 corners of a rotated rectangle ``((cx, cy), (width, height), angle)``, in
    OpenCV's order."""
    try:
        center, size, angle = box
    except (TypeError, ValueError):
        raise TypeError("mnnpy.cv.boxPoints: 'box' must be ((cx, cy), (width, height), angle)") from None
    cx, cy = (_np.float32(v) for v in _pair(center, "boxPoints", "box center"))
    w, h = (_np.float32(v) for v in _pair(size, "boxPoints", "box size"))
    angle = _np.float32(_number(angle, "boxPoints", "box angle"))
    radians = float(angle) * _math.pi / 180.0
    b = _np.float32(_math.cos(radians)) * _np.float32(0.5)
    a = _np.float32(_math.sin(radians)) * _np.float32(0.5)
    x0, y0 = cx - a * h - b * w, cy + b * h - a * w
    x1, y1 = cx + a * h - b * w, cy - b * h - a * w
    two = _np.float32(2)
    return _np.array([[x0, y0], [x1, y1], [two * cx - x0, two * cy - y0], [two * cx - x1, two * cy - y1]],
                     dtype=_np.float32)


def convexHull(points, hull=None, clockwise=False, returnPoints=True):  # noqa: N802,N803
    """The convex hull as OpenCV orders it: Mx1x2 points of the input's dtype, or their indices
    (Mx1 int32) when ``returnPoints`` is False; None for no points."""
    p = _points(points, "convexHull")
    if len(p) == 0:
        return None
    idx = _core.cv_convex_hull(p, bool(clockwise), not returnPoints)
    if returnPoints:
        return p[idx].reshape(-1, 1, 2)
    return idx.reshape(-1, 1)


def approxPolyDP(curve, epsilon, closed, approxCurve=None):  # noqa: N802,N803
    """Douglas-Peucker approximation to within ``epsilon``: Mx1x2 points of the input's dtype
    (None for no points)."""
    eps = _number(epsilon, "approxPolyDP", "epsilon")
    if eps < 0.0 or not eps < 1e30:
        raise error("approxPolyDP", f"epsilon {eps} is not valid (must be in [0, 1e30))")
    p = _points(curve, "approxPolyDP", "curve")
    if len(p) == 0:
        return None
    return _core.cv_approx_poly_dp(p, eps, bool(closed))


def isContourConvex(contour):  # noqa: N802
    """Whether the polygon is convex (no turn against the others, no zero turn)."""
    p = _points(contour, "isContourConvex", "contour")
    return bool(len(p)) and _core.cv_is_contour_convex(p)


def moments(array, binaryImage=False):  # noqa: N802,N803
    """OpenCV's moments as a dict (m00 .. m03, mu20 .. mu03, nu20 .. nu03): of the polygon when
    ``array`` is int32/float32 points, else of a one-channel image (uint8, uint16, int16, float32,
    float64; any numerical image when ``binaryImage``, which counts nonzero pixels as 1)."""
    a = unbatched(_array(array, "moments", "array"), "moments", "array")
    if a.dtype == _np.int64 and _is_point_shape(a.shape):
        a = a.astype(_np.int32)
    if a.dtype in _POINT_DTYPES and _is_point_shape(a.shape) and 0 not in a.shape:
        values = _core.cv_contour_moments(_np.ascontiguousarray(a.reshape(-1, 2)))
        return dict(zip(_MOMENT_KEYS, values))
    if a.size == 0:
        return dict.fromkeys(_MOMENT_KEYS, 0.0)
    if a.ndim == 3 and a.shape[2] != 1:
        raise error("moments", f"invalid image type (must be single-channel), got shape {a.shape}")
    image = _single_channel(a if a.ndim >= 2 else a.reshape(-1, 1), "moments", "array")
    if binaryImage:
        if image.dtype not in (_np.uint8, _np.int16, _np.float32, _np.float64):
            image = (image != 0).view(_np.uint8)
    elif image.dtype == _np.uint16:
        # Integer sums of uint16 pixels stay exact in float64 (OpenCV sums them as integers).
        image = image.astype(_np.float64)
    elif image.dtype not in (_np.uint8, _np.int16, _np.float32, _np.float64):
        raise error("moments", f"unsupported image dtype {image.dtype}")
    values = _core.cv_image_moments(image, bool(binaryImage))
    return dict(zip(_MOMENT_KEYS, values))


def pointPolygonTest(contour, pt, measureDist):  # noqa: N802,N803
    """+1 / -1 / 0 for ``pt`` inside / outside / on the polygon; with ``measureDist`` the signed
    distance to the nearest edge instead."""
    p = _points(contour, "pointPolygonTest", "contour")
    x, y = (float(_np.float32(v)) for v in _pair(pt, "pointPolygonTest", "pt"))
    return _core.cv_point_polygon_test(p, x, y, bool(measureDist))
