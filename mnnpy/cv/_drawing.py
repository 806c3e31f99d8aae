"""OpenCV's drawing functions: line, arrowedLine, rectangle, circle, ellipse, ellipse2Poly,
polylines, fillPoly, fillConvexPoly, drawContours, drawMarker, putText and getTextSize.

As in OpenCV, a NumPy image is drawn into in place and returned (the same array object); it must
be writable with packed pixels (rows may be any stride apart, as for a row slice). A Var is drawn
into in place too, as MNN draws into it: the Var then holds the drawn image (it is rebound, as
index assignment rebinds it; what was built from it before keeps the old pixels) and is
returned. Images may be MNN's batch of one, 1xHxWxC. Point sets may also be MNN's flat lists of
int coordinates, ``[x0, y0, x1, y1, ...]``, one per polygon (an extension: OpenCV refuses
them), and Vars such as findContours and convexHull return. The pixels are rasterized
by the C++ kernels behind ``_core.cv_draw_*`` with OpenCV's rules; arguments are parsed here with
OpenCV's names, defaults, checks and messages.

Text: OpenCV 5 draws FONT_HERSHEY_* text with outline fonts built into its binary; mnnpy draws it
with the Hershey stroke fonts OpenCV 4 used for the same names (the public-domain glyph data of
the ``hershey-fonts`` package: SIMPLEX and PLAIN rowmans, DUPLEX rowmand, COMPLEX and
COMPLEX_SMALL timesr, TRIPLEX rowmant, SCRIPT_* scripts/scriptc; FONT_ITALIC gives timesi,
timesib or slanted rowmans for PLAIN, COMPLEX, TRIPLEX and COMPLEX_SMALL, as in OpenCV 4). The
strokes are polylines drawn by the polyline kernel, so thickness and lineType act as for
cv2.polylines. Glyphs are scaled to OpenCV 5's capital height and baseline for each face, and
getTextSize reports OpenCV 5's height and line steps (text lines break at '\n' by OpenCV 5's
rules). What remains different from OpenCV 5:
- the glyph shapes, and with them the widths: strings are spaced to OpenCV 5's average width
  per face, so getTextSize's width is within about 15% of cv2's (script faces about 35%); its
  height is within 1 px and its baseLine within 1 px + 10% of the height (script faces + 25%:
  their descenders are longer); the drawn ink box overlaps cv2's with IoU >= 0.7 for thin
  LINE_8 text and >= 0.5 for thickness up to 3 at scales 0.5 and up;
- thickness is the stroke width (OpenCV 5 only switches to a bold weight), lineType is honoured
  (OpenCV 5 always antialiases), and FONT_ITALIC slants where OpenCV 4 did (OpenCV 5 ignores it);
- characters without a Hershey glyph (beyond printable ASCII, control characters other than
  '\n') are drawn as '?', as OpenCV 4 drew them.
As in OpenCV 5, text is drawn on uint8 images with 1, 3 or 4 channels only.
"""
import math as _math
import struct as _struct

import numpy as _np

from .. import _core
from .._core import Var
from ._common import error, unbatched

__all__ = ["line", "arrowedLine", "rectangle", "circle", "ellipse", "ellipse2Poly", "polylines", "fillPoly",
           "fillConvexPoly", "drawContours", "drawMarker", "putText", "getTextSize",
           "LINE_4", "LINE_8", "LINE_AA", "FILLED",
           "FONT_HERSHEY_SIMPLEX", "FONT_HERSHEY_PLAIN", "FONT_HERSHEY_DUPLEX", "FONT_HERSHEY_COMPLEX",
           "FONT_HERSHEY_TRIPLEX", "FONT_HERSHEY_COMPLEX_SMALL", "FONT_HERSHEY_SCRIPT_SIMPLEX",
           "FONT_HERSHEY_SCRIPT_COMPLEX", "FONT_ITALIC",
           "MARKER_CROSS", "MARKER_TILTED_CROSS", "MARKER_STAR", "MARKER_DIAMOND", "MARKER_SQUARE",
           "MARKER_TRIANGLE_UP", "MARKER_TRIANGLE_DOWN"]

LINE_4, LINE_8, LINE_AA, FILLED = 4, 8, 16, -1
FONT_HERSHEY_SIMPLEX, FONT_HERSHEY_PLAIN, FONT_HERSHEY_DUPLEX, FONT_HERSHEY_COMPLEX = 0, 1, 2, 3
FONT_HERSHEY_TRIPLEX, FONT_HERSHEY_COMPLEX_SMALL, FONT_HERSHEY_SCRIPT_SIMPLEX, FONT_HERSHEY_SCRIPT_COMPLEX = 4, 5, 6, 7
FONT_ITALIC = 16
MARKER_CROSS, MARKER_TILTED_CROSS, MARKER_STAR, MARKER_DIAMOND = 0, 1, 2, 3
MARKER_SQUARE, MARKER_TRIANGLE_UP, MARKER_TRIANGLE_DOWN = 4, 5, 6

_XY_SHIFT = 16
_MAX_THICKNESS = 32767
_INT_MAX = 2**31 - 1
_INT_MIN = -2**31

# Element types OpenCV draws into (bool arrays are drawn as bytes, as OpenCV maps them to CV_8U).
_DRAW_DTYPES = tuple(_np.dtype(d) for d in ("uint8", "int8", "uint16", "int16", "int32", "float16", "float32",
                                            "float64"))


def _is_int(value):
    return isinstance(value, (int, _np.integer)) and not isinstance(value, (bool, _np.bool_))


def _int_arg(func, name, value, exc=error):
    """An OpenCV ``int`` argument (a C int); ``exc`` is what OpenCV raises for a bad one."""
    if type(value) is int and _INT_MIN <= value <= _INT_MAX:
        return value
    if not _is_int(value):
        msg = f"Argument '{name}' is required to be an integer, got {type(value).__name__}"
        raise (TypeError(f"mnnpy.cv.{func}: {msg}") if exc is TypeError else error(func, msg))
    value = int(value)
    if not _INT_MIN <= value <= _INT_MAX:
        msg = f"Argument '{name}' ({value}) does not fit into a C int"
        raise (TypeError(f"mnnpy.cv.{func}: {msg}") if exc is TypeError else error(func, msg))
    return value


def _wrap_int(value):
    """``value`` wrapped to a C int, as OpenCV's int Point arithmetic wraps."""
    return (value - _INT_MIN) % 2**32 + _INT_MIN


def _cv_round(value):
    """cvRound into a C int: half to even; out of range or NaN gives INT_MIN (as x86 does)."""
    if not _math.isfinite(value) or not _INT_MIN <= round(value) <= _INT_MAX:
        return _INT_MIN
    return round(value)


def _real_arg(func, name, value):
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, (int, float, _np.integer, _np.floating)):
        raise error(func, f"Argument '{name}' must be a number, got {type(value).__name__}")
    return float(value)


