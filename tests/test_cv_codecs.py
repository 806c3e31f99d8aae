"""mnnpy.cv's image codecs against OpenCV (cv2): imread, imdecode, imwrite, imencode,
haveImageReader, haveImageWriter.

What holds:
- PNG, BMP, TIFF and lossless WebP: pixels are exact both ways (files we write, read by cv2;
  files cv2 writes, read by us), 8-bit and (PNG, TIFF) 16-bit, every IMREAD_* colour/depth flag.
- BMP files we write are byte-identical to cv2's; PNG files (default and explicit compression)
  decode to the same pixels and are within 1% of cv2's size (identical bytes where both link the
  same zlib).
- JPEG decoding: exact against cv2 on the same file (both libjpeg-turbo, default IDCT), colour
  and gray. JPEG encoding at quality q (and progressive, optimize, sampling factors): decoded
  pixels differ from cv2's file by a mean below 0.5 LSB and sizes within 2%.
- Lossy WebP: decoded pixels within a mean of 1 LSB of cv2's encoding, size within 5%.
- Gray reads of colour files: exact (OpenCV's fixed-point weights; libpng's for PNG), except
  gray from 32-bit BGRA BMP files: within 1 LSB.
- EXIF orientation (JPEG, PNG, WebP; TIFF's Orientation tag) and IMREAD_REDUCED_* (JPEG at a
  reduced DCT scale, other formats through INTER_LINEAR_EXACT): exact.
- Lossless WebP with alpha: like cv2's, it drops the colour of fully transparent pixels; our
  file decodes to cv2's file's pixels.
"""
import io
import struct

import cv2
import numpy as np
import pytest
from cv_helpers import assert_within_lsb, photos, random_image

import mnnpy
import mnnpy.cv as mcv
import mnnpy.numpy as mnp

LOSSLESS = [".png", ".bmp", ".tiff", ".webp"]
READ_FLAGS = [cv2.IMREAD_UNCHANGED, cv2.IMREAD_GRAYSCALE, cv2.IMREAD_COLOR, cv2.IMREAD_ANYDEPTH,
              cv2.IMREAD_ANYCOLOR, cv2.IMREAD_ANYDEPTH | cv2.IMREAD_ANYCOLOR, cv2.IMREAD_COLOR_RGB]


def _encode_params(ext):
    return [cv2.IMWRITE_WEBP_QUALITY, 101] if ext == ".webp" else []


def _ours(v):
    return None if v is None else np.asarray(v)


def _assert_read_equal(buf, flags, lsb=0):
    expected = cv2.imdecode(buf, flags)
    ours = _ours(mcv.imdecode(buf, flags))
    assert ours is not None
    assert ours.dtype == expected.dtype and ours.shape == expected.shape, (ours.shape, expected.shape, flags)
    if lsb:
        assert_within_lsb(ours, expected, lsb)
    else:
        np.testing.assert_array_equal(ours, expected)


def channels(img):
    return 1 if img.ndim == 2 else img.shape[2]


def _images():
    rng = np.random.default_rng(7)
    items = [(name, img) for name, img in photos().items()]
    for cn, (h, w) in zip((0, 3, 4), ((37, 53), (41, 29), (23, 61))):
        items.append((f"random{cn}", random_image(rng, h, w, cn, np.uint8)))
    return items


IMAGES = _images()


@pytest.mark.parametrize("ext", LOSSLESS)
@pytest.mark.parametrize("name,img", IMAGES, ids=[n for n, _ in IMAGES])
def test_lossless_round_trips(ext, name, img):
    params = _encode_params(ext)
    ok, ours = mcv.imencode(ext, img, params)
    assert ok is True and ours.dtype == np.uint8 and ours.ndim == 1
    _, theirs = cv2.imencode(ext, img, params)
    decoded = cv2.imdecode(ours, cv2.IMREAD_UNCHANGED)
    # Lossless WebP (ours and cv2's alike) drops the colour of fully transparent pixels.
    expected = cv2.imdecode(theirs, cv2.IMREAD_UNCHANGED) if ext == ".webp" else img
    np.testing.assert_array_equal(decoded, expected)
    for flags in READ_FLAGS:
        # Gray from 32-bit BMP: OpenCV's rounding there is not reproduced (within 1 LSB).
        _assert_read_equal(theirs, flags, lsb=1 if ext == ".bmp" and channels(img) == 4 and flags in (0, 2) else 0)
    if ext == ".bmp":
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("ext", [".png", ".tiff"])
@pytest.mark.parametrize("cn", [0, 3, 4])
def test_sixteen_bit(ext, cn):
    rng = np.random.default_rng(cn)
    shape = (19, 27) if cn == 0 else (19, 27, cn)
    img = rng.integers(0, 65536, shape, dtype=np.uint16)
    ok, ours = mcv.imencode(ext, img)
    np.testing.assert_array_equal(cv2.imdecode(ours, cv2.IMREAD_UNCHANGED), img)
    _, theirs = cv2.imencode(ext, img)
    for flags in READ_FLAGS:
        _assert_read_equal(theirs, flags)


