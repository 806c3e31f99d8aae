"""OpenCV's image file functions: imread, imdecode, imwrite, imencode, haveImageReader,
haveImageWriter, for JPEG, PNG, BMP, WebP and TIFF files.

imread and imdecode read the header at once (the image's size must be known to build the
graph) and return a Var whose decoding is the CvImageDecode op, run when the Var is computed.
Images with 16-bit samples (PNG, TIFF read with IMREAD_UNCHANGED or IMREAD_ANYDEPTH) come back
as uint16 NumPy arrays, decoded at the call: the core has no uint16 element type.
imwrite and imencode compute their image and encode it at the call, as OpenCV does.
As OpenCV, reading applies the EXIF orientation of JPEG, PNG and WebP files (unless the flags
are IMREAD_UNCHANGED or hold IMREAD_IGNORE_ORIENTATION) and the Orientation tag of TIFF files
(always; for the four orientations that swap width and height OpenCV 5.0 fails to read the file,
mnnpy returns the turned image), and IMREAD_REDUCED_* decodes JPEG at a reduced DCT scale and
resizes other formats with INTER_LINEAR_EXACT.
"""
import os as _os
import sys as _sys

import numpy as _np

from .. import _core
from .._core import Var
from ._common import error, image_op, unbatched

__all__ = ["imread", "imdecode", "imwrite", "imencode", "haveImageReader", "haveImageWriter",
           "IMREAD_UNCHANGED", "IMREAD_GRAYSCALE", "IMREAD_COLOR", "IMREAD_COLOR_BGR",
           "IMREAD_ANYDEPTH", "IMREAD_ANYCOLOR", "IMREAD_LOAD_GDAL", "IMREAD_REDUCED_GRAYSCALE_2",
           "IMREAD_REDUCED_COLOR_2", "IMREAD_REDUCED_GRAYSCALE_4", "IMREAD_REDUCED_COLOR_4", "IMREAD_REDUCED_GRAYSCALE_8",
           "IMREAD_REDUCED_COLOR_8", "IMREAD_IGNORE_ORIENTATION", "IMREAD_COLOR_RGB", "IMWRITE_BMP_COMPRESSION_RGB",
           "IMWRITE_EXR_COMPRESSION_NO", "IMWRITE_HDR_COMPRESSION_NONE", "IMWRITE_PAM_FORMAT_NULL", "IMWRITE_PNG_STRATEGY_DEFAULT",
           "IMWRITE_WEBP_LOSSLESS_OFF", "IMWRITE_EXR_COMPRESSION_RLE", "IMWRITE_EXR_TYPE_HALF", "IMWRITE_GIF_FAST_NO_DITHER",
           "IMWRITE_HDR_COMPRESSION_RLE", "IMWRITE_JPEG_QUALITY", "IMWRITE_PAM_FORMAT_BLACKANDWHITE", "IMWRITE_PNG_STRATEGY_FILTERED",
           "IMWRITE_TIFF_COMPRESSION_NONE", "IMWRITE_TIFF_PREDICTOR_NONE", "IMWRITE_TIFF_RESOLUTION_UNIT_NONE", "IMWRITE_WEBP_LOSSLESS_ON",
           "IMWRITE_EXR_COMPRESSION_ZIPS", "IMWRITE_EXR_TYPE_FLOAT", "IMWRITE_GIF_FAST_FLOYD_DITHER", "IMWRITE_JPEG_PROGRESSIVE",
           "IMWRITE_PAM_FORMAT_GRAYSCALE", "IMWRITE_PNG_STRATEGY_HUFFMAN_ONLY", "IMWRITE_TIFF_COMPRESSION_CCITTRLE", "IMWRITE_TIFF_PREDICTOR_HORIZONTAL",
           "IMWRITE_TIFF_RESOLUTION_UNIT_INCH", "IMWRITE_WEBP_LOSSLESS_PRESERVE_COLOR", "IMWRITE_BMP_COMPRESSION_BITFIELDS", "IMWRITE_EXR_COMPRESSION_ZIP",
           "IMWRITE_GIF_COLORTABLE_SIZE_8", "IMWRITE_JPEG_OPTIMIZE", "IMWRITE_PAM_FORMAT_GRAYSCALE_ALPHA", "IMWRITE_PNG_STRATEGY_RLE",
           "IMWRITE_TIFF_COMPRESSION_CCITTFAX3", "IMWRITE_TIFF_COMPRESSION_CCITT_T4", "IMWRITE_TIFF_PREDICTOR_FLOATINGPOINT", "IMWRITE_TIFF_RESOLUTION_UNIT_CENTIMETER",
           "IMWRITE_EXR_COMPRESSION_PIZ", "IMWRITE_GIF_COLORTABLE_SIZE_16", "IMWRITE_JPEG_RST_INTERVAL", "IMWRITE_PAM_FORMAT_RGB",
           "IMWRITE_PNG_STRATEGY_FIXED", "IMWRITE_TIFF_COMPRESSION_CCITTFAX4", "IMWRITE_TIFF_COMPRESSION_CCITT_T6", "IMWRITE_EXR_COMPRESSION_PXR24",
           "IMWRITE_GIF_COLORTABLE_SIZE_32", "IMWRITE_JPEG_LUMA_QUALITY", "IMWRITE_PAM_FORMAT_RGB_ALPHA", "IMWRITE_TIFF_COMPRESSION_LZW",
           "IMWRITE_EXR_COMPRESSION_B44", "IMWRITE_GIF_COLORTABLE_SIZE_64", "IMWRITE_JPEG_CHROMA_QUALITY", "IMWRITE_TIFF_COMPRESSION_OJPEG",
           "IMWRITE_EXR_COMPRESSION_B44A", "IMWRITE_GIF_COLORTABLE_SIZE_128", "IMWRITE_JPEG_SAMPLING_FACTOR", "IMWRITE_TIFF_COMPRESSION_JPEG",
           "IMWRITE_EXR_COMPRESSION_DWAA", "IMWRITE_GIF_COLORTABLE_SIZE_256", "IMWRITE_PNG_FILTER_NONE", "IMWRITE_TIFF_COMPRESSION_ADOBE_DEFLATE",
           "IMWRITE_EXR_COMPRESSION_DWAB", "IMWRITE_TIFF_COMPRESSION_T85", "IMWRITE_TIFF_COMPRESSION_T43", "IMWRITE_PNG_COMPRESSION",
           "IMWRITE_PNG_FILTER_SUB", "IMWRITE_PNG_STRATEGY", "IMWRITE_PNG_BILEVEL", "IMWRITE_PNG_FILTER",
           "IMWRITE_PNG_ZLIBBUFFER_SIZE", "IMWRITE_PNG_FILTER_UP", "IMWRITE_PXM_BINARY", "IMWRITE_EXR_TYPE",
           "IMWRITE_EXR_COMPRESSION", "IMWRITE_EXR_DWA_COMPRESSION_LEVEL", "IMWRITE_PNG_FAST_FILTERS", "IMWRITE_PNG_FILTER_AVG",
           "IMWRITE_WEBP_QUALITY", "IMWRITE_WEBP_LOSSLESS_MODE", "IMWRITE_HDR_COMPRESSION", "IMWRITE_PAM_TUPLETYPE",
           "IMWRITE_PNG_FILTER_PAETH", "IMWRITE_PNG_ALL_FILTERS", "IMWRITE_TIFF_RESUNIT", "IMWRITE_TIFF_XDPI",
           "IMWRITE_TIFF_YDPI", "IMWRITE_TIFF_COMPRESSION", "IMWRITE_JPEG2000_COMPRESSION_X1000", "IMWRITE_TIFF_ROWSPERSTRIP",
           "IMWRITE_TIFF_PREDICTOR", "IMWRITE_AVIF_QUALITY", "IMWRITE_AVIF_DEPTH", "IMWRITE_AVIF_SPEED",
           "IMWRITE_JPEGXL_QUALITY", "IMWRITE_JPEGXL_EFFORT", "IMWRITE_JPEGXL_DISTANCE", "IMWRITE_JPEGXL_DECODING_SPEED",
           "IMWRITE_BMP_COMPRESSION", "IMWRITE_GIF_LOOP", "IMWRITE_GIF_SPEED", "IMWRITE_GIF_QUALITY",
           "IMWRITE_GIF_DITHER", "IMWRITE_GIF_TRANSPARENCY", "IMWRITE_GIF_COLORTABLE", "IMWRITE_TIFF_COMPRESSION_NEXT",
           "IMWRITE_TIFF_COMPRESSION_CCITTRLEW", "IMWRITE_TIFF_COMPRESSION_PACKBITS", "IMWRITE_TIFF_COMPRESSION_THUNDERSCAN", "IMWRITE_TIFF_COMPRESSION_IT8CTPAD",
           "IMWRITE_TIFF_COMPRESSION_IT8LW", "IMWRITE_TIFF_COMPRESSION_IT8MP", "IMWRITE_TIFF_COMPRESSION_IT8BL", "IMWRITE_TIFF_COMPRESSION_PIXARFILM",
           "IMWRITE_TIFF_COMPRESSION_PIXARLOG", "IMWRITE_TIFF_COMPRESSION_DEFLATE", "IMWRITE_TIFF_COMPRESSION_DCS", "IMWRITE_TIFF_COMPRESSION_JBIG",
           "IMWRITE_TIFF_COMPRESSION_SGILOG", "IMWRITE_TIFF_COMPRESSION_SGILOG24", "IMWRITE_TIFF_COMPRESSION_JP2000", "IMWRITE_TIFF_COMPRESSION_LERC",
           "IMWRITE_TIFF_COMPRESSION_LZMA", "IMWRITE_TIFF_COMPRESSION_ZSTD", "IMWRITE_TIFF_COMPRESSION_WEBP", "IMWRITE_TIFF_COMPRESSION_JXL",
           "IMWRITE_JPEG_SAMPLING_FACTOR_444", "IMWRITE_JPEG_SAMPLING_FACTOR_440", "IMWRITE_JPEG_SAMPLING_FACTOR_422", "IMWRITE_JPEG_SAMPLING_FACTOR_420",
           "IMWRITE_JPEG_SAMPLING_FACTOR_411"]

