"""mnnpy.cv with the argument and result forms of MNN's cv (MNN programs run unchanged), checked
against OpenCV (cv2 5.0) on the same pixels:
- images given as MNN's NHWC batch of one, 1xHxWxC (``expr.const(img, [1, H, W, C], expr.NHWC)``
  or a 4-D NumPy array), give OpenCV's values with the batch dimension kept on image results;
  a batch of several images and other ranks are refused by name;
- drawing into a Var (and into a 1xHxWxC image) happens in place, as MNN draws;
- MNN's flat point lists [x0, y0, x1, y1, ...] draw as OpenCV draws the same points (OpenCV
  itself refuses these lists);
- MNN's CVMatrix is a transformation matrix for warpAffine, warpPerspective and
  invertAffineTransform;
- arrays come back as Vars with cv2's values, shapes and dtypes; numbers and tuples stay as cv2
  gives them; threshold keeps OpenCV's (retval, dst);
- split and merge read 1-D, 2-D, 3-D and larger arrays exactly as OpenCV 5 reads them.
"""
import numpy as np
import pytest

import cv2
import mnnpy
import mnnpy.cv as mcv
from mnnpy import expr

from cv_helpers import assert_within_lsb, photos


def _crop(name, dtype):
    """A 72x96 patch of a scikit-image photograph (BGR or gray), uint8 or float32 in [0, 255]."""
    img = photos()[name][100:172, 150:246]
    return np.ascontiguousarray(img.astype(dtype))


def _mnn_image(img):
    """The image as MNN programs pass it: an NHWC Var of shape [1, H, W, C]."""
    h, w = img.shape[:2]
    c = 1 if img.ndim == 2 else img.shape[2]
    return expr.const(img, [1, h, w, c], expr.NHWC)


def _batched_shape(shape):
    return (1,) + tuple(shape) + ((1,) if len(shape) == 2 else ())


