"""mnnpy.cv analysis functions against OpenCV.

Exact (bit-identical to cv2): adaptiveThreshold (both methods and types), connectedComponents(WithStats) (labels in OpenCV's order for 4- and
8-connectivity, stats, centroids), Canny (apertures 3, 5 and 7, L1 and L2 gradients, 1, 3 and 4 channels, at 1 and 2 threads,
thresholds beyond the int range; the Canny(dx, dy, ...) form on random int16 derivatives of 1 and 3
channels, extremes included),
threshold (every type, with THRESH_OTSU and THRESH_TRIANGLE and
their returned thresholds) for uint8, int16, float32 and float64 images; inRange. uint16 images
are refused with mnnpy.cv.error (the core has no uint16 type yet).
"""
import cv2
import numpy as np
import pytest

import mnnpy
import mnnpy.cv as mcv
from cv_helpers import photos, random_image

TYPES = [cv2.THRESH_BINARY, cv2.THRESH_BINARY_INV, cv2.THRESH_TRUNC, cv2.THRESH_TOZERO, cv2.THRESH_TOZERO_INV]


def same_threshold(src, thresh, maxval, kind):
    expected_value, expected = cv2.threshold(src, thresh, maxval, kind)
    value, ours = mcv.threshold(src, thresh, maxval, kind)
    assert value == expected_value
    ours = np.asarray(ours)
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("kind", TYPES)
def test_threshold_uint8_edges(kind):
    # Thresholds below, inside and beyond the range of the type, fractional ones floored.
    image = np.arange(256, dtype=np.uint8).reshape(16, 16)
    for thresh in (-5, -0.5, 0, 100.7, 254.5, 255, 300):
        for maxval in (200.4, 255.6, 254.5, 300, -3, 3e9, -3e9, float("inf"), float("nan")):
            same_threshold(image, thresh, maxval, kind)
            same_threshold(image.astype(np.int16) - 100, thresh, maxval, kind)


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
@pytest.mark.parametrize("channels", [0, 1, 3, 4])
def test_threshold_random_images(kind, dtype, channels):
    rng = np.random.default_rng(kind * 10 + channels)
    image = random_image(rng, 37, 53, channels, np.uint8).astype(dtype)
    if dtype == np.int16:
        image = image.astype(np.int16) * 97 - 12000
    if np.dtype(dtype).kind == "f":
        image = image / 255.0 - 0.25
        image = image.astype(dtype)
        for thresh in (-0.1, 0.3, 0.5):
            same_threshold(image, thresh, 0.75, kind)
    else:
        for thresh in (17.5, 128, 3000.2):
            same_threshold(image, thresh, 60000, kind)


@pytest.mark.parametrize("method", [cv2.THRESH_OTSU, cv2.THRESH_TRIANGLE])
@pytest.mark.parametrize("kind", TYPES)
def test_automatic_thresholds_on_photos(method, kind):
    for image in photos().values():
        gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        same_threshold(gray, 0, 255, kind | method)
        same_threshold(gray[::3, 1::2].copy(), 77, 200, kind | method)


@pytest.mark.parametrize("method", [cv2.THRESH_OTSU, cv2.THRESH_TRIANGLE])
def test_automatic_thresholds_on_random_and_flat_images(method):
    rng = np.random.default_rng(3)
    for image in (rng.integers(0, 256, (31, 29), dtype=np.uint8),
                  np.clip(rng.normal(200, 20, (64, 48)), 0, 255).astype(np.uint8),
                  np.clip(rng.normal(40, 10, (64, 48)), 0, 255).astype(np.uint8),
                  np.full((8, 9), 77, np.uint8), np.zeros((5, 5), np.uint8)):
        same_threshold(image, 0, 255, cv2.THRESH_BINARY | method)


