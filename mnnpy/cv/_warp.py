"""Geometric warps and pyramids: OpenCV's warpAffine, warpPerspective, remap, convertMaps,
getRectSubPix, pyrDown, pyrUp, hconcat and vconcat, with the small matrix helpers
getRotationMatrix2D, getAffineTransform, getPerspectiveTransform and invertAffineTransform.

The image functions build graph ops (CvWarp, CvConvertMaps, CvRectSubPix, CvPyrDown, CvPyrUp);
the matrix helpers compute a handful of float64 numbers with NumPy (mnnpy.cv returns them as
Vars). A transformation matrix M may be an array, a Var or MNN's CVMatrix. Warps sample as
OpenCV 5 does: uint8 and float32 images of 1, 3 or 4 channels with nearest or bilinear
interpolation, and bicubic interpolation of every depth, at float32 source positions; every
other case at positions in 1/32 pixel steps with tabulated (15-bit fixed point for uint8)
weights. The hint argument is accepted and ignored (results are
those of ALGO_HINT_ACCURATE, OpenCV's default).
"""
import numpy as _np

from .. import _core
from ._calib import DECOMP_LU, DECOMP_SVD, DECOMP_EIG, DECOMP_CHOLESKY, DECOMP_QR, DECOMP_NORMAL, solve as _solve
from ._geometry import _size_pair
from ._common import (BORDER_CONSTANT, BORDER_DEFAULT, BORDER_ISOLATED, BORDER_REFLECT, BORDER_REFLECT_101,
                      BORDER_REPLICATE, BORDER_TRANSPARENT, BORDER_WRAP, INTER_AREA, INTER_CUBIC, INTER_LANCZOS4,
                      INTER_LINEAR, INTER_MAX, INTER_NEAREST, WARP_INVERSE_MAP, WARP_RELATIVE_MAP, as_image,
                      channels, error, image_op)

__all__ = ["warpAffine", "warpPerspective", "remap", "convertMaps", "getRotationMatrix2D", "getAffineTransform",
           "getPerspectiveTransform", "invertAffineTransform", "getRectSubPix", "pyrDown", "pyrUp", "hconcat",
           "vconcat", "CV_16SC1", "CV_16SC2", "CV_16UC1", "CV_32FC1", "CV_32FC2",
           "ALGO_HINT_DEFAULT", "ALGO_HINT_ACCURATE", "ALGO_HINT_APPROX"]

# Map types of remap / convertMaps (OpenCV 5 packs the channel count above 5 depth bits).
CV_16UC1, CV_16SC1, CV_32FC1 = 2, 3, 5
CV_16SC2, CV_32FC2 = 3 + 32, 5 + 32
# The hint argument of the warps: mnnpy always computes as ALGO_HINT_ACCURATE does.
ALGO_HINT_DEFAULT, ALGO_HINT_ACCURATE, ALGO_HINT_APPROX = 0, 1, 2

# Core op codes (see native/src/backend/cpu/cv_warp.h).
_AFFINE, _PERSPECTIVE, _MAPS_XY, _MAPS_PACKED, _MAPS_FIXED = 0, 1, 2, 3, 4
_BORDERS = (BORDER_CONSTANT, BORDER_REPLICATE, BORDER_REFLECT, BORDER_WRAP, BORDER_REFLECT_101, BORDER_TRANSPARENT)


def _is_int(value):
    return isinstance(value, (int, _np.integer)) and not isinstance(value, bool)


def _is_real(value):
    return isinstance(value, (int, float, _np.integer, _np.floating)) and not isinstance(value, bool)


def _int_arg(func, name, value):
    if not _is_int(value):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be an integer, got {type(value).__name__}")
    return int(value)


def _real_arg(func, name, value):
    if not _is_real(value):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' can not be treated as a double, got {type(value).__name__}")
    return float(value)


def _point_arg(func, name, value):
    """(x, y) of an OpenCV Point2f, as float32 values."""
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be an (x, y) pair, got {type(value).__name__}") from None
    if len(items) != 2:
        raise TypeError(f"mnnpy.cv.{func}: can't parse '{name}': expected a sequence of length 2, got {len(items)}")
    if not all(_is_real(v) for v in items):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must hold numbers")
    return _np.float32(items[0]), _np.float32(items[1])