# (name, call(module, image), image kinds): each call gets the image as the module takes it.
_KERNEL = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)
_AFFINE = np.array([[0.9, 0.1, 3.0], [-0.1, 0.9, 5.0]], np.float32)
_PERSPECTIVE = np.array([[1.0, 0.05, 2.0], [0.02, 0.95, 1.0], [1e-4, 2e-4, 1.0]], np.float64)
_FILTER_CASES = [
    ("blur", lambda m, x: m.blur(x, (3, 3)), "gu cu gf cf"),
    ("boxFilter", lambda m, x: m.boxFilter(x, -1, (5, 3)), "gu cu gf cf"),
    ("sqrBoxFilter", lambda m, x: m.sqrBoxFilter(x, -1, (3, 3)), "gf cf"),
    ("erode", lambda m, x: m.erode(x, np.ones((3, 3), np.uint8)), "gu cu gf cf"),
    ("dilate", lambda m, x: m.dilate(x, np.ones((3, 3), np.uint8)), "gu cu gf cf"),
    ("morphologyEx", lambda m, x: m.morphologyEx(x, m.MORPH_GRADIENT, np.ones((3, 3), np.uint8)), "gu cf"),
    ("filter2D", lambda m, x: m.filter2D(x, -1, _KERNEL), "gf cf"),
    ("sepFilter2D", lambda m, x: m.sepFilter2D(x, -1, np.float32([[0, -1, 0]]), np.float32([[-1, 0, -1]]),
                                               delta=1), "gf cf"),
    ("GaussianBlur", lambda m, x: m.GaussianBlur(x, (3, 3), 10), "gu cu gf cf"),
    ("Laplacian", lambda m, x: m.Laplacian(x, -1), "gf cf"),
    ("Scharr", lambda m, x: m.Scharr(x, -1, 1, 0), "gf cf"),
    ("Sobel", lambda m, x: m.Sobel(x, -1, 1, 0), "gf cf"),
    ("medianBlur", lambda m, x: m.medianBlur(x, 3), "gu cu"),
    ("bilateralFilter", lambda m, x: m.bilateralFilter(x, 5, 50.0, 5.0), "gu cu"),
    ("pyrDown", lambda m, x: m.pyrDown(x), "gu cu gf cf"),
    ("pyrUp", lambda m, x: m.pyrUp(x), "gu cu gf cf"),
    ("blendLinear", lambda m, x: m.blendLinear(x, x, np.full(x.shape[1:3] if x.ndim == 4 else x.shape[:2], 0.25,
                                                             np.float32),
                                               np.full(x.shape[1:3] if x.ndim == 4 else x.shape[:2], 0.75,
                                                       np.float32)), "gu cf"),
    ("threshold", lambda m, x: m.threshold(x, 100, 20, m.THRESH_BINARY)[1], "gu cu gf cf"),
    ("adaptiveThreshold", lambda m, x: m.adaptiveThreshold(x, 50, m.ADAPTIVE_THRESH_GAUSSIAN_C, m.THRESH_BINARY, 5,
                                                           2), "gu"),
    ("Canny", lambda m, x: m.Canny(x, 50, 150), "gu cu"),
    ("inRange", lambda m, x: m.inRange(x, 60, 180), "gu cu gf"),
    ("equalizeHist", lambda m, x: m.equalizeHist(x), "gu"),
    ("normalize", lambda m, x: m.normalize(x, None, 0, 1, m.NORM_MINMAX, m.CV_32F), "gu cf"),
    ("convertScaleAbs", lambda m, x: m.convertScaleAbs(x, alpha=1.5, beta=-20), "gu cf"),
    ("addWeighted", lambda m, x: m.addWeighted(x, 0.3, x, 0.5, 2), "gu cu cf"),
    ("bitwise_not", lambda m, x: m.bitwise_not(x), "gu cu"),
    ("cvtColor", lambda m, x: m.cvtColor(x, m.COLOR_BGR2GRAY), "cu cf"),
    ("cvtColor_gray", lambda m, x: m.cvtColor(x, m.COLOR_GRAY2BGR), "gu gf"),
    ("resize", lambda m, x: m.resize(x, (40, 30)), "gu cu gf cf"),
    ("flip", lambda m, x: m.flip(x, -1), "gu cf"),
    ("rotate", lambda m, x: m.rotate(x, m.ROTATE_90_CLOCKWISE), "gu cf"),
    ("transpose", lambda m, x: m.transpose(x), "gu cf"),
    ("copyMakeBorder", lambda m, x: m.copyMakeBorder(x, 2, 3, 4, 1, m.BORDER_REFLECT), "gu cf"),
    ("warpAffine", lambda m, x: m.warpAffine(x, _AFFINE, (80, 60)), "gu cu gf cf"),
    ("warpPerspective", lambda m, x: m.warpPerspective(x, _PERSPECTIVE, (80, 60)), "gu cf"),
    ("getRectSubPix", lambda m, x: m.getRectSubPix(x, (11, 9), (20.5, 30.25)), "gu cf"),
    ("hconcat", lambda m, x: m.hconcat([x, x]), "gu cf"),
    ("vconcat", lambda m, x: m.vconcat([x, x]), "gu cf"),
]
_KINDS = {"gu": ("camera", np.uint8), "cu": ("coffee", np.uint8), "gf": ("camera", np.float32),
          "cf": ("coffee", np.float32)}


@pytest.mark.parametrize("name,call,kind", [(n, c, k) for n, c, kinds in _FILTER_CASES for k in kinds.split()])
def test_batch_of_one_gives_opencv_values_with_the_batch(name, call, kind):
    img = _crop(*_KINDS[kind])
    reference = call(cv2, img)
    plain = np.asarray(call(mcv, img))
    # Integer results: the filters' own rounding (tested against cv2 in their files) is within
    # 1 LSB; float results within float32 rounding of the values' range.
    assert_within_lsb(plain, reference, lsb=1, float_tol=1e-4)
    batched_shape = _batched_shape(reference.shape)
    for batched in (_mnn_image(img), img.reshape(_batched_shape(img.shape))):
        out = call(mcv, batched)
        assert isinstance(out, mnnpy.Var)
        assert tuple(out.shape) == batched_shape
        # The same graph on the same pixels: exactly the unbatched result.
        np.testing.assert_array_equal(np.asarray(out).reshape(plain.shape), plain)
    assert reference.shape == plain.shape


