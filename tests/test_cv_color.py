"""mnnpy.cv colour conversions (cvtColor, cvtColorTwoPlane) and split/merge against OpenCV.

What holds, per conversion (uint8 unless said):
- exact: channel reorders and alpha (BGR<->RGB, BGR<->BGRA, GRAY->BGR(A)), BGR/RGB(A)->GRAY,
  YCrCb and YUV both ways, XYZ both ways, BGR->HSV (and _FULL), HSV->BGR_FULL, the 565/555
  packings both ways (and gray), YUV 4:2:0 (NV12, NV21, I420, YV12, two-plane NV12/NV21) and
  packed 4:2:2 (UYVY, YUY2, YVYU) to BGR/RGB(A)/GRAY, BGR/RGB(A)->I420/YV12, RGBA<->mRGBA,
  split and merge (every dtype).
- within 1 LSB (OpenCV computes these in float, with different code for vector bodies and
  tails): HSV->BGR, BGR<->HLS (and _FULL), Luv from BGR, Lab/Luv back to BGR for colours
  inside the RGB gamut, BGR/RGB(A)->4:2:2.
- within 3 LSB: BGR/LBGR->Lab, and within 9 LSB (in dark colours): Luv->BGR with sRGB gamma.
  OpenCV's uint8 Lab and Luv use integer tables of their own, which differ from its float32
  results by 2-3 LSB already; mnnpy computes them in float32.
- Bayer (bilinear) to BGR/RGB/BGRA/RGBA: exact; Bayer to GRAY: within 1 LSB (OpenCV's vector
  path rounds its luma products in 16 bits). The _VNG and _EA variants are refused.
- float32: within 1e-5 of the value range, except BGR->Lab/Luv with sRGB gamma (OpenCV uses
  interpolated gamma tables there): within 0.5 for Lab's a/b, 0.02 for Luv.
"""
import cv2
import numpy as np
import pytest

import mnnpy.cv as cv
from cv_helpers import assert_within_lsb, photos, random_image

EXACT_U8 = [
    cv2.COLOR_BGR2RGB, cv2.COLOR_BGR2BGRA, cv2.COLOR_BGR2RGBA, cv2.COLOR_BGR2GRAY, cv2.COLOR_RGB2GRAY,
    cv2.COLOR_BGR2YCrCb, cv2.COLOR_RGB2YCrCb, cv2.COLOR_BGR2YUV, cv2.COLOR_RGB2YUV, cv2.COLOR_BGR2XYZ,
    cv2.COLOR_RGB2XYZ, cv2.COLOR_BGR2HSV, cv2.COLOR_RGB2HSV, cv2.COLOR_BGR2HSV_FULL, cv2.COLOR_RGB2HSV_FULL,
    cv2.COLOR_BGR2BGR565, cv2.COLOR_RGB2BGR565, cv2.COLOR_BGR2BGR555, cv2.COLOR_RGB2BGR555,
    cv2.COLOR_BGR2YUV_I420, cv2.COLOR_RGB2YUV_I420, cv2.COLOR_BGR2YUV_YV12, cv2.COLOR_RGB2YUV_YV12,
]
EXACT_U8_FOUR = [cv2.COLOR_BGRA2BGR, cv2.COLOR_RGBA2BGR, cv2.COLOR_BGRA2RGBA, cv2.COLOR_BGRA2GRAY,
                 cv2.COLOR_RGBA2GRAY, cv2.COLOR_BGRA2BGR565, cv2.COLOR_RGBA2BGR555, cv2.COLOR_RGBA2mRGBA,
                 cv2.COLOR_mRGBA2RGBA, cv2.COLOR_BGRA2YUV_I420, cv2.COLOR_RGBA2YUV_YV12]
EXACT_U8_INVERSE = [cv2.COLOR_YCrCb2BGR, cv2.COLOR_YCrCb2RGB, cv2.COLOR_YUV2BGR, cv2.COLOR_YUV2RGB,
                    cv2.COLOR_XYZ2BGR, cv2.COLOR_XYZ2RGB, cv2.COLOR_HSV2BGR_FULL, cv2.COLOR_HSV2RGB_FULL]