def test_threshold_leaves_input_and_reads_vars():
    image = photos()["camera"].copy()
    before = image.copy()
    var = mcv.threshold(image, 90, 255, cv2.THRESH_BINARY)[1]
    value, twice = mcv.threshold(var, 100, 128, cv2.THRESH_BINARY_INV)
    np.testing.assert_array_equal(np.asarray(twice),
                                  cv2.threshold(cv2.threshold(image, 90, 255, 0)[1], 100, 128, 1)[1])
    np.testing.assert_array_equal(image, before)


def test_threshold_errors():
    image = np.zeros((4, 4), np.uint8)
    with pytest.raises(cv2.error):
        cv2.threshold(np.zeros((4, 4), np.int32), 1, 2, 0)
    with pytest.raises(mcv.error):
        mcv.threshold(np.zeros((4, 4), np.int32), 1, 2, 0)
    with pytest.raises(cv2.error):
        cv2.threshold(np.zeros((4, 4), np.float32), 0, 1, cv2.THRESH_OTSU)
    with pytest.raises(mcv.error):
        mcv.threshold(np.zeros((4, 4), np.float32), 0, 1, cv2.THRESH_OTSU)
    with pytest.raises(mcv.error):
        mcv.threshold(np.zeros((4, 4, 3), np.uint8), 0, 255, cv2.THRESH_TRIANGLE)
    with pytest.raises(mcv.error):
        mcv.threshold(image, 0, 255, 6)
    with pytest.raises(TypeError):
        mcv.threshold(image, 0, 255, "binary")
    with pytest.raises(TypeError):
        mcv.threshold(None, 0, 255, 0)
    with pytest.raises(mcv.error):
        mcv.threshold(np.zeros((0, 4), np.uint8), 0, 255, 0)
    with pytest.raises(mcv.error, match="uint16"):
        mcv.threshold(np.zeros((4, 4), np.uint16), 0, 255, 0)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
@pytest.mark.parametrize("channels", [0, 1, 3, 4])
def test_in_range_random_images(dtype, channels):
    rng = np.random.default_rng(channels)
    image = random_image(rng, 41, 27, channels, np.uint8).astype(dtype)
    c = max(channels, 1)
    for lo, hi in ((20.5, 200.2), (0, 255), (300, 400), (-5, 10)):
        lower = tuple(lo + 7 * i for i in range(c)) if channels else lo
        upper = tuple(hi - 5 * i for i in range(c)) if channels else hi
        np.testing.assert_array_equal(np.asarray(mcv.inRange(image, lower, upper)), cv2.inRange(image, lower, upper))


def test_in_range_photos_and_array_bounds():
    for image in photos(color_only=True).values():
        hsv = cv2.cvtColor(image, cv2.COLOR_BGR2HSV)
        for lower, upper in (((0, 50, 50), (10, 255, 255)), ((35, 40, 40), (85, 255, 255))):
            np.testing.assert_array_equal(np.asarray(mcv.inRange(hsv, lower, upper)), cv2.inRange(hsv, lower, upper))
    rng = np.random.default_rng(9)
    image = rng.integers(0, 256, (23, 19, 3), dtype=np.uint8)
    lower = rng.integers(0, 128, image.shape, dtype=np.uint8)
    upper = rng.integers(128, 256, image.shape, dtype=np.uint8)
    np.testing.assert_array_equal(np.asarray(mcv.inRange(image, lower, upper)), cv2.inRange(image, lower, upper))
    with pytest.raises(mcv.error):
        mcv.inRange(image, lower[:5], upper)


@pytest.mark.parametrize("aperture", [3, 5, 7])
@pytest.mark.parametrize("l2", [False, True])
def test_canny_on_photos(aperture, l2):
    scale = 16 if aperture == 7 else 1  # 7-tap derivatives are 16 times larger
    for image in photos().values():
        for low, high in ((50, 150), (120, 40), (5, 20)):
            low, high = low * scale, high * scale
            np.testing.assert_array_equal(np.asarray(mcv.Canny(image, low, high, apertureSize=aperture, L2gradient=l2)),
                                          cv2.Canny(image, low, high, apertureSize=aperture, L2gradient=l2))


