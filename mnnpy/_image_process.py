"""MNN's image preprocessing: ``CVMatrix`` (a Skia-style 3x3 matrix) and ``CVImageProcess``,
which fills a Tensor from 8-bit image memory in one step: each destination pixel (x, y) takes
the source at ``matrix * (x, y, 1)`` (the matrix maps destination to source, with no half-pixel
offset), sampled in the source format; then the format is converted, and float destinations get
``(value - mean) * normal`` per channel.

Sampling runs on mnnpy.cv's warpAffine / warpPerspective (OpenCV's kernels, WARP_INVERSE_MAP),
format conversion and normalization on mnnpy.numpy ops, all in one lazy graph."""
import numpy as np

from . import _host_memory
from ._session import Halide_Type_Float, Halide_Type_Uint8, Tensor, Tensor_DimensionType_Tensorflow, _halide_arg

# MNN's CV::ImageFormat, Filter and Wrap numbers.
CV_ImageFormat_RGBA = 0
CV_ImageFormat_RGB = 1
CV_ImageFormat_BGR = 2
CV_ImageFormat_GRAY = 3
CV_ImageFormat_BGRA = 4
CV_ImageFormat_YUV_NV21 = 11
CV_Filter_NEAREST = 0
CV_Filter_BILINEAL = 1
CV_Filter_BICUBIC = 2
CV_Wrap_CLAMP_TO_EDGE = 0
CV_Wrap_ZERO = 1
CV_Wrap_REPEAT = 2

# Channel order of each packed format (NV21 is a Y plane and an interleaved V/U plane).
_CHANNELS = {CV_ImageFormat_RGBA: "RGBA", CV_ImageFormat_RGB: "RGB", CV_ImageFormat_BGR: "BGR",
             CV_ImageFormat_GRAY: "Y", CV_ImageFormat_BGRA: "BGRA"}
_FORMAT_NAMES = {CV_ImageFormat_RGBA: "RGBA", CV_ImageFormat_RGB: "RGB", CV_ImageFormat_BGR: "BGR",
                 CV_ImageFormat_GRAY: "GRAY", CV_ImageFormat_BGRA: "BGRA", CV_ImageFormat_YUV_NV21: "YUV_NV21"}


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value):
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


# ---------------------------------------------------------------- CVMatrix

