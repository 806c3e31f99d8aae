"""mnnpy.cv filters against OpenCV.

Exact (bit-identical to cv2):
- GaussianBlur on uint8 images (OpenCV's fixed-point arithmetic), every border type, kernel
  sizes given or derived from sigma;
- Sobel, Scharr, Laplacian (ksize 1, 3, 5) and spatialGradient from uint8 to int16 (integer sums);
- getDerivKernels, getStructuringElement (rect, cross, ellipse, diamond);
- erode, dilate, morphologyEx (every MORPH_* op, iterations, border values), medianBlur.
Within 1 LSB for integer results and float rounding (1e-5 of the range) for float results, since
sums are kept in float32 (float64 where the source or result is float64) in another order than
OpenCV's: GaussianBlur on int16/float32/float64, sepFilter2D, boxFilter, blur, sqrBoxFilter,
filter2D, the derivatives with scale/delta or float results, bilateralFilter (uint8).
getGaussianKernel agrees to 1e-13 relative, getGaborKernel to 1e-12 (float64).
"""
import cv2
import numpy as np
import pytest

import mnnpy
import mnnpy.cv as mcv
from cv_helpers import assert_within_lsb, photos, random_image

BORDERS = [cv2.BORDER_CONSTANT, cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT, cv2.BORDER_REFLECT_101]


def random_of(rng, h, w, channels, dtype):
    if np.dtype(dtype) == np.int16:
        return rng.integers(-3000, 3000, (h, w) if channels == 0 else (h, w, channels), dtype=np.int16)
    return random_image(rng, h, w, channels, dtype)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 9, 11, 21])
@pytest.mark.parametrize("sigma", [0, -1, 0.3, 1.1, 2.5, 7])
def test_get_gaussian_kernel(n, sigma):
    for ktype in (cv2.CV_64F, cv2.CV_32F):
        expected = cv2.getGaussianKernel(n, sigma, ktype=ktype)
        ours = mcv.getGaussianKernel(n, sigma, ktype)
        assert isinstance(ours, mnnpy.Var) and ours.dtype == expected.dtype and ours.shape == expected.shape
        np.testing.assert_allclose(ours, expected, rtol=1e-6 if ktype == cv2.CV_32F else 1e-13, atol=1e-15)


def test_get_gaussian_kernel_errors():
    with pytest.raises(mcv.error):
        mcv.getGaussianKernel(0, 1)
    with pytest.raises(mcv.error):
        mcv.getGaussianKernel(3, 1, cv2.CV_8U)
    with pytest.raises(TypeError):
        mcv.getGaussianKernel("3", 1)


@pytest.mark.parametrize("border", BORDERS)
def test_gaussian_blur_photos_exact(border):
    for name, image in photos().items():
        for ksize, sx, sy in (((5, 5), 0, 0), ((3, 3), 0, 0), ((0, 0), 1.5, 0), ((7, 3), 2.1, 0.7),
                              ((9, 9), 0, 0), ((1, 5), 0, 0)):
            expected = cv2.GaussianBlur(image, ksize, sx, sigmaY=sy, borderType=border)
            ours = np.asarray(mcv.GaussianBlur(image, ksize, sx, sigmaY=sy, borderType=border))
            assert ours.dtype == expected.dtype and ours.shape == expected.shape
            np.testing.assert_array_equal(ours, expected, err_msg=f"{name} {ksize} {sx} {sy}")


@pytest.mark.parametrize("channels", [0, 1, 3, 4])
@pytest.mark.parametrize("border", BORDERS + [cv2.BORDER_REFLECT_101 | cv2.BORDER_ISOLATED])
def test_gaussian_blur_random_uint8_exact(channels, border):
    rng = np.random.default_rng(channels * 7 + border)
    for h, w in ((37, 53), (1, 19), (17, 1), (2, 3), (5, 40)):
        image = random_image(rng, h, w, channels, np.uint8)
        for ksize, sigma in (((5, 5), 0), ((3, 7), 1.3), ((0, 0), 3.2), ((11, 11), 0)):
            expected = cv2.GaussianBlur(image, ksize, sigma, borderType=border)
            ours = np.asarray(mcv.GaussianBlur(image, ksize, sigma, borderType=border))
            np.testing.assert_array_equal(ours, expected, err_msg=f"{(h, w)} {ksize} {sigma}")