def _int_pair(func, name, value, exc=error):
    """An OpenCV Point or Size: a sequence of two integers."""
    if (type(value) is tuple and len(value) == 2 and type(value[0]) is int and type(value[1]) is int
            and _INT_MIN <= value[0] <= _INT_MAX and _INT_MIN <= value[1] <= _INT_MAX):
        return value

    def fail(msg):
        raise (TypeError(f"mnnpy.cv.{func}: {msg}") if exc is TypeError else error(func, msg))
    if isinstance(value, (str, bytes)):
        fail(f"Can't parse '{name}': expected a sequence of 2 integers, got {type(value).__name__}")
    try:
        items = list(value)
    except TypeError:
        fail(f"Can't parse '{name}': expected a sequence of 2 integers, got {type(value).__name__}")
    if len(items) != 2:
        fail(f"Can't parse '{name}'. Expected sequence length 2, got {len(items)}")
    for i, item in enumerate(items):
        if not _is_int(item) or not _INT_MIN <= int(item) <= _INT_MAX:
            fail(f"Can't parse '{name}'. Sequence item with index {i} has a wrong type")
    return int(items[0]), int(items[1])


def _scalar(func, color):
    """OpenCV's Scalar from a number or a sequence of at most 4 numbers (None is all zeros)."""
    if color is None:
        return [0.0] * 4
    if isinstance(color, (int, float)):
        return [float(color), 0.0, 0.0, 0.0]
    if not isinstance(color, (tuple, list)):
        raise error(func, "Scalar value for argument 'color' is not numeric")
    if len(color) > 4:
        raise error(func, "Scalar value for argument 'color' is longer than 4")
    values = []
    for item in color:
        if not isinstance(item, (int, float)):
            raise error(func, "Scalar value for argument 'color' is not numeric")
        values.append(float(item))
    return values + [0.0] * (4 - len(values))


_STRUCT_CODES = {"uint8": "B", "int8": "b", "uint16": "H", "int16": "h", "int32": "i",
                 "float64": "d", "bool": "B"}
_color_cache = {}


def _color_bytes(func, color, dtype, channels):
    """One pixel of ``color`` in the image's type (each channel rounded half to even and
    saturated for integer types, as OpenCV's saturate_cast)."""
    try:
        key = (color, dtype, channels)
        cached = _color_cache.get(key)
    except TypeError:  # an unhashable color: parsed (and rejected or accepted) below
        key, cached = None, None
    if cached is not None:
        return cached
    code = _STRUCT_CODES.get(dtype.name)
    values = _scalar(func, color)[:channels]
    if code is None:
        packed = _pixel_bytes_numpy(values, dtype)
    elif code == "d":
        packed = _struct.pack(f"<{channels}{code}", *values)
    else:
        info = _np.iinfo(_np.uint8 if dtype.kind == "b" else dtype)
        ints = []
        for v in values:
            # Rounded to a C int first: values beyond its range (and NaN) become INT_MIN.
            r = round(v) if _math.isfinite(v) else _INT_MIN
            r = r if _INT_MIN <= r <= _INT_MAX else _INT_MIN
            ints.append(min(max(r, int(info.min)), int(info.max)))
        packed = _struct.pack(f"<{channels}{code}", *ints)
    if key is not None:
        if len(_color_cache) > 256:
            _color_cache.clear()
        _color_cache[key] = packed
    return packed


def _pixel_bytes_numpy(values, dtype):
    values = _np.array(values, dtype=_np.float64)
    if dtype.kind in "iub":
        store = _np.dtype(_np.uint8) if dtype.kind == "b" else dtype
        info = _np.iinfo(store)
        # Rounded to a C int first: values beyond its range (and NaN) become INT_MIN.
        rounded = _np.rint(values)
        rounded = _np.where(_np.isfinite(rounded) & (rounded >= _INT_MIN) & (rounded <= _INT_MAX), rounded, _INT_MIN)
        return _np.clip(rounded, info.min, info.max).astype(store).tobytes()
    return values.astype(_np.float32).astype(dtype).tobytes() if dtype == _np.float16 else values.astype(dtype).tobytes()


class _Canvas:
    """The NumPy array drawn into: the caller's image itself, or a copy of a Var's pixels."""

    def __init__(self, func, img):
        self.func = func
        self.image = img
        self.var = isinstance(img, Var)
        if self.var:
            self.drawn = array = _np.array(_np.asarray(img), copy=True, order="C")
        elif isinstance(img, _np.ndarray):
            array = img
        else:
            raise error(func, f"Expected a NumPy array or Var for argument 'img', got {type(img).__name__}")
        self.dtype = array.dtype
        array = unbatched(array, func, "img")
        if array.dtype not in _DRAW_DTYPES and array.dtype != _np.bool_:
            raise error(func, f"'img' has unsupported dtype {array.dtype}")
        if array.ndim == 1 and array.size > 0 and array.strides[0] == array.itemsize:
            array = array.reshape(-1, 1)
        if array.ndim not in (2, 3):
            raise error(func, f"'img' must be a 2-D (HxW) or 3-D (HxWxC) image (or MNN's 1xHxWxC batch of one), "
                              f"got shape {array.shape}")
        if array.size == 0:
            raise error(func, f"'img' is empty (shape {array.shape})")
        channels = 1 if array.ndim == 2 else array.shape[2]
        if channels > 4:
            raise error(func, f"'img' has {channels} channels; drawing supports at most 4")
        if not array.flags.writeable:
            raise error(func, "'img' is read-only; drawing writes into the image in place")
        packed = array.strides[-1] == array.itemsize and (array.ndim == 2 or array.strides[1] == array.itemsize * channels)
        if not packed or array.strides[0] < array.shape[1] * array.itemsize * channels:
            raise error(func, "'img' must have packed pixels and rows in increasing memory order "
                              "(a C-contiguous array or a row slice of one)")
        self.array = array.view(_np.uint8) if array.dtype == _np.bool_ else array
        self.channels = channels

    def color(self, color):
        return _color_bytes(self.func, color, self.dtype, self.channels)

    def line_type(self, line_type):
        # Antialiasing is for 8-bit images; others get 8-connected lines, as in OpenCV.
        if line_type == LINE_AA and self.dtype != _np.uint8:
            return LINE_8
        return line_type

    def finish(self):
        """The image drawn into: a Var now holds the drawn pixels (a placeholder keeps being one)."""
        if self.var:
            var = self.image
            if var.is_placeholder:
                var.write(self.drawn)
            else:
                drawn = _core.const(self.drawn, None, var.data_format)
                drawn.name = var.name
                _core.rebind(var, drawn)
        return self.image


def _draw(func, kernel, *args):
    try:
        kernel(*args)
    except ValueError as exc:
        raise error(func, str(exc)) from None


def _check_shift(func, shift):
    if not 0 <= shift <= _XY_SHIFT:
        raise error(func, f"shift must be in [0, {_XY_SHIFT}], got {shift}")