class CVMatrix:
    """MNN's ``CVMatrix``: a 3x3 float32 matrix with Skia's operations, starting as the
    identity. ``pre*`` multiplies on the right (``M = M * T``), ``post*`` on the left
    (``M = T * M``), ``set*`` replaces. Angles are in degrees, positive clockwise in image
    coordinates (y down); (px, py) is the point the scale or rotation keeps fixed. For
    CVImageProcess the matrix maps destination pixels to source pixels."""

    def __init__(self):
        self._m = np.eye(3, dtype=np.float32)

    def _set(self, m):
        self._m = np.asarray(m, np.float64).astype(np.float32)

    def _combine(self, t, kind):
        """kind 0: set to t; 1: M * t; 2: t * M (computed in float64, stored as float32)."""
        m = self._m.astype(np.float64)
        self._set(t if kind == 0 else m @ t if kind == 1 else t @ m)

    @staticmethod
    def _args(method, args, counts):
        if len(args) not in counts:
            raise TypeError(f"CVMatrix.{method} takes {' or '.join(map(str, counts))} numbers, got {len(args)}")
        if not all(_is_real(a) for a in args):
            raise TypeError(f"CVMatrix.{method}: the arguments must be numbers, got {args!r}")
        return [float(np.float32(a)) for a in args]

    def _scale(self, method, args, kind):
        sx, sy, px, py = (self._args(method, args, (2, 4)) + [0.0, 0.0])[:4]
        self._combine(np.array([[sx, 0, px - sx * px], [0, sy, py - sy * py], [0, 0, 1]]), kind)

    def _rotate(self, method, args, kind):
        degrees, px, py = (self._args(method, args, (1, 3)) + [0.0, 0.0])[:3]
        radians = np.float32(degrees) * np.float32(np.pi / 180)
        s, c = float(np.sin(radians, dtype=np.float32)), float(np.cos(radians, dtype=np.float32))
        self._combine(np.array([[c, -s, s * py + (1 - c) * px], [s, c, -s * px + (1 - c) * py], [0, 0, 1]]), kind)

    def _translate(self, method, args, kind):
        dx, dy = self._args(method, args, (2,))
        self._combine(np.array([[1, 0, dx], [0, 1, dy], [0, 0, 1]]), kind)

    def setScale(self, *args):
        """setScale(sx, sy[, px, py])"""
        self._scale("setScale", args, 0)

    def preScale(self, *args):
        self._scale("preScale", args, 1)

    def postScale(self, *args):
        self._scale("postScale", args, 2)

    def setRotate(self, *args):
        """setRotate(degrees[, px, py])"""
        self._rotate("setRotate", args, 0)

    def preRotate(self, *args):
        self._rotate("preRotate", args, 1)

    def postRotate(self, *args):
        self._rotate("postRotate", args, 2)

    def setTranslate(self, *args):
        """setTranslate(dx, dy)"""
        self._translate("setTranslate", args, 0)

    def preTranslate(self, *args):
        self._translate("preTranslate", args, 1)

    def postTranslate(self, *args):
        self._translate("postTranslate", args, 2)

    def setPolyToPoly(self, src, dst):
        """Sets the matrix mapping the points ``src`` to ``dst`` (flat [x0, y0, x1, y1, ...],
        0 to 4 points): identity, a translation, a rotation with uniform scale (no reflection),
        an affine map, or a perspective map. Points that determine no such map raise ValueError
        (MNN 3.6.1 writes NaNs)."""
        s, d = _points(src, "src"), _points(dst, "dst")
        if len(s) != len(d):
            raise ValueError(f"CVMatrix.setPolyToPoly: {len(s)} source points but {len(d)} destination points")
        if len(s) > 4:
            raise ValueError(f"CVMatrix.setPolyToPoly takes at most 4 points, got {len(s)}")
        self._set(_poly_to_poly(s, d))

    def invert(self):
        """Replaces the matrix by its inverse; a singular matrix raises ValueError (MNN 3.6.1
        writes infinities)."""
        m = self._m.astype(np.float64)
        if not np.isfinite(m).all() or abs(np.linalg.det(m)) < 1e-30 * max(1.0, np.abs(m).max() ** 3):
            raise ValueError(f"CVMatrix.invert: the matrix is singular:\n{self}")
        self._set(np.linalg.inv(m))

    def write(self, value):
        """Sets the first min(len(value), 9) entries, in row order (scaleX, skewX, transX,
        skewY, scaleY, transY, persp0, persp1, persp2)."""
        if isinstance(value, np.ndarray):
            value = value.ravel().tolist()
        if not isinstance(value, (list, tuple)) or not all(_is_real(v) for v in value):
            raise TypeError(f"CVMatrix.write takes a list of numbers, got {value!r}")
        flat = self._m.ravel().copy()
        n = min(len(value), 9)
        flat[:n] = np.asarray(value[:n], np.float32)
        self._m = flat.reshape(3, 3)

    def read(self):
        """The nine entries as a list of floats, in row order (see write)."""
        return self._m.ravel().tolist()

    def __repr__(self):
        rows = ["\t".join(f"{v:f}" for v in row) for row in self._m.tolist()]
        return "[[" + "]\n [".join(rows) + "]]"

    __str__ = __repr__


def _points(values, name):
    if isinstance(values, np.ndarray):
        values = values.ravel().tolist()
    if not isinstance(values, (list, tuple)) or not all(_is_real(v) for v in values) or len(values) % 2:
        raise TypeError(f"CVMatrix.setPolyToPoly: '{name}' must be a flat list of x, y coordinates, got {values!r}")
    return np.asarray(values, np.float64).reshape(-1, 2)