@pytest.mark.parametrize("dtype", [np.int16, np.float32, np.float64])
@pytest.mark.parametrize("channels", [0, 3, 4])
@pytest.mark.parametrize("border", BORDERS)
def test_gaussian_blur_other_types(dtype, channels, border):
    rng = np.random.default_rng(channels + border)
    image = random_of(rng, 31, 45, channels, dtype)
    for ksize, sigma in (((5, 5), 0), ((3, 7), 1.3), ((0, 0), 1.7), ((9, 9), 0)):
        expected = cv2.GaussianBlur(image, ksize, sigma, borderType=border)
        assert_within_lsb(mcv.GaussianBlur(image, ksize, sigma, borderType=border), expected)


def test_gaussian_blur_errors_and_inputs():
    image = photos()["camera"].copy()
    before = image.copy()
    with pytest.raises(mcv.error):
        mcv.GaussianBlur(image, (4, 4), 0)
    with pytest.raises(mcv.error):
        mcv.GaussianBlur(image, (0, 0), 0)
    with pytest.raises(mcv.error):
        mcv.GaussianBlur(image, (3, 3), 0, borderType=cv2.BORDER_WRAP)
    with pytest.raises(mcv.error):
        mcv.GaussianBlur(image.astype(np.uint16), (3, 3), 0)
    with pytest.raises(TypeError):
        mcv.GaussianBlur(image, 3, 0)
    with pytest.raises(TypeError):
        mcv.GaussianBlur(None, (3, 3), 0)
    twice = mcv.GaussianBlur(mcv.GaussianBlur(image, (5, 5), 0), (3, 3), 1)
    np.testing.assert_array_equal(np.asarray(twice), cv2.GaussianBlur(cv2.GaussianBlur(image, (5, 5), 0), (3, 3), 1))
    np.testing.assert_array_equal(image, before)


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("src_dtype,ddepth", [(np.uint8, -1), (np.uint8, cv2.CV_16S), (np.uint8, cv2.CV_32F),
                                              (np.uint8, cv2.CV_64F), (np.int16, -1), (np.int16, cv2.CV_32F),
                                              (np.float32, -1), (np.float32, cv2.CV_8U), (np.float64, -1),
                                              (np.float64, cv2.CV_16S)])
def test_sep_filter_2d(border, src_dtype, ddepth):
    rng = np.random.default_rng(border)
    for channels in (0, 3):
        image = random_of(rng, 23, 41, channels, src_dtype)
        for kx, ky, anchor, delta in ((np.array([1, 2, 1.]), np.array([-1, 0, 1.]), (-1, -1), 0),
                                      (np.array([0.2, 0.3, 0.1, 0.4]), np.array([0.5, 0.25, 0.25]), (0, 2), 3.5),
                                      (np.array([[0.5], [0.5]]), np.array([1.0]), (1, 0), -1)):
            expected = cv2.sepFilter2D(image, ddepth, kx, ky, anchor=anchor, delta=delta, borderType=border)
            ours = mcv.sepFilter2D(image, ddepth, kx, ky, anchor=anchor, delta=delta, borderType=border)
            assert_within_lsb(ours, expected)


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
def test_box_filters(border, dtype):
    rng = np.random.default_rng(border + 11)
    for channels in (0, 1, 3, 4):
        image = random_of(rng, 19, 26, channels, dtype)
        for ksize, anchor in (((3, 3), (-1, -1)), ((5, 2), (4, 0)), ((1, 7), (-1, -1))):
            assert_within_lsb(mcv.blur(image, ksize, anchor=anchor, borderType=border),
                              cv2.blur(image, ksize, anchor=anchor, borderType=border))
            for ddepth in (-1, cv2.CV_32F, cv2.CV_64F):
                for normalize in (True, False):
                    assert_within_lsb(mcv.boxFilter(image, ddepth, ksize, anchor=anchor, normalize=normalize,
                                                    borderType=border),
                                      cv2.boxFilter(image, ddepth, ksize, anchor=anchor, normalize=normalize,
                                                    borderType=border))
            for ddepth in (-1, cv2.CV_64F):
                assert_within_lsb(mcv.sqrBoxFilter(image, ddepth, ksize, anchor=anchor, borderType=border),
                                  cv2.sqrBoxFilter(image, ddepth, ksize, anchor=anchor, borderType=border))


def test_box_filter_photo_uint8():
    image = photos()["astronaut"]
    assert_within_lsb(mcv.blur(image, (5, 5)), cv2.blur(image, (5, 5)))
    assert_within_lsb(mcv.boxFilter(image, cv2.CV_16S, (3, 3), normalize=False),
                      cv2.boxFilter(image, cv2.CV_16S, (3, 3), normalize=False))