def test_canny_threads_and_thresholds():
    # Bands of rows run on several threads; edges crossing band boundaries must still grow.
    image = photos()["coffee"]
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    threads_before = mnnpy.get_num_threads()
    try:
        for threads in (1, 2, 3):
            mnnpy.set_num_threads(threads)
            for low, high in ((20, 200), (1e12, 1e13), (-5, 3e9), (-1e12, 10), (0, 0)):
                for l2 in (False, True):
                    np.testing.assert_array_equal(np.asarray(mcv.Canny(gray, low, high, L2gradient=l2)),
                                                  cv2.Canny(gray, low, high, L2gradient=l2))
            np.testing.assert_array_equal(np.asarray(mcv.Canny(image, 30, 90, apertureSize=7)),
                                          cv2.Canny(image, 30, 90, apertureSize=7))
    finally:
        mnnpy.set_num_threads(threads_before)


def test_canny_on_random_images_and_errors():
    rng = np.random.default_rng(11)
    for channels in (0, 1, 3, 4):
        for rows, cols in ((45, 61), (7, 130), (131, 3), (1, 17)):
            image = cv2.GaussianBlur(random_image(rng, rows, cols, channels, np.uint8), (5, 5), 0)
            for aperture in (3, 5, 7):
                low, high = (20, 60) if aperture != 7 else (300, 900)
                np.testing.assert_array_equal(np.asarray(mcv.Canny(image, low, high, apertureSize=aperture)),
                                              cv2.Canny(image, low, high, apertureSize=aperture))
    tiny = np.array([[0, 255], [255, 0]], np.uint8)
    np.testing.assert_array_equal(np.asarray(mcv.Canny(tiny, 10, 20)), cv2.Canny(tiny, 10, 20))
    for aperture in (4, 1, 9, -1):
        with pytest.raises(cv2.error):
            cv2.Canny(np.zeros((8, 8), np.uint8), 1, 2, apertureSize=aperture)
        with pytest.raises(mcv.error):
            mcv.Canny(np.zeros((8, 8), np.uint8), 1, 2, apertureSize=aperture)
    with pytest.raises(mcv.error):
        mcv.Canny(np.zeros((8, 8), np.float32), 1, 2)
    with pytest.raises(TypeError):
        mcv.Canny(np.zeros((8, 8), np.uint8), "1", 2)


@pytest.mark.parametrize("channels", [1, 3])
def test_canny_from_derivatives(channels):
    rng = np.random.default_rng(channels)
    image = random_image(rng, 67, 93, channels if channels > 1 else 0, np.uint8)
    dx, dy = cv2.Sobel(image, cv2.CV_16S, 1, 0), cv2.Sobel(image, cv2.CV_16S, 0, 1)
    for l2 in (False, True):
        np.testing.assert_array_equal(np.asarray(mcv.Canny(dx, dy, 40, 120, L2gradient=l2)),
                                      cv2.Canny(dx, dy, 40, 120, L2gradient=l2))
        np.testing.assert_array_equal(np.asarray(mcv.Canny(dx=dx, dy=dy, threshold1=40, threshold2=120, L2gradient=l2)),
                                      cv2.Canny(dx=dx, dy=dy, threshold1=40, threshold2=120, L2gradient=l2))
    # Extremes: OpenCV's magnitudes wrap in places (|-32768| and squares), which must be matched.
    shape = dx.shape
    for l2 in (False, True):
        for _ in range(3):
            gx = rng.integers(-32768, 32768, shape, dtype=np.int16)
            extremes = rng.choice(np.array([-32768, -32767, 32767, 0], np.int16), shape)
            chosen = rng.random(shape) < 0.3
            gx[chosen] = extremes[chosen]
            gy = rng.integers(-32768, 32768, shape, dtype=np.int16)
            for low, high in ((10, 20), (1000, 30000), (30000, 40000)):
                np.testing.assert_array_equal(np.asarray(mcv.Canny(gx, gy, low, high, L2gradient=l2)),
                                              cv2.Canny(gx, gy, low, high, L2gradient=l2))
    for bad in [(dx, dy[:-1]), (dx.astype(np.int32), dy.astype(np.int32)), (dx, dy.astype(np.float32))]:
        with pytest.raises(cv2.error):
            cv2.Canny(*bad, 10, 20)
        with pytest.raises(mcv.error):
            mcv.Canny(*bad, 10, 20)


