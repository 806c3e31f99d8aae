"""Fuzzes mnnpy.cv.imdecode and imread on PNG, JPEG, BMP, WebP and TIFF bytes, with every kind of
IMREAD_* flags (reduced reads, 16-bit, gray, RGB order, orientation ignored): the first input
byte picks the flags (and, with its high bit, imread from a file instead of imdecode), the rest
is the file. Each image that decodes is computed. PNG chunk checksums are recomputed after each
mutation, so that mutated PNGs reach the decoder instead of stopping at libpng's CRC check.
See fuzz/_harness.py for how to run it."""
import os
import random
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness  # noqa: E402

_files = _harness.ScratchFiles(".img")

# IMREAD_* values: UNCHANGED, GRAYSCALE, COLOR, ANYDEPTH, ANYDEPTH|ANYCOLOR, ANYCOLOR, the
# REDUCED_* pairs, IGNORE_ORIENTATION with COLOR and GRAYSCALE, COLOR_RGB, REDUCED_COLOR_2|RGB.
FLAGS = [-1, 0, 1, 2, 6, 4, 16, 17, 32, 33, 64, 65, 129, 128, 256, 273, 2 | 128, 1 | 2 | 4]
USE_IMREAD = 0x80


def _flags_of(selector):
    return FLAGS[(selector & 0x7F) % len(FLAGS)]


def _quiet(message):
    pass


def fuzz_one(data):
    import numpy as np

    from mnnpy import cv
    from mnnpy.cv import _codecs
    _codecs._warn = _quiet  # OpenCV's warnings (an image too small to reduce ...) would flood the log
    if len(data) < 2:
        return
    flags = _flags_of(data[0])
    image = data[1:]
    path = None
    try:
        if data[0] & USE_IMREAD:
            path = _files.write(image)
            decoded = cv.imread(path, flags)
        else:
            decoded = cv.imdecode(np.frombuffer(image, np.uint8), flags)
        if decoded is not None:
            pixels = np.asarray(decoded)
            assert pixels.ndim in (2, 3) and pixels.size > 0 and pixels.dtype in (np.uint8, np.uint16)
    except Exception as e:  # noqa: BLE001 (sorted by check_documented)
        _harness.check_documented(e, extra=(cv.error,))
    finally:
        if path:
            _files.remove(path)


# ---------------------------------------------------------------- PNG checksums
def fix_png_crcs(data):
    """``data`` with the CRC of each whole PNG chunk after the flags byte recomputed."""
    signature = b"\x89PNG\r\n\x1a\n"
    if data[1:9] != signature:
        return data
    out = bytearray(data)
    at = 9
    while at + 12 <= len(out):
        length = struct.unpack_from(">I", out, at)[0]
        end = at + 8 + length
        if end + 4 > len(out):
            break
        struct.pack_into(">I", out, end, zlib.crc32(bytes(out[at + 4:end])))
        at = end + 4
    return bytes(out)


def mutate(data, max_size, seed):
    import atheris
    return fix_png_crcs(atheris.Mutate(data, max_size))


# ---------------------------------------------------------------- seeds
def _png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png(rows, width, height, bit_depth, color_type, interlaced=False, extra=()):
    """A PNG of raw scanlines (bytes per row, unfiltered), with Adam7 passes when interlaced."""
    import numpy as np
    if interlaced:
        pixels = np.frombuffer(b"".join(rows), np.uint8).reshape(height, -1)
        channels_bytes = pixels.shape[1] // width
        raw = b""
        for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
                               (0, 1, 1, 2)):
            part = pixels.reshape(height, width, channels_bytes)[y0::dy, x0::dx]
            if part.size:
                raw += b"".join(b"\0" + row.tobytes() for row in part)
    else:
        raw = b"".join(b"\0" + r for r in rows)
    head = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 1 if interlaced else 0)
    chunks = [_png_chunk(b"IHDR", head)] + [_png_chunk(k, v) for k, v in extra]
    return b"\x89PNG\r\n\x1a\n" + b"".join(chunks) + _png_chunk(b"IDAT", zlib.compress(raw)) + _png_chunk(b"IEND", b"")