def test_linear_filter_errors():
    image = random_image(np.random.default_rng(0), 9, 9, 3, np.uint8)
    with pytest.raises(mcv.error):
        mcv.sepFilter2D(image.astype(np.float64), cv2.CV_32F, np.ones(3), np.ones(3))
    with pytest.raises(mcv.error):
        mcv.sepFilter2D(image, -1, np.ones((3, 3)), np.ones(3))
    with pytest.raises(mcv.error):
        mcv.sepFilter2D(image, -1, np.ones(3), np.ones(3), anchor=(3, 0))
    with pytest.raises(mcv.error):
        mcv.sepFilter2D(image, -1, np.ones(3), np.ones(3), borderType=cv2.BORDER_WRAP)
    with pytest.raises(mcv.error):
        mcv.blur(image, (0, 3))
    with pytest.raises(mcv.error):
        mcv.boxFilter(image, -1, (3, 3), borderType=7)
    with pytest.raises(mcv.error):
        mcv.blur(image, (3, 3), borderType=cv2.BORDER_WRAP)
    with pytest.raises(TypeError):
        mcv.blur(image, (3, 3), borderType="reflect")


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("src_dtype,ddepth", [(np.uint8, -1), (np.uint8, cv2.CV_16S), (np.uint8, cv2.CV_32F),
                                              (np.int16, -1), (np.float32, -1), (np.float64, cv2.CV_64F),
                                              (np.int16, cv2.CV_32F)])
def test_filter_2d(border, src_dtype, ddepth):
    rng = np.random.default_rng(border + 5)
    for channels in (0, 3, 4):
        image = random_of(rng, 21, 34, channels, src_dtype)
        for kernel, anchor, delta in ((rng.standard_normal((3, 3)), (-1, -1), 0),
                                      (rng.integers(-3, 4, (5, 4)).astype(np.float32), (0, 4), 2.5),
                                      (np.array([0.25, 0.5, 0.25]), (-1, -1), 0)):
            expected = cv2.filter2D(image, ddepth, kernel, anchor=anchor, delta=delta, borderType=border)
            ours = mcv.filter2D(image, ddepth, kernel, anchor=anchor, delta=delta, borderType=border)
            assert_within_lsb(ours, expected)


@pytest.mark.parametrize("ksize", [-1, 1, 3, 5, 7])
def test_get_deriv_kernels(ksize):
    for dx, dy in ((1, 0), (0, 1), (2, 0), (1, 2), (3, 1)):
        if (ksize == -1 and dx + dy != 1) or (ksize in (1, 3) and max(dx, dy) > 2) or max(dx, dy) >= max(ksize, 3):
            continue
        for normalize in (False, True):
            for ktype in (cv2.CV_32F, cv2.CV_64F):
                expected = cv2.getDerivKernels(dx, dy, ksize, normalize=normalize, ktype=ktype)
                ours = mcv.getDerivKernels(dx, dy, ksize, normalize=normalize, ktype=ktype)
                for a, b in zip(ours, expected):
                    assert a.dtype == b.dtype and a.shape == b.shape
                    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("border", BORDERS)
def test_sobel_scharr_laplacian_photos(border):
    gray = photos()["camera"]
    color = photos()["coffee"]
    for image in (gray, color):
        for dx, dy, ksize in ((1, 0, 3), (0, 1, 3), (1, 1, 5), (2, 0, 1), (0, 1, 1), (1, 0, -1), (0, 2, 7)):
            expected = cv2.Sobel(image, cv2.CV_16S, dx, dy, ksize=ksize, borderType=border)
            np.testing.assert_array_equal(np.asarray(mcv.Sobel(image, cv2.CV_16S, dx, dy, ksize=ksize,
                                                               borderType=border)), expected)
        assert_within_lsb(mcv.Sobel(image, -1, 1, 0, scale=0.5, delta=128, borderType=border),
                          cv2.Sobel(image, -1, 1, 0, scale=0.5, delta=128, borderType=border))
        np.testing.assert_array_equal(np.asarray(mcv.Scharr(image, cv2.CV_16S, 0, 1, borderType=border)),
                                      cv2.Scharr(image, cv2.CV_16S, 0, 1, borderType=border))
        for ksize in (1, 3, 5):
            np.testing.assert_array_equal(
                np.asarray(mcv.Laplacian(image, cv2.CV_16S, ksize=ksize, borderType=border)),
                cv2.Laplacian(image, cv2.CV_16S, ksize=ksize, borderType=border))
    dx, dy = mcv.spatialGradient(gray)
    ex, ey = cv2.spatialGradient(gray)
    np.testing.assert_array_equal(np.asarray(dx), ex)
    np.testing.assert_array_equal(np.asarray(dy), ey)