LSB1_U8 = [cv2.COLOR_BGR2HLS, cv2.COLOR_RGB2HLS, cv2.COLOR_BGR2HLS_FULL, cv2.COLOR_BGR2Luv, cv2.COLOR_RGB2Luv,
           cv2.COLOR_LBGR2Luv, cv2.COLOR_BGR2YUV_YUY2, cv2.COLOR_RGB2YUV_UYVY,
           cv2.COLOR_BGR2YUV_YVYU]
LSB1_U8_INVERSE = [cv2.COLOR_HSV2BGR, cv2.COLOR_HSV2RGB, cv2.COLOR_HLS2BGR, cv2.COLOR_HLS2RGB_FULL]
FLOAT_CODES = [cv2.COLOR_BGR2RGB, cv2.COLOR_BGR2BGRA, cv2.COLOR_BGR2GRAY, cv2.COLOR_RGB2GRAY, cv2.COLOR_BGR2YCrCb,
               cv2.COLOR_BGR2YUV, cv2.COLOR_BGR2XYZ, cv2.COLOR_BGR2HSV, cv2.COLOR_RGB2HSV_FULL, cv2.COLOR_BGR2HLS,
               cv2.COLOR_LBGR2Lab, cv2.COLOR_LRGB2Luv]
FLOAT_INVERSE = [cv2.COLOR_YCrCb2BGR, cv2.COLOR_YUV2RGB, cv2.COLOR_XYZ2BGR, cv2.COLOR_HSV2BGR, cv2.COLOR_HLS2RGB,
                 cv2.COLOR_Lab2BGR, cv2.COLOR_Lab2LRGB, cv2.COLOR_Luv2BGR, cv2.COLOR_Luv2LBGR]
SIZES = [(37, 53), (5, 131), (64, 64)]


def _check(src, code, lsb=0, float_tol=1e-5, **kw):
    expected = cv2.cvtColor(src, code, **kw)
    before = src.copy()
    ours = cv.cvtColor(src, code, **kw)
    assert_within_lsb(ours, expected, lsb=lsb, float_tol=float_tol)
    np.testing.assert_array_equal(src, before)


def _sized_for(code, h, w):
    """Even sizes where the conversion needs them."""
    if code in (cv2.COLOR_BGR2YUV_I420, cv2.COLOR_RGB2YUV_I420, cv2.COLOR_BGR2YUV_YV12, cv2.COLOR_RGB2YUV_YV12,
                cv2.COLOR_BGRA2YUV_I420, cv2.COLOR_RGBA2YUV_YV12):
        return h + h % 2, w + w % 2
    if code in (cv2.COLOR_BGR2YUV_YUY2, cv2.COLOR_RGB2YUV_UYVY, cv2.COLOR_BGR2YUV_YVYU):
        return h, w + w % 2
    return h, w


LAB_U8 = [cv2.COLOR_BGR2Lab, cv2.COLOR_RGB2Lab, cv2.COLOR_LBGR2Lab]


@pytest.mark.parametrize("code", EXACT_U8 + LSB1_U8 + LAB_U8)
def test_from_bgr_uint8(code):
    lsb = 0 if code in EXACT_U8 else 3 if code in LAB_U8 else 1
    for name, img in photos(color_only=True).items():
        h, w = _sized_for(code, *img.shape[:2])
        _check(np.ascontiguousarray(np.pad(img, ((0, h - img.shape[0]), (0, w - img.shape[1]), (0, 0)))), code, lsb)
    rng = np.random.default_rng(code)
    for h, w in SIZES:
        h, w = _sized_for(code, h, w)
        _check(random_image(rng, h, w, 3, np.uint8), code, lsb)


@pytest.mark.parametrize("code", LAB_U8)
def test_lab_uint8_over_the_colour_cube(code, simd):
    # Every 4th level of each channel and the top one (68^3 colours), 3- and 4-channel sources.
    levels = np.append(np.arange(0, 256, 4), [253, 254, 255]).astype(np.uint8)
    cube = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), -1).reshape(len(levels) ** 2, len(levels), 3)
    _check(np.ascontiguousarray(cube), code, lsb=3)
    _check(cv2.cvtColor(cube, cv2.COLOR_BGR2BGRA), code, lsb=3)