def _scalar_arg(func, name, value):
    """OpenCV's Scalar: up to 4 numbers; a single number fills the first channel only."""
    if value is None:
        return [0.0] * 4
    if _is_real(value):
        return [float(value), 0.0, 0.0, 0.0]
    try:
        items = list(value)
    except TypeError:
        raise error(func, f"'{name}' must be a number or a sequence of up to 4 numbers") from None
    if len(items) > 4:
        raise error(func, f"Scalar value for argument '{name}' is longer than 4")
    if not all(_is_real(v) for v in items):
        raise error(func, f"Scalar value for argument '{name}' is not numeric")
    return [float(v) for v in items] + [0.0] * (4 - len(items))


def _cv_matrix_rows(M, rows):  # noqa: N803 (OpenCV's name)
    """The first ``rows`` rows of MNN's CVMatrix (float32 3x3), or None for anything else."""
    from .._image_process import CVMatrix  # imported on use: it is not part of mnnpy.cv
    if isinstance(M, CVMatrix):
        return _np.asarray(M.read(), _np.float32).reshape(3, 3)[:rows]
    return None


def _matrix_array(func, M, rows):  # noqa: N803 (OpenCV's name)
    """M as a NumPy array: an array, a Var, or MNN's CVMatrix (its first ``rows`` rows)."""
    if isinstance(M, _core.Var):
        return _np.asarray(M)
    if isinstance(M, _np.ndarray):
        return M
    m = _cv_matrix_rows(M, rows)
    if m is None:
        raise error(func, f"'M' must be a NumPy array, a Var or an MNN CVMatrix, got {type(M).__name__}")
    return m


def _matrix_arg(func, M, rows):  # noqa: N803 (OpenCV's name)
    """The rows x 3 transformation matrix as float64 (OpenCV takes float32 or float64 only; an
    MNN CVMatrix gives its first ``rows`` rows)."""
    M = _matrix_array(func, M, rows)
    if M.dtype not in (_np.float32, _np.float64) or M.shape not in ((rows, 3), (rows, 3, 1)):
        raise error(func, f"'M' must be a {rows}x3 float32 or float64 matrix, got {M.dtype} of shape {M.shape}")
    return M.reshape(rows, 3).astype(_np.float64)


def _border_arg(func, border_mode):
    mode = _int_arg(func, "borderMode", border_mode) & ~BORDER_ISOLATED
    if mode not in _BORDERS:
        raise error(func, f"unknown or unsupported border mode {int(border_mode)}")
    return mode


def _interpolation_arg(func, flags):
    interpolation = flags & INTER_MAX
    if interpolation == INTER_AREA:
        interpolation = INTER_LINEAR  # as OpenCV warps take it
    if interpolation not in (INTER_NEAREST, INTER_LINEAR, INTER_CUBIC, INTER_LANCZOS4):
        raise error(func, f"unknown interpolation method {interpolation}")
    return interpolation


def _check_channels(func, image, interpolation):
    if channels(image) > 4 and interpolation in (INTER_CUBIC, INTER_LANCZOS4):
        raise error(func, "bicubic and Lanczos interpolation take at most 4 channels")


def _warp(func, image, interpolation, border, border_value, width, height, mapping, maps=(), matrix=None,
          dst=None, relative=False, has_fractions=False):
    _check_channels(func, image, interpolation)
    attrs = dict(mapping=mapping, interpolation=interpolation, border=border, width=width, height=height,
                 relative=int(relative), has_fractions=int(has_fractions),
                 transparent=int(border == BORDER_TRANSPARENT))
    for i, v in enumerate(border_value):
        attrs[f"border{i}"] = float(v)
    if matrix is not None:
        for i, v in enumerate(_np.asarray(matrix, _np.float64).ravel()):
            attrs[f"m{i}"] = float(v)
    inputs = [image, *maps]
    if border == BORDER_TRANSPARENT:
        inputs.append(_transparent_start(image, width, height, dst))
    return image_op("CvWarp", inputs, **attrs)


def _transparent_start(image, width, height, dst):
    """What a transparent border leaves in place: dst when it fits the output, else zeros."""
    shape = (height, width) + tuple(image.shape)[2:]
    dtype = _np.dtype(image.dtype)
    if dst is not None:
        start = as_image(dst, "warp", "dst")
        if tuple(start.shape) == shape and _np.dtype(start.dtype) == dtype:
            return start
    return _core.const(_np.zeros(shape, dtype), None, "NCHW")