@pytest.mark.parametrize("dtype,ddepth", [(np.float32, -1), (np.float64, -1), (np.uint8, cv2.CV_32F),
                                          (np.int16, cv2.CV_32F), (np.uint8, cv2.CV_64F)])
def test_derivatives_random(dtype, ddepth):
    rng = np.random.default_rng(4)
    for channels in (0, 3):
        image = random_of(rng, 27, 18, channels, dtype)
        for border in BORDERS:
            assert_within_lsb(mcv.Sobel(image, ddepth, 1, 1, ksize=3, scale=2, delta=1, borderType=border),
                              cv2.Sobel(image, ddepth, 1, 1, ksize=3, scale=2, delta=1, borderType=border))
            assert_within_lsb(mcv.Scharr(image, ddepth, 1, 0, borderType=border),
                              cv2.Scharr(image, ddepth, 1, 0, borderType=border))
            for ksize in (1, 3, 5, 7):
                assert_within_lsb(mcv.Laplacian(image, ddepth, ksize=ksize, scale=0.5, borderType=border),
                                  cv2.Laplacian(image, ddepth, ksize=ksize, scale=0.5, borderType=border))


def test_derivative_errors():
    image = photos()["camera"]
    with pytest.raises(mcv.error):
        mcv.Sobel(image, -1, 0, 0)
    with pytest.raises(mcv.error):
        mcv.Sobel(image, -1, 1, 0, ksize=4)
    with pytest.raises(mcv.error):
        mcv.Scharr(image, -1, 1, 1)
    with pytest.raises(mcv.error):
        mcv.Laplacian(image, -1, ksize=2)
    with pytest.raises(mcv.error):
        mcv.spatialGradient(photos()["coffee"])
    with pytest.raises(mcv.error):
        mcv.filter2D(image.astype(np.float32), cv2.CV_8U, np.ones((3, 3)))
    with pytest.raises(TypeError):
        mcv.Sobel(image, -1, 1.5, 0)


@pytest.mark.parametrize("shape", [cv2.MORPH_RECT, cv2.MORPH_CROSS, cv2.MORPH_ELLIPSE, cv2.MORPH_DIAMOND])
def test_get_structuring_element(shape):
    for ksize in ((1, 1), (3, 3), (5, 4), (4, 5), (7, 7), (9, 5), (2, 8), (15, 15), (6, 6)):
        for anchor in ((-1, -1), (0, 0)):
            expected = cv2.getStructuringElement(shape, ksize, anchor=anchor)
            ours = mcv.getStructuringElement(shape, ksize, anchor)
            assert ours.dtype == expected.dtype
            np.testing.assert_array_equal(ours, expected, err_msg=f"{ksize} {anchor}")


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
@pytest.mark.parametrize("border", BORDERS)
def test_erode_dilate(dtype, border):
    rng = np.random.default_rng(border + 3)
    cross = cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 5))
    for channels in (0, 3, 4):
        image = random_of(rng, 22, 31, channels, dtype)
        for kernel, anchor, iterations in ((None, (-1, -1), 1), (np.ones((3, 3), np.uint8), (-1, -1), 3),
                                           (cross, (0, 1), 2), (np.ones((2, 4), np.uint8), (3, 1), 1)):
            for value in (None, 7, (1, 2, 3, 4)):
                kwargs = {} if value is None else {"borderValue": value}
                for func in ("erode", "dilate"):
                    expected = getattr(cv2, func)(image, kernel, anchor=anchor, iterations=iterations,
                                                  borderType=border, **kwargs)
                    ours = getattr(mcv, func)(image, kernel, anchor=anchor, iterations=iterations,
                                              borderType=border, **kwargs)
                    ours = np.asarray(ours)
                    assert ours.dtype == expected.dtype
                    np.testing.assert_array_equal(ours, expected, err_msg=f"{func} {anchor} {iterations} {value}")


@pytest.mark.parametrize("op", [cv2.MORPH_ERODE, cv2.MORPH_DILATE, cv2.MORPH_OPEN, cv2.MORPH_CLOSE,
                                cv2.MORPH_GRADIENT, cv2.MORPH_TOPHAT, cv2.MORPH_BLACKHAT])