@pytest.mark.parametrize("name,img", IMAGES[:4], ids=[n for n, _ in IMAGES[:4]])
def test_jpeg_decode_exact(name, img):
    for quality in (60, 95):
        _, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, quality])
        for flags in (cv2.IMREAD_COLOR, cv2.IMREAD_GRAYSCALE, cv2.IMREAD_UNCHANGED, cv2.IMREAD_COLOR_RGB):
            _assert_read_equal(buf, flags)


JPEG_PARAMS = [[], [cv2.IMWRITE_JPEG_QUALITY, 50], [cv2.IMWRITE_JPEG_QUALITY, 100],
               [cv2.IMWRITE_JPEG_PROGRESSIVE, 1], [cv2.IMWRITE_JPEG_OPTIMIZE, 1],
               [cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444],
               [cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422],
               [cv2.IMWRITE_JPEG_RST_INTERVAL, 4]]


@pytest.mark.parametrize("params", JPEG_PARAMS, ids=[str(p) for p in JPEG_PARAMS])
@pytest.mark.parametrize("name", ["astronaut", "camera", "random4"])
def test_jpeg_encode_close_to_cv2(params, name):
    img = dict(IMAGES)[name]
    ok, ours = mcv.imencode(".jpg", img, params)
    _, theirs = cv2.imencode(".jpg", img, params)
    a = cv2.imdecode(ours, cv2.IMREAD_UNCHANGED).astype(np.float64)
    b = cv2.imdecode(theirs, cv2.IMREAD_UNCHANGED).astype(np.float64)
    assert a.shape == b.shape
    assert np.abs(a - b).mean() < 0.5
    assert abs(len(ours) - len(theirs)) <= 0.02 * len(theirs)


@pytest.mark.parametrize("params", [[], [cv2.IMWRITE_PNG_COMPRESSION, 0], [cv2.IMWRITE_PNG_COMPRESSION, 9],
                                    [cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_DEFAULT]])
def test_png_params(params):
    img = photos()["coffee"]
    _, ours = mcv.imencode(".png", img, params)
    _, theirs = cv2.imencode(".png", img, params)
    np.testing.assert_array_equal(cv2.imdecode(ours, -1), img)
    assert abs(len(ours) - len(theirs)) <= 0.01 * len(theirs)


@pytest.mark.parametrize("quality", [50, 90])
def test_webp_lossy(quality):
    img = photos()["chelsea"]
    _, ours = mcv.imencode(".webp", img, [cv2.IMWRITE_WEBP_QUALITY, quality])
    _, theirs = cv2.imencode(".webp", img, [cv2.IMWRITE_WEBP_QUALITY, quality])
    a, b = cv2.imdecode(ours, 1).astype(np.float64), cv2.imdecode(theirs, 1).astype(np.float64)
    assert np.abs(a - b).mean() < 1.0
    assert abs(len(ours) - len(theirs)) <= 0.05 * len(theirs)
    for flags in (cv2.IMREAD_COLOR, cv2.IMREAD_GRAYSCALE):
        _assert_read_equal(theirs, flags)


def test_tiff_compressions():
    img = photos()["astronaut"]
    for compression in (cv2.IMWRITE_TIFF_COMPRESSION_NONE, cv2.IMWRITE_TIFF_COMPRESSION_LZW,
                        cv2.IMWRITE_TIFF_COMPRESSION_ADOBE_DEFLATE, cv2.IMWRITE_TIFF_COMPRESSION_PACKBITS):
        params = [cv2.IMWRITE_TIFF_COMPRESSION, compression]
        _, ours = mcv.imencode(".tiff", img, params)
        np.testing.assert_array_equal(cv2.imdecode(ours, -1), img)
        _, theirs = cv2.imencode(".tiff", img, params)
        _assert_read_equal(theirs, cv2.IMREAD_UNCHANGED)