IMREAD_UNCHANGED = -1
IMREAD_GRAYSCALE = 0
IMREAD_COLOR = 1
IMREAD_COLOR_BGR = 1
IMREAD_ANYDEPTH = 2
IMREAD_ANYCOLOR = 4
IMREAD_LOAD_GDAL = 8
IMREAD_REDUCED_GRAYSCALE_2 = 16
IMREAD_REDUCED_COLOR_2 = 17
IMREAD_REDUCED_GRAYSCALE_4 = 32
IMREAD_REDUCED_COLOR_4 = 33
IMREAD_REDUCED_GRAYSCALE_8 = 64
IMREAD_REDUCED_COLOR_8 = 65
IMREAD_IGNORE_ORIENTATION = 128
IMREAD_COLOR_RGB = 256
IMWRITE_BMP_COMPRESSION_RGB = 0
IMWRITE_EXR_COMPRESSION_NO = 0
IMWRITE_HDR_COMPRESSION_NONE = 0
IMWRITE_PAM_FORMAT_NULL = 0
IMWRITE_PNG_STRATEGY_DEFAULT = 0
IMWRITE_WEBP_LOSSLESS_OFF = 0
IMWRITE_EXR_COMPRESSION_RLE = 1
IMWRITE_EXR_TYPE_HALF = 1
IMWRITE_GIF_FAST_NO_DITHER = 1
IMWRITE_HDR_COMPRESSION_RLE = 1
IMWRITE_JPEG_QUALITY = 1
IMWRITE_PAM_FORMAT_BLACKANDWHITE = 1
IMWRITE_PNG_STRATEGY_FILTERED = 1
IMWRITE_TIFF_COMPRESSION_NONE = 1
IMWRITE_TIFF_PREDICTOR_NONE = 1
IMWRITE_TIFF_RESOLUTION_UNIT_NONE = 1
IMWRITE_WEBP_LOSSLESS_ON = 1
IMWRITE_EXR_COMPRESSION_ZIPS = 2
IMWRITE_EXR_TYPE_FLOAT = 2
IMWRITE_GIF_FAST_FLOYD_DITHER = 2
IMWRITE_JPEG_PROGRESSIVE = 2
IMWRITE_PAM_FORMAT_GRAYSCALE = 2
IMWRITE_PNG_STRATEGY_HUFFMAN_ONLY = 2
IMWRITE_TIFF_COMPRESSION_CCITTRLE = 2
IMWRITE_TIFF_PREDICTOR_HORIZONTAL = 2
IMWRITE_TIFF_RESOLUTION_UNIT_INCH = 2
IMWRITE_WEBP_LOSSLESS_PRESERVE_COLOR = 2
IMWRITE_BMP_COMPRESSION_BITFIELDS = 3
IMWRITE_EXR_COMPRESSION_ZIP = 3
IMWRITE_GIF_COLORTABLE_SIZE_8 = 3
IMWRITE_JPEG_OPTIMIZE = 3
IMWRITE_PAM_FORMAT_GRAYSCALE_ALPHA = 3
IMWRITE_PNG_STRATEGY_RLE = 3
IMWRITE_TIFF_COMPRESSION_CCITTFAX3 = 3
IMWRITE_TIFF_COMPRESSION_CCITT_T4 = 3
IMWRITE_TIFF_PREDICTOR_FLOATINGPOINT = 3
IMWRITE_TIFF_RESOLUTION_UNIT_CENTIMETER = 3
IMWRITE_EXR_COMPRESSION_PIZ = 4
IMWRITE_GIF_COLORTABLE_SIZE_16 = 4
IMWRITE_JPEG_RST_INTERVAL = 4
IMWRITE_PAM_FORMAT_RGB = 4
IMWRITE_PNG_STRATEGY_FIXED = 4
IMWRITE_TIFF_COMPRESSION_CCITTFAX4 = 4
IMWRITE_TIFF_COMPRESSION_CCITT_T6 = 4
IMWRITE_EXR_COMPRESSION_PXR24 = 5
IMWRITE_GIF_COLORTABLE_SIZE_32 = 5
IMWRITE_JPEG_LUMA_QUALITY = 5
IMWRITE_PAM_FORMAT_RGB_ALPHA = 5
IMWRITE_TIFF_COMPRESSION_LZW = 5
IMWRITE_EXR_COMPRESSION_B44 = 6
IMWRITE_GIF_COLORTABLE_SIZE_64 = 6
IMWRITE_JPEG_CHROMA_QUALITY = 6
IMWRITE_TIFF_COMPRESSION_OJPEG = 6
IMWRITE_EXR_COMPRESSION_B44A = 7
IMWRITE_GIF_COLORTABLE_SIZE_128 = 7
IMWRITE_JPEG_SAMPLING_FACTOR = 7
IMWRITE_TIFF_COMPRESSION_JPEG = 7
IMWRITE_EXR_COMPRESSION_DWAA = 8
IMWRITE_GIF_COLORTABLE_SIZE_256 = 8
IMWRITE_PNG_FILTER_NONE = 8
IMWRITE_TIFF_COMPRESSION_ADOBE_DEFLATE = 8
IMWRITE_EXR_COMPRESSION_DWAB = 9
IMWRITE_TIFF_COMPRESSION_T85 = 9
IMWRITE_TIFF_COMPRESSION_T43 = 10
IMWRITE_PNG_COMPRESSION = 16
IMWRITE_PNG_FILTER_SUB = 16
IMWRITE_PNG_STRATEGY = 17
IMWRITE_PNG_BILEVEL = 18
IMWRITE_PNG_FILTER = 19
IMWRITE_PNG_ZLIBBUFFER_SIZE = 20
IMWRITE_PNG_FILTER_UP = 32
IMWRITE_PXM_BINARY = 32
IMWRITE_EXR_TYPE = 48
IMWRITE_EXR_COMPRESSION = 49
IMWRITE_EXR_DWA_COMPRESSION_LEVEL = 50
IMWRITE_PNG_FAST_FILTERS = 56
IMWRITE_PNG_FILTER_AVG = 64
IMWRITE_WEBP_QUALITY = 64
IMWRITE_WEBP_LOSSLESS_MODE = 65
IMWRITE_HDR_COMPRESSION = 80
IMWRITE_PAM_TUPLETYPE = 128
IMWRITE_PNG_FILTER_PAETH = 128
IMWRITE_PNG_ALL_FILTERS = 248
IMWRITE_TIFF_RESUNIT = 256
IMWRITE_TIFF_XDPI = 257
IMWRITE_TIFF_YDPI = 258
IMWRITE_TIFF_COMPRESSION = 259
IMWRITE_JPEG2000_COMPRESSION_X1000 = 272
IMWRITE_TIFF_ROWSPERSTRIP = 278
IMWRITE_TIFF_PREDICTOR = 317
IMWRITE_AVIF_QUALITY = 512
IMWRITE_AVIF_DEPTH = 513
IMWRITE_AVIF_SPEED = 514
IMWRITE_JPEGXL_QUALITY = 640
IMWRITE_JPEGXL_EFFORT = 641
IMWRITE_JPEGXL_DISTANCE = 642
IMWRITE_JPEGXL_DECODING_SPEED = 643
IMWRITE_BMP_COMPRESSION = 768
IMWRITE_GIF_LOOP = 1024
IMWRITE_GIF_SPEED = 1025
IMWRITE_GIF_QUALITY = 1026
IMWRITE_GIF_DITHER = 1027
IMWRITE_GIF_TRANSPARENCY = 1028
IMWRITE_GIF_COLORTABLE = 1029
IMWRITE_TIFF_COMPRESSION_NEXT = 32766
IMWRITE_TIFF_COMPRESSION_CCITTRLEW = 32771
IMWRITE_TIFF_COMPRESSION_PACKBITS = 32773
IMWRITE_TIFF_COMPRESSION_THUNDERSCAN = 32809
IMWRITE_TIFF_COMPRESSION_IT8CTPAD = 32895
IMWRITE_TIFF_COMPRESSION_IT8LW = 32896
IMWRITE_TIFF_COMPRESSION_IT8MP = 32897
IMWRITE_TIFF_COMPRESSION_IT8BL = 32898
IMWRITE_TIFF_COMPRESSION_PIXARFILM = 32908
IMWRITE_TIFF_COMPRESSION_PIXARLOG = 32909
IMWRITE_TIFF_COMPRESSION_DEFLATE = 32946
IMWRITE_TIFF_COMPRESSION_DCS = 32947
IMWRITE_TIFF_COMPRESSION_JBIG = 34661
IMWRITE_TIFF_COMPRESSION_SGILOG = 34676
IMWRITE_TIFF_COMPRESSION_SGILOG24 = 34677
IMWRITE_TIFF_COMPRESSION_JP2000 = 34712
IMWRITE_TIFF_COMPRESSION_LERC = 34887
IMWRITE_TIFF_COMPRESSION_LZMA = 34925
IMWRITE_TIFF_COMPRESSION_ZSTD = 50000
IMWRITE_TIFF_COMPRESSION_WEBP = 50001
IMWRITE_TIFF_COMPRESSION_JXL = 50002
IMWRITE_JPEG_SAMPLING_FACTOR_444 = 1118481
IMWRITE_JPEG_SAMPLING_FACTOR_440 = 1184017
IMWRITE_JPEG_SAMPLING_FACTOR_422 = 2167057
IMWRITE_JPEG_SAMPLING_FACTOR_420 = 2232593
IMWRITE_JPEG_SAMPLING_FACTOR_411 = 4264209

