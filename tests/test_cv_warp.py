"""mnnpy.cv warps and pyramids against OpenCV (cv2) on photographs and random images.

What holds, per function:
- warpAffine / warpPerspective / remap (float maps), uint8 and float32 with 1, 3 or 4 channels,
  INTER_NEAREST and INTER_LINEAR (OpenCV 5 samples these at float32 positions): uint8 exact,
  float32 within 1e-5 of the range, for every border mode (BORDER_TRANSPARENT included).
- The same with int16 / float64 images, 2 or 5 channels, or fixed-point (CV_16SC2) maps
  (OpenCV's 1/32-pixel positions and 15-bit weights): uint8 and int16 exact for nearest and
  bilinear; float within 1e-4 of the range.
- INTER_CUBIC (float32 positions and weights) and INTER_LANCZOS4 (1/32-pixel positions, 15-bit
  weights for uint8): within 1 LSB on uint8 / int16 (exact in practice), 1e-4 of the range on
  floats; float64 bicubic within 5e-3 of the range (OpenCV samples some of its rows at 1/32-pixel
  positions).
- convertMaps: exact in every direction. getRectSubPix: within 1 LSB (uint8), 1e-5 (float32).
- getRotationMatrix2D, invertAffineTransform of float64: exact; invertAffineTransform of
  float32: within 2 float32 ulps; getAffineTransform, getPerspectiveTransform: within 1e-12
  (relative).
- pyrDown, pyrUp: exact on uint8 and int16, 1e-5 of the range on floats. hconcat, vconcat: exact.
"""
import cv2
import numpy as np
import pytest

import mnnpy.cv as mcv
from cv_helpers import assert_within_lsb, perspective_matrix, photos, random_image, rotation_matrix

BORDERS = [cv2.BORDER_CONSTANT, cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT, cv2.BORDER_WRAP, cv2.BORDER_REFLECT_101]


def _image(rng, shape, dtype):
    if np.dtype(dtype) == np.int16:
        return rng.integers(-3000, 3000, shape).astype(np.int16)
    if np.dtype(dtype) == np.uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return (rng.random(shape) * 255).astype(dtype)


def _check(ours, ref, lsb=0, float_tol=1e-5):
    ours = np.asarray(ours)
    if ref.dtype.kind in "iu" and lsb == 0:
        assert ours.shape == ref.shape and ours.dtype == ref.dtype, (ours.shape, ours.dtype, ref.shape, ref.dtype)
        diff = ours.astype(np.int64) != ref
        assert not diff.any(), f"{diff.sum()} differences, first at {np.argwhere(diff)[0]}"
    else:
        assert_within_lsb(ours, ref, lsb=max(lsb, 0), float_tol=float_tol)


def _shape(h, w, cn):
    return (h, w) if cn == 1 else (h, w, cn)


# --- warpAffine / warpPerspective ------------------------------------------------------------

@pytest.mark.parametrize("interpolation", [cv2.INTER_NEAREST, cv2.INTER_LINEAR])
def test_warp_affine_photos_exact(interpolation):
    for name, img in photos().items():
        h, w = img.shape[:2]
        M = rotation_matrix(w, h)
        _check(mcv.warpAffine(img, M, (w, h), flags=interpolation),
               cv2.warpAffine(img, M, (w, h), flags=interpolation))
        # A crop to 224x224 that scales and rotates, with the inverse map given.
        S = cv2.getRotationMatrix2D((w / 2, h / 2), -20, 224 / min(w, h))
        S[:, 2] -= (w / 2 - 112, h / 2 - 112)
        flags = interpolation | cv2.WARP_INVERSE_MAP
        inv = cv2.invertAffineTransform(S)
        _check(mcv.warpAffine(img, inv, (224, 224), flags=flags), cv2.warpAffine(img, inv, (224, 224), flags=flags))