def _exif(orientation, big_endian=False):
    """A TIFF-structured EXIF block holding one Orientation tag."""
    e = ">" if big_endian else "<"
    return (b"MM" if big_endian else b"II") + struct.pack(e + "HI", 42, 8) + struct.pack(e + "H", 1) + \
        struct.pack(e + "HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack(e + "I", 0)


def _bmp(width, height, bits, pixel_rows, palette=b"", info_size=40, compression=0, top_down=False, masks=b""):
    """A BMP; bit-field ``masks`` follow a 40-byte header, or sit inside a longer one."""
    stride = (width * bits + 31) // 32 * 4
    body = b"".join(r.ljust(stride, b"\0") for r in (pixel_rows if top_down else pixel_rows[::-1]))
    if info_size == 12:
        info = struct.pack("<IHHHH", 12, width, height, 1, bits)
    else:
        info = struct.pack("<IiiHHIIiiII", info_size, width, -height if top_down else height, 1, bits, compression,
                           len(body), 2835, 2835, len(palette) // 4, 0)
        info = (info + masks).ljust(info_size, b"\0") if info_size > 40 else info + masks
    offset = 14 + len(info) + len(palette)
    return b"BM" + struct.pack("<IHHI", offset + len(body), 0, 0, offset) + info + palette + body


def _tiff(width, height, samples, bits, pixels, orientation=1, big_endian=False):
    """An uncompressed one-strip TIFF with an Orientation tag."""
    e = ">" if big_endian else "<"
    photometric = 2 if samples >= 3 else 1
    tags = [(256, 4, width), (257, 4, height), (258, 3, bits), (259, 3, 1), (262, 3, photometric),
            (273, 4, 0), (274, 3, orientation), (277, 3, samples), (278, 4, height), (279, 4, len(pixels)),
            (284, 3, 1)]
    ifd_size = 2 + 12 * len(tags) + 4
    data_at = 8 + ifd_size
    entries = b""
    for tag, kind, value in tags:
        value = data_at if tag == 273 else value
        packed = struct.pack(e + ("I" if kind == 4 else "HH"), *((value,) if kind == 4 else (value, 0)))
        entries += struct.pack(e + "HHI", tag, kind, 1) + packed
    head = (b"MM" if big_endian else b"II") + struct.pack(e + "HI", 42, 8)
    return head + struct.pack(e + "H", len(tags)) + entries + struct.pack(e + "I", 0) + pixels


def seed_images():
    """Valid files of every codec and the variants the decoders treat apart."""
    import numpy as np

    from mnnpy import cv
    rng = np.random.default_rng(0)
    color = rng.integers(0, 256, (7, 9, 3), dtype=np.uint8)
    gray = rng.integers(0, 256, (7, 9), dtype=np.uint8)
    bgra = rng.integers(0, 256, (7, 9, 4), dtype=np.uint8)
    wide = rng.integers(0, 65536, (5, 6, 3), dtype=np.uint16)
    images = []
    for ext in (".png", ".jpg", ".bmp", ".webp", ".tif"):
        for img in (color, gray, bgra):
            images.append(bytes(cv.imencode(ext, img)[1]))
    images.append(bytes(cv.imencode(".png", wide)[1]))
    images.append(bytes(cv.imencode(".tif", wide[:, :, 0])[1]))
    images.append(bytes(cv.imencode(".jpg", color, [cv.IMWRITE_JPEG_PROGRESSIVE, 1])[1]))
    images.append(bytes(cv.imencode(".jpg", np.tile(color, (3, 3, 1)), [cv.IMWRITE_JPEG_QUALITY, 20,
                                                                         cv.IMWRITE_JPEG_RST_INTERVAL, 2])[1]))
    images.append(bytes(cv.imencode(".webp", color, [cv.IMWRITE_WEBP_QUALITY, 50])[1]))
    images.append(bytes(cv.imencode(".webp", bgra, [cv.IMWRITE_WEBP_QUALITY, 50])[1]))
    for compression in (cv.IMWRITE_TIFF_COMPRESSION_NONE, cv.IMWRITE_TIFF_COMPRESSION_ADOBE_DEFLATE,
                        cv.IMWRITE_TIFF_COMPRESSION_PACKBITS):
        images.append(bytes(cv.imencode(".tif", color, [cv.IMWRITE_TIFF_COMPRESSION, compression])[1]))
    # JPEG with an EXIF orientation (APP1 right after SOI).
    jpeg = bytes(cv.imencode(".jpg", color)[1])
    for orientation, big in ((6, False), (3, True), (8, False)):
        app1 = b"Exif\0\0" + _exif(orientation, big)
        images.append(jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + jpeg[2:])
    # PNG: palette with transparency, 1/2/4-bit gray, gray+alpha, interlaced, eXIf orientation.
    palette = bytes(rng.integers(0, 256, 16 * 3, dtype=np.uint8))
    index_rows = [bytes(rng.integers(0, 16, 9, dtype=np.uint8)) for _ in range(7)]
    images.append(_png(index_rows, 9, 7, 8, 3, extra=[(b"PLTE", palette), (b"tRNS", bytes(range(0, 160, 10)))]))
    for depth in (1, 2, 4):
        per_byte = 8 // depth
        rows = [bytes(rng.integers(0, 256, (9 + per_byte - 1) // per_byte, dtype=np.uint8)) for _ in range(7)]
        images.append(_png(rows, 9, 7, depth, 0, extra=[(b"tRNS", b"\0\1")] if depth == 2 else ()))
    images.append(_png([r.tobytes() for r in rng.integers(0, 256, (7, 18), dtype=np.uint8)], 9, 7, 8, 4))
    images.append(_png([r.tobytes() for r in color.reshape(7, -1)], 9, 7, 8, 2, interlaced=True))
    images.append(_png([r.tobytes() for r in color.reshape(7, -1)], 9, 7, 8, 2, extra=[(b"eXIf", _exif(5))]))
    images.append(_png([r.astype(">u2").tobytes() for r in wide.reshape(5, -1)], 6, 5, 16, 2, interlaced=True))
    # BMP: 1/4/8-bit palettes (gray and colour), OS/2 core header, top-down, 32-bit with alpha masks.
    for bits in (1, 4, 8):
        entries = 1 << bits
        pal = b"".join(bytes([v, v, v, 0]) for v in np.linspace(0, 255, entries).astype(np.uint8))
        if bits == 4:
            pal = bytes(rng.integers(0, 256, entries * 4, dtype=np.uint8))
        rows = [bytes(rng.integers(0, 256, (9 * bits + 7) // 8, dtype=np.uint8)) for _ in range(7)]
        images.append(_bmp(9, 7, bits, rows, palette=pal, top_down=bits == 4))
    core_palette = bytes(rng.integers(0, 256, 256 * 3, dtype=np.uint8))
    images.append(_bmp(9, 7, 8, [bytes(r) for r in gray], palette=core_palette, info_size=12))
    masks = struct.pack("<IIII", 0x00FF0000, 0x0000FF00, 0x000000FF, 0xFF000000)
    rows = [r.tobytes() for r in bgra.reshape(7, -1)]
    images.append(_bmp(9, 7, 32, rows, compression=3, masks=masks[:12]))
    images.append(_bmp(9, 7, 32, rows, info_size=108, compression=3, masks=masks))
    # WebP with an EXIF chunk in the extended (VP8X) layout.
    simple = bytes(cv.imencode(".webp", color)[1])
    exif = _exif(7)
    vp8x = b"VP8X" + struct.pack("<I", 10) + bytes([0x08, 0, 0, 0]) + (9 - 1).to_bytes(3, "little") + \
        (7 - 1).to_bytes(3, "little")
    body = b"WEBP" + vp8x + simple[12:] + b"EXIF" + struct.pack("<I", len(exif)) + exif + (b"\0" if len(exif) % 2 else b"")
    images.append(b"RIFF" + struct.pack("<I", len(body)) + body)
    # TIFF: gray+alpha, RGBA, 16-bit RGB, big-endian, each orientation that swaps the axes.
    images.append(_tiff(9, 7, 2, 8, rng.integers(0, 256, 7 * 9 * 2, dtype=np.uint8).tobytes(), orientation=6))
    images.append(_tiff(9, 7, 4, 8, bgra.tobytes(), orientation=5, big_endian=True))
    images.append(_tiff(6, 5, 3, 16, wide.astype(">u2").tobytes(), orientation=7, big_endian=True))
    images.append(_tiff(9, 7, 1, 8, gray.tobytes(), orientation=8))
    return images


def seeds():
    """Each seed image behind a flags byte; the flags cycle so that every kind is seeded."""
    rng = random.Random(0)
    out = []
    for k, image in enumerate(seed_images()):
        out.append(bytes([k % len(FLAGS)]) + image)
        out.append(bytes([rng.randrange(256)]) + image)
    return out


if __name__ == "__main__":
    _harness.main("imdecode", fuzz_one, seeds, ["mnnpy.cv._codecs", "mnnpy.cv._geometry"], custom_mutator=mutate)