def test_batch_of_one_in_tuples_and_non_image_results():
    img = _crop("camera", np.uint8)
    batched = _mnn_image(img)
    retval, dst = mcv.threshold(batched, 0, 255, mcv.THRESH_BINARY | mcv.THRESH_OTSU)
    ref_retval, ref_dst = cv2.threshold(img, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)
    assert retval == ref_retval and isinstance(retval, float)
    assert tuple(dst.shape) == (1,) + img.shape + (1,)
    np.testing.assert_array_equal(np.asarray(dst)[0, :, :, 0], ref_dst)
    binary = (img > 128).astype(np.uint8)
    count, labels, stats, centroids = mcv.connectedComponentsWithStats(_mnn_image(binary))
    ref = cv2.connectedComponentsWithStats(binary)
    assert count == ref[0] and tuple(labels.shape) == (1,) + binary.shape + (1,)
    np.testing.assert_array_equal(np.asarray(labels)[0, :, :, 0], ref[1])
    np.testing.assert_array_equal(np.asarray(stats), ref[2])  # not images: no batch dimension
    np.testing.assert_allclose(np.asarray(centroids), ref[3], rtol=1e-12)
    dx, dy = mcv.spatialGradient(batched)
    ref_dx, ref_dy = cv2.spatialGradient(img)
    np.testing.assert_array_equal(np.asarray(dx).reshape(ref_dx.shape), ref_dx)
    np.testing.assert_array_equal(np.asarray(dy).reshape(ref_dy.shape), ref_dy)
    color = _crop("coffee", np.uint8)
    assert mcv.mean(_mnn_image(color)) == pytest.approx(cv2.mean(color), rel=1e-12)
    minimum, maximum, low_at, high_at = mcv.minMaxLoc(batched)
    assert (minimum, maximum, low_at, high_at) == cv2.minMaxLoc(img)
    hist = mcv.calcHist([_mnn_image(color)], [1], None, [32], [0, 256])
    np.testing.assert_array_equal(np.asarray(hist), cv2.calcHist([color], [1], None, [32], [0, 256]))
    contours, _ = mcv.findContours(_mnn_image(binary), mcv.RETR_EXTERNAL, mcv.CHAIN_APPROX_SIMPLE)
    ref_contours, _ = cv2.findContours(binary, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    assert len(contours) == len(ref_contours)
    for ours, theirs in zip(contours, ref_contours):
        np.testing.assert_array_equal(np.asarray(ours), theirs)
    moments, ref_moments = mcv.moments(_mnn_image(binary)), cv2.moments(binary)
    assert moments.keys() == ref_moments.keys()
    for key in moments:  # sums of a few thousand pixels: float64 rounding of their order
        assert moments[key] == pytest.approx(ref_moments[key], rel=1e-12, abs=1e-12)
    assert mcv.boundingRect(_mnn_image(binary)) == cv2.boundingRect(binary)


def test_batch_of_one_chains_and_writes(tmp_path):
    img = _crop("coffee", np.uint8)
    out = mcv.GaussianBlur(mcv.resize(_mnn_image(img), (48, 36)), (3, 3), 0)
    assert tuple(out.shape) == (1, 36, 48, 3)
    np.testing.assert_array_equal(np.asarray(out)[0], cv2.GaussianBlur(cv2.resize(img, (48, 36)), (3, 3), 0))
    ok, encoded = mcv.imencode(".png", _mnn_image(img))
    assert ok
    np.testing.assert_array_equal(cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED), img)
    assert mcv.imwrite(str(tmp_path / "batch.png"), img[None])
    np.testing.assert_array_equal(cv2.imread(str(tmp_path / "batch.png")), img)
    blob = mcv.dnn.blobFromImage(_mnn_image(img), 1 / 255.0, (32, 24))
    np.testing.assert_allclose(np.asarray(blob), cv2.dnn.blobFromImage(img, 1 / 255.0, (32, 24)), atol=1e-6)