def _bmp(width, height, bits, pixels_rows, palette=None, top_down=False, compression=0):
    """A BMP file with a 40-byte header, rows given top to bottom as raw (unpadded) bytes."""
    stride = (width * bits + 31) // 32 * 4
    body = b"".join(r + b"\0" * (stride - len(r)) for r in (pixels_rows if top_down else pixels_rows[::-1]))
    pal = b"".join(bytes(e) for e in palette) if palette is not None else b""
    offset = 14 + 40 + len(pal)
    header = struct.pack("<2sIHHI", b"BM", offset + len(body), 0, 0, offset)
    info = struct.pack("<IiiHHIIiiII", 40, width, -height if top_down else height, 1, bits, compression, 0, 0, 0,
                       len(palette) if palette is not None else 0, 0)
    return np.frombuffer(header + info + pal + body, dtype=np.uint8)


def _pack(indices, bits):
    out = bytearray()
    per = 8 // bits
    for i in range(0, len(indices), per):
        byte = 0
        for j, v in enumerate(indices[i:i + per]):
            byte |= int(v) << (8 - bits * (j + 1))
        out.append(byte)
    return bytes(out)


@pytest.mark.parametrize("bits", [1, 4, 8])
@pytest.mark.parametrize("gray", [False, True])
@pytest.mark.parametrize("top_down", [False, True])
def test_bmp_palettes(bits, gray, top_down):
    rng = np.random.default_rng(bits)
    w, h, n = 13, 7, 1 << bits
    palette = [(v, v, v, 0) if gray else tuple(rng.integers(0, 256, 3)) + (0,)
               for v in rng.integers(0, 256, n)]
    rows = [_pack(rng.integers(0, n, w), bits) for _ in range(h)]
    buf = _bmp(w, h, bits, rows, palette, top_down)
    for flags in (cv2.IMREAD_UNCHANGED, cv2.IMREAD_COLOR, cv2.IMREAD_GRAYSCALE):
        _assert_read_equal(buf, flags)