def test_channel_reorders_every_width(simd):
    # Reorders work on blocks of whole pixels (the red-blue swap on blocks of three vectors, the
    # others 4 or 8 pixels at a time, reading or writing a little past them); every pixel count
    # around the block sizes ends in a different tail.
    rng = np.random.default_rng(3)
    three = [cv2.COLOR_BGR2RGB, cv2.COLOR_RGB2BGR, cv2.COLOR_BGR2BGRA, cv2.COLOR_BGR2RGBA]
    four = [cv2.COLOR_BGRA2BGR, cv2.COLOR_RGBA2BGR, cv2.COLOR_BGRA2RGBA]
    for w in range(1, 100):
        img = random_image(rng, 1, w, 3, np.uint8)
        for code in three:
            _check(img, code)
        img = random_image(rng, 1, w, 4, np.uint8)
        for code in four:
            _check(img, code)
    _check(random_image(rng, 3, 4099, 3, np.uint8), cv2.COLOR_BGR2RGB)
    _check(random_image(rng, 3, 4099, 4, np.uint8), cv2.COLOR_BGRA2BGR)


@pytest.mark.parametrize("code", EXACT_U8_FOUR)
def test_from_bgra_uint8(code):
    rng = np.random.default_rng(code)
    for h, w in SIZES:
        _check(random_image(rng, h + h % 2, w + w % 2, 4, np.uint8), code)


@pytest.mark.parametrize("code", EXACT_U8_INVERSE + LSB1_U8_INVERSE)
def test_to_bgr_uint8(code):
    lsb = 0 if code in EXACT_U8_INVERSE else 1
    rng = np.random.default_rng(code)
    for h, w in SIZES:
        img = random_image(rng, h, w, 3, np.uint8)
        if code in (cv2.COLOR_HSV2BGR, cv2.COLOR_HSV2RGB, cv2.COLOR_HLS2BGR):
            img[..., 0] %= 180
        _check(img, code, lsb)
        _check(img, code, lsb, dstCn=4)


@pytest.mark.parametrize("forward,inverse", [(cv2.COLOR_BGR2Lab, cv2.COLOR_Lab2BGR), (cv2.COLOR_RGB2Luv, cv2.COLOR_Luv2RGB),
                                             (cv2.COLOR_LBGR2Lab, cv2.COLOR_Lab2LBGR), (cv2.COLOR_BGR2Luv, cv2.COLOR_Luv2BGR)])
def test_lab_luv_to_bgr_uint8(forward, inverse):
    # Colours inside the RGB gamut: those of photographs converted by OpenCV.
    lsb = 9 if inverse in (cv2.COLOR_Luv2RGB, cv2.COLOR_Luv2BGR) else 1
    for img in photos(color_only=True).values():
        _check(cv2.cvtColor(img, forward), inverse, lsb=lsb)


@pytest.mark.parametrize("code", [cv2.COLOR_GRAY2BGR, cv2.COLOR_GRAY2BGRA, cv2.COLOR_GRAY2BGR565, cv2.COLOR_GRAY2BGR555])
def test_from_gray_uint8(code):
    _check(photos()["camera"], code)
    _check(random_image(np.random.default_rng(0), 31, 47, 0, np.uint8), code)
    _check(random_image(np.random.default_rng(1), 31, 47, 1, np.uint8), code)


@pytest.mark.parametrize("code", [cv2.COLOR_BGR5652BGR, cv2.COLOR_BGR5652RGBA, cv2.COLOR_BGR5552BGRA,
                                  cv2.COLOR_BGR5552RGB, cv2.COLOR_BGR5652GRAY, cv2.COLOR_BGR5552GRAY])
def test_from_16_bit_uint8(code):
    every_value = np.arange(65536, dtype=np.uint16).view(np.uint8).reshape(256, 256, 2)
    _check(every_value, code)
    _check(random_image(np.random.default_rng(code), 9, 33, 2, np.uint8), code)


@pytest.mark.parametrize("code", FLOAT_CODES)
def test_from_bgr_float32(code):
    # OpenCV's Lab and Luv take cube roots from an interpolated table.
    tolerance = 2e-4 if code in (cv2.COLOR_LBGR2Lab, cv2.COLOR_LRGB2Luv) else 1e-5
    rng = np.random.default_rng(code)
    for h, w in SIZES:
        _check(random_image(rng, h, w, 3, np.float32), code, float_tol=tolerance)
    _check(random_image(rng, 17, 23, 4, np.float32), code, float_tol=tolerance)
    _check(photos()["coffee"].astype(np.float32) / 255, code, float_tol=tolerance)