def _invert_affine(m):
    """OpenCV's inversion of a 2x3 matrix (zeros when singular), in float64."""
    m = m.ravel()
    d = m[0] * m[4] - m[1] * m[3]
    d = 1.0 / d if d != 0 else 0.0
    a11, a22, a12, a21 = m[4] * d, m[0] * d, -m[1] * d, -m[3] * d
    b1 = -a11 * m[2] - a12 * m[5]
    b2 = -a21 * m[2] - a22 * m[5]
    return _np.array([[a11, a12, b1], [a21, a22, b2]])


def _output_size(func, dsize, image):
    width, height = _size_pair(func, "dsize", dsize) or (0, 0)
    if width <= 0 or height <= 0:
        height, width = (int(s) for s in tuple(image.shape)[:2])
    return width, height


def warpAffine(src, M, dsize, dst=None, flags=INTER_LINEAR, borderMode=BORDER_CONSTANT, borderValue=0,  # noqa: N802,N803
               hint=ALGO_HINT_DEFAULT):
    """OpenCV's ``cv2.warpAffine``: dst(x, y) = src(M * (x, y, 1)) with M inverted first unless
    flags has WARP_INVERSE_MAP. With BORDER_TRANSPARENT the output starts from dst (when it has
    the output's shape and type; zeros otherwise) and keeps it where the source does not reach;
    the result is returned, dst itself is not written."""
    image = as_image(src, "warpAffine")
    m = _matrix_arg("warpAffine", M, 2)
    width, height = _output_size("warpAffine", dsize, image)
    flags = _int_arg("warpAffine", "flags", flags)
    interpolation = _interpolation_arg("warpAffine", flags)
    border = _border_arg("warpAffine", borderMode)
    value = _scalar_arg("warpAffine", "borderValue", borderValue)
    _int_arg("warpAffine", "hint", hint)
    if not flags & WARP_INVERSE_MAP:
        m = _invert_affine(m)
    matrix = _np.vstack([m, [0.0, 0.0, 1.0]])
    return _warp("warpAffine", image, interpolation, border, value, width, height, _AFFINE, matrix=matrix, dst=dst)


def warpPerspective(src, M, dsize, dst=None, flags=INTER_LINEAR, borderMode=BORDER_CONSTANT,  # noqa: N802,N803
                    borderValue=0, hint=ALGO_HINT_DEFAULT):
    """OpenCV's ``cv2.warpPerspective``: dst(x, y) = src at the projection of (x, y, 1) by M
    (inverted first unless flags has WARP_INVERSE_MAP; a singular M inverts to zeros).
    BORDER_TRANSPARENT as in warpAffine."""
    image = as_image(src, "warpPerspective")
    m = _matrix_arg("warpPerspective", M, 3)
    width, height = _output_size("warpPerspective", dsize, image)
    flags = _int_arg("warpPerspective", "flags", flags)
    interpolation = _interpolation_arg("warpPerspective", flags)
    border = _border_arg("warpPerspective", borderMode)
    value = _scalar_arg("warpPerspective", "borderValue", borderValue)
    _int_arg("warpPerspective", "hint", hint)
    if not flags & WARP_INVERSE_MAP:
        try:
            m = _np.linalg.inv(m)
        except _np.linalg.LinAlgError:
            m = _np.zeros((3, 3))
    return _warp("warpPerspective", image, interpolation, border, value, width, height, _PERSPECTIVE, matrix=m,
                 dst=dst)


def _map_var(func, name, value, dtypes):
    """A map argument as a Var (HxW or HxWxC) of one of dtypes."""
    if isinstance(value, _core.Var):
        v = value
    else:
        a = _np.asarray(value)
        if a.dtype not in dtypes:
            raise error(func, f"'{name}' has unsupported type {a.dtype}")
        v = _core.const(_np.ascontiguousarray(a), None, "NCHW")
    shape = tuple(v.shape)
    if _np.dtype(v.dtype) not in dtypes:
        raise error(func, f"'{name}' has unsupported type {_np.dtype(v.dtype)}")
    if len(shape) == 3 and shape[2] == 1:
        v = _core.reshape(v, shape[:2])
        shape = shape[:2]
    if len(shape) not in (2, 3) or any(s == 0 for s in shape):
        raise error(func, f"'{name}' must be a non-empty HxW or HxWx2 map, got shape {shape}")
    return v


