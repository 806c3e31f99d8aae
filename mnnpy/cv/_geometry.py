"""Geometric transforms of images: OpenCV's resize, flip, rotate, transpose and copyMakeBorder.

Each image function builds one graph op (CvResize ...) or a composition of core ops; the
parameters are parsed here with OpenCV's names, defaults and flag values.
"""
import math as _math

import numpy as _np

from .. import _core
from ._common import (BORDER_CONSTANT, BORDER_ISOLATED, BORDER_REFLECT, BORDER_REFLECT_101, BORDER_REPLICATE,
                      BORDER_WRAP, INTER_AREA, INTER_CUBIC, INTER_LANCZOS4, INTER_LINEAR, INTER_LINEAR_EXACT,
                      INTER_NEAREST, INTER_NEAREST_EXACT, as_image,
                      channels, check_flag, error, image_op)

__all__ = ["resize", "flip", "rotate", "transpose", "copyMakeBorder",
           "ROTATE_90_CLOCKWISE", "ROTATE_180", "ROTATE_90_COUNTERCLOCKWISE"]

ROTATE_90_CLOCKWISE, ROTATE_180, ROTATE_90_COUNTERCLOCKWISE = 0, 1, 2

_RESIZE_INTERPOLATIONS = (INTER_NEAREST, INTER_LINEAR, INTER_CUBIC, INTER_AREA, INTER_LANCZOS4, INTER_LINEAR_EXACT)


def _size_pair(func, name, value):
    """(width, height) of an OpenCV Size argument, or None for None."""
    if value is None:
        return None
    if type(value) is tuple and len(value) == 2 and type(value[0]) is int and type(value[1]) is int:
        return value  # the common case, checked cheaply
    try:
        items = list(value)
    except TypeError:
        raise error(func, f"'{name}' must be a (width, height) pair, got {type(value).__name__}") from None
    if len(items) != 2:
        raise error(func, f"'{name}' must be a (width, height) pair, got {len(items)} values")
    for item in items:
        if not isinstance(item, (int, _np.integer)) or isinstance(item, bool):
            raise error(func, f"'{name}' must hold integers, got {type(item).__name__}")
    return int(items[0]), int(items[1])


def _round_half_even(x):
    """OpenCV's cvRound / saturate_cast<int> of a double."""
    return int(_np.rint(x))


def _real(func, name, value):
    if type(value) is float or type(value) is int:
        return float(value)
    if not isinstance(value, (int, float, _np.integer, _np.floating)) or isinstance(value, bool):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be a number, got {type(value).__name__}")
    return float(value)


def resize(src, dsize, dst=None, fx=0, fy=0, interpolation=INTER_LINEAR):
    """OpenCV's ``cv2.resize``: the image at size dsize = (width, height), or scaled by fx, fy
    when dsize is None or empty (the output size is then rounded as OpenCV rounds it)."""
    image = as_image(src, "resize")
    size = _size_pair("resize", "dsize", dsize)
    fx = _real("resize", "fx", fx)
    fy = _real("resize", "fy", fy)
    if not isinstance(interpolation, (int, _np.integer)) or isinstance(interpolation, bool):
        raise TypeError(f"mnnpy.cv.resize: 'interpolation' must be an integer flag, "
                        f"got {type(interpolation).__name__}")
    if int(interpolation) == INTER_NEAREST_EXACT:
        # OpenCV 5 breaks ties (sample centres exactly between two pixels) in a way not yet
        # reproduced; refused rather than answered differently.
        raise error("resize", "INTER_NEAREST_EXACT is not supported yet")
    if int(interpolation) not in _RESIZE_INTERPOLATIONS:
        raise error("resize", f"unknown or unsupported interpolation method {int(interpolation)}")
    height, width = (int(s) for s in tuple(image.shape)[:2])
    if size is not None and size[0] > 0 and size[1] > 0:
        out_w, out_h = size
        inv_scale_x, inv_scale_y = out_w / width, out_h / height
    else:
        if not (fx > 0 and fy > 0):
            raise error("resize", "dsize is empty, so fx and fy must be positive "
                                  f"(got fx={fx}, fy={fy})")
        out_w, out_h = _round_half_even(width * fx), _round_half_even(height * fy)
        if out_w <= 0 or out_h <= 0:
            raise error("resize", f"the scaled size {out_w}x{out_h} is empty")
        inv_scale_x, inv_scale_y = fx, fy
    if not _math.isfinite(inv_scale_x) or not _math.isfinite(inv_scale_y):
        raise error("resize", "scale factors must be finite")
    return image_op("CvResize", [image], width=out_w, height=out_h, inv_scale_x=float(inv_scale_x),
                    inv_scale_y=float(inv_scale_y), interpolation=int(interpolation))