@pytest.mark.parametrize("code,tolerance", [(cv2.COLOR_BGR2Lab, 0.5), (cv2.COLOR_RGB2Lab, 0.5), (cv2.COLOR_BGR2Luv, 0.02)])
def test_srgb_lab_luv_float32(code, tolerance):
    img = photos()["astronaut"].astype(np.float32) / 255
    np.testing.assert_allclose(np.asarray(cv.cvtColor(img, code)), cv2.cvtColor(img, code), rtol=0, atol=tolerance)


@pytest.mark.parametrize("code", FLOAT_INVERSE)
def test_to_bgr_float32(code):
    rng = np.random.default_rng(code)
    img = random_image(rng, 29, 41, 3, np.float32)
    if code in (cv2.COLOR_HSV2BGR, cv2.COLOR_HLS2RGB):
        img[..., 0] *= 360
    elif code in (cv2.COLOR_Lab2BGR, cv2.COLOR_Lab2LRGB):
        img = (img * [100, 200, 200] - [0, 100, 100]).astype(np.float32)
    elif code in (cv2.COLOR_Luv2BGR, cv2.COLOR_Luv2LBGR):
        img = cv2.cvtColor(random_image(rng, 29, 41, 3, np.float32), cv2.COLOR_BGR2Luv)
    tolerance = 1e-4 if code in (cv2.COLOR_Lab2BGR, cv2.COLOR_Luv2BGR, cv2.COLOR_Lab2LRGB, cv2.COLOR_Luv2LBGR) else 1e-5
    _check(img, code, float_tol=tolerance)
    _check(img, code, float_tol=tolerance, dstCn=4)