def _check_thickness(func, thickness, low=None):
    if thickness > _MAX_THICKNESS or (low is not None and thickness < low):
        lo = "" if low is None else f"{low} <= "
        raise error(func, f"thickness must satisfy {lo}thickness <= {_MAX_THICKNESS}, got {thickness}")


def _check_positive_thickness(func, thickness):
    """Lines take no FILLED (negative) or zero thickness."""
    if not 0 < thickness <= _MAX_THICKNESS:
        raise error(func, f"thickness must satisfy 0 < thickness <= {_MAX_THICKNESS}, got {thickness}")


def _is_flat_points(value):
    """Whether ``value`` is MNN's flat point list, [x0, y0, x1, y1, ...] of ints."""
    return (isinstance(value, (list, tuple)) and len(value) % 2 == 0
            and all(type(v) is int or isinstance(v, _np.integer) for v in value))


def _point_set(value):
    """An array of points from a Var or MNN's flat point list; other values as they are."""
    if isinstance(value, Var):
        return _np.asarray(value)
    if _is_flat_points(value):
        flat = _np.array(value, dtype=_np.int64).reshape(-1, 2)
        if flat.size and (flat.min() < _INT_MIN or flat.max() > _INT_MAX):
            return flat  # refused by _points_array, naming the int32 range
        return flat.astype(_np.int32)
    return value


def _points_array(func, name, value, allow_empty=True):
    """An OpenCV point vector (Nx2, Nx1x2 or 1xNx2 int32/int64 array, a Var, or MNN's flat list
    of ints) as Nx2 int64."""
    value = _point_set(value)
    if not isinstance(value, _np.ndarray):
        raise error(func, f"Expected an array of points or a flat list of int coordinates for argument '{name}', "
                          f"got {type(value).__name__}")
    if value.dtype not in (_np.dtype(_np.int32), _np.dtype(_np.int64)):
        if value.size == 0 and allow_empty:
            return _np.zeros((0, 2), _np.int64)
        raise error(func, f"'{name}' must hold int32 points (checkVector(2, CV_32S)), got dtype {value.dtype}")
    shape = value.shape
    ok = (value.ndim == 2 and shape[1] == 2) or (value.ndim == 3 and shape[2] == 2 and (shape[1] == 1 or shape[0] == 1))
    if value.size == 0:
        if not allow_empty:
            raise error(func, f"'{name}' is empty; at least one point is required")
        return _np.zeros((0, 2), _np.int64)
    if not ok:
        raise error(func, f"'{name}' must be an Nx2, Nx1x2 or 1xNx2 array of points, got shape {shape}")
    pts = value.reshape(-1, 2).astype(_np.int64)
    if value.dtype == _np.int64 and (pts.min() < _INT_MIN or pts.max() > _INT_MAX):
        raise error(func, f"'{name}' has coordinates outside the int32 range")
    return _np.ascontiguousarray(pts)


def _contour_list(func, name, value):
    """OpenCV's InputArrayOfArrays of point vectors: a list/tuple of arrays, one array (one
    contour) or a KxNx2 array (K contours); arrays may be Vars, and list items MNN's flat
    lists of ints."""
    if isinstance(value, Var):
        value = _np.asarray(value)
    if isinstance(value, _np.ndarray):
        if value.ndim == 3 and value.shape[0] > 1 and value.shape[1] != 1:
            return list(value)
        return [value]
    if isinstance(value, (list, tuple)):
        items = [_point_set(item) for item in value]
        for i, item in enumerate(items):
            if not isinstance(item, _np.ndarray):
                raise error(func, f"Can't parse '{name}'. Sequence item with index {i} has a wrong type (expected "
                                  f"an array of points or a flat list of int coordinates [x0, y0, x1, y1, ...])")
        return items
    raise error(func, f"Expected a sequence of point arrays for argument '{name}', got {type(value).__name__}")


def line(img, pt1, pt2, color, thickness=1, lineType=LINE_8, shift=0):  # noqa: N803 (OpenCV's names)
    """OpenCV's ``cv2.line``: a segment from pt1 to pt2 (coordinates with ``shift`` fraction bits)."""
    p1 = _int_pair("line", "pt1", pt1)
    p2 = _int_pair("line", "pt2", pt2)
    thickness = _int_arg("line", "thickness", thickness)
    line_type = _int_arg("line", "lineType", lineType)
    shift = _int_arg("line", "shift", shift)
    if img is None:
        return None
    canvas = _Canvas("line", img)
    _check_positive_thickness("line", thickness)
    _check_shift("line", shift)
    _draw("line", _core.cv_draw_line, canvas.array, *p1, *p2, canvas.color(color), thickness,
          canvas.line_type(line_type), shift)
    return canvas.finish()


def arrowedLine(img, pt1, pt2, color, thickness=1, line_type=LINE_8, shift=0, tipLength=0.1):  # noqa: N802,N803
    """OpenCV's ``cv2.arrowedLine``: a line from pt1 to pt2 with two tip strokes at pt2, each
    ``tipLength`` times the line's length."""
    p1 = _int_pair("arrowedLine", "pt1", pt1)
    p2 = _int_pair("arrowedLine", "pt2", pt2)
    thickness = _int_arg("arrowedLine", "thickness", thickness)
    line_type = _int_arg("arrowedLine", "line_type", line_type)
    shift = _int_arg("arrowedLine", "shift", shift)
    tip = _real_arg("arrowedLine", "tipLength", tipLength)
    if img is None:
        return None
    canvas = _Canvas("arrowedLine", img)
    _check_positive_thickness("arrowedLine", thickness)
    _check_shift("arrowedLine", shift)
    dx, dy = _wrap_int(p1[0] - p2[0]), _wrap_int(p1[1] - p2[1])
    tip_size = _math.sqrt(float(dx) * dx + float(dy) * dy) * tip
    angle = _math.atan2(float(p1[1] - p2[1]), float(p1[0] - p2[0]))
    color_bytes, lt = canvas.color(color), canvas.line_type(line_type)
    _draw("arrowedLine", _core.cv_draw_line, canvas.array, *p1, *p2, color_bytes, thickness, lt, shift)
    for turn in (_math.pi / 4, -_math.pi / 4):
        tip_x = _cv_round(p2[0] + tip_size * _math.cos(angle + turn))
        tip_y = _cv_round(p2[1] + tip_size * _math.sin(angle + turn))
        _draw("arrowedLine", _core.cv_draw_line, canvas.array, tip_x, tip_y, *p2, color_bytes, thickness, lt, shift)
    return canvas.finish()


_RECT_POINTS = ("pt1", "pt2", "color", "thickness", "lineType", "shift")
_RECT_REC = ("rec", "color", "thickness", "lineType", "shift")


