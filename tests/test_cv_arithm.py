"""mnnpy.cv per-pixel arithmetic and statistics against OpenCV.

Exact: convertScaleAbs, the bitwise operations, copyTo, blendLinear, minMaxLoc, normalize
(uint8 and float results), equalizeHist, calcHist. Within 1 LSB: addWeighted on uint8 (OpenCV's
SIMD path may contract a*alpha + b*beta into one rounding). mean and meanStdDev: within 1e-10.
"""
import cv2
import numpy as np
import pytest

import mnnpy.cv as mcv
from cv_helpers import assert_within_lsb, photos, random_image


def same(ours, expected):
    ours = np.asarray(ours)
    assert ours.shape == expected.shape and ours.dtype == expected.dtype, (ours.shape, ours.dtype, expected.shape,
                                                                           expected.dtype)
    np.testing.assert_array_equal(ours, expected)


@pytest.fixture(params=[0, 1, 3, 4])
def pair(request):
    rng = np.random.default_rng(request.param)
    return (random_image(rng, 37, 41, request.param, np.uint8), random_image(rng, 37, 41, request.param, np.uint8),
            (rng.random((37, 41)) > 0.5).astype(np.uint8))


def test_add_weighted(pair):
    a, b, _ = pair
    for alpha, beta, gamma in ((0.3, 0.7, 2.5), (1.5, -0.5, 0.0), (0.5, 0.5, 0.5)):
        assert_within_lsb(mcv.addWeighted(a, alpha, b, beta, gamma), cv2.addWeighted(a, alpha, b, beta, gamma))
        ours = np.asarray(mcv.addWeighted(a, alpha, b, beta, gamma, dtype=cv2.CV_32F))
        np.testing.assert_allclose(ours, cv2.addWeighted(a, alpha, b, beta, gamma, dtype=cv2.CV_32F), rtol=1e-6, atol=1e-4)
    fa, fb = a.astype(np.float32) / 255, b.astype(np.float32) / 255
    np.testing.assert_allclose(np.asarray(mcv.addWeighted(fa, 0.2, fb, 0.8, 0.1)), cv2.addWeighted(fa, 0.2, fb, 0.8, 0.1),
                               rtol=1e-6, atol=1e-6)
    with pytest.raises(mcv.error):
        mcv.addWeighted(a, 1, b[:5], 1, 0)


def test_convert_scale_abs(pair):
    a, _, _ = pair
    same(mcv.convertScaleAbs(a), cv2.convertScaleAbs(a))
    signed = a.astype(np.int16) - 128
    same(mcv.convertScaleAbs(signed, alpha=1.7, beta=-3), cv2.convertScaleAbs(signed, alpha=1.7, beta=-3))
    floats = (a.astype(np.float32) - 100) * 3.25
    same(mcv.convertScaleAbs(floats, alpha=0.5, beta=0.25), cv2.convertScaleAbs(floats, alpha=0.5, beta=0.25))


def test_bitwise_and_copy_to(pair):
    a, b, mask = pair
    for ours, theirs in ((mcv.bitwise_and, cv2.bitwise_and), (mcv.bitwise_or, cv2.bitwise_or),
                         (mcv.bitwise_xor, cv2.bitwise_xor)):
        same(ours(a, b), theirs(a, b))
        same(ours(a, b, mask=mask), theirs(a, b, mask=mask))
    same(mcv.bitwise_not(a), cv2.bitwise_not(a))
    same(mcv.bitwise_not(a, mask=mask), cv2.bitwise_not(a, mask=mask))
    same(mcv.copyTo(a, mask), cv2.copyTo(a, mask))


def test_blend_linear(pair):
    a, b, _ = pair
    rng = np.random.default_rng(5)
    w1, w2 = (rng.random(a.shape[:2]).astype(np.float32) for _ in range(2))
    same(mcv.blendLinear(a, b, w1, w2), cv2.blendLinear(a, b, w1, w2))
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    np.testing.assert_allclose(np.asarray(mcv.blendLinear(fa, fb, w1, w2)), cv2.blendLinear(fa, fb, w1, w2), rtol=1e-6)