def test_batch_of_one_does_not_modify_the_input():
    img = _crop("coffee", np.uint8)[None]
    before = img.copy()
    mcv.blur(img, (5, 5))
    mcv.cvtColor(img, mcv.COLOR_BGR2HSV)
    np.testing.assert_array_equal(img, before)


@pytest.mark.parametrize("shape", [(2, 8, 9, 3), (3, 8, 9, 1)])
def test_batch_of_several_is_refused(shape):
    images = np.zeros(shape, np.uint8)
    with pytest.raises(cv2.error):
        cv2.blur(images, (3, 3))
    for call in (lambda x: mcv.blur(x, (3, 3)), lambda x: mcv.threshold(x, 1, 2, 0),
                 lambda x: mcv.line(x, (0, 0), (3, 3), 255), lambda x: mcv.findContours(x, 0, 1),
                 lambda x: mcv.imencode(".png", x)):
        for value in (images, _mnn_var(images)):
            with pytest.raises(mcv.error, match=f"batch of {shape[0]} images"):
                call(value)


def _mnn_var(array):
    return expr.const(array, list(array.shape), expr.NHWC)


@pytest.mark.parametrize("shape", [(5,), (1, 1, 8, 9, 3), (1, 1, 1, 8, 9, 3)])
def test_other_ranks_are_refused(shape):
    with pytest.raises(mcv.error, match="2-D .* or 3-D .* image"):
        mcv.blur(np.zeros(shape, np.uint8), (3, 3))


# ---------------------------------------------------------------- drawing

def _draw_sequence(m, img, contours):
    m.arrowedLine(img, (10, 10), (40, 40), (255, 0, 0))
    m.line(img, (20, 30), (50, 60), (0, 0, 255), 2)
    m.circle(img, (70, 40), 20, (0, 255, 0))
    m.rectangle(img, (60, 10), (90, 30), (0, 0, 255))
    m.fillPoly(img, contours, (255, 0, 0))
    m.polylines(img, contours, True, (0, 255, 255), 1)
    m.drawContours(img, contours, -1, (0, 0, 255), 2)
    return img


def _flat(points):
    return [int(v) for v in np.asarray(points).reshape(-1)]