def _int_arg(func, name, value):
    if not isinstance(value, (int, _np.integer)) or isinstance(value, bool):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be an integer, got {type(value).__name__}")
    return int(value)


def flip(src, flipCode, dst=None):  # noqa: N803 (OpenCV's names)
    """OpenCV's ``cv2.flip``: flipCode 0 flips rows (upside down), > 0 columns, < 0 both."""
    image = as_image(src, "flip")
    code = _int_arg("flip", "flipCode", flipCode)
    return image_op("CvFlip", [image], code=0 if code == 0 else (1 if code > 0 else -1))


def transpose(src, dst=None):
    """OpenCV's ``cv2.transpose``: rows become columns; channels stay with their pixel."""
    image = as_image(src, "transpose")
    return _core.transpose(image, [1, 0] if len(tuple(image.shape)) == 2 else [1, 0, 2])


def rotate(src, rotateCode, dst=None):  # noqa: N803 (OpenCV's names)
    """OpenCV's ``cv2.rotate`` by ROTATE_90_CLOCKWISE, ROTATE_180 or ROTATE_90_COUNTERCLOCKWISE."""
    image = as_image(src, "rotate")
    code = check_flag("rotate", "rotateCode", rotateCode,
                      (ROTATE_90_CLOCKWISE, ROTATE_180, ROTATE_90_COUNTERCLOCKWISE))
    if code == ROTATE_180:
        return image_op("CvFlip", [image], code=-1)
    turned = transpose(image)
    return image_op("CvFlip", [turned], code=1 if code == ROTATE_90_CLOCKWISE else 0)


_BORDER_TYPES = (BORDER_CONSTANT, BORDER_REPLICATE, BORDER_REFLECT, BORDER_WRAP, BORDER_REFLECT_101)


def _border_value(func, value, dtype, count):
    """OpenCV's Scalar ``value`` (a number fills the first channel only) saturated to ``dtype``,
    one per channel."""
    if value is None:
        items = [0.0] * 4
    elif isinstance(value, (int, float, _np.integer, _np.floating)) and not isinstance(value, bool):
        items = [float(value), 0.0, 0.0, 0.0]
    else:
        try:
            items = [float(v) for v in value]
        except (TypeError, ValueError):
            raise TypeError(f"mnnpy.cv.{func}: 'value' must be a number or a sequence of up to 4 numbers") from None
        if len(items) > 4:
            raise error(func, f"'value' has {len(items)} items; a Scalar holds at most 4")
        items += [0.0] * (4 - len(items))
    out = []
    for c in range(count):
        v = items[c] if c < 4 else 0.0
        if dtype.kind in "iu":
            info = _np.iinfo(dtype)
            v = float(min(max(_np.rint(v), info.min), info.max))
        out.append(v)
    return out


def copyMakeBorder(src, top, bottom, left, right, borderType, dst=None, value=None):  # noqa: N802,N803
    """OpenCV's ``cv2.copyMakeBorder``: the image framed by borders of the given widths, filled
    by borderType (BORDER_ISOLATED is accepted and changes nothing for a whole image)."""
    image = as_image(src, "copyMakeBorder")
    widths = [_int_arg("copyMakeBorder", n, v) for n, v in
              (("top", top), ("bottom", bottom), ("left", left), ("right", right))]
    if min(widths) < 0:
        raise error("copyMakeBorder", f"border widths must not be negative, got {widths}")
    kind = _int_arg("copyMakeBorder", "borderType", borderType) & ~BORDER_ISOLATED
    if kind not in _BORDER_TYPES:
        raise error("copyMakeBorder", f"unknown or unsupported border type {int(borderType)}")
    attrs = {}
    if kind == BORDER_CONSTANT:
        count = channels(image)
        fill = _border_value("copyMakeBorder", value, _np.dtype(image.dtype), min(count, 4))
        if count > 4:
            # A Scalar has 4 items: more channels take one value, which all 4 must agree on.
            fill = _border_value("copyMakeBorder", value, _np.dtype(image.dtype), 4)
            if any(v != fill[0] for v in fill):
                raise error("copyMakeBorder", f"an image of {count} channels takes a constant border value "
                                              f"with 4 equal items, got {value}")
            fill = fill[:1] * count
        attrs = {f"value{c}": float(v) for c, v in enumerate(fill)}
    return image_op("CvCopyMakeBorder", [image], top=widths[0], bottom=widths[1], left=widths[2],
                    right=widths[3], border=kind, **attrs)