# The IMREAD_* bits that change what decoding gives (IMREAD_LOAD_GDAL is accepted and ignored).
_REDUCED_BITS = IMREAD_REDUCED_GRAYSCALE_2 | IMREAD_REDUCED_GRAYSCALE_4 | IMREAD_REDUCED_GRAYSCALE_8
_KNOWN_READ_BITS = (IMREAD_COLOR | IMREAD_ANYDEPTH | IMREAD_ANYCOLOR | IMREAD_LOAD_GDAL | _REDUCED_BITS
                    | IMREAD_IGNORE_ORIENTATION | IMREAD_COLOR_RGB)
_WRITERS = ("jpg", "jpeg", "jpe", "png", "bmp", "dib", "webp", "tif", "tiff")
_SIXTEEN_BIT_WRITERS = ("png", "tif", "tiff")
_SIGNATURES = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"BM", b"II*\x00", b"MM\x00*")


def _warn(message):
    # OpenCV logs these conditions (and returns None or False) rather than raising.
    print(f"[ WARN ] mnnpy.cv {message}", file=_sys.stderr)


def _read_flags(func, flags):
    if not isinstance(flags, (int, _np.integer)) or isinstance(flags, bool):
        raise TypeError(f"mnnpy.cv.{func}: 'flags' must be an integer, got {type(flags).__name__}")
    flags = int(flags)
    if flags != IMREAD_UNCHANGED and (flags < 0 or flags & ~_KNOWN_READ_BITS):
        raise error(func, f"unsupported flags {flags}")
    return flags