@pytest.mark.parametrize("top_down", [False, True])
def test_bmp_24_and_32_bit(top_down):
    rng = np.random.default_rng(3)
    w, h = 11, 5
    for bits in (24, 32):
        rows = [rng.integers(0, 256, w * bits // 8, dtype=np.uint8).tobytes() for _ in range(h)]
        buf = _bmp(w, h, bits, rows, top_down=top_down)
        for flags in (cv2.IMREAD_UNCHANGED, cv2.IMREAD_COLOR, cv2.IMREAD_GRAYSCALE):
            _assert_read_equal(buf, flags)


def test_bmp_pixel_offset_past_the_end():
    """Found by fuzz/fuzz_imdecode.py (AddressSanitizer: heap-buffer-overflow in parse_bmp): an
    8-bit BMP whose pixel offset points past the end of the data made the palette check read up
    to that offset. It is no readable image, for OpenCV too."""
    header = struct.pack("<2sIHHI", b"BM", 58, 0, 0, 1078)
    info = struct.pack("<IiiHHIIiiII", 40, 1, 1, 1, 8, 0, 0, 0, 0, 0, 0)
    buf = np.frombuffer(header + info + b"\x10\x20\x30\x00", np.uint8)
    for flags in (cv2.IMREAD_UNCHANGED, cv2.IMREAD_COLOR, cv2.IMREAD_GRAYSCALE):
        assert mcv.imdecode(buf, flags) is None
        assert cv2.imdecode(buf, flags) is None


def test_png_palette_and_gray_alpha():
    from PIL import Image
    rng = np.random.default_rng(5)
    rgba = rng.integers(0, 256, (17, 23, 4), dtype=np.uint8)
    la = rng.integers(0, 256, (17, 23, 2), dtype=np.uint8)
    files = []
    for image in (Image.fromarray(rgba[..., :3]).quantize(16), Image.fromarray(rgba).quantize(16),
                  Image.fromarray(la, "LA"), Image.fromarray(la[..., 0]).convert("1")):
        out = io.BytesIO()
        image.save(out, format="PNG")
        files.append(np.frombuffer(out.getvalue(), dtype=np.uint8))
    for buf in files:
        for flags in READ_FLAGS:
            _assert_read_equal(buf, flags)


def test_imwrite_imread_files(tmp_path):
    img = photos()["coffee"]
    for ext in (".png", ".jpg", ".bmp", ".webp", ".tif"):
        ours_path, their_path = str(tmp_path / f"ours{ext}"), str(tmp_path / f"theirs{ext}")
        assert mcv.imwrite(ours_path, img) is True
        assert cv2.imwrite(their_path, img)
        for flags in (cv2.IMREAD_COLOR, cv2.IMREAD_GRAYSCALE, cv2.IMREAD_UNCHANGED):
            expected = cv2.imread(their_path, flags)
            np.testing.assert_array_equal(_ours(mcv.imread(their_path, flags)), expected)
            ours = cv2.imread(ours_path, flags)
            if ext != ".jpg":
                np.testing.assert_array_equal(ours, expected)
        assert mcv.haveImageReader(ours_path) == cv2.haveImageReader(ours_path)
    assert mcv.imread(tmp_path / "ours.png").shape == img.shape  # path-like names


def test_imwrite_accepts_vars_and_other_depths(tmp_path):
    img = photos()["astronaut"]
    v = mnp.asarray(img)
    _, ours = mcv.imencode(".png", v)
    np.testing.assert_array_equal(cv2.imdecode(ours, -1), img)
    floats = (np.arange(60, dtype=np.float32).reshape(6, 10) * 5.3 - 20)
    for ext in (".png", ".jpg", ".bmp"):
        _, ours = mcv.imencode(ext, floats)
        _, theirs = cv2.imencode(ext, floats)
        np.testing.assert_array_equal(cv2.imdecode(ours, -1), cv2.imdecode(theirs, -1))
    wide = np.arange(60, dtype=np.uint16).reshape(6, 10) * 9
    _, ours = mcv.imencode(".bmp", wide)
    _, theirs = cv2.imencode(".bmp", wide)
    np.testing.assert_array_equal(ours, theirs)


def test_lazy_graph(tmp_path):
    path = str(tmp_path / "a.png")
    img = photos()["chelsea"]
    cv2.imwrite(path, img)
    v = mcv.imread(path)
    assert isinstance(v, mnnpy._core.Var)
    scaled = mnp.asarray(v).astype(np.float32) * (1 / 255.0) - 0.5
    np.testing.assert_allclose(np.asarray(scaled), img.astype(np.float32) / 255.0 - 0.5, atol=1e-6)
    gray = mcv.cvtColor(v, mcv.COLOR_BGR2GRAY) if hasattr(mcv, "cvtColor") else None
    if gray is not None:
        np.testing.assert_array_equal(np.asarray(gray), cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))


def test_user_buffers_unchanged():
    img = photos()["astronaut"]
    _, buf = cv2.imencode(".png", img)
    v = mcv.imdecode(buf, 1)
    buf[:] = 0  # the decode is lazy: it must not read the caller's buffer later
    np.testing.assert_array_equal(np.asarray(v), img)


def test_have_image_writer_and_reader(tmp_path):
    for name in ("a.png", "a.PNG", "b.jpg", "c.jpeg", "d.bmp", "e.webp", "f.tif", "g.tiff", "h.xyz", "noext"):
        assert mcv.haveImageWriter(name) == cv2.haveImageWriter(name), name
    (tmp_path / "junk.png").write_bytes(b"not an image at all")
    for name in ("junk.png", "missing.png"):
        p = str(tmp_path / name)
        assert mcv.haveImageReader(p) == cv2.haveImageReader(p)


def test_failures(tmp_path):
    assert mcv.imread(str(tmp_path / "missing.png")) is None
    (tmp_path / "junk.png").write_bytes(b"not an image at all")
    assert mcv.imread(str(tmp_path / "junk.png")) is None
    assert mcv.imdecode(np.frombuffer(b"garbage bytes", np.uint8), 1) is None
    _, png = cv2.imencode(".png", photos()["camera"])
    assert mcv.imdecode(png[:20], 1) is None  # header cut short
    assert mcv.imdecode(np.zeros(10, np.float32), 1) is None
    img = np.zeros((4, 5, 3), np.uint8)
    with pytest.raises(mcv.error):
        mcv.imdecode(np.zeros(0, np.uint8), 1)
    with pytest.raises(mcv.error):
        mcv.imencode(".xyz", img)
    with pytest.raises(mcv.error):
        mcv.imwrite(str(tmp_path / "a.xyz"), img)
    with pytest.raises(mcv.error):
        mcv.imencode(".png", np.zeros((4, 5, 2), np.uint8))
    with pytest.raises(mcv.error):
        mcv.imencode(".png", np.zeros((0, 5), np.uint8))
    with pytest.raises(mcv.error):
        mcv.imencode(".png", img, [cv2.IMWRITE_PNG_COMPRESSION])
    with pytest.raises(TypeError):
        mcv.imread(123)
    with pytest.raises(TypeError):
        mcv.imencode(".png", None)
    assert mcv.imwrite(str(tmp_path / "no_dir" / "a.png"), img) is False
    assert cv2.imwrite(str(tmp_path / "no_dir" / "a.png"), img) is False


def test_constants():
    names = [n for n in dir(cv2) if n.startswith(("IMREAD_", "IMWRITE_"))]
    for n in names:
        assert getattr(mcv, n) == getattr(cv2, n), n
        assert n in mcv._codecs.__all__


def _file_with_orientation(ext, orientation, image_rgb):
    """The bytes of an ``ext`` file that Pillow writes with EXIF Orientation ``orientation``."""
    from PIL import Image
    exif = Image.Exif()
    exif[0x0112] = orientation
    out = io.BytesIO()
    options = {"jpg": {"format": "JPEG", "quality": 95}, "png": {"format": "PNG"},
               "webp": {"format": "WEBP", "lossless": True}, "tif": {"format": "TIFF"}}[ext]
    Image.fromarray(image_rgb).save(out, exif=exif.tobytes(), **options)
    return np.frombuffer(out.getvalue(), np.uint8)


ORIENTATION_FLAGS = [cv2.IMREAD_COLOR, cv2.IMREAD_GRAYSCALE, cv2.IMREAD_UNCHANGED, cv2.IMREAD_COLOR_RGB,
                     cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION, cv2.IMREAD_REDUCED_COLOR_2]


@pytest.mark.parametrize("ext", ["jpg", "png", "webp", "tif"])
@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation(ext, orientation, tmp_path):
    rgb = np.ascontiguousarray(photos()["astronaut"][:97, :64, ::-1])
    buf = _file_with_orientation(ext, orientation, rgb)
    path = tmp_path / f"turned.{ext}"
    buf.tofile(path)
    for flags in ORIENTATION_FLAGS:
        expected = cv2.imread(str(path), flags)
        if expected is None:
            # OpenCV 5.0 fails on TIFF files whose orientation swaps the axes; mnnpy reads them
            # turned as every other format: as cv2 turns the same pixels in a lossless WebP file.
            assert ext == "tif" and orientation >= 5
            webp = _file_with_orientation("webp", orientation, rgb)
            # (TIFF orientation applies whatever the flags; this file has three channels.)
            turning = cv2.IMREAD_COLOR if flags == cv2.IMREAD_UNCHANGED else flags & ~cv2.IMREAD_IGNORE_ORIENTATION
            np.testing.assert_array_equal(np.asarray(mcv.imread(str(path), flags)), cv2.imdecode(webp, turning))
            continue
        np.testing.assert_array_equal(np.asarray(mcv.imread(str(path), flags)), expected,
                                      err_msg=f"{ext} orientation {orientation} flags {flags}")
        np.testing.assert_array_equal(np.asarray(mcv.imdecode(buf, flags)), cv2.imdecode(buf, flags))


@pytest.mark.parametrize("ext", [".jpg", ".png", ".bmp", ".webp", ".tiff"])
@pytest.mark.parametrize("flags", [cv2.IMREAD_REDUCED_GRAYSCALE_2, cv2.IMREAD_REDUCED_COLOR_2,
                                   cv2.IMREAD_REDUCED_GRAYSCALE_4, cv2.IMREAD_REDUCED_COLOR_4,
                                   cv2.IMREAD_REDUCED_GRAYSCALE_8, cv2.IMREAD_REDUCED_COLOR_8])
def test_reduced_reads(ext, flags):
    img = np.ascontiguousarray(photos()["coffee"][:301, :203])
    _, buf = cv2.imencode(ext, img, _encode_params(ext))
    _assert_read_equal(buf, flags)