def _nv21_of(bgr, u_first=False):
    h, w = bgr.shape[:2]
    i420 = cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV_I420)
    u, v = i420[h:h + h // 4].reshape(-1), i420[h + h // 4:].reshape(-1)
    pairs = np.empty(u.size * 2, np.uint8)
    pairs[0::2], pairs[1::2] = (u, v) if u_first else (v, u)
    return np.concatenate([i420[:h].reshape(-1), pairs]).reshape(h * 3 // 2, w)


YUV420_CODES = [cv2.COLOR_YUV2BGR_NV21, cv2.COLOR_YUV2RGB_NV21, cv2.COLOR_YUV2BGRA_NV21, cv2.COLOR_YUV2RGBA_NV12,
                cv2.COLOR_YUV2BGR_NV12, cv2.COLOR_YUV2BGR_I420, cv2.COLOR_YUV2RGBA_IYUV, cv2.COLOR_YUV2BGR_YV12,
                cv2.COLOR_YUV2RGB_YV12, cv2.COLOR_YUV2GRAY_420]


@pytest.mark.parametrize("code", YUV420_CODES)
def test_yuv420_to_bgr(code):
    for img in photos(color_only=True).values():
        _check(_nv21_of(img[: img.shape[0] // 2 * 2, : img.shape[1] // 2 * 2]), code)
    rng = np.random.default_rng(code)
    for h, w in [(6, 10), (18, 34), (102, 66), (9, 40)]:  # heights divisible by 3 (odd chroma rows too)
        _check(random_image(rng, h, w, 0, np.uint8), code)


@pytest.mark.parametrize("code", [cv2.COLOR_YUV2BGR_NV12, cv2.COLOR_YUV2RGB_NV21, cv2.COLOR_YUV2BGRA_NV21,
                                  cv2.COLOR_YUV2RGBA_NV12])
def test_two_plane(code):
    rng = np.random.default_rng(code)
    y = random_image(rng, 36, 50, 0, np.uint8)
    uv = random_image(rng, 18, 25, 2, np.uint8)
    assert_within_lsb(cv.cvtColorTwoPlane(y, uv, code), cv2.cvtColorTwoPlane(y, uv, code), lsb=0)


@pytest.mark.parametrize("code", [cv2.COLOR_YUV2BGR_UYVY, cv2.COLOR_YUV2RGBA_UYVY, cv2.COLOR_YUV2BGR_YUY2,
                                  cv2.COLOR_YUV2RGB_YUYV, cv2.COLOR_YUV2BGRA_YVYU, cv2.COLOR_YUV2RGB_YVYU,
                                  cv2.COLOR_YUV2GRAY_UYVY, cv2.COLOR_YUV2GRAY_YUY2])
def test_yuv422_to_bgr(code):
    rng = np.random.default_rng(code)
    for h, w in [(7, 10), (33, 66)]:
        _check(random_image(rng, h, w, 2, np.uint8), code)


def test_dst_channels():
    img = random_image(np.random.default_rng(0), 11, 13, 3, np.uint8)
    for code, cn in [(cv2.COLOR_BGR2RGB, 4), (cv2.COLOR_BGR2BGRA, 3), (cv2.COLOR_BGR2GRAY, 3), (cv2.COLOR_BGR2HSV, 4)]:
        _check(img, code, dstCn=cn)
    four = random_image(np.random.default_rng(1), 11, 13, 4, np.uint8)
    for code in (cv2.COLOR_BGR2RGB, cv2.COLOR_BGR2HSV, cv2.COLOR_BGR2YCrCb, cv2.COLOR_BGR2XYZ):
        _check(four, code)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32", "float64"])
def test_split_merge(dtype):
    rng = np.random.default_rng(0)
    for c in (1, 2, 3, 4):
        img = (rng.random((23, 37, c)) * 200).astype(dtype)
        if c == 1:
            img = img[..., 0]
        ours, expected = cv.split(img), cv2.split(img)
        assert isinstance(ours, tuple) and len(ours) == len(expected)
        for o, e in zip(ours, expected):
            np.testing.assert_array_equal(np.asarray(o), e)
        planes = list(expected)
        np.testing.assert_array_equal(np.asarray(cv.merge(planes)), cv2.merge(planes))
        np.testing.assert_array_equal(np.asarray(cv.merge(list(ours))), cv2.merge(planes))
    a, b = img[..., :2].copy(), img[..., 2].copy()
    np.testing.assert_array_equal(np.asarray(cv.merge([a, b])), cv2.merge([a, b]))


def test_chain_of_vars():
    img = photos()["coffee"]
    gray = cv.cvtColor(cv.cvtColor(img, cv2.COLOR_BGR2RGB), cv2.COLOR_RGB2GRAY)
    assert_within_lsb(gray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), lsb=0)


def _same_error(call):
    with pytest.raises(cv2.error):
        call(cv2)
    with pytest.raises(cv.error):
        ours = call(cv)
        np.asarray(ours)


@pytest.mark.parametrize("call", [
    lambda m: m.cvtColor(np.zeros((4, 6), np.uint8), m.COLOR_BGR2GRAY),
    lambda m: m.cvtColor(np.zeros((4, 6, 3), np.uint8), m.COLOR_GRAY2BGR),
    lambda m: m.cvtColor(np.zeros((4, 6, 4), np.uint8), m.COLOR_HSV2BGR),
    lambda m: m.cvtColor(np.zeros((4, 6, 3), np.uint8), 200),
    lambda m: m.cvtColor(np.zeros((4, 6, 3), np.uint8), m.COLOR_BGR2RGB, dstCn=7),
    lambda m: m.cvtColor(np.zeros((4, 6, 3), np.uint8), m.COLOR_YCrCb2BGR, dstCn=2),
    lambda m: m.cvtColor(np.zeros((4, 6, 3), np.float64), m.COLOR_BGR2RGB),
    lambda m: m.cvtColor(np.zeros((4, 6, 3), np.int16), m.COLOR_BGR2GRAY),
    lambda m: m.cvtColor(np.zeros((7, 6), np.uint8), m.COLOR_YUV2BGR_NV21),
    lambda m: m.cvtColor(np.zeros((6, 5), np.uint8), m.COLOR_YUV2BGR_I420),
    lambda m: m.cvtColor(np.zeros((5, 6, 3), np.uint8), m.COLOR_BGR2YUV_I420),
    lambda m: m.cvtColor(np.zeros((4, 6, 3), np.float32), m.COLOR_BGR2BGR565),
    lambda m: m.cvtColor(np.zeros((4, 5, 2), np.uint8), m.COLOR_YUV2BGR_YUY2),
    lambda m: m.cvtColor(np.zeros((4, 6, 3), np.float32), m.COLOR_YUV2BGR_NV12),
    lambda m: m.cvtColor(np.zeros((0, 6, 3), np.uint8), m.COLOR_BGR2RGB),
    lambda m: m.cvtColor(np.zeros((4, 6, 3), np.uint8), m.COLOR_BayerBG2BGR),
    lambda m: m.cvtColorTwoPlane(np.zeros((4, 6), np.uint8), np.zeros((2, 6), np.uint8), m.COLOR_YUV2BGR_NV12),
    lambda m: m.cvtColorTwoPlane(np.zeros((4, 6), np.uint8), np.zeros((2, 3, 2), np.uint8), m.COLOR_YUV2BGR_I420),
    lambda m: m.merge([np.zeros((4, 6), np.uint8), np.zeros((4, 5), np.uint8)]),
    lambda m: m.merge([np.zeros((4, 6), np.uint8), np.zeros((4, 6), np.float32)]),
    lambda m: m.merge([]),
])
def test_errors(call):
    _same_error(call)


@pytest.mark.parametrize("call", [
    lambda m: m.cvtColor(np.zeros((4, 6, 3), np.uint8), "x"),
    lambda m: m.cvtColor(None, 4),
    lambda m: m.cvtColor(np.zeros((4, 6, 3), np.uint8), 4, dstCn="a"),
])
def test_type_errors(call):
    with pytest.raises((TypeError, cv2.error)):  # cv2 5.0 reports failed overload resolution as cv2.error
        call(cv2)
    with pytest.raises(TypeError):
        call(cv)


def test_constants():
    names = [n for n in dir(cv2) if n.startswith("COLOR_")]
    assert names
    for n in names:
        assert getattr(cv, n) == getattr(cv2, n), n
        assert n in cv._color.__all__


def test_uint16_refused_clearly():
    # OpenCV converts uint16 images too; the core has no uint16 yet, so mnnpy says so.
    with pytest.raises(cv.error, match="uint16"):
        cv.cvtColor(np.zeros((4, 6, 3), np.uint16), cv2.COLOR_BGR2RGB)


BAYER_COLOR_CODES = [cv2.COLOR_BayerBG2BGR, cv2.COLOR_BayerGB2BGR, cv2.COLOR_BayerRG2BGR, cv2.COLOR_BayerGR2BGR,
                     cv2.COLOR_BayerBG2RGB, cv2.COLOR_BayerGR2RGB, cv2.COLOR_BayerBG2BGRA, cv2.COLOR_BayerGB2RGBA,
                     cv2.COLOR_BayerRG2BGRA, cv2.COLOR_BayerGR2BGRA]
BAYER_GRAY_CODES = [cv2.COLOR_BayerBG2GRAY, cv2.COLOR_BayerGB2GRAY, cv2.COLOR_BayerRG2GRAY, cv2.COLOR_BayerGR2GRAY]


def _mosaic_of(bgr):
    """An RGGB mosaic of a BGR photograph (one channel per site)."""
    mosaic = bgr[..., 1].copy()
    mosaic[0::2, 0::2] = bgr[0::2, 0::2, 2]
    mosaic[1::2, 1::2] = bgr[1::2, 1::2, 0]
    return mosaic


@pytest.fixture
def single_threaded_cv2():
    # OpenCV's threaded Bayer-to-gray writes the first column of a chunk's first row from the
    # neighbouring chunk's unfinished row, so its result varies run to run; one thread is stable.
    threads = cv2.getNumThreads()
    cv2.setNumThreads(1)
    yield
    cv2.setNumThreads(threads)


@pytest.mark.parametrize("code", BAYER_COLOR_CODES + BAYER_GRAY_CODES)
def test_bayer(code, single_threaded_cv2):
    lsb = 1 if code in BAYER_GRAY_CODES else 0
    for img in photos(color_only=True).values():
        _check(_mosaic_of(img), code, lsb=lsb)
    rng = np.random.default_rng(code)
    for h, w in [(37, 53), (6, 131), (64, 64), (3, 3), (4, 7)]:
        _check(random_image(rng, h, w, 0, np.uint8), code, lsb=lsb)


def test_bayer_refusals():
    img = np.zeros((6, 8), np.uint8)
    for code in (cv2.COLOR_BayerBG2BGR_VNG, cv2.COLOR_BayerGR2BGR_EA):
        with pytest.raises(cv.error, match="not implemented"):
            cv.cvtColor(img, code)
    _same_error(lambda m: m.cvtColor(np.zeros((6, 8), np.float32), m.COLOR_BayerBG2BGR))