def _poly_to_poly(s, d):
    n = len(s)
    if n == 0:
        return np.eye(3)
    if n == 1:
        return np.array([[1, 0, d[0, 0] - s[0, 0]], [0, 1, d[0, 1] - s[0, 1]], [0, 0, 1]])
    if n == 2:
        # The direct similarity z -> a z + b (complex numbers) mapping both points.
        zs, zd = s[:, 0] + 1j * s[:, 1], d[:, 0] + 1j * d[:, 1]
        if zs[1] == zs[0]:
            raise ValueError("CVMatrix.setPolyToPoly: the two source points coincide")
        a = (zd[1] - zd[0]) / (zs[1] - zs[0])
        b = zd[0] - a * zs[0]
        return np.array([[a.real, -a.imag, b.real], [a.imag, a.real, b.imag], [0, 0, 1]])
    if n == 3:
        src = np.hstack([s, np.ones((3, 1))])
        if abs(np.linalg.det(src)) < 1e-12 * max(1.0, np.abs(src).max() ** 2):
            raise ValueError("CVMatrix.setPolyToPoly: the three source points are on one line")
        return np.vstack([np.linalg.solve(src, d).T, [0, 0, 1]])
    # Four points: the homography, with its last entry 1.
    rows, rhs = [], []
    for (x, y), (u, v) in zip(s, d):
        rows += [[x, y, 1, 0, 0, 0, -u * x, -u * y], [0, 0, 0, x, y, 1, -v * x, -v * y]]
        rhs += [u, v]
    a = np.asarray(rows)
    if np.linalg.matrix_rank(a) < 8:
        raise ValueError("CVMatrix.setPolyToPoly: three of the four source or destination points are on one line")
    return np.append(np.linalg.solve(a, np.asarray(rhs)), 1.0).reshape(3, 3)


# ---------------------------------------------------------------- CVImageProcess