def rectangle(img, *args, **kwargs):
    """OpenCV's ``cv2.rectangle``: ``rectangle(img, pt1, pt2, color, thickness=1, lineType=LINE_8,
    shift=0)`` with opposite corners, or ``rectangle(img, rec, color, ...)`` with rec = (x, y, w, h);
    a negative thickness fills it."""
    use_rec = "rec" in kwargs or (len(args) > 0 and not isinstance(args[0], (str, bytes))
                                  and hasattr(args[0], "__len__") and len(args[0]) == 4)
    names = _RECT_REC if use_rec else _RECT_POINTS
    if len(args) > len(names):
        raise error("rectangle", f"rectangle() takes at most {len(names) + 1} arguments ({len(args) + 1} given)")
    params = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names or key in params:
            raise error("rectangle", f"rectangle() got an unexpected or repeated argument '{key}'")
        params[key] = value
    required = ("rec", "color") if use_rec else ("pt1", "pt2", "color")
    for key in required:
        if key not in params:
            raise error("rectangle", f"rectangle() missing required argument '{key}'")
    thickness = _int_arg("rectangle", "thickness", params.get("thickness", 1))
    line_type = _int_arg("rectangle", "lineType", params.get("lineType", LINE_8))
    shift = _int_arg("rectangle", "shift", params.get("shift", 0))
    if use_rec:
        rec = params["rec"]
        try:
            items = list(rec)
        except TypeError:
            raise error("rectangle", f"Can't parse 'rec': expected (x, y, w, h), got {type(rec).__name__}") from None
        if len(items) != 4:
            raise error("rectangle", f"Can't parse 'rec'. Expected sequence length 4, got {len(items)}")
        if not all(_is_int(v) and _INT_MIN <= int(v) <= _INT_MAX for v in items):
            raise error("rectangle", "Can't parse 'rec'. Sequence items must be integers")
        x, y, w, h = (int(v) for v in items)
    else:
        p1 = _int_pair("rectangle", "pt1", params["pt1"])
        p2 = _int_pair("rectangle", "pt2", params["pt2"])
    if img is None:
        return None
    canvas = _Canvas("rectangle", img)
    _check_shift("rectangle", shift)
    if use_rec:
        # Crop to just around the image, then draw from the top-left to the bottom-right pixel.
        rows, cols = canvas.array.shape[:2]
        one = 1 << shift
        bx, by, bw, bh = -one, -one, (cols + 2) << shift, (rows + 2) << shift
        if w <= 0 or h <= 0:
            return canvas.finish()
        x1, y1 = max(x, bx), max(y, by)
        w, h = min(x + w, bx + bw) - x1, min(y + h, by + bh) - y1
        if w <= 0 or h <= 0:
            return canvas.finish()
        p1, p2 = (x1, y1), (x1 + w - one, y1 + h - one)
    _check_thickness("rectangle", thickness)
    _draw("rectangle", _core.cv_draw_rectangle, canvas.array, *p1, *p2, canvas.color(params["color"]), thickness,
          canvas.line_type(line_type), shift)
    return canvas.finish()


def circle(img, center, radius, color, thickness=1, lineType=LINE_8, shift=0):  # noqa: N803
    """OpenCV's ``cv2.circle``; a negative thickness (FILLED) fills it."""
    c = _int_pair("circle", "center", center)
    radius = _int_arg("circle", "radius", radius)
    thickness = _int_arg("circle", "thickness", thickness)
    line_type = _int_arg("circle", "lineType", lineType)
    shift = _int_arg("circle", "shift", shift)
    if img is None:
        return None
    canvas = _Canvas("circle", img)
    if radius < 0:
        raise error("circle", f"radius must be >= 0, got {radius}")
    _check_thickness("circle", thickness)
    _check_shift("circle", shift)
    _draw("circle", _core.cv_draw_circle, canvas.array, *c, radius, canvas.color(color), thickness,
          canvas.line_type(line_type), shift)
    return canvas.finish()


_ELLIPSE_FULL = ("center", "axes", "angle", "startAngle", "endAngle", "color", "thickness", "lineType", "shift")
_ELLIPSE_BOX = ("box", "color", "thickness", "lineType")


def _is_box(value):
    try:
        return len(value) == 3 and len(value[0]) == 2 and len(value[1]) == 2
    except TypeError:
        return False


def ellipse(img, *args, **kwargs):
    """OpenCV's ``cv2.ellipse``: ``ellipse(img, center, axes, angle, startAngle, endAngle, color,
    thickness=1, lineType=LINE_8, shift=0)`` (angles in degrees, rounded to whole degrees) or
    ``ellipse(img, box, color, thickness=1, lineType=LINE_8)`` with box = ((cx, cy), (w, h), angle)."""
    use_box = "box" in kwargs or (len(args) > 0 and _is_box(args[0]))
    names = _ELLIPSE_BOX if use_box else _ELLIPSE_FULL
    if len(args) > len(names):
        raise error("ellipse", f"ellipse() takes at most {len(names) + 1} arguments ({len(args) + 1} given)")
    params = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names or key in params:
            raise error("ellipse", f"ellipse() got an unexpected or repeated argument '{key}'")
        params[key] = value
    required = ("box", "color") if use_box else names[:6]
    for key in required:
        if key not in params:
            raise error("ellipse", f"ellipse() missing required argument '{key}'")
    thickness = _int_arg("ellipse", "thickness", params.get("thickness", 1))
    line_type = _int_arg("ellipse", "lineType", params.get("lineType", LINE_8))
    if use_box:
        (cx, cy), (bw, bh), angle = params["box"]
        cx, cy, bw, bh, angle = (_real_arg("ellipse", "box", v) for v in (cx, cy, bw, bh, angle))
    else:
        c = _int_pair("ellipse", "center", params["center"])
        axes = _int_pair("ellipse", "axes", params["axes"])
        angles = [_real_arg("ellipse", k, params[k]) for k in ("angle", "startAngle", "endAngle")]
        shift = _int_arg("ellipse", "shift", params.get("shift", 0))
    if img is None:
        return None
    canvas = _Canvas("ellipse", img)
    color_bytes, lt = canvas.color(params["color"]), canvas.line_type(line_type)
    if use_box:
        box32 = _np.array([cx, cy, bw, bh, angle], _np.float32)
        if box32[2] < 0 or box32[3] < 0:
            raise error("ellipse", "box.size.width >= 0 && box.size.height >= 0 is required")
        _check_thickness("ellipse", thickness)
        _draw("ellipse", _core.cv_draw_ellipse_box, canvas.array, *(float(v) for v in box32), color_bytes,
              thickness, lt)
    else:
        if axes[0] < 0 or axes[1] < 0:
            raise error("ellipse", f"axes must be non-negative, got {axes}")
        _check_thickness("ellipse", thickness)
        _check_shift("ellipse", shift)
        whole = [_cv_round(v) for v in angles]
        _draw("ellipse", _core.cv_draw_ellipse, canvas.array, *c, *axes, *whole, color_bytes, thickness, lt, shift)
    return canvas.finish()