def _fractions(func, value, shape):
    """The 1/32-pixel fraction map (OpenCV's CV_16UC1) as int16 of the low 10 bits, which is
    all that remap and convertMaps read (the core has no uint16)."""
    if isinstance(value, _core.Var):
        value = _np.asarray(value)
    a = _np.asarray(value)
    if a.dtype not in (_np.uint16, _np.int16):
        raise error(func, f"'map2' of fixed-point maps must be uint16 (CV_16UC1), got {a.dtype}")
    if a.shape not in (shape, shape + (1,)):
        raise error(func, f"'map2' must have the shape {shape} of map1, got {a.shape}")
    return _core.const(_np.ascontiguousarray((a.reshape(shape) & 1023).astype(_np.int16)), None, "NCHW")


def _parse_maps(func, map1, map2):
    """(mapping code, [map Vars], has_fractions, (height, width)) for OpenCV's map forms."""
    if map1 is None:
        raise error(func, "'map1' is empty")
    m1 = _map_var(func, "map1", map1, (_np.dtype("float32"), _np.dtype("int16")))
    shape = tuple(m1.shape)
    size = shape[:2]
    if _np.dtype(m1.dtype) == _np.float32:
        if len(shape) == 3:
            if shape[2] != 2:
                raise error(func, f"float 'map1' must be HxW or HxWx2, got shape {shape}")
            return _MAPS_PACKED, [m1], False, size
        if map2 is None:
            raise error(func, "a float x map (CV_32FC1) needs the y map as 'map2'")
        m2 = _map_var(func, "map2", map2, (_np.dtype("float32"),))
        if tuple(m2.shape) != size:
            raise error(func, f"'map2' must have the size {size} of map1, got shape {tuple(m2.shape)}")
        return _MAPS_XY, [m1, m2], False, size
    if len(shape) != 3 or shape[2] != 2:
        raise error(func, f"int16 'map1' must be HxWx2 (CV_16SC2), got shape {shape}")
    if map2 is None or (isinstance(map2, _np.ndarray) and map2.size == 0):
        return _MAPS_FIXED, [m1], False, size
    return _MAPS_FIXED, [m1, _fractions(func, map2, size)], True, size


def remap(src, map1, map2, interpolation, dst=None, borderMode=BORDER_CONSTANT, borderValue=0,  # noqa: N803
          hint=ALGO_HINT_DEFAULT):
    """OpenCV's ``cv2.remap``: dst(x, y) = src(mapx(x, y), mapy(x, y)). Maps: float32 x and y
    maps, one float32 HxWx2 map (map2 None), or OpenCV's fixed-point int16 HxWx2 positions with
    (uint16) 1/32-pixel fractions or None (nearest positions). interpolation may carry
    WARP_RELATIVE_MAP (maps hold offsets from (x, y)). BORDER_TRANSPARENT as in warpAffine."""
    image = as_image(src, "remap")
    flags = _int_arg("remap", "interpolation", interpolation)
    relative = bool(flags & WARP_RELATIVE_MAP)
    mode = _interpolation_arg("remap", flags & ~WARP_RELATIVE_MAP)
    border = _border_arg("remap", borderMode)
    value = _scalar_arg("remap", "borderValue", borderValue)
    _int_arg("remap", "hint", hint)
    mapping, maps, has_fractions, (height, width) = _parse_maps("remap", map1, map2)
    return _warp("remap", image, mode, border, value, width, height, mapping, maps=maps, dst=dst,
                 relative=relative, has_fractions=has_fractions)