@pytest.mark.parametrize("connectivity", [4, 8])
def test_connected_components_random(connectivity):
    rng = np.random.default_rng(connectivity)
    for _ in range(40):
        h, w = int(rng.integers(1, 70)), int(rng.integers(1, 70))
        image = (rng.random((h, w)) > rng.uniform(0.2, 0.9)).astype(np.uint8) * int(rng.integers(1, 256))
        count, labels, stats, centroids = mcv.connectedComponentsWithStats(image, connectivity=connectivity)
        expected = cv2.connectedComponentsWithStats(image, connectivity=connectivity)
        assert count == expected[0]
        for ours, theirs in zip((labels, stats), expected[1:3]):
            same = np.asarray(ours)
            assert same.dtype == theirs.dtype
            np.testing.assert_array_equal(same, theirs)
        np.testing.assert_allclose(np.asarray(centroids), expected[3], rtol=1e-12, equal_nan=True)
        plain = mcv.connectedComponents(image, connectivity=connectivity)
        assert plain[0] == expected[0]
        np.testing.assert_array_equal(np.asarray(plain[1]), expected[1])


def test_connected_components_photo_edges_and_errors():
    edges = cv2.Canny(photos()["coffee"], 50, 150)
    count, labels, stats, centroids = mcv.connectedComponentsWithStats(edges)
    expected = cv2.connectedComponentsWithStats(edges)
    assert count == expected[0] > 100
    np.testing.assert_array_equal(np.asarray(labels), expected[1])
    np.testing.assert_array_equal(np.asarray(stats), expected[2])
    for image in (np.ones((4, 5), np.uint8), np.zeros((3, 3), np.uint8)):
        ours, theirs = mcv.connectedComponentsWithStats(image), cv2.connectedComponentsWithStats(image)
        assert ours[0] == theirs[0]
        np.testing.assert_array_equal(np.asarray(ours[2]), theirs[2])
    with pytest.raises(mcv.error):
        mcv.connectedComponents(np.zeros((4, 4), np.uint8), connectivity=6)
    with pytest.raises(mcv.error):
        mcv.connectedComponents(np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(mcv.error):
        mcv.connectedComponents(np.zeros((4, 4), np.float32))


@pytest.mark.parametrize("method", [cv2.ADAPTIVE_THRESH_MEAN_C, cv2.ADAPTIVE_THRESH_GAUSSIAN_C])
@pytest.mark.parametrize("kind", [cv2.THRESH_BINARY, cv2.THRESH_BINARY_INV])
def test_adaptive_threshold(method, kind):
    images = [image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) for image in photos().values()]
    images.append(np.random.default_rng(8).integers(0, 256, (31, 45), dtype=np.uint8))
    for gray in images:
        for block, c in ((3, 2), (11, 5.5), (25, -3.2), (7, 0)):
            np.testing.assert_array_equal(np.asarray(mcv.adaptiveThreshold(gray, 200.4, method, kind, block, c)),
                                          cv2.adaptiveThreshold(gray, 200.4, method, kind, block, c))


def test_adaptive_threshold_errors():
    gray = np.zeros((9, 9), np.uint8)
    for bad in (4, 1, 0):
        with pytest.raises(mcv.error):
            mcv.adaptiveThreshold(gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY, bad, 0)
    with pytest.raises(mcv.error):
        mcv.adaptiveThreshold(gray, 255, 5, cv2.THRESH_BINARY, 3, 0)
    with pytest.raises(mcv.error):
        mcv.adaptiveThreshold(gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_TRUNC, 3, 0)
    with pytest.raises(mcv.error):
        mcv.adaptiveThreshold(np.zeros((9, 9, 3), np.uint8), 255, 0, 0, 3, 0)