def test_morphology_ex(op):
    ellipse = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))
    for image in (photos()["camera"], photos()["chelsea"],
                  random_image(np.random.default_rng(op), 33, 29, 3, np.float32)):
        for iterations in (1, 2):
            expected = cv2.morphologyEx(image, op, ellipse, iterations=iterations)
            np.testing.assert_array_equal(np.asarray(mcv.morphologyEx(image, op, ellipse, iterations=iterations)),
                                          expected)
        expected = cv2.morphologyEx(image, op, None, borderType=cv2.BORDER_REPLICATE)
        np.testing.assert_array_equal(np.asarray(mcv.morphologyEx(image, op, None, borderType=cv2.BORDER_REPLICATE)),
                                      expected)


def test_hit_or_miss():
    rng = np.random.default_rng(2)
    binary = (rng.random((29, 37)) > 0.5).astype(np.uint8) * 255
    gray = photos()["camera"]
    for kernel in (np.array([[0, 1, 0], [1, -1, 1], [0, 1, 0]]), np.array([[1, 1, -1]]), np.ones((3, 3), int),
                   -np.ones((2, 2), int), np.zeros((3, 3), int)):
        for image in (binary, gray):
            for iterations in (1, 2):
                expected = cv2.morphologyEx(image, cv2.MORPH_HITMISS, kernel, iterations=iterations)
                np.testing.assert_array_equal(
                    np.asarray(mcv.morphologyEx(image, cv2.MORPH_HITMISS, kernel, iterations=iterations)), expected)


def test_morphology_errors():
    image = photos()["camera"]
    with pytest.raises(mcv.error):
        mcv.morphologyEx(image, 99, None)
    with pytest.raises(mcv.error):
        mcv.erode(image, np.ones((3, 3)), anchor=(5, 0))
    with pytest.raises(mcv.error):
        mcv.getStructuringElement(9, (3, 3))
    with pytest.raises(TypeError):
        mcv.dilate(image, None, iterations=1.5)


def test_get_gabor_kernel():
    for args in (((21, 21), 4.0, 0.3, 10.0, 0.5), ((0, 0), 2.0, 1.2, 5.0, 1.5, 0.0), ((5, 9), 1.0, -0.7, 3.0, 0.8, 1.0),
                 ((0, 7), 3.0, 2.0, 8.0, 0.6)):
        for ktype in (cv2.CV_64F, cv2.CV_32F):
            expected = cv2.getGaborKernel(*args, ktype=ktype)
            ours = mcv.getGaborKernel(*args, ktype=ktype)
            assert ours.dtype == expected.dtype and ours.shape == expected.shape
            np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6 if ktype == cv2.CV_32F else 1e-12)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_median_blur(dtype):
    rng = np.random.default_rng(9)
    for channels in (0, 1, 3, 4):
        image = random_of(rng, 23, 17, channels, dtype)
        for ksize in (1, 3, 5) + ((7,) if dtype == np.uint8 else ()):
            expected = cv2.medianBlur(image, ksize)
            np.testing.assert_array_equal(np.asarray(mcv.medianBlur(image, ksize)), expected, err_msg=str(ksize))
    for image in photos().values():
        for ksize in (3, 5):
            np.testing.assert_array_equal(np.asarray(mcv.medianBlur(image, ksize)), cv2.medianBlur(image, ksize))
    with pytest.raises(mcv.error):
        mcv.medianBlur(photos()["camera"], 4)


@pytest.mark.parametrize("border", BORDERS)
def test_bilateral_filter_uint8(border):
    rng = np.random.default_rng(border)
    images = [photos()["camera"][:120, :160], photos()["coffee"][:100, :130],
              random_image(rng, 23, 31, 0, np.uint8), random_image(rng, 17, 12, 3, np.uint8)]
    for image in images:
        for d, sigma_color, sigma_space in ((5, 30, 4), (0, 50, 2), (9, 75, 75), (3, 0, 0)):
            expected = cv2.bilateralFilter(image, d, sigma_color, sigma_space, borderType=border)
            assert_within_lsb(mcv.bilateralFilter(image, d, sigma_color, sigma_space, borderType=border), expected)
    with pytest.raises(mcv.error):
        mcv.bilateralFilter(random_image(rng, 5, 5, 4, np.uint8), 5, 10, 10)