def convertMaps(map1, map2, dstmap1type, dstmap1=None, dstmap2=None, nninterpolation=False):  # noqa: N802,N803
    """OpenCV's ``cv2.convertMaps``: (dstmap1, dstmap2) in the form dstmap1type names: CV_16SC2
    (int16 positions, with the 1/32-pixel fractions as a uint16 NumPy array, or None with
    nninterpolation), CV_32FC1 (x and y float32 maps) or CV_32FC2 (one float32 HxWx2 map).
    The uint16 fraction map comes back as NumPy (the core has no uint16); the others as Vars."""
    kind = _int_arg("convertMaps", "dstmap1type", dstmap1type)
    mapping, maps, has_fractions, (height, width) = _parse_maps("convertMaps", map1, map2)
    from_float = mapping != _MAPS_FIXED
    if kind <= 0:
        kind = CV_16SC2 if from_float else CV_32FC2
    if kind not in (CV_16SC2, CV_32FC1, CV_32FC2):
        raise error("convertMaps", f"unsupported dstmap1type {kind}; expected CV_16SC2, CV_32FC1 or CV_32FC2")
    nearest = bool(nninterpolation)
    if from_float and kind == CV_16SC2:
        outs = image_op("CvConvertMaps", maps, from_float=1, src_packed=int(mapping == _MAPS_PACKED), dst_packed=1,
                        nearest=int(nearest))
        if nearest:
            return outs, None
        return outs[0], _np.asarray(outs[1]).astype(_np.uint16)
    if from_float:  # float to float: split or pack the pairs
        if kind == CV_32FC2:
            if mapping == _MAPS_PACKED:
                return maps[0], None
            return _core.stack(maps, 2), None
        if mapping == _MAPS_XY:
            return maps[0], maps[1]
        return maps[0][:, :, 0], maps[0][:, :, 1]
    if kind == CV_16SC2:
        return maps[0], (_np.asarray(maps[1]).astype(_np.uint16) if has_fractions else None)
    outs = image_op("CvConvertMaps", maps, from_float=0, src_packed=1, dst_packed=int(kind == CV_32FC2),
                    nearest=0)
    if kind == CV_32FC2:
        return outs, None
    return outs[0], outs[1]


def getRotationMatrix2D(center, angle, scale):  # noqa: N802 (OpenCV's name)
    """OpenCV's ``cv2.getRotationMatrix2D``: the 2x3 float64 matrix rotating by angle degrees
    (counter-clockwise) about center (a float32 point, as OpenCV's Point2f) and scaling."""
    cx, cy = _point_arg("getRotationMatrix2D", "center", center)
    angle = _real_arg("getRotationMatrix2D", "angle", angle)
    scale = _real_arg("getRotationMatrix2D", "scale", scale)
    angle *= _np.pi / 180
    alpha, beta = _np.cos(angle) * scale, _np.sin(angle) * scale
    cx, cy = float(cx), float(cy)
    return _np.array([[alpha, beta, (1 - alpha) * cx - beta * cy],
                      [-beta, alpha, beta * cx + (1 - alpha) * cy]])


def _points_arg(func, value, count, name):
    if isinstance(value, _core.Var):
        value = _np.asarray(value)
    if not isinstance(value, _np.ndarray):
        raise error(func, f"'{name}' must be an array of {count} float32 points, got {type(value).__name__}")
    if value.dtype != _np.float32 or value.size != 2 * count or value.shape[-1] not in (1, 2) or \
            (value.ndim > 1 and value.shape[-1] == 1 and value.shape[-2] != 2):
        raise error(func, f"'{name}' must hold {count} float32 (x, y) points, got {value.dtype} of shape "
                          f"{value.shape}")
    return value.reshape(count, 2)


def getAffineTransform(src, dst):  # noqa: N802 (OpenCV's name)
    """OpenCV's ``cv2.getAffineTransform``: the 2x3 float64 matrix mapping 3 float32 points to 3."""
    s = _points_arg("getAffineTransform", src, 3, "src").astype(_np.float64)
    d = _points_arg("getAffineTransform", dst, 3, "dst").astype(_np.float64)
    a = _np.zeros((6, 6))
    a[0::2, 0:2] = s
    a[0::2, 2] = 1
    a[1::2, 3:5] = s
    a[1::2, 5] = 1
    ok, x = _solve(a, d.reshape(6, 1), flags=DECOMP_LU)
    return x.reshape(2, 3)