def ellipse2Poly(center, axes, angle, arcStart, arcEnd, delta):  # noqa: N802,N803
    """OpenCV's ``cv2.ellipse2Poly``: the elliptic arc's polygon (points every ``delta`` degrees)
    as an Nx2 int32 array."""
    c = _int_pair("ellipse2Poly", "center", center, TypeError)
    axes = _int_pair("ellipse2Poly", "axes", axes, TypeError)
    values = [_int_arg("ellipse2Poly", k, v, TypeError)
              for k, v in (("angle", angle), ("arcStart", arcStart), ("arcEnd", arcEnd), ("delta", delta))]
    if not 0 < values[3] <= 180:
        raise error("ellipse2Poly", f"delta must satisfy 0 < delta <= 180, got {values[3]}")
    return _core.cv_ellipse_to_poly(*c, *axes, *values)


def polylines(img, pts, isClosed, color, thickness=1, lineType=LINE_8, shift=0):  # noqa: N803
    """OpenCV's ``cv2.polylines``: each point array of ``pts`` as a polygonal chain, closed when
    ``isClosed``."""
    contours = _contour_list("polylines", "pts", pts)
    closed = bool(isClosed)
    thickness = _int_arg("polylines", "thickness", thickness)
    line_type = _int_arg("polylines", "lineType", lineType)
    shift = _int_arg("polylines", "shift", shift)
    if img is None:
        return None
    canvas = _Canvas("polylines", img)
    arrays = [_points_array("polylines", "pts", p) for p in contours]
    if not arrays:
        return canvas.finish()
    if not 0 <= thickness <= _MAX_THICKNESS:
        raise error("polylines", f"thickness must satisfy 0 <= thickness <= {_MAX_THICKNESS}, got {thickness}")
    _check_shift("polylines", shift)
    _draw("polylines", _core.cv_draw_polylines, canvas.array, arrays, closed, canvas.color(color), thickness,
          canvas.line_type(line_type), shift)
    return canvas.finish()


def fillPoly(img, pts, color, lineType=LINE_8, shift=0, offset=(0, 0)):  # noqa: N802,N803
    """OpenCV's ``cv2.fillPoly``: fills the area bounded by the point arrays of ``pts`` (even-odd
    rule), each point moved by ``offset``."""
    contours = _contour_list("fillPoly", "pts", pts)
    line_type = _int_arg("fillPoly", "lineType", lineType)
    shift = _int_arg("fillPoly", "shift", shift)
    off = _int_pair("fillPoly", "offset", offset)
    if img is None:
        return None
    canvas = _Canvas("fillPoly", img)
    if not contours:
        return canvas.finish()
    arrays = [_points_array("fillPoly", "pts", p, allow_empty=False) for p in contours]
    _check_shift("fillPoly", shift)
    _draw("fillPoly", _core.cv_fill_poly, canvas.array, arrays, canvas.color(color), canvas.line_type(line_type),
          shift, *off)
    return canvas.finish()


def fillConvexPoly(img, points, color, lineType=LINE_8, shift=0):  # noqa: N802,N803
    """OpenCV's ``cv2.fillConvexPoly``: fills a convex polygon (faster than fillPoly; a
    non-convex one is filled as OpenCV fills it)."""
    line_type = _int_arg("fillConvexPoly", "lineType", lineType)
    shift = _int_arg("fillConvexPoly", "shift", shift)
    points = _point_set(points)
    if not isinstance(points, _np.ndarray):
        raise error("fillConvexPoly", "Expected an array of points or a flat list of int coordinates for "
                                      f"argument 'points', got {type(points).__name__}")
    if img is None:
        return None
    canvas = _Canvas("fillConvexPoly", img)
    pts = _points_array("fillConvexPoly", "points", points)
    if len(pts) == 0:
        return canvas.finish()
    _check_shift("fillConvexPoly", shift)
    _draw("fillConvexPoly", _core.cv_fill_convex_poly, canvas.array, pts, canvas.color(color),
          canvas.line_type(line_type), shift)
    return canvas.finish()


def _contours_to_draw(contours, index, hierarchy, max_level):
    """Indices of the contours drawContours draws: one, all, or those within ``max_level``
    nesting levels of the chosen ones when a hierarchy is given."""
    total = len(contours)
    first, end = (index, index + 1) if index >= 0 else (0, total)
    if hierarchy is None or max_level == 0:
        return list(range(first, end))
    chosen = []
    stack = [i for i in range(first, end) if hierarchy[i][3] < 0 or index >= 0]
    while stack:
        cur = stack.pop()
        level, parent = -1, cur
        while parent >= 0:
            parent = int(hierarchy[parent][3])
            level += 1
        if level <= max_level:
            chosen.append(cur)
        child = int(hierarchy[cur][2])
        while child > 0:
            stack.append(child)
            child = int(hierarchy[child][0])
    return chosen


def drawContours(image, contours, contourIdx, color, thickness=1, lineType=LINE_8, hierarchy=None,  # noqa: N802,N803
                 maxLevel=_INT_MAX, offset=(0, 0)):
    """OpenCV's ``cv2.drawContours``: outlines (or fills, for a negative thickness) the contours
    as cv2.findContours returns them; contourIdx < 0 draws all, and with a hierarchy only those
    within maxLevel levels."""
    items = _contour_list("drawContours", "contours", contours)
    index = _int_arg("drawContours", "contourIdx", contourIdx)
    thickness = _int_arg("drawContours", "thickness", thickness)
    line_type = _int_arg("drawContours", "lineType", lineType)
    max_level = _int_arg("drawContours", "maxLevel", maxLevel)
    off = _int_pair("drawContours", "offset", offset)
    if image is None:
        return None
    canvas = _Canvas("drawContours", image)
    _check_thickness("drawContours", thickness)
    if not items:
        return canvas.finish()
    if index >= len(items):
        raise error("drawContours", f"contourIdx {index} is out of range for {len(items)} contours")
    tree = None
    if hierarchy is not None:
        h = _np.asarray(hierarchy)
        if h.size:
            if h.dtype.kind not in "iu" or h.size % 4 or h.size // 4 < len(items):
                raise error("drawContours", "hierarchy must hold one int32 (next, prev, child, parent) per contour")
            tree = h.reshape(-1, 4).astype(_np.int64)
    chosen = _contours_to_draw(items, index, tree, max_level)
    color_bytes, lt = canvas.color(color), canvas.line_type(line_type)
    if thickness < 0:
        arrays = [_points_array("drawContours", "contours", items[i], allow_empty=False) for i in chosen]
        if arrays:
            _draw("drawContours", _core.cv_fill_poly, canvas.array, arrays, color_bytes, lt, 0, *off)
        return canvas.finish()
    arrays = []
    for i in chosen:
        pts = _points_array("drawContours", "contours", items[i], allow_empty=True) \
            if items[i].size == 0 or items[i].dtype in (_np.int32, _np.int64) else None
        if pts is None:
            raise error("drawContours", "contours must hold int32 points (npoints > 0)")
        if len(pts):
            arrays.append(pts + _np.array(off, _np.int64))
    if arrays:
        _draw("drawContours", _core.cv_draw_polylines, canvas.array, arrays, True, color_bytes, thickness, lt, 0)
    return canvas.finish()