def test_statistics(pair):
    a, _, mask = pair
    np.testing.assert_allclose(mcv.mean(a), cv2.mean(a), rtol=1e-12)
    np.testing.assert_allclose(mcv.mean(a, mask), cv2.mean(a, mask=mask), rtol=1e-12)
    for ours, theirs in zip(mcv.meanStdDev(a), cv2.meanStdDev(a)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)
    for ours, theirs in zip(mcv.meanStdDev(a, mask=mask), cv2.meanStdDev(a, mask=mask)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_min_max_loc():
    for image in photos().values():
        gray = image if image.ndim == 2 else image[..., 1].copy()
        assert mcv.minMaxLoc(gray) == cv2.minMaxLoc(gray)
        mask = np.zeros(gray.shape, np.uint8)
        mask[40:90, 17:200] = 1
        assert mcv.minMaxLoc(gray, mask) == cv2.minMaxLoc(gray, mask)
    floats = np.random.default_rng(2).standard_normal((13, 17)).astype(np.float32)
    assert mcv.minMaxLoc(floats) == cv2.minMaxLoc(floats)
    with pytest.raises(mcv.error):
        mcv.minMaxLoc(np.zeros((3, 3, 3), np.uint8))


@pytest.mark.parametrize("norm_type", [cv2.NORM_MINMAX, cv2.NORM_INF, cv2.NORM_L1, cv2.NORM_L2])
def test_normalize(pair, norm_type):
    a, _, mask = pair
    alpha, beta = (10, 200) if norm_type == cv2.NORM_MINMAX else (5000 if norm_type == cv2.NORM_L1 else 255, 0)
    same(mcv.normalize(a, None, alpha, beta, norm_type), cv2.normalize(a, None, alpha, beta, norm_type))
    np.testing.assert_allclose(np.asarray(mcv.normalize(a, None, 1, 0, norm_type, dtype=cv2.CV_32F)),
                               cv2.normalize(a, None, 1, 0, norm_type, dtype=cv2.CV_32F), rtol=1e-6, atol=1e-7)
    if a.ndim == 2:
        same(mcv.normalize(a, None, alpha, beta, norm_type, mask=mask),
             cv2.normalize(a, None, alpha, beta, norm_type, mask=mask))
    with pytest.raises(mcv.error):
        mcv.normalize(a, None, 1, 0, 3)


def test_equalize_hist():
    for image in photos().values():
        gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        same(mcv.equalizeHist(gray), cv2.equalizeHist(gray))
    rng = np.random.default_rng(4)
    for gray in (rng.integers(40, 90, (33, 47), dtype=np.uint8), np.full((5, 6), 9, np.uint8)):
        same(mcv.equalizeHist(gray), cv2.equalizeHist(gray))
    with pytest.raises(mcv.error):
        mcv.equalizeHist(np.zeros((4, 4, 3), np.uint8))


def test_calc_hist(pair):
    a, _, mask = pair
    c = 0 if a.ndim == 2 else a.shape[2] - 1
    for size, ranges in (([256], [0, 256]), ([32], [0, 256]), ([10], [20, 200]), ([7], [3.5, 99.5])):
        same(mcv.calcHist([a], [c], None, size, ranges), cv2.calcHist([a], [c], None, size, ranges))
        same(mcv.calcHist([a], [c], mask, size, ranges), cv2.calcHist([a], [c], mask, size, ranges))
    floats = a.astype(np.float32) / 255
    same(mcv.calcHist([floats], [c], None, [7], [0.1, 0.9]), cv2.calcHist([floats], [c], None, [7], [0.1, 0.9]))
    first = cv2.calcHist([a], [c], None, [16], [0, 256])
    same(mcv.calcHist([a], [c], None, [16], [0, 256], hist=first, accumulate=True),
         cv2.calcHist([a], [c], None, [16], [0, 256], hist=first.copy(), accumulate=True))
    with pytest.raises(mcv.error):
        mcv.calcHist([a], [5], None, [16], [0, 256])