def getPerspectiveTransform(src, dst, solveMethod=DECOMP_LU):  # noqa: N802,N803 (OpenCV's names)
    """OpenCV's ``cv2.getPerspectiveTransform``: the 3x3 float64 matrix mapping 4 float32 points
    to 4 (M[2, 2] = 1), solving OpenCV's 8x8 system by solveMethod (zeros when singular)."""
    s = _points_arg("getPerspectiveTransform", src, 4, "src")
    d = _points_arg("getPerspectiveTransform", dst, 4, "dst")
    method = _int_arg("getPerspectiveTransform", "solveMethod", solveMethod)
    a = _np.zeros((8, 8))
    a[:4, 0:2] = s
    a[:4, 2] = 1
    a[4:, 3:5] = s
    a[4:, 5] = 1
    # OpenCV multiplies the float32 coordinates in float32.
    a[:4, 6] = -(s[:, 0] * d[:, 0])
    a[:4, 7] = -(s[:, 1] * d[:, 0])
    a[4:, 6] = -(s[:, 0] * d[:, 1])
    a[4:, 7] = -(s[:, 1] * d[:, 1])
    b = _np.concatenate([d[:, 0], d[:, 1]]).astype(_np.float64).reshape(8, 1)
    ok, x = _solve(a, b, flags=method)
    return _np.append(_np.asarray(x, _np.float64).ravel(), 1.0).reshape(3, 3)


def invertAffineTransform(M, iM=None):  # noqa: N802,N803 (OpenCV's names)
    """OpenCV's ``cv2.invertAffineTransform``: the inverse 2x3 matrix, in M's type (float32 or
    float64; zeros when M is singular). Given MNN's CVMatrix (its first two rows are taken), the
    inverse comes back as a CVMatrix, as MNN gives it."""
    cv_matrix = _cv_matrix_rows(M, 2)
    if cv_matrix is not None:
        from .._image_process import CVMatrix  # imported on use: it is not part of mnnpy.cv
        inverse = CVMatrix()
        inverse.write(invertAffineTransform(cv_matrix))
        return inverse
    M = _matrix_array("invertAffineTransform", M, 2)
    if M.shape not in ((2, 3), (2, 3, 1)):
        raise error("invertAffineTransform", f"'M' must be 2x3, got shape {M.shape}")
    if M.dtype not in (_np.float32, _np.float64):
        raise error("invertAffineTransform", f"'M' must be float32 or float64, got {M.dtype}")
    m = M.reshape(6)
    if M.dtype == _np.float32:
        # OpenCV forms the determinant of a float32 matrix in float32.
        d = float(m[0] * m[4] - m[1] * m[3])
        m = m.astype(_np.float64)
    else:
        d = m[0] * m[4] - m[1] * m[3]
    d = 1.0 / d if d != 0 else 0.0
    a11, a22, a12, a21 = m[4] * d, m[0] * d, -m[1] * d, -m[3] * d
    b1 = -a11 * m[2] - a12 * m[5]
    b2 = -a21 * m[2] - a22 * m[5]
    return _np.array([[a11, a12, b1], [a21, a22, b2]]).astype(M.dtype)


def getRectSubPix(image, patchSize, center, patch=None, patchType=-1):  # noqa: N802,N803 (OpenCV's names)
    """OpenCV's ``cv2.getRectSubPix``: the patchSize = (width, height) patch centred at center,
    bilinear, with the image's edge pixels repeated outside it. uint8 images give uint8 or
    (patchType CV_32F) float32 patches; float32 images float32 patches."""
    src = as_image(image, "getRectSubPix", "image")
    if patchSize is None:
        raise error("getRectSubPix", "'patchSize' must be a (width, height) pair, got NoneType")
    width, height = _size_pair("getRectSubPix", "patchSize", patchSize)
    if width <= 0 or height <= 0:
        raise error("getRectSubPix", f"'patchSize' must be positive, got {(width, height)}")
    cx, cy = _point_arg("getRectSubPix", "center", center)
    kind = _int_arg("getRectSubPix", "patchType", patchType)
    depth = _np.dtype(src.dtype)
    out = depth if kind < 0 else {0: _np.dtype("uint8"), 5: _np.dtype("float32")}.get(kind & 31)
    if out is None or not ((depth == _np.uint8 and out in (_np.uint8, _np.float32)) or
                           (depth == _np.float32 and out == _np.float32)):
        raise error("getRectSubPix", f"unsupported combination of image type {depth} and patchType {kind}")
    return image_op("CvRectSubPix", [src], width=width, height=height, cx=float(cx), cy=float(cy), dtype=str(out))