def drawMarker(img, position, color, markerType=MARKER_CROSS, markerSize=20, thickness=1,  # noqa: N802,N803
               line_type=LINE_8):
    """OpenCV's ``cv2.drawMarker``: a cross, tilted cross, star, diamond, square or triangle of
    ``markerSize`` pixels centered on ``position`` (unknown types draw a cross)."""
    x, y = _int_pair("drawMarker", "position", position)
    marker = _int_arg("drawMarker", "markerType", markerType)
    size = _int_arg("drawMarker", "markerSize", markerSize)
    thickness = _int_arg("drawMarker", "thickness", thickness)
    line_type = _int_arg("drawMarker", "line_type", line_type)
    if img is None:
        return None
    canvas = _Canvas("drawMarker", img)
    _check_positive_thickness("drawMarker", thickness)
    s = abs(size) // 2 * (1 if size >= 0 else -1)  # C integer division
    lo_x, hi_x, lo_y, hi_y = (_wrap_int(v) for v in (x - s, x + s, y - s, y + s))
    left, right, top, bottom = (lo_x, y), (hi_x, y), (x, lo_y), (x, hi_y)
    tl, tr, br, bl = (lo_x, lo_y), (hi_x, lo_y), (hi_x, hi_y), (lo_x, hi_y)
    strokes = {
        MARKER_CROSS: [(left, right), (top, bottom)],
        MARKER_TILTED_CROSS: [(tl, br), (tr, bl)],
        MARKER_STAR: [(left, right), (top, bottom), (tl, br), (tr, bl)],
        MARKER_DIAMOND: [(top, right), (right, bottom), (bottom, left), (left, top)],
        MARKER_SQUARE: [(tl, tr), (tr, br), (br, bl), (bl, tl)],
        MARKER_TRIANGLE_UP: [(bl, br), (br, top), (top, bl)],
        MARKER_TRIANGLE_DOWN: [(tl, tr), (tr, bottom), (bottom, tl)],
    }.get(marker)
    if strokes is None:
        strokes = [(left, right), (top, bottom)]
    color_bytes, lt = canvas.color(color), canvas.line_type(line_type)
    for a, b in strokes:
        _draw("drawMarker", _core.cv_draw_line, canvas.array, *a, *b, color_bytes, thickness, lt, 0)
    return canvas.finish()


# ---------------------------------------------------------------------------------------------
# Text: Hershey stroke fonts (the public-domain glyphs of the `hershey-fonts` package), the fonts
# OpenCV 4 drew FONT_HERSHEY_* with, sized and placed as OpenCV 5 places its outline fonts.

# The Hershey font each face is drawn with, upright and with FONT_ITALIC (OpenCV 4's choice:
# italics exist for PLAIN, COMPLEX, TRIPLEX and COMPLEX_SMALL only). The package has no Hershey
# "plain" or "complex small" sets, so those are drawn with the simplex and complex glyphs at
# their smaller size, and PLAIN's italic is the simplex glyphs slanted.
_FACE_FONTS = {
    FONT_HERSHEY_SIMPLEX: ("rowmans", "rowmans"),
    FONT_HERSHEY_PLAIN: ("rowmans", "rowmans/slanted"),
    FONT_HERSHEY_DUPLEX: ("rowmand", "rowmand"),
    FONT_HERSHEY_COMPLEX: ("timesr", "timesi"),
    FONT_HERSHEY_TRIPLEX: ("rowmant", "timesib"),
    FONT_HERSHEY_COMPLEX_SMALL: ("timesr", "timesi"),
    FONT_HERSHEY_SCRIPT_SIMPLEX: ("scripts", "scripts"),
    FONT_HERSHEY_SCRIPT_COMPLEX: ("scriptc", "scriptc"),
}

# Per face, in pixels at fontScale 1, measured on OpenCV 5's rendering: capital height, the
# height getTextSize reports, and the gap that, added to that height, steps from one line's
# baseline to the next.
_FACE_METRICS = {
    FONT_HERSHEY_SIMPLEX: (20.25, 27.025, 7.225),
    FONT_HERSHEY_PLAIN: (11.35, 15.1475, 4.05),
    FONT_HERSHEY_DUPLEX: (20.25, 27.025, 7.225),
    FONT_HERSHEY_COMPLEX: (20.25, 27.025, 7.225),
    FONT_HERSHEY_TRIPLEX: (20.25, 27.025, 7.225),
    FONT_HERSHEY_COMPLEX_SMALL: (16.3, 21.735, 5.825),
    FONT_HERSHEY_SCRIPT_SIMPLEX: (18.7, 25.085, 6.65),
    FONT_HERSHEY_SCRIPT_COMPLEX: (18.7, 25.085, 6.65),
}

# Hershey glyphs are drawn at the capital height above but spaced more tightly than their own
# advance widths (by this factor), so that strings are as wide as OpenCV 5 sets them; fitted per
# Hershey font on a mixed corpus of words, digits and punctuation.
_ADVANCE_FACTOR = {
    (FONT_HERSHEY_SIMPLEX, "rowmans"): 0.884,
    (FONT_HERSHEY_PLAIN, "rowmans"): 0.881,
    (FONT_HERSHEY_PLAIN, "rowmans/slanted"): 0.881,
    (FONT_HERSHEY_DUPLEX, "rowmand"): 0.913,
    (FONT_HERSHEY_COMPLEX, "timesr"): 0.831,
    (FONT_HERSHEY_COMPLEX, "timesi"): 0.809,
    (FONT_HERSHEY_TRIPLEX, "rowmant"): 0.867,
    (FONT_HERSHEY_TRIPLEX, "timesib"): 0.835,
    (FONT_HERSHEY_COMPLEX_SMALL, "timesr"): 0.832,
    (FONT_HERSHEY_COMPLEX_SMALL, "timesi"): 0.810,
    (FONT_HERSHEY_SCRIPT_SIMPLEX, "scripts"): 0.923,
    (FONT_HERSHEY_SCRIPT_COMPLEX, "scriptc"): 0.945,
}

_HERSHEY_CAP, _HERSHEY_BASE = -12, 9  # capital line and baseline of every Hershey font used (y down)
_SLANT = 6.0 / 21.0  # the slope of the Hershey italics, given to the slanted simplex glyphs
_FIRST_CODE, _LAST_CODE = 32, 126  # the glyphs: printable ASCII
_UNKNOWN_GLYPH = ord("?") - _FIRST_CODE
_TEXT_SHIFT = 8  # fraction bits of the stroke coordinates handed to the polyline kernel