class CVImageProcess:
    """MNN's ``CVImageProcess(config)``; config keys (MNN's defaults): ``filterType``
    (CV_Filter_NEAREST), ``sourceFormat`` and ``destFormat`` (CV_ImageFormat_RGBA), ``wrap``
    (CV_Wrap_ZERO), ``mean`` (0, 0, 0, 0) and ``normal`` (1, 1, 1, 1), one value per channel.

    Wraps: CLAMP_TO_EDGE takes the nearest edge pixel, ZERO fills destination pixels whose
    source point lies outside the image with the padding value (``setPadding``, default 0),
    REPEAT tiles the image. BICUBIC samples bicubically (MNN 3.6.1 samples the nearest pixel
    for BICUBIC and clamps for REPEAT)."""

    def __init__(self, config=None, dest=None):
        if config is None:
            config = {}
        if not isinstance(config, dict):
            raise TypeError(f"CVImageProcess: the config must be a dict, got {type(config).__name__}")
        self._filter = _choice(config, "filterType", CV_Filter_NEAREST, (0, 1, 2), "CV_Filter_*")
        self._source = _choice(config, "sourceFormat", CV_ImageFormat_RGBA, tuple(_FORMAT_NAMES), "CV_ImageFormat_*")
        self._dest = _choice(config, "destFormat", CV_ImageFormat_RGBA, tuple(_CHANNELS), "CV_ImageFormat_* "
                             "(NV21 is a source format only)")
        self._wrap = _choice(config, "wrap", CV_Wrap_ZERO, (0, 1, 2), "CV_Wrap_*")
        self._mean = _per_channel(config, "mean", 0.0)
        self._normal = _per_channel(config, "normal", 1.0)
        self._matrix = np.eye(3)
        self._padding = 0

    def setMatrix(self, matrix):
        """Uses (a copy of) ``matrix``, mapping destination pixels to source pixels."""
        if not isinstance(matrix, CVMatrix):
            raise TypeError(f"CVImageProcess.setMatrix: expected a CVMatrix, got {type(matrix).__name__}")
        m = matrix._m.astype(np.float64)
        if not np.isfinite(m).all():
            raise ValueError(f"CVImageProcess.setMatrix: the matrix has non-finite entries:\n{matrix}")
        self._matrix = m

    def setPadding(self, value):
        """The value (0..255) that the ZERO wrap writes outside the source image."""
        if not _is_int(value) or not 0 <= value <= 255:
            raise ValueError(f"CVImageProcess.setPadding: expected an int in 0..255, got {value!r}")
        self._padding = int(value)

    def createImageTensor(self, dtype, width, height, channel, data=None):
        """A zero Tensor of shape (1, height, width, channel), NHWC (``data`` is unused, as in
        MNN)."""
        _halide_arg(dtype)
        for name, v in (("width", width), ("height", height), ("channel", channel)):
            if not _is_int(v) or v <= 0:
                raise ValueError(f"CVImageProcess.createImageTensor: {name} must be a positive int, got {v!r}")
        return Tensor((1, int(height), int(width), int(channel)), dtype, Tensor_DimensionType_Tensorflow)

    def convert(self, src, iw, ih, stride, dest):
        """Fills the Tensor ``dest`` (uint8 or float32; (N, H, W, C) for
        Tensor_DimensionType_Tensorflow, (N, C, H, W) otherwise, or without N; its first image
        is written) from the ``iw`` x ``ih`` source image ``src``: a uint8 NumPy array, mnnpy
        Var, tuple or list of bytes, or the address of the bytes (an int or a PyCapsule, whose
        memory the caller keeps alive during the call). ``stride`` is the bytes per source row
        (0: ``iw`` times the format's channels; for NV21 the Y and VU rows). A float
        destination of 4 channels takes a 1- or 3-channel format with the other channels 0.
        Returns 0 (NO_ERROR)."""
        from ._core import Var
        for name, v in (("iw", iw), ("ih", ih)):
            if not _is_int(v) or v <= 0:
                raise ValueError(f"CVImageProcess.convert: {name} must be a positive int, got {v!r}")
        if not _is_int(stride) or stride < 0:
            raise ValueError(f"CVImageProcess.convert: stride must be a non-negative int, got {stride!r}")
        if not isinstance(dest, Tensor):
            raise TypeError(f"CVImageProcess.convert: dest must be an MNN.Tensor, got {type(dest).__name__}")
        iw, ih, stride = int(iw), int(ih), int(stride)
        out = dest._need_data("convert")
        if dest.getDataType() not in (Halide_Type_Float, Halide_Type_Uint8):
            raise TypeError(f"CVImageProcess.convert: dest must hold float32 or uint8 values, got {out.dtype}")
        if out.ndim not in (3, 4):
            raise ValueError(f"CVImageProcess.convert: dest must be an image tensor of 3 or 4 dimensions, got shape "
                             f"{out.shape}")
        channel_last = dest.getDimensionType() == Tensor_DimensionType_Tensorflow
        image_shape = out.shape[-3:]
        oh, ow, oc = image_shape if channel_last else (image_shape[1], image_shape[2], image_shape[0])
        fc = len(_CHANNELS[self._dest])
        if oc != fc and not (oc == 4 and fc in (1, 3) and out.dtype == np.float32):
            raise ValueError(f"CVImageProcess.convert: dest has {oc} channels, destFormat "
                             f"{_FORMAT_NAMES[self._dest]} has {fc}")
        if 0 in (oh, ow):
            return 0
        raw = _source_bytes(src, self._source, iw, ih, stride, Var)
        image = _unpack(raw, self._source, iw, ih, stride)
        if self._source == CV_ImageFormat_YUV_NV21:
            values = self._sample(_from_nv21(image, iw, ih, self._dest), iw, ih, ow, oh)
        else:
            values = _convert_format(self._sample(image, iw, ih, ow, oh), _CHANNELS[self._source],
                                     _CHANNELS[self._dest])
        result = self._finish(values, oc, out.dtype).read()
        image_view = Tensor._wrap(out[0] if out.ndim == 4 else out, dest.getDimensionType(), dest._readonly)
        image_view._store(result if channel_last else np.moveaxis(result, -1, 0), "convert")
        return 0

    def _sample(self, image, iw, ih, ow, oh):
        """The source image (H, W, C uint8 Var) sampled at the matrix's points (oh, ow, C)."""
        from . import cv
        from . import numpy as mp
        m = self._matrix
        if np.array_equal(m, np.eye(3)) and ow <= iw and oh <= ih:
            return image[:oh, :ow]  # MNN's copy: the top-left corner
        interpolation = {CV_Filter_NEAREST: cv.INTER_NEAREST, CV_Filter_BILINEAL: cv.INTER_LINEAR,
                         CV_Filter_BICUBIC: cv.INTER_CUBIC}[self._filter]
        border = cv.BORDER_WRAP if self._wrap == CV_Wrap_REPEAT else cv.BORDER_REPLICATE
        channels = int(image.shape[2])
        plane = image[:, :, 0] if channels == 1 else image
        flags = interpolation | cv.WARP_INVERSE_MAP
        if np.array_equal(m[2], [0, 0, 1]):
            sampled = cv.warpAffine(plane, m[:2], (ow, oh), flags=flags, borderMode=border)
        else:
            sampled = cv.warpPerspective(plane, m, (ow, oh), flags=flags, borderMode=border)
        sampled = mp.reshape(sampled, (oh, ow, channels))
        if self._wrap == CV_Wrap_ZERO:
            inside = _inside_source(m, iw, ih, ow, oh)
            if not inside.all():
                sampled = mp.where(inside[:, :, None], sampled, np.uint8(self._padding))
        return sampled

    def _finish(self, values, channels, dtype):
        """uint8 values as ``dtype``: floats get (value - mean) * normal per channel, and zero
        channels up to ``channels``."""
        from . import numpy as mp
        if dtype == np.uint8:
            return values
        fc = int(values.shape[2])
        scaled = (values.astype(np.float32) - self._mean[:fc]) * self._normal[:fc]
        if channels > fc:
            scaled = mp.concatenate([scaled, mp.zeros(tuple(values.shape[:2]) + (channels - fc,), np.float32)], axis=2)
        return scaled