def _pyramid_size(func, dstsize, default):
    if dstsize is None:
        return default
    width, height = _size_pair(func, "dstsize", dstsize)
    if width <= 0 or height <= 0:
        return default
    return width, height


def pyrDown(src, dst=None, dstsize=None, borderType=BORDER_DEFAULT):  # noqa: N802,N803 (OpenCV's names)
    """OpenCV's ``cv2.pyrDown``: Gaussian blur by [1 4 6 4 1] / 16 in each direction, then every
    other pixel; dstsize ((w + 1) / 2, (h + 1) / 2 by default) may differ from half by 1 at most
    along each axis. Exact for integer images."""
    image = as_image(src, "pyrDown")
    h, w = (int(s) for s in tuple(image.shape)[:2])
    width, height = _pyramid_size("pyrDown", dstsize, ((w + 1) // 2, (h + 1) // 2))
    if abs(width * 2 - w) > 2 or abs(height * 2 - h) > 2:
        raise error("pyrDown", f"dstsize {(width, height)} must be about half the size {(w, h)} of the image")
    border = _int_arg("pyrDown", "borderType", borderType) & ~BORDER_ISOLATED
    if border not in (BORDER_REPLICATE, BORDER_REFLECT, BORDER_WRAP, BORDER_REFLECT_101):
        raise error("pyrDown", f"unsupported border type {int(borderType)}")
    return image_op("CvPyrDown", [image], width=width, height=height, border=border)


def pyrUp(src, dst=None, dstsize=None, borderType=BORDER_DEFAULT):  # noqa: N802,N803 (OpenCV's names)
    """OpenCV's ``cv2.pyrUp``: 2x upsampling with the [1 4 6 4 1] / 8 kernel in each direction;
    dstsize (2w, 2h by default) may be one larger along an axis. Only BORDER_DEFAULT, as OpenCV.
    Exact for integer images."""
    image = as_image(src, "pyrUp")
    h, w = (int(s) for s in tuple(image.shape)[:2])
    width, height = _pyramid_size("pyrUp", dstsize, (w * 2, h * 2))
    if abs(width - w * 2) > width % 2 or abs(height - h * 2) > height % 2:
        raise error("pyrUp", f"dstsize {(width, height)} must be twice the size {(w, h)} of the image "
                             f"(or one more)")
    if _int_arg("pyrUp", "borderType", borderType) != BORDER_DEFAULT:
        raise error("pyrUp", "only BORDER_DEFAULT is supported")
    return image_op("CvPyrUp", [image], width=width, height=height)


def _concat(func, src, axis):
    if isinstance(src, (_np.ndarray, _core.Var)) or src is None:
        items = [src] if src is not None else []
    else:
        try:
            items = list(src)
        except TypeError:
            raise TypeError(f"mnnpy.cv.{func}: 'src' must be a list of images, got {type(src).__name__}") from None
    if not items:
        return None  # as OpenCV returns for no images
    images = [as_image(item, func, f"src[{i}]") for i, item in enumerate(items)]
    first = images[0]
    shape0, dtype0 = tuple(first.shape), _np.dtype(first.dtype)
    for i, image in enumerate(images[1:], 1):
        shape = tuple(image.shape)
        if _np.dtype(image.dtype) != dtype0 or channels(image) != channels(first):
            raise error(func, f"src[{i}] has type {_np.dtype(image.dtype)} with {channels(image)} channels; "
                              f"src[0] has {dtype0} with {channels(first)}")
        if shape[1 - axis] != shape0[1 - axis]:
            what = "rows" if axis == 1 else "columns"
            raise error(func, f"src[{i}] has {shape[1 - axis]} {what}; src[0] has {shape0[1 - axis]}")
    if len(images) == 1:
        return images[0]
    return _core.concat(images, axis)


def hconcat(src, dst=None):
    """OpenCV's ``cv2.hconcat``: the images (same rows, type and channels) side by side; None
    for an empty list."""
    return _concat("hconcat", src, 1)


def vconcat(src, dst=None):
    """OpenCV's ``cv2.vconcat``: the images (same columns, type and channels) one above another;
    None for an empty list."""
    return _concat("vconcat", src, 0)