class _StrokeFont:
    """One Hershey font's printable-ASCII glyphs as flat NumPy tables (Hershey units, y down,
    x relative to the middle of each glyph's advance)."""

    def __init__(self, name):
        try:
            from HersheyFonts import HersheyFonts
        except ImportError:
            raise ImportError("mnnpy.cv.putText and getTextSize need the Hershey font data of the "
                              "'hershey-fonts' package (pip install hershey-fonts)") from None
        base, _, variant = name.partition("/")
        font = HersheyFonts()
        font.load_default_font(base)
        glyphs = font.all_glyphs
        count = _LAST_CODE - _FIRST_CODE + 1
        points, stroke_sizes, glyph_strokes = [], [], _np.zeros(count, _np.int64)
        self.advance = _np.zeros(count)
        bounds = _np.zeros((count, 4))  # x min, x max, y min, y max of the ink
        for i in range(count):
            glyph = glyphs.get(chr(_FIRST_CODE + i))
            if glyph is None:
                continue
            middle = glyph.left_offset + glyph.char_width / 2.0
            self.advance[i] = glyph.char_width
            strokes = [_np.array(s, _np.float64).reshape(-1, 2) for s in glyph.strokes if len(s) >= 2]
            for s in strokes:
                s[:, 0] -= middle
                if variant == "slanted":
                    s[:, 0] += _SLANT * (_HERSHEY_BASE - s[:, 1])
            glyph_strokes[i] = len(strokes)
            if strokes:
                ink = _np.concatenate(strokes)
                bounds[i] = (ink[:, 0].min(), ink[:, 0].max(), ink[:, 1].min(), ink[:, 1].max())
            points += strokes
            stroke_sizes += [len(s) for s in strokes]
        self.points = _np.concatenate(points) if points else _np.zeros((0, 2))
        self.stroke_first = _np.concatenate([[0], _np.cumsum(stroke_sizes)]).astype(_np.int64)
        self.glyph_first = _np.concatenate([[0], _np.cumsum(glyph_strokes)]).astype(_np.int64)
        self.bounds = bounds
        # How far each glyph reaches below the baseline.
        self.descent = _np.maximum(bounds[:, 3] - _HERSHEY_BASE, 0.0)


_stroke_fonts = {}


def _stroke_font(name):
    font = _stroke_fonts.get(name)
    if font is None:
        font = _stroke_fonts[name] = _StrokeFont(name)
    return font


class _TextLayout:
    """A string set in one face at fontScale 1: each drawn glyph's index, line and pen position
    (pixels), the widest line, and all glyph stroke points tagged with their glyph."""

    def __init__(self, text, face):
        name = _FACE_FONTS[face & 15][1 if face & FONT_ITALIC else 0]
        self.font = font = _stroke_font(name)
        self.cap, self.ascent, self.line_gap = _FACE_METRICS[face & 15]
        self.unit = self.cap / (_HERSHEY_BASE - _HERSHEY_CAP)
        advance_unit = self.unit * _ADVANCE_FACTOR[(face & 15, name)]
        # As OpenCV 5 sets text: leading line breaks are skipped and one trailing break adds no line.
        text = text.lstrip("\n")
        if text.endswith("\n"):
            text = text[:-1]
        codes = _np.frombuffer(text.encode("utf-32-le", errors="replace"), dtype="<u4").astype(_np.int64)
        breaks = codes == ord("\n")
        self.lines = int(breaks.sum()) + 1 if codes.size else 0
        self.line_of = _np.cumsum(breaks)[~breaks]
        codes = codes[~breaks]
        # Characters without a glyph (control characters, non-ASCII) are drawn as '?', as OpenCV 4 drew them.
        known = (codes >= _FIRST_CODE) & (codes <= _LAST_CODE)
        glyphs = self.glyphs = _np.where(known, codes - _FIRST_CODE, _UNKNOWN_GLYPH)
        widths = font.advance[glyphs] * advance_unit
        line_totals = _np.bincount(self.line_of, weights=widths, minlength=max(self.lines, 1))
        line_starts = _np.concatenate([[0.0], _np.cumsum(line_totals)[:-1]])
        # The middle of each glyph's advance.
        self.middle = _np.cumsum(widths) - widths / 2.0 - line_starts[self.line_of]
        self.width = float(line_totals.max()) if self.lines else 0.0
        self.descent = float(font.descent[glyphs].max()) * self.unit if codes.size else 0.0
        # Every stroke of every glyph, then every point of those strokes.
        first, counts = font.glyph_first[glyphs], font.glyph_first[glyphs + 1] - font.glyph_first[glyphs]
        self.stroke_owner = _np.repeat(_np.arange(len(glyphs)), counts)
        ends = _np.cumsum(counts)
        stroke = _np.repeat(first - ends + counts, counts) + _np.arange(int(ends[-1]) if counts.size else 0)
        start, sizes = font.stroke_first[stroke], font.stroke_first[stroke + 1] - font.stroke_first[stroke]
        ends = _np.cumsum(sizes)
        point = _np.repeat(start - ends + sizes, sizes) + _np.arange(int(ends[-1]) if sizes.size else 0)
        self.stroke_sizes = sizes
        self.stroke_ends = ends.tolist()
        self.point_owner = _np.repeat(self.stroke_owner, sizes)
        self.points = font.points[point]
        self.points[:, 1] -= _HERSHEY_BASE  # y from the baseline
        self.glyph_box = font.bounds[glyphs] - [0.0, 0.0, _HERSHEY_BASE, _HERSHEY_BASE]
        # The ink's extent at fontScale 1 (Hershey units from each glyph's middle and baseline).
        self.extent = (0.0, 0.0, 0.0, 0.0)
        if glyphs.size:
            self.extent = (float((self.middle / self.unit + self.glyph_box[:, 0]).min()),
                           float((self.middle / self.unit + self.glyph_box[:, 1]).max()),
                           float(self.glyph_box[:, 2].min()), float(self.glyph_box[:, 3].max()))

    def line_step(self, scale):
        """Pixels from one baseline to the next at ``scale`` (rounded as OpenCV 5 rounds it)."""
        return _cv_round(self.ascent * scale) + _cv_round(self.line_gap * scale)


_text_layouts = {}


def _text_layout(func, text, face):
    """The layout of ``text`` in ``face`` (recent ones are kept: labels are often redrawn)."""
    # As cv2's bindings convert it: bytes as UTF-8, None as the empty string.
    if text is None:
        text = ""
    elif isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    elif not isinstance(text, str):
        raise error(func, f"Can't convert object to 'str' for 'text' (got {type(text).__name__})")
    text = str(text)
    if len(text) > 256:
        return _TextLayout(text, face)
    key = (text, face)
    layout = _text_layouts.get(key)
    if layout is None:
        if len(_text_layouts) >= 512:
            _text_layouts.clear()
        layout = _text_layouts[key] = _TextLayout(text, face)
    return layout