def _choice(config, key, default, allowed, names):
    value = config.get(key, default)
    if not _is_int(value) or int(value) not in allowed:
        raise ValueError(f"CVImageProcess: '{key}' must be one of MNN.{names} ({sorted(allowed)}), got {value!r}")
    return int(value)


def _per_channel(config, key, fill):
    values = config.get(key, (fill,) * 4)
    if isinstance(values, np.ndarray):
        values = values.ravel().tolist()
    if not isinstance(values, (tuple, list)) or not 1 <= len(values) <= 4 or not all(_is_real(v) for v in values):
        raise ValueError(f"CVImageProcess: '{key}' must be a tuple of 1 to 4 numbers (one per channel), got {values!r}")
    return np.asarray(list(values) + [fill] * (4 - len(values)), np.float32)


def _source_size(fmt, iw, ih, stride):
    """(row bytes, rows, bytes needed) of the source memory."""
    if fmt == CV_ImageFormat_YUV_NV21:
        row = stride or iw
        uv_row = stride or (iw + 1) // 2 * 2
        uv_rows = (ih + 1) // 2
        return row, ih, row * ih + uv_row * (uv_rows - 1) + (iw + 1) // 2 * 2
    bpp = len(_CHANNELS[fmt])
    row = stride or iw * bpp
    if row < iw * bpp:
        raise ValueError(f"CVImageProcess.convert: stride {stride} is less than a row of {iw} {_FORMAT_NAMES[fmt]} "
                         f"pixels ({iw * bpp} bytes)")
    return row, ih, row * (ih - 1) + iw * bpp


def _source_bytes(src, fmt, iw, ih, stride, var_type):
    """The source memory as a flat uint8 NumPy array (at least the bytes the image needs)."""
    needed = _source_size(fmt, iw, ih, stride)[2]
    if _host_memory.is_address(src):
        return _host_memory.read_bytes(src, needed, "CVImageProcess.convert: src")
    if isinstance(src, var_type):
        src = src.read()
    if isinstance(src, (tuple, list)):
        src = np.asarray(src)
        if src.dtype.kind not in "iu" or (src.size and (src.min() < 0 or src.max() > 255)):
            raise ValueError("CVImageProcess.convert: a tuple source must hold bytes (ints 0..255)")
        src = src.astype(np.uint8)
    if not isinstance(src, np.ndarray):
        raise TypeError("CVImageProcess.convert: src must be a uint8 NumPy array, Var, tuple of bytes, int address "
                        f"or PyCapsule, got {type(src).__name__}")
    if src.dtype != np.uint8:
        raise TypeError(f"CVImageProcess.convert: the source must be uint8, got {src.dtype}")
    flat = np.ascontiguousarray(src).ravel()
    if flat.size < needed:
        raise ValueError(f"CVImageProcess.convert: a {iw}x{ih} {_FORMAT_NAMES[fmt]} image with stride {stride} needs "
                         f"{needed} bytes, the source has {flat.size}")
    return flat