def test_flat_point_lists_draw_as_opencv_draws_the_points():
    img = _crop("coffee", np.uint8)
    binary = (cv2.cvtColor(img, cv2.COLOR_BGR2GRAY) > 128).astype(np.uint8)
    arrays, _ = cv2.findContours(binary, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    arrays = [a for a in arrays if len(a) >= 3][:6]
    flat = [_flat(a) for a in arrays]
    with pytest.raises(cv2.error):
        cv2.fillPoly(img.copy(), flat, (255, 0, 0))  # OpenCV refuses MNN's form
    expected = _draw_sequence(cv2, img.copy(), arrays)
    ours = img.copy()
    assert _draw_sequence(mcv, ours, flat) is ours
    np.testing.assert_array_equal(ours, expected)
    triangle = np.array([[5, 5], [60, 12], [30, 50]], np.int32)
    ours = mcv.fillConvexPoly(img.copy(), _flat(triangle), (1, 2, 3))
    np.testing.assert_array_equal(ours, cv2.fillConvexPoly(img.copy(), triangle, (1, 2, 3)))


def test_bad_flat_point_lists_are_refused():
    img = np.zeros((20, 20), np.uint8)
    for bad in ([[1, 2, 3]], [[1.5, 2, 3, 4]], [["1", "2"]], [[2**40, 1, 2, 3, 4, 5]]):
        with pytest.raises(mcv.error):
            mcv.fillPoly(img, bad, 255)
    assert not img.any()


def test_drawing_into_var_and_batch_in_place():
    img = _crop("coffee", np.uint8)
    binary = (cv2.cvtColor(img, cv2.COLOR_BGR2GRAY) > 128).astype(np.uint8)
    arrays, _ = cv2.findContours(binary, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    flat = [_flat(a) for a in arrays if len(a) >= 3][:6]
    expected = _draw_sequence(cv2, img.copy(), [a for a in arrays if len(a) >= 3][:6])
    var = mnnpy.numpy.asarray(img).copy()
    untouched = var + 0  # built before drawing: keeps the old pixels
    assert _draw_sequence(mcv, var, flat) is var
    np.testing.assert_array_equal(np.asarray(var), expected)
    np.testing.assert_array_equal(np.asarray(untouched), img)
    batch = _mnn_image(img)
    assert _draw_sequence(mcv, batch, flat) is batch
    assert tuple(batch.shape) == (1,) + img.shape and batch.data_format == "NHWC"
    np.testing.assert_array_equal(np.asarray(batch)[0], expected)
    array = img[None].copy()
    assert _draw_sequence(mcv, array, flat) is array
    np.testing.assert_array_equal(array[0], expected)
    placeholder = expr.placeholder([1] + list(img.shape), expr.NHWC, expr.uint8)
    placeholder.write(img[None])
    mcv.circle(placeholder, (30, 30), 10, (9, 9, 9), -1)
    assert placeholder.is_placeholder
    np.testing.assert_array_equal(np.asarray(placeholder)[0], cv2.circle(img.copy(), (30, 30), 10, (9, 9, 9), -1))


def test_found_vars_feed_drawing():
    img = _crop("camera", np.uint8)
    binary = (img > 100).astype(np.uint8)
    contours, hierarchy = mcv.findContours(binary, mcv.RETR_TREE, mcv.CHAIN_APPROX_SIMPLE)
    ref_contours, ref_hierarchy = cv2.findContours(binary, cv2.RETR_TREE, cv2.CHAIN_APPROX_SIMPLE)
    ours = mcv.drawContours(np.zeros_like(img), contours, -1, 255, 1, hierarchy=hierarchy, maxLevel=1)
    np.testing.assert_array_equal(ours, cv2.drawContours(np.zeros_like(img), ref_contours, -1, 255, 1,
                                                         hierarchy=ref_hierarchy, maxLevel=1))
    largest = max(range(len(ref_contours)), key=lambda i: cv2.contourArea(ref_contours[i]))
    hull = mcv.convexHull(contours[largest])
    ours = mcv.fillConvexPoly(np.zeros_like(img), hull, 7)
    np.testing.assert_array_equal(ours, cv2.fillConvexPoly(np.zeros_like(img), cv2.convexHull(ref_contours[largest]),
                                                           7))
    box = mcv.boxPoints(mcv.minAreaRect(contours[largest]))
    ref_box = cv2.boxPoints(cv2.minAreaRect(ref_contours[largest]))
    ours = mcv.polylines(np.zeros_like(img), [box.astype(np.int32)], True, 5)
    np.testing.assert_array_equal(ours, cv2.polylines(np.zeros_like(img), [ref_box.astype(np.int32)], True, 5))


# ---------------------------------------------------------------- CVMatrix

def _cv_matrix(values):
    m = mnnpy.CVMatrix()
    m.write(values)
    return m


def test_cvmatrix_as_the_warp_matrix():
    img = _crop("coffee", np.uint8)
    affine = _cv_matrix(_AFFINE)
    before = affine.read()
    ours = mcv.warpAffine(img, affine, (80, 60))
    np.testing.assert_array_equal(np.asarray(ours), cv2.warpAffine(img, _AFFINE, (80, 60)))
    flags = cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP
    ours = mcv.warpAffine(_mnn_image(img), affine, (80, 60), flags=flags)
    np.testing.assert_array_equal(np.asarray(ours)[0], cv2.warpAffine(img, _AFFINE, (80, 60), flags=flags))
    assert affine.read() == before
    perspective = _cv_matrix(_PERSPECTIVE.astype(np.float32))
    ours = mcv.warpPerspective(img, perspective, (80, 60))
    np.testing.assert_array_equal(np.asarray(ours),
                                  cv2.warpPerspective(img, _PERSPECTIVE.astype(np.float32), (80, 60)))


def test_cvmatrix_inverted_as_mnn_does():
    rng = np.random.default_rng(3)
    for _ in range(5):
        m = rng.uniform(-2, 2, (2, 3)).astype(np.float32)
        inverse = mcv.invertAffineTransform(_cv_matrix(m))
        assert isinstance(inverse, mnnpy.CVMatrix)
        values = np.asarray(inverse.read(), np.float32).reshape(3, 3)
        expected = cv2.invertAffineTransform(m)
        # float32 entries of the inverse, each within a few ulps of cv2's.
        np.testing.assert_allclose(values[:2], expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
        np.testing.assert_array_equal(values[2], [0, 0, 1])
    with pytest.raises(mcv.error, match="CVMatrix"):
        mcv.warpAffine(np.zeros((4, 4), np.uint8), "M", (4, 4))


# ---------------------------------------------------------------- arrays come back as Vars

def _same(ours, theirs, rtol=0.0, atol=0.0):
    assert isinstance(ours, mnnpy.Var), type(ours)
    assert tuple(ours.shape) == theirs.shape and np.dtype(ours.dtype) == theirs.dtype
    np.testing.assert_allclose(ours.read(), theirs, rtol=rtol, atol=atol)


def test_arrays_come_back_as_vars_numbers_as_opencv_gives_them():
    img = _crop("camera", np.uint8)
    binary = (img > 100).astype(np.uint8)
    contours, hierarchy = mcv.findContours(binary, mcv.RETR_TREE, mcv.CHAIN_APPROX_NONE)
    ref_contours, ref_hierarchy = cv2.findContours(binary, cv2.RETR_TREE, cv2.CHAIN_APPROX_NONE)
    assert isinstance(contours, tuple) and len(contours) == len(ref_contours)
    for ours, theirs in zip(contours, ref_contours):
        _same(ours, theirs)
    _same(hierarchy, ref_hierarchy)
    c, ref_c = contours[0], ref_contours[0]
    assert mcv.contourArea(c) == cv2.contourArea(ref_c) and type(mcv.contourArea(c)) is float
    assert mcv.arcLength(c, True) == cv2.arcLength(ref_c, True)
    assert mcv.boundingRect(c) == cv2.boundingRect(ref_c) and type(mcv.boundingRect(c)) is tuple
    assert mcv.minAreaRect(c) == cv2.minAreaRect(ref_c)
    assert mcv.isContourConvex(c) == cv2.isContourConvex(ref_c)
    _same(mcv.convexHull(c), cv2.convexHull(ref_c))
    _same(mcv.convexHull(c, returnPoints=False), cv2.convexHull(ref_c, returnPoints=False))
    _same(mcv.approxPolyDP(c, 2.0, True), cv2.approxPolyDP(ref_c, 2.0, True))
    _same(mcv.boxPoints(mcv.minAreaRect(c)), cv2.boxPoints(cv2.minAreaRect(ref_c)))
    _same(mcv.ellipse2Poly((30, 20), (12, 7), 15, 0, 300, 10), cv2.ellipse2Poly((30, 20), (12, 7), 15, 0, 300, 10))
    color = _crop("coffee", np.uint8)
    for ours, theirs in zip(mcv.meanStdDev(color), cv2.meanStdDev(color)):
        _same(ours, theirs, rtol=1e-12)
    _same(mcv.calcHist([color], [2], None, [16], [0, 256]), cv2.calcHist([color], [2], None, [16], [0, 256]))
    for ours, theirs in zip(mcv.getDerivKernels(1, 2, 3), cv2.getDerivKernels(1, 2, 3)):
        _same(ours, theirs)
    ok, encoded = mcv.imencode(".png", color)
    assert ok and type(encoded) is np.ndarray  # bytes for files and sockets stay a NumPy buffer
    np.testing.assert_array_equal(cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED), color)
    drawn = color.copy()
    assert mcv.circle(drawn, (5, 5), 3, (1, 2, 3)) is drawn  # the caller's array itself


def test_linear_algebra_and_camera_results_are_vars():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4, 2))
    ok, x = mcv.solve(a, b)
    ok_ref, x_ref = cv2.solve(a, b)
    assert ok is ok_ref is True
    # LU on a well-conditioned 4x4 system: the two solutions agree to float64 rounding.
    _same(x, x_ref, rtol=1e-12, atol=1e-12)
    ok, x = mcv.solve(mnnpy.numpy.asarray(a), mnnpy.numpy.asarray(b))  # MNN programs pass Vars
    _same(x, x_ref, rtol=1e-12, atol=1e-12)
    rvec = np.array([[0.1], [-0.2], [0.3]])
    for ours, theirs in zip(mcv.Rodrigues(rvec), cv2.Rodrigues(rvec)):
        _same(ours, theirs, atol=1e-6)  # the Jacobian by central differences
    points = rng.uniform(-1, 1, (8, 3))
    camera = np.array([[500.0, 0, 48], [0, 500.0, 36], [0, 0, 1]])
    tvec = np.array([[0.1], [0.2], [5.0]])
    pixels, jacobian = mcv.projectPoints(points, rvec, tvec, camera, None)
    ref_pixels, ref_jacobian = cv2.projectPoints(points, rvec, tvec, camera, None)
    _same(pixels, ref_pixels, rtol=1e-9)
    assert isinstance(jacobian, mnnpy.Var) and tuple(jacobian.shape) == ref_jacobian.shape
    ok, r, t = mcv.solvePnP(points, ref_pixels, camera, None, flags=mcv.SOLVEPNP_SQPNP)
    ok_ref, r_ref, t_ref = cv2.solvePnP(points, ref_pixels, camera, None, flags=cv2.SOLVEPNP_SQPNP)
    assert ok and ok_ref
    _same(r, r_ref, atol=1e-6)  # exact correspondences: both recover the pose to solver precision
    _same(t, t_ref, atol=1e-6)