def _font_face_arg(func, face):
    face = _int_arg(func, "fontFace", face)
    if face & ~(15 | FONT_ITALIC) or (face & 15) not in _FACE_FONTS:
        raise error(func, f"Unknown font {face}: expected a FONT_HERSHEY_* face, optionally | FONT_ITALIC")
    return face


def _font_scale_arg(func, scale):
    if isinstance(scale, (bool, _np.bool_)) or not isinstance(scale, (int, float, _np.integer, _np.floating)):
        raise error(func, f"Argument 'fontScale' can not be treated as a double (got {type(scale).__name__})")
    scale = float(scale)
    if not _math.isfinite(scale):
        raise error(func, f"fontScale must be finite, got {scale}")
    return scale


def getTextSize(text, fontFace, fontScale, thickness):  # noqa: N802,N803 (OpenCV's names)
    """OpenCV's ``cv2.getTextSize``: ``((width, height), baseLine)`` of ``text`` as putText draws
    it: height is the face's line height above the baseline, baseLine how far the glyphs reach
    below it (plus one line step per line break), width the widest line (grown by thickness - 1)."""
    face = _font_face_arg("getTextSize", fontFace)
    scale = abs(_font_scale_arg("getTextSize", fontScale))
    thickness = _int_arg("getTextSize", "thickness", thickness)
    layout = _text_layout("getTextSize", text, face)
    if not layout.lines:
        return (0, 0), 0
    width = _cv_round(layout.width * scale) + max(thickness - 1, 0)
    height = _cv_round(layout.ascent * scale)
    base_line = (layout.lines - 1) * layout.line_step(scale) + _cv_round(layout.descent * scale)
    return (width, height), base_line


def _bool_arg(func, name, value):
    if value is None:
        return False
    if isinstance(value, (bool, _np.bool_)) or _is_int(value):
        return bool(value)
    raise error(func, f"Argument '{name}' must be a bool, got {type(value).__name__}")


def putText(img, text, org, fontFace, fontScale, color, thickness=1, lineType=LINE_8,  # noqa: N802,N803
            bottomLeftOrigin=False):
    """OpenCV's ``cv2.putText``: draws ``text`` with its first baseline starting at ``org`` (or,
    with bottomLeftOrigin, mirrored below it as for an image stored bottom-up), each '\\n'
    starting a new line; the strokes are polylines of ``thickness`` and ``lineType``.
    OpenCV 5 draws 8-bit images only, and so does this."""
    func = "putText"
    x0, y0 = _int_pair(func, "org", org)
    face = _font_face_arg(func, fontFace)
    scale = _font_scale_arg(func, fontScale)
    thickness = _int_arg(func, "thickness", thickness)
    line_type = _int_arg(func, "lineType", lineType)
    flipped = _bool_arg(func, "bottomLeftOrigin", bottomLeftOrigin)
    layout = _text_layout(func, text, face)
    if img is None:
        return None
    canvas = _Canvas(func, img)
    if canvas.dtype != _np.uint8:
        raise error(func, f"'img' must be uint8 (CV_8U), as OpenCV 5 draws text on 8-bit images only; "
                          f"got {canvas.dtype}")
    if canvas.channels not in (1, 3, 4):
        raise error(func, f"'img' must have 1, 3 or 4 channels, got {canvas.channels}")
    if not layout.lines:
        return canvas.finish()
    # OpenCV 5 draws any thickness (<= 0 as 1) and line type; the strokes here need a valid one.
    thickness = min(max(thickness, 1), _MAX_THICKNESS)
    line_type = {LINE_AA: LINE_AA, LINE_4: LINE_4, 1: LINE_4}.get(line_type, LINE_8)
    strokes, shift = _text_strokes(layout, x0, y0, scale, flipped, thickness, canvas.array.shape[:2])
    if strokes:
        _draw(func, _core.cv_draw_polylines, canvas.array, strokes, False, canvas.color(color), thickness,
              canvas.line_type(line_type), shift)
    return canvas.finish()


def _text_strokes(layout, x0, y0, scale, flipped, thickness, shape):
    """The glyph strokes of ``layout`` as polylines in fixed-point pixel coordinates (and their
    fraction bits), leaving out glyphs that fall wholly outside the image."""
    unit = layout.unit * scale
    # Each glyph's middle and baseline in pixels; y grows downwards (upwards when flipped). The
    # ink's bottom row is the one above org (below it when flipped), as in OpenCV 5.
    sign = -1.0 if flipped else 1.0
    step = float(layout.line_step(abs(scale)))
    y_unit = sign * unit
    rows, cols = shape
    margin = thickness / 2.0 + 2.0
    # The whole text's box first: most text lies wholly inside the image.
    left, right, top, bottom = layout.extent
    xs = sorted((x0 + left * unit, x0 + right * unit))
    ys = sorted((y0 - sign + top * y_unit, y0 - sign + bottom * y_unit + (layout.lines - 1) * step))
    if xs[1] < -margin or xs[0] > cols - 1 + margin or ys[1] < -margin or ys[0] > rows - 1 + margin:
        return [], 0
    points, owner, ends = layout.points, layout.point_owner, layout.stroke_ends
    middle = x0 + layout.middle * scale
    baseline = (y0 - sign) + layout.line_of * step
    if xs[0] < -margin or xs[1] > cols - 1 + margin or ys[0] < -margin or ys[1] > rows - 1 + margin:
        box = layout.glyph_box
        gx = middle[:, None] + box[:, 0:2] * unit
        gy = baseline[:, None] + box[:, 2:4] * y_unit
        visible = ((gx.max(1) >= -margin) & (gx.min(1) <= cols - 1 + margin)
                   & (gy.max(1) >= -margin) & (gy.min(1) <= rows - 1 + margin))
        keep = visible[owner]
        points, owner = points[keep], owner[keep]
        ends = _np.cumsum(layout.stroke_sizes[visible[layout.stroke_owner]]).tolist()
    if not ends:
        return [], 0
    coords = _np.empty_like(points)
    coords[:, 0] = middle[owner] + points[:, 0] * unit
    coords[:, 1] = baseline[owner] + points[:, 1] * y_unit
    # As many fraction bits as keep the coordinates within OpenCV's int range.
    reach = float(_np.abs(coords).max()) + 1.0
    if reach >= _INT_MAX:
        raise error("putText", f"fontScale {scale} puts the text's strokes outside the int32 coordinate range")
    shift = _TEXT_SHIFT
    while shift > 0 and reach * (1 << shift) >= _INT_MAX:
        shift -= 1
    fixed = _np.rint(coords * (1 << shift)).astype(_np.int64)
    return [fixed[a:b] for a, b in zip([0] + ends[:-1], ends)], shift