@pytest.mark.parametrize("cn", [1, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("border", BORDERS)
def test_warp_float_positions_borders(rng, cn, dtype, border):
    # Odd widths leave a tail that OpenCV computes apart from its vector loop.
    for (h, w), (dh, dw) in (((67, 93), (71, 101)), ((33, 18), (29, 47)), ((2, 9), (5, 7))):
        img = _image(rng, _shape(h, w, cn), dtype)
        M = rotation_matrix(w, h, angle=rng.uniform(-180, 180), scale=rng.uniform(0.5, 1.6))
        P = perspective_matrix(w, h)
        value = (17, 200, 90, 33)
        for interpolation in (cv2.INTER_NEAREST, cv2.INTER_LINEAR):
            _check(mcv.warpAffine(img, M, (dw, dh), flags=interpolation, borderMode=border, borderValue=value),
                   cv2.warpAffine(img, M, (dw, dh), flags=interpolation, borderMode=border, borderValue=value))
            _check(mcv.warpPerspective(img, P, (dw, dh), flags=interpolation, borderMode=border, borderValue=value),
                   cv2.warpPerspective(img, P, (dw, dh), flags=interpolation, borderMode=border, borderValue=value))


@pytest.mark.parametrize("cn", [1, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_warp_transparent(rng, cn, dtype):
    h, w = 45, 77
    img = _image(rng, _shape(h, w, cn), dtype)
    base = _image(rng, _shape(50, 69, cn), dtype)
    M = rotation_matrix(w, h, angle=33, scale=0.8)
    for interpolation in (cv2.INTER_NEAREST, cv2.INTER_LINEAR):
        ref = cv2.warpAffine(img, M, (69, 50), dst=base.copy(), flags=interpolation,
                             borderMode=cv2.BORDER_TRANSPARENT)
        _check(mcv.warpAffine(img, M, (69, 50), dst=base.copy(), flags=interpolation,
                              borderMode=cv2.BORDER_TRANSPARENT), ref)


@pytest.mark.parametrize("dtype", [np.int16, np.float64])
@pytest.mark.parametrize("cn", [1, 3])
def test_warp_fixed_point_types(rng, dtype, cn):
    h, w = 53, 71
    img = _image(rng, _shape(h, w, cn), dtype)
    M, P = rotation_matrix(w, h, angle=-27), perspective_matrix(w, h)
    tol = 1e-4
    for border in (cv2.BORDER_CONSTANT, cv2.BORDER_REFLECT_101, cv2.BORDER_WRAP):
        for interpolation in (cv2.INTER_NEAREST, cv2.INTER_LINEAR):
            _check(mcv.warpAffine(img, M, (w, h), flags=interpolation, borderMode=border, borderValue=7),
                   cv2.warpAffine(img, M, (w, h), flags=interpolation, borderMode=border, borderValue=7),
                   float_tol=tol)
            _check(mcv.warpPerspective(img, P, (w, h), flags=interpolation, borderMode=border, borderValue=7),
                   cv2.warpPerspective(img, P, (w, h), flags=interpolation, borderMode=border, borderValue=7),
                   float_tol=tol)


@pytest.mark.parametrize("cn", [2, 5])
def test_warp_other_channel_counts(rng, cn):
    h, w = 40, 51
    img = _image(rng, (h, w, cn), np.uint8)
    M = rotation_matrix(w, h, angle=40)
    for interpolation in (cv2.INTER_NEAREST, cv2.INTER_LINEAR):
        _check(mcv.warpAffine(img, M, (w, h), flags=interpolation), cv2.warpAffine(img, M, (w, h), flags=interpolation))


@pytest.mark.parametrize("interpolation", [cv2.INTER_CUBIC, cv2.INTER_LANCZOS4])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
def test_warp_cubic_lanczos(rng, interpolation, dtype):
    h, w = 48, 61
    for cn in (1, 3):
        img = _image(rng, _shape(h, w, cn), dtype)
        M, P = rotation_matrix(w, h, angle=21, scale=1.3), perspective_matrix(w, h)
        # OpenCV samples the first and last rows of a float64 bicubic warp at 1/32-pixel
        # positions and the rest at float positions; mnnpy samples all at float positions.
        float_tol = 5e-3 if (dtype, interpolation) == (np.float64, cv2.INTER_CUBIC) else 1e-4
        for border in (cv2.BORDER_CONSTANT, cv2.BORDER_REFLECT):
            _check(mcv.warpAffine(img, M, (w, h), flags=interpolation, borderMode=border),
                   cv2.warpAffine(img, M, (w, h), flags=interpolation, borderMode=border), lsb=1, float_tol=float_tol)
            _check(mcv.warpPerspective(img, P, (w, h), flags=interpolation, borderMode=border),
                   cv2.warpPerspective(img, P, (w, h), flags=interpolation, borderMode=border), lsb=1,
                   float_tol=float_tol)


def test_warp_area_is_linear():
    img = photos()["astronaut"]
    M = rotation_matrix(512, 512, angle=10, scale=0.5)
    _check(mcv.warpAffine(img, M, (256, 256), flags=cv2.INTER_AREA),
           cv2.warpAffine(img, M, (256, 256), flags=cv2.INTER_AREA))


def test_warp_defaults_and_sizes(rng):
    img = _image(rng, (30, 41, 3), np.uint8)
    M = rotation_matrix(41, 30)
    _check(mcv.warpAffine(img, M, (0, 0)), cv2.warpAffine(img, M, (0, 0)))
    _check(mcv.warpAffine(img, M.astype(np.float32), (20, 50), borderValue=100),
           cv2.warpAffine(img, M.astype(np.float32), (20, 50), borderValue=100))
    single = img[:, :, :1]
    _check(mcv.warpAffine(single, M, (41, 30)), cv2.warpAffine(single, M, (41, 30)))


def test_warp_errors():
    img = np.zeros((10, 12, 3), np.uint8)
    M = np.float32([[1, 0, 0], [0, 1, 0]])
    for call in (lambda m: m.warpAffine(img, M.astype(np.int32), (5, 5)),
                 lambda m: m.warpAffine(img, np.eye(3), (5, 5)),
                 lambda m: m.warpPerspective(img, M, (5, 5)),
                 lambda m: m.warpAffine(img, M, (5, 5), flags=5),
                 lambda m: m.warpAffine(img, M, (5, 5, 5)),
                 lambda m: m.warpAffine(img, M, (5.5, 5)),
                 lambda m: m.warpAffine(img, M, (5, 5), borderValue=(1, 2, 3, 4, 5)),
                 lambda m: m.warpAffine(np.zeros((10, 12, 5), np.uint8), M, (5, 5), flags=cv2.INTER_CUBIC),
                 lambda m: m.warpAffine(np.zeros((10, 12), np.int32), M, (5, 5))):
        with pytest.raises(cv2.error):
            call(cv2)
        with pytest.raises(mcv.error):
            call(mcv)


# --- remap / convertMaps ---------------------------------------------------------------------

def _maps(rng, h, w, sh, sw):
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    mapx = (xs * (sw / w) + 3 * np.sin(ys / 5) + rng.uniform(-2, 2, (h, w))).astype(np.float32)
    mapy = (ys * (sh / h) + 3 * np.cos(xs / 7) + rng.uniform(-2, 2, (h, w))).astype(np.float32)
    return mapx, mapy


@pytest.mark.parametrize("cn", [1, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int16])
def test_remap_forms(rng, cn, dtype):
    sh, sw, h, w = 41, 57, 37, 45
    img = _image(rng, _shape(sh, sw, cn), dtype)
    mapx, mapy = _maps(rng, h, w, sh, sw)
    packed = np.dstack([mapx, mapy])
    fixed, frac = cv2.convertMaps(mapx, mapy, cv2.CV_16SC2)
    nn_fixed, _ = cv2.convertMaps(mapx, mapy, cv2.CV_16SC2, nninterpolation=True)
    for border in (cv2.BORDER_CONSTANT, cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT_101):
        for interpolation in (cv2.INTER_NEAREST, cv2.INTER_LINEAR):
            for m1, m2 in ((mapx, mapy), (packed, None), (fixed, frac)):
                _check(mcv.remap(img, m1, m2, interpolation, borderMode=border, borderValue=(5, 6, 7, 8)),
                       cv2.remap(img, m1, m2, interpolation, borderMode=border, borderValue=(5, 6, 7, 8)))
        _check(mcv.remap(img, nn_fixed, None, cv2.INTER_NEAREST, borderMode=border),
               cv2.remap(img, nn_fixed, None, cv2.INTER_NEAREST, borderMode=border))
    _check(mcv.remap(img, mapx, mapy, cv2.INTER_CUBIC), cv2.remap(img, mapx, mapy, cv2.INTER_CUBIC), lsb=1,
           float_tol=1e-4)


def test_remap_relative_and_photo(rng):
    img = photos()["coffee"]
    h, w = img.shape[:2]
    dx = rng.uniform(-4, 4, (h, w)).astype(np.float32)
    dy = rng.uniform(-4, 4, (h, w)).astype(np.float32)
    flags = cv2.INTER_LINEAR | cv2.WARP_RELATIVE_MAP
    _check(mcv.remap(img, dx, dy, flags), cv2.remap(img, dx, dy, flags))


def test_convert_maps_exact(rng):
    mapx, mapy = _maps(rng, 23, 31, 40, 50)
    packed = np.dstack([mapx, mapy])
    for nn in (False, True):
        for src in ((mapx, mapy), (packed, None)):
            ours = mcv.convertMaps(*src, cv2.CV_16SC2, nninterpolation=nn)
            ref = cv2.convertMaps(*src, cv2.CV_16SC2, nninterpolation=nn)
            _check(ours[0], ref[0])
            if nn:
                assert ours[1] is None or ref[1] is None or ref[1].size == 0
            else:
                assert isinstance(ours[1], np.ndarray) and ours[1].dtype == np.uint16
                _check(ours[1], ref[1])
    fixed, frac = cv2.convertMaps(mapx, mapy, cv2.CV_16SC2)
    for kind in (cv2.CV_32FC1, cv2.CV_32FC2):
        ours = mcv.convertMaps(fixed, frac, kind)
        ref = cv2.convertMaps(fixed, frac, kind)
        _check(ours[0], ref[0])
        if kind == cv2.CV_32FC1:
            _check(ours[1], ref[1])
    ours = mcv.convertMaps(mapx, mapy, cv2.CV_32FC2)
    _check(ours[0], cv2.convertMaps(mapx, mapy, cv2.CV_32FC2)[0])


def test_remap_errors():
    img = np.zeros((10, 12), np.uint8)
    mapx = np.zeros((4, 5), np.float32)
    for call in (lambda m: m.remap(img, mapx, np.zeros((4, 6), np.float32), cv2.INTER_LINEAR),
                 lambda m: m.remap(img, mapx.astype(np.float64), mapx, cv2.INTER_LINEAR)):
        with pytest.raises(cv2.error):
            call(cv2)
        with pytest.raises(mcv.error):
            call(mcv)


# --- matrices --------------------------------------------------------------------------------

def test_matrices(rng):
    for center, angle, scale in (((10.3, 20.7), 30, 1.0), ((0, 0), -123.4, 0.37), ((511.5, 3), 90, 2)):
        np.testing.assert_array_equal(mcv.getRotationMatrix2D(center, angle, scale),
                                      cv2.getRotationMatrix2D(center, angle, scale))
    for _ in range(20):
        s3, d3 = rng.uniform(0, 500, (2, 3, 2)).astype(np.float32)
        np.testing.assert_allclose(mcv.getAffineTransform(s3, d3), cv2.getAffineTransform(s3, d3), rtol=1e-12,
                                   atol=1e-12 * np.abs(cv2.getAffineTransform(s3, d3)).max())
        s4, d4 = rng.uniform(0, 500, (2, 4, 2)).astype(np.float32)
        ref = cv2.getPerspectiveTransform(s4, d4)
        np.testing.assert_allclose(mcv.getPerspectiveTransform(s4, d4), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
        for dtype in (np.float32, np.float64):
            M = rng.uniform(-3, 3, (2, 3)).astype(dtype)
            ours, ref = mcv.invertAffineTransform(M), cv2.invertAffineTransform(M)
            assert ours.dtype == ref.dtype
            if dtype == np.float64:
                np.testing.assert_array_equal(ours, ref)
            else:
                np.testing.assert_allclose(ours, ref, rtol=3e-7, atol=3e-7 * np.abs(ref).max())
    np.testing.assert_array_equal(mcv.invertAffineTransform(np.zeros((2, 3))), cv2.invertAffineTransform(np.zeros((2, 3))))


def test_matrix_errors():
    p3, p4 = np.float32([[0, 0], [1, 0], [0, 1]]), np.float32([[0, 0], [1, 0], [0, 1], [1, 1]])
    for call in (lambda m: m.getAffineTransform(p4, p4), lambda m: m.getAffineTransform(p3.astype(np.float64), p3),
                 lambda m: m.getPerspectiveTransform(p3, p3), lambda m: m.invertAffineTransform(np.eye(3)),
                 lambda m: m.invertAffineTransform(np.zeros((2, 3), np.int32))):
        with pytest.raises(cv2.error):
            call(cv2)
        with pytest.raises(mcv.error):
            call(mcv)
    for call in (lambda m: m.getRotationMatrix2D((1, 2, 3), 30, 1), lambda m: m.getRotationMatrix2D((1, 2), "a", 1)):
        with pytest.raises(TypeError):
            call(cv2)
        with pytest.raises(TypeError):
            call(mcv)


# --- getRectSubPix ---------------------------------------------------------------------------

@pytest.mark.parametrize("cn", [1, 3])
def test_get_rect_sub_pix(rng, cn):
    img = _image(rng, _shape(40, 53, cn), np.uint8)
    imgf = img.astype(np.float32)
    for size, center in (((9, 7), (20.3, 15.8)), ((16, 16), (2.5, 1.2)), ((11, 5), (51.7, 38.9)), ((6, 4), (-1, 38.6))):
        _check(mcv.getRectSubPix(img, size, center), cv2.getRectSubPix(img, size, center), lsb=1)
        _check(mcv.getRectSubPix(img, size, center, patchType=cv2.CV_32F),
               cv2.getRectSubPix(img, size, center, patchType=cv2.CV_32F), float_tol=1e-5)
        _check(mcv.getRectSubPix(imgf, size, center), cv2.getRectSubPix(imgf, size, center), float_tol=1e-5)


# --- pyramids --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
def test_pyramids(rng, dtype):
    for h, w, cn in ((64, 48, 3), (37, 29, 1), (5, 3, 4), (1, 1, 1), (2, 7, 3)):
        img = _image(rng, _shape(h, w, cn), dtype)
        for border in (cv2.BORDER_DEFAULT, cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT):
            _check(mcv.pyrDown(img, borderType=border), cv2.pyrDown(img, borderType=border))
        _check(mcv.pyrUp(img), cv2.pyrUp(img))
    img = _image(rng, (37, 29, 3), dtype)
    for size in ((14, 18), (15, 19), (14, 19)):
        _check(mcv.pyrDown(img, dstsize=size), cv2.pyrDown(img, dstsize=size))
    for size in ((58, 74), (59, 75), (59, 74)):
        _check(mcv.pyrUp(img, dstsize=size), cv2.pyrUp(img, dstsize=size))


def test_pyramid_photos():
    for name, img in photos().items():
        _check(mcv.pyrDown(img), cv2.pyrDown(img))
        _check(mcv.pyrUp(img), cv2.pyrUp(img))


def test_pyramid_errors():
    img = np.zeros((20, 30, 3), np.uint8)
    for call in (lambda m: m.pyrDown(img, dstsize=(5, 5)), lambda m: m.pyrUp(img, dstsize=(40, 40)),
                 lambda m: m.pyrDown(img, borderType=cv2.BORDER_CONSTANT),
                 lambda m: m.pyrUp(img, borderType=cv2.BORDER_REPLICATE)):
        with pytest.raises(cv2.error):
            call(cv2)
        with pytest.raises(mcv.error):
            call(mcv)


# --- hconcat / vconcat -----------------------------------------------------------------------

def test_concat(rng):
    a, b = random_image(rng, 10, 7, 3, np.uint8), random_image(rng, 10, 4, 3, np.uint8)
    c = random_image(rng, 5, 7, 3, np.uint8)
    _check(mcv.hconcat([a, b]), cv2.hconcat([a, b]))
    _check(mcv.vconcat([a, c]), cv2.vconcat([a, c]))
    g1, g2 = random_image(rng, 6, 3, 0, np.float32), random_image(rng, 6, 5, 0, np.float32)
    _check(mcv.hconcat((g1, g2, g1)), cv2.hconcat((g1, g2, g1)))
    for call in (lambda m: m.hconcat([a, c]), lambda m: m.vconcat([a, b]),
                 lambda m: m.hconcat([a, b.astype(np.float32)])):
        with pytest.raises(cv2.error):
            call(cv2)
        with pytest.raises(mcv.error):
            call(mcv)
    assert cv2.hconcat([]) is None and mcv.hconcat([]) is None