def _unpack(raw, fmt, iw, ih, stride):
    """The image as a uint8 Var: (ih, iw, channels), or for NV21 the Y plane (ih, iw) and the
    V/U plane ((ih + 1) // 2, (iw + 1) // 2, 2) as a pair."""
    from . import numpy as mp
    row, rows, _ = _source_size(fmt, iw, ih, stride)
    if fmt == CV_ImageFormat_YUV_NV21:
        uv_row = stride or (iw + 1) // 2 * 2
        y = np.lib.stride_tricks.as_strided(raw, (ih, iw), (row, 1))
        uv_start = raw[row * ih:]
        uv = np.lib.stride_tricks.as_strided(uv_start, ((ih + 1) // 2, (iw + 1) // 2 * 2), (uv_row, 1))
        return mp.array(y), mp.reshape(mp.array(uv), ((ih + 1) // 2, (iw + 1) // 2, 2))
    bpp = len(_CHANNELS[fmt])
    rows_view = np.lib.stride_tricks.as_strided(raw, (ih, iw * bpp), (row, 1))
    return mp.reshape(mp.array(rows_view), (ih, iw, bpp))


def _convert_format(image, source, dest):
    """uint8 (H, W, C) in channel order ``source`` as ``dest`` (strings such as "BGR"; "Y" is
    gray): channels reordered, gray as MNN computes it ((19 R + 38 G + 7 B) >> 6), gray copied to
    the colors, alpha 255 where the source has none."""
    from . import numpy as mp
    if source == dest:
        return image
    if dest == "Y":
        r, g, b = (image[:, :, source.index(c)].astype(np.int32) for c in "RGB")
        return mp.expand_dims(((r * 19 + g * 38 + b * 7) // 64).astype(np.uint8), 2)
    picks = [source.index(c) if c in source else -1 if c == "A" else 0 for c in dest]  # gray: "Y" at 0
    if -1 not in picks:
        return mp.take(image, picks, axis=2)
    colors = mp.take(image, [p for p in picks if p >= 0], axis=2)  # alpha is last in RGBA and BGRA
    alpha = mp.full(tuple(image.shape[:2]) + (1,), 255, np.uint8)
    return mp.concatenate([colors, alpha], axis=2)


def _from_nv21(planes, iw, ih, dest):
    """NV21 (Y plane, V/U plane) as the packed format ``dest`` with MNN's integer BT.601
    conversion: R = Y + 73 V' / 64, G = Y - (25 U' + 37 V') / 64, B = Y + 130 U' / 64 (V' and U'
    offset by 128, results floored and clamped); each 2x2 block shares its V/U pair."""
    from . import numpy as mp
    y, vu = planes
    if dest == CV_ImageFormat_GRAY:
        return mp.expand_dims(y, 2)
    vu = mp.repeat(mp.repeat(vu, 2, axis=0), 2, axis=1)[:ih, :iw].astype(np.int32) - 128
    v, u = vu[:, :, 0], vu[:, :, 1]
    y64 = y.astype(np.int32) * 64
    rgb = {"R": (y64 + v * 73) // 64, "G": (y64 - u * 25 - v * 37) // 64, "B": (y64 + u * 130) // 64}
    channels = [mp.clip(rgb[c], 0, 255).astype(np.uint8) if c in rgb else mp.full((ih, iw), 255, np.uint8)
                for c in _CHANNELS[dest]]
    return mp.stack(channels, axis=2)


def _inside_source(m, iw, ih, ow, oh):
    """(oh, ow) bools: whether each destination pixel's source point lies in the image (the
    ZERO wrap pads the others). Mapped in float64 from the float32 matrix."""
    ys, xs = np.mgrid[0:oh, 0:ow].astype(np.float64)
    w = m[2, 0] * xs + m[2, 1] * ys + m[2, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        sx = (m[0, 0] * xs + m[0, 1] * ys + m[0, 2]) / w
        sy = (m[1, 0] * xs + m[1, 1] * ys + m[1, 2]) / w
    return (sx >= 0) & (sx <= iw - 1) & (sy >= 0) & (sy <= ih - 1)