def test_threshold_keeps_opencvs_tuple():
    img = _crop("coffee", np.float32)
    retval, dst = mcv.threshold(img, 50, 20, mcv.THRESH_BINARY)
    ref_retval, ref_dst = cv2.threshold(img, 50, 20, cv2.THRESH_BINARY)
    assert retval == ref_retval
    _same(dst, ref_dst)


# ---------------------------------------------------------------- split and merge

@pytest.mark.parametrize("shape", [(9,), (4, 3), (2, 2, 3), (3, 5, 1), (1, 2, 2, 3), (1, 3, 1, 3, 1), (2, 2, 130)])
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32", "float64"])
def test_split_merge_read_arrays_as_opencv5_does(shape, dtype):
    rng = np.random.default_rng(5)
    a = (rng.random(shape) * 100).astype(dtype)
    if dtype == "int64":
        a = a * (2**32 + 1) - 5  # OpenCV's bindings keep the low 32 bits: a - 5
    for ours, theirs in ((mcv.split(a), cv2.split(a)), (mcv.split(mnnpy.numpy.asarray(a)), cv2.split(a))):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _same(o, t)
    for parts in ([a, a, a], [a]):
        try:
            theirs = cv2.merge(parts)
        except cv2.error:
            with pytest.raises(mcv.error):
                mcv.merge(parts)
            continue
        _same(mcv.merge(parts), theirs)
        _same(mcv.merge([mnnpy.numpy.asarray(p) for p in parts]), theirs)


def test_merge_refuses_what_opencv_refuses():
    for parts in ([np.arange(6.0), np.arange(6.0).reshape(6, 1)], [np.zeros(0, np.float32)] * 2,
                  [np.zeros((2, 3), np.float32)] * 129, [np.zeros(4, np.float32), np.zeros(4, np.float64)]):
        with pytest.raises(cv2.error):
            cv2.merge(parts)
        with pytest.raises(mcv.error):
            mcv.merge(parts)
    for bad in ([1, 2, 3], 3.0):
        with pytest.raises(TypeError):
            mcv.split(bad)
    planes = [np.arange(6.0).reshape(2, 3, 1), np.arange(6.0).reshape(2, 3)]  # both one 2x3 channel
    np.testing.assert_array_equal(np.asarray(mcv.merge(planes)), cv2.merge(planes))