def _env_limit(name, default):
    try:
        value = int(_os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


# OpenCV's limits on the size of an image it decodes (validateInputImageSize), read once from the
# same environment variables; the decoders refuse a header declaring more as soon as they read it.
_MAX_IMAGE_SIZE = (_env_limit("OPENCV_IO_MAX_IMAGE_WIDTH", 1 << 20), _env_limit("OPENCV_IO_MAX_IMAGE_HEIGHT", 1 << 20),
                   _env_limit("OPENCV_IO_MAX_IMAGE_PIXELS", 1 << 30))


def _decode(func, encoded, flags):
    """The decoded image of 1-D uint8 ``encoded``, or None when it is no readable image."""
    try:
        layout = _core.cv_image_probe(encoded, flags, _MAX_IMAGE_SIZE)
    except ValueError as e:
        raise error(func, str(e)) from None
    if layout is None:
        return None
    image_format, height, width, cn, sample_bytes, reduced_by, orientation = layout
    v = image_op("CvImageDecode", [_core.const(encoded, None, "NCHW")], flags=flags, format=image_format,
                 height=height, width=width, channels=cn, sample_bytes=sample_bytes)
    reduction = _reduction(flags) // reduced_by
    if sample_bytes == 2:
        if reduction > 1:
            raise error(func, "IMREAD_REDUCED_* of 16-bit images is not supported")
        return _oriented_array(_np.asarray(v).view(_np.uint16), orientation)
    if reduction > 1:
        from ._common import INTER_LINEAR_EXACT
        from ._geometry import resize
        if width // reduction == 0 or height // reduction == 0:
            _warn(f"the {width}x{height} image is too small to be reduced {reduction} times")
            return None
        v = resize(v, (width // reduction, height // reduction), interpolation=INTER_LINEAR_EXACT)
    return _oriented(v, orientation)


def _reduction(flags):
    """The IMREAD_REDUCED_* size denominator of ``flags`` (1 without one)."""
    if flags == IMREAD_UNCHANGED:
        return 1
    for bit, denominator in ((IMREAD_REDUCED_GRAYSCALE_2, 2), (IMREAD_REDUCED_GRAYSCALE_4, 4),
                             (IMREAD_REDUCED_GRAYSCALE_8, 8)):
        if flags & bit:
            return denominator
    return 1


# EXIF orientation -> (transpose first, then OpenCV's flipCode or None).
_ORIENTATION_STEPS = {1: (False, None), 2: (False, 1), 3: (False, -1), 4: (False, 0),
                      5: (True, None), 6: (True, 1), 7: (True, -1), 8: (True, 0)}


def _oriented(image, orientation):
    """The decoded image Var turned upright as its EXIF ``orientation`` (1..8) says."""
    from ._geometry import flip, transpose
    swap, flip_code = _ORIENTATION_STEPS[orientation]
    if swap:
        image = transpose(image)
    return image if flip_code is None else flip(image, flip_code)


def _oriented_array(image, orientation):
    """As _oriented, for a NumPy image."""
    swap, flip_code = _ORIENTATION_STEPS[orientation]
    if swap:
        image = _np.swapaxes(image, 0, 1)
    if flip_code is not None:
        image = image[::-1 if flip_code <= 0 else 1, ::-1 if flip_code != 0 else 1]
    return _np.ascontiguousarray(image)


def _filename(func, filename):
    if isinstance(filename, _os.PathLike):
        filename = _os.fspath(filename)
    if not isinstance(filename, str):
        raise TypeError(f"mnnpy.cv.{func}: 'filename' must be a str or path-like object, "
                        f"got {type(filename).__name__}")
    return filename


def imread(filename, flags=IMREAD_COLOR):
    """The image in file ``filename`` (BGR HxWx3 uint8 by default), or None when the file is
    missing or holds no image that can be read."""
    filename = _filename("imread", filename)
    flags = _read_flags("imread", flags)
    try:
        encoded = _np.fromfile(filename, dtype=_np.uint8)
    except OSError:
        _warn(f"imread('{filename}'): can't open/read file: check file path/integrity")
        return None
    if encoded.size == 0:
        return None
    return _decode("imread", encoded, flags)


def imdecode(buf, flags):
    """The image encoded in the uint8 array ``buf``, or None when it is no readable image."""
    flags = _read_flags("imdecode", flags)
    if buf is None:
        raise error("imdecode", "'buf' is empty")
    if isinstance(buf, Var):
        buf = _np.asarray(buf)
    elif isinstance(buf, (bytes, bytearray, memoryview)):
        buf = _np.frombuffer(buf, dtype=_np.uint8)
    a = _np.asarray(buf)
    if a.size == 0:
        raise error("imdecode", "'buf' is empty")
    if a.dtype != _np.uint8:
        return None
    # A copy: the lazy decode must not see later changes to the caller's buffer.
    return _decode("imdecode", _np.array(a.reshape(-1), dtype=_np.uint8, copy=True), flags)


def _extension(name):
    base = _os.path.basename(name)
    dot = base.rfind(".")
    return base[dot + 1:].lower() if dot >= 0 else ""


def _params(func, params):
    if params is None:
        return []
    try:
        values = [int(p) for p in params]
    except (TypeError, ValueError):
        raise TypeError(f"mnnpy.cv.{func}: 'params' must be a sequence of integers") from None
    if len(values) % 2:
        raise error(func, "'params' must hold (IMWRITE_* id, value) pairs, got an odd length")
    return values


def _image_to_write(func, img, extension):
    """``img`` computed, as a C-contiguous array of a depth the writer of ``extension`` holds."""
    if img is None:
        raise TypeError(f"mnnpy.cv.{func}: 'img' is None, expected an image array")
    a = _np.asarray(img)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"mnnpy.cv.{func}: 'img' is not a numerical array (dtype {a.dtype})")
    if a.size == 0:
        raise error(func, f"'img' is empty (shape {a.shape})")
    a = unbatched(a, func, "img")
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim not in (2, 3):
        raise error(func, f"'img' must be a 2-D (HxW) or 3-D (HxWxC) image (or MNN's 1xHxWxC batch of one), "
                          f"got shape {a.shape}")
    cn = 1 if a.ndim == 2 else a.shape[2]
    if cn not in (1, 3, 4):
        raise error(func, f"images of 1, 3 or 4 channels can be written, got {cn}")
    if a.dtype == _np.uint16 and extension in _SIXTEEN_BIT_WRITERS:
        return _np.ascontiguousarray(a)
    if a.dtype != _np.uint8:
        if extension in ("tif", "tiff"):
            raise error(func, f"TIFF files of dtype {a.dtype} are not supported (uint8 and uint16 are)")
        # Other depths are written as 8 bits, rounded and saturated, as OpenCV falls back.
        a = _np.clip(_np.rint(a) if a.dtype.kind == "f" else a, 0, 255).astype(_np.uint8)
    return _np.ascontiguousarray(a)


def _encode(func, extension, img, params):
    if extension not in _WRITERS:
        raise error(func, f"could not find a writer for the extension '.{extension}'")
    params = _params(func, params)
    image = _image_to_write(func, img, extension)
    try:
        return _core.cv_image_encode(extension, image, params)
    except ValueError as e:
        raise error(func, str(e)) from None


def imwrite(filename, img, params=None):
    """Writes ``img`` (BGR(A) or gray) to ``filename`` in the format its extension names: True
    when written, False when the file could not be written."""
    filename = _filename("imwrite", filename)
    encoded = _encode("imwrite", _extension(filename), img, params)
    try:
        encoded.tofile(filename)
    except OSError:
        return False
    return True


def imencode(ext, img, params=None):
    """(True, 1-D uint8 array of the file's bytes) of ``img`` in the format of extension ``ext``
    (".png", ".jpg" ...)."""
    if not isinstance(ext, str):
        raise TypeError(f"mnnpy.cv.imencode: 'ext' must be a str, got {type(ext).__name__}")
    extension = ext[1:].lower() if ext.startswith(".") else ""
    return True, _encode("imencode", extension, img, params)


def haveImageReader(filename):  # noqa: N802 (OpenCV's name)
    """Whether ``filename`` exists and starts with the signature of a format imread reads."""
    filename = _filename("haveImageReader", filename)
    try:
        with open(filename, "rb") as f:
            head = f.read(12)
    except OSError:
        _warn(f"haveImageReader('{filename}'): can't open/read file: check file path/integrity")
        return False
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return True
    return any(head.startswith(s) for s in _SIGNATURES)


def haveImageWriter(filename):  # noqa: N802 (OpenCV's name)
    """Whether imwrite has a writer for ``filename``'s extension."""
    filename = _filename("haveImageWriter", filename)
    return _extension(filename) in _WRITERS
