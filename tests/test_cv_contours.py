"""mnnpy.cv contours and shape analysis against OpenCV.

Exact (bit-identical to cv2): findContours (contour order, start points, point order and
hierarchy) for RETR_EXTERNAL, RETR_LIST, RETR_CCOMP, RETR_TREE with CHAIN_APPROX_NONE, SIMPLE,
TC89_L1 and TC89_KCOS, and RETR_FLOODFILL / RETR_CCOMP on int32 label images, with offsets;
contourArea (plain and oriented), arcLength (open and closed), boundingRect (points and uint8
masks), convexHull (points and indices, both orientations), approxPolyDP (open and
closed), isContourConvex, moments of point sets and of binary images, pointPolygonTest (with and without distances).
minAreaRect: size and angle within 2 float32 ulps, the center within 64 ulps of the box's extent
(OpenCV derives it from a float32 2x2 solve whose cancellation magnifies rounding); on 3 of the
213 point sets OpenCV returns another rectangle (equal areas, or a larger one where its calipers
stop early), and ours is checked to enclose the points with no larger area. boxPoints: within
2 float32 ulps of the box's extent.
moments of non-binary images: within 1e-9 relative (OpenCV sums in SIMD lanes, in another order).
"""
import cv2
import numpy as np
import pytest

import mnnpy.cv as mcv
from cv_helpers import photos

MODES = [cv2.RETR_EXTERNAL, cv2.RETR_LIST, cv2.RETR_CCOMP, cv2.RETR_TREE]
METHODS = [cv2.CHAIN_APPROX_NONE, cv2.CHAIN_APPROX_SIMPLE, cv2.CHAIN_APPROX_TC89_L1, cv2.CHAIN_APPROX_TC89_KCOS]


def assert_same_contours(ours, expected):
    ours_contours, ours_hierarchy = ours
    contours, hierarchy = expected
    assert isinstance(ours_contours, tuple)
    assert len(ours_contours) == len(contours)
    for i, (a, b) in enumerate(zip(ours_contours, contours)):
        assert a.dtype == b.dtype and a.shape == b.shape, (i, a.shape, b.shape)
        np.testing.assert_array_equal(a, b, err_msg=f"contour {i}")
    if hierarchy is None:
        assert ours_hierarchy is None
    else:
        assert ours_hierarchy.dtype == hierarchy.dtype and ours_hierarchy.shape == hierarchy.shape
        np.testing.assert_array_equal(ours_hierarchy, hierarchy)


def same_find(image, mode, method, **kwargs):
    assert_same_contours(mcv.findContours(image, mode, method, **kwargs),
                         cv2.findContours(image, mode, method, **kwargs))


def nested_rings(size=61):
    """Concentric square and round rings with blobs in between (a deep hierarchy)."""
    image = np.zeros((size, size + 6), np.uint8)
    for k, r in enumerate(range(size // 2 - 1, 2, -4)):
        c = (size // 2, size // 2 + 3)
        if k % 2:
            cv2.circle(image, c, r, 255, 1)
        else:
            image[c[0] - r:c[0] + r + 1, c[1] - r:c[1] + r + 1] = 255
            image[c[0] - r + 1:c[0] + r, c[1] - r + 1:c[1] + r] = 0
    image[size // 2, size // 2 + 3] = 255
    return image


def binary_images():
    rng = np.random.default_rng(7)
    gray = {name: (p if p.ndim == 2 else cv2.cvtColor(p, cv2.COLOR_BGR2GRAY)) for name, p in photos().items()}
    images = {
        "camera_threshold": cv2.threshold(gray["camera"], 100, 255, cv2.THRESH_BINARY)[1],
        "chelsea_canny": cv2.Canny(gray["chelsea"], 50, 150),
        "coffee_otsu_inv": cv2.threshold(gray["coffee"], 0, 255, cv2.THRESH_BINARY_INV | cv2.THRESH_OTSU)[1],
        "noise_37x53": (rng.random((37, 53)) < 0.45).astype(np.uint8),
        "blobs_101x67": (cv2.GaussianBlur(rng.random((101, 67)).astype(np.float32), (9, 9), 0) > 0.5)
        .astype(np.uint8) * 7,
        "rings": nested_rings(),
        "empty": np.zeros((9, 11), np.uint8),
        "full": np.ones((5, 7), np.uint8),
        "single_pixels": np.zeros((7, 9), np.uint8),
        "lines": np.zeros((15, 17), np.uint8),
        "one_pixel_image": np.ones((1, 1), np.uint8),
        "row": (rng.random((1, 40)) < 0.5).astype(np.uint8),
        "column": (rng.random((33, 1)) < 0.5).astype(np.uint8),
    }
    images["single_pixels"][[0, 3, 6, 6], [0, 4, 8, 0]] = 1
    lines = images["lines"]
    lines[2, 1:16] = 255
    lines[4:14, 3] = 255
    np.fill_diagonal(lines[5:, 6:], 255)
    lines[:, 16] = 9
    return images


IMAGES = binary_images()


@pytest.mark.parametrize("name", sorted(IMAGES))
@pytest.mark.parametrize("mode", MODES)
def test_find_contours_matches_cv2(name, mode):
    for method in METHODS:
        same_find(IMAGES[name], mode, method)


@pytest.mark.parametrize("seed", range(6))
def test_find_contours_random_odd_sizes(seed):
    rng = np.random.default_rng(seed)
    for _ in range(8):
        h, w = (int(v) for v in rng.integers(1, 45, 2))
        image = ((rng.random((h, w)) < rng.random()) * rng.integers(1, 256)).astype(np.uint8)
        for mode in MODES:
            for method in METHODS:
                same_find(image, mode, method)


def test_find_contours_many_nested_borders():
    # More than 126 borders in RETR_TREE: the marks OpenCV writes wrap around.
    image = np.zeros((203, 211), np.uint8)
    image[1::2, 1::2] = 1
    image[50:150, 60:160] = 1
    image[70:130, 80:140] = 0
    image[90:110, 100:120] = 1
    for mode in (cv2.RETR_TREE, cv2.RETR_CCOMP):
        same_find(image, mode, cv2.CHAIN_APPROX_SIMPLE)
    same_find(nested_rings(251), cv2.RETR_TREE, cv2.CHAIN_APPROX_NONE)


def test_find_contours_offset_view_var_and_channel_axis():
    image = IMAGES["rings"]
    same_find(image, cv2.RETR_TREE, cv2.CHAIN_APPROX_SIMPLE, offset=(5, -3))
    view = IMAGES["camera_threshold"][13:200:2, 7:301]  # strided rows and columns
    same_find(view, cv2.RETR_LIST, cv2.CHAIN_APPROX_NONE)
    assert_same_contours(mcv.findContours(image[:, :, None], cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE),
                         cv2.findContours(image, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE))
    gray = photos()["camera"]
    var = mcv.threshold(gray, 90, 255, cv2.THRESH_BINARY)[1]
    assert_same_contours(mcv.findContours(var, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE),
                         cv2.findContours(cv2.threshold(gray, 90, 255, cv2.THRESH_BINARY)[1], cv2.RETR_EXTERNAL,
                                          cv2.CHAIN_APPROX_SIMPLE))


@pytest.mark.parametrize("seed", range(4))
def test_find_contours_label_images(seed):
    rng = np.random.default_rng(seed)
    for _ in range(6):
        h, w = (int(v) for v in rng.integers(1, 30, 2))
        labels = rng.integers(0, int(rng.integers(1, 5)), (h, w)).astype(np.int32)
        if rng.random() < 0.5:
            labels = cv2.connectedComponents((rng.random((h, w)) < 0.5).astype(np.uint8))[1]
        for mode in (cv2.RETR_FLOODFILL, cv2.RETR_CCOMP):
            for method in METHODS:
                same_find(labels, mode, method)


def test_find_contours_bad_arguments():
    image = np.zeros((8, 8), np.uint8)
    for bad in (np.zeros((8, 8), np.float32), np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8), np.int32)):
        with pytest.raises(cv2.error):
            cv2.findContours(bad, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
        with pytest.raises(mcv.error):
            mcv.findContours(bad, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
    with pytest.raises(cv2.error):
        cv2.findContours(image, cv2.RETR_FLOODFILL, cv2.CHAIN_APPROX_SIMPLE)
    with pytest.raises(mcv.error, match="RETR_FLOODFILL"):
        mcv.findContours(image, cv2.RETR_FLOODFILL, cv2.CHAIN_APPROX_SIMPLE)
    for mode, method in ((7, 1), (-1, 1), (0, 9), (0, 5), (0, 0)):
        with pytest.raises(mcv.error):
            mcv.findContours(image, mode, method)
    with pytest.raises(TypeError):
        mcv.findContours(image, "tree", 1)
    with pytest.raises(TypeError):
        mcv.findContours(None, 0, 1)


# ---------------------------------------------------------------------------------------------
# Shape functions.

def point_sets():
    rng = np.random.default_rng(3)
    sets = []
    for t in range(120):
        n = int(rng.integers(1, 50))
        kind = t % 5
        if kind == 0:
            p = rng.integers(0, 12, (n, 1, 2)).astype(np.int32)  # many duplicates and collinear points
        elif kind == 1:
            p = rng.integers(-1000, 1000, (n, 2)).astype(np.int32)
        elif kind == 2:
            p = (rng.random((n, 1, 2)) * 100 - 30).astype(np.float32)
        elif kind == 3:
            p = rng.integers(0, 9, (n, 2)).astype(np.float32)
        else:
            p = rng.integers(0, 50, (1, n, 2)).astype(np.int32)
        sets.append(p)
    binary = IMAGES["camera_threshold"]
    contours = cv2.findContours(binary, cv2.RETR_LIST, cv2.CHAIN_APPROX_NONE)[0]
    sets.extend(contours[::7][:60])
    sets.extend(cv2.findContours(binary, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)[0][::11][:30])
    sets.append(np.array([[0, 0], [10, 0], [10, 10], [0, 10]], np.int32))
    sets.append(np.array([[0, 0], [10, 10]], np.float32))
    sets.append(np.array([[3, 4]], np.int32))
    return sets


POINT_SETS = point_sets()


def assert_same_array(ours, expected):
    if expected is None:
        assert ours is None
        return
    assert ours.dtype == expected.dtype and ours.shape == expected.shape, (ours.shape, expected.shape)
    np.testing.assert_array_equal(ours, expected)


def test_area_length_bounding_rect_convexity():
    for p in POINT_SETS:
        assert mcv.contourArea(p) == cv2.contourArea(p)
        assert mcv.contourArea(p, True) == cv2.contourArea(p, True)
        for closed in (False, True):
            assert mcv.arcLength(p, closed) == cv2.arcLength(p, closed)
        assert mcv.boundingRect(p) == cv2.boundingRect(p)
        assert mcv.isContourConvex(p) == cv2.isContourConvex(p)
    empty = np.zeros((0, 1, 2), np.int32)
    assert (mcv.contourArea(empty), mcv.arcLength(empty, True), mcv.boundingRect(empty), mcv.isContourConvex(empty)) \
        == (cv2.contourArea(empty), cv2.arcLength(empty, True), cv2.boundingRect(empty), cv2.isContourConvex(empty))


def test_bounding_rect_of_masks():
    for name in ("camera_threshold", "single_pixels", "empty", "lines", "row", "column"):
        image = IMAGES[name]
        assert mcv.boundingRect(image) == cv2.boundingRect(image)
    view = IMAGES["chelsea_canny"][5:200, 3:77]
    assert mcv.boundingRect(view) == cv2.boundingRect(view)


def test_convex_hull():
    for p in POINT_SETS:
        for clockwise in (False, True):
            assert_same_array(mcv.convexHull(p, clockwise=clockwise), cv2.convexHull(p, clockwise=clockwise))
            assert_same_array(mcv.convexHull(p, None, clockwise, False), cv2.convexHull(p, None, clockwise, False))
    assert mcv.convexHull(np.zeros((0, 2), np.float32)) is None


def test_approx_poly_dp():
    rng = np.random.default_rng(5)
    for p in POINT_SETS:
        for closed in (False, True):
            eps = float(rng.random() * 6)
            assert_same_array(mcv.approxPolyDP(p, eps, closed), cv2.approxPolyDP(p, eps, closed))
    assert_same_array(mcv.approxPolyDP(POINT_SETS[0], 0, True), cv2.approxPolyDP(POINT_SETS[0], 0, True))


def _encloses(box, points):
    corners = cv2.boxPoints(box).reshape(-1, 1, 2)
    slack = 1e-3 * max(1.0, *box[1])
    return all(cv2.pointPolygonTest(corners, (float(x), float(y)), True) >= -slack
               for x, y in points.reshape(-1, 2))


def test_min_area_rect_and_box_points():
    other_choices = 0
    for p in POINT_SETS:
        ours = mcv.minAreaRect(p)
        expected = cv2.minAreaRect(p)
        (cx, cy), size, angle = ours
        (ecx, ecy), esize, eangle = expected
        same_box = abs(angle - eangle) <= 2 * np.spacing(np.float32(90)) and all(
            abs(a - b) <= 2 * np.spacing(np.float32(max(b, 1.0))) for a, b in zip(size, esize))
        if not same_box:
            # Where rectangles tie, or OpenCV's calipers stop on a larger one, ours is another
            # enclosing rectangle of no larger area.
            other_choices += 1
            assert size[0] * size[1] <= esize[0] * esize[1] * (1 + 1e-6), (p.reshape(-1, 2).tolist(), ours, expected)
            assert _encloses(ours, p), (p.reshape(-1, 2).tolist(), ours)
            continue
        # The corner comes from a float32 2x2 solve whose cancellation magnifies one rounding step.
        extent = max(abs(ecx), abs(ecy), esize[0], esize[1], 1.0)
        for a, b in ((cx, ecx), (cy, ecy)):
            assert abs(a - b) <= 64 * np.spacing(np.float32(extent)), (p.reshape(-1, 2).tolist(), ours, expected)
    assert other_choices <= 3, other_choices
    rng = np.random.default_rng(9)
    boxes = [((float(rng.random() * 80 - 20), float(rng.random() * 80)),
              (float(rng.random() * 30), float(rng.random() * 30)), float(rng.random() * 400 - 200))
             for _ in range(200)]
    for box in boxes + [cv2.minAreaRect(POINT_SETS[5])]:
        ours, expected = mcv.boxPoints(box), cv2.boxPoints(box)
        assert ours.dtype == expected.dtype and ours.shape == expected.shape
        np.testing.assert_allclose(ours, expected, rtol=0, atol=2 * np.spacing(np.float32(np.abs(expected).max())))


def test_moments_of_points():
    for p in POINT_SETS:
        assert mcv.moments(p) == cv2.moments(p)
    assert mcv.moments(np.zeros((0, 1, 2), np.int32)) == cv2.moments(np.zeros((0, 1, 2), np.int32))


def test_moments_of_images():
    rng = np.random.default_rng(11)
    images = [IMAGES["camera_threshold"], IMAGES["rings"], photos()["camera"][:97, :131],
              rng.integers(-300, 300, (45, 70)).astype(np.int16), rng.random((33, 65)).astype(np.float32),
              rng.random((70, 40)) * 100]
    for image in images:
        assert mcv.moments(image, True) == cv2.moments(image, True)
        expected = cv2.moments(image)
        ours = mcv.moments(image)
        for key, value in expected.items():
            # OpenCV sums in SIMD lanes; the third-order central moments cancel large terms.
            assert ours[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key


def test_point_polygon_test():
    rng = np.random.default_rng(13)
    for p in POINT_SETS:
        pts = [(float(rng.integers(-5, 60)), float(rng.integers(-5, 60))), (float(rng.random() * 60),
                                                                              float(rng.random() * 60))]
        pts.append(tuple(float(v) for v in p.reshape(-1, 2)[0]))
        for pt in pts:
            for measure in (False, True):
                assert mcv.pointPolygonTest(p, pt, measure) == cv2.pointPolygonTest(p, pt, measure)


def test_found_contours_feed_shape_functions():
    contours, _ = mcv.findContours(IMAGES["blobs_101x67"], cv2.RETR_TREE, cv2.CHAIN_APPROX_SIMPLE)
    for c in contours:  # mnnpy.cv's results are Vars (fed back to it as they are); cv2 takes arrays
        assert mcv.contourArea(c) == cv2.contourArea(np.asarray(c))
        assert_same_array(mcv.convexHull(c), cv2.convexHull(np.asarray(c)))
        assert mcv.moments(c) == cv2.moments(np.asarray(c))


def test_shape_bad_arguments():
    good = np.array([[0, 0], [4, 0], [4, 4]], np.int32)
    for bad in (good.astype(np.float64), good.astype(np.int16), np.zeros((3, 3), np.int32),
                np.zeros((2, 3, 2), np.int32)):
        for name, args in (("contourArea", ()), ("arcLength", (True,)), ("convexHull", ()),
                           ("approxPolyDP", (1.0, True)), ("minAreaRect", ()), ("isContourConvex", ())):
            with pytest.raises(cv2.error):
                getattr(cv2, name)(bad, *args)
            with pytest.raises(mcv.error):
                getattr(mcv, name)(bad, *args)
    with pytest.raises(mcv.error):
        mcv.approxPolyDP(good, -1.0, True)
    with pytest.raises(mcv.error):
        mcv.boundingRect(np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(mcv.error):
        mcv.moments(np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(mcv.error):
        mcv.moments(np.zeros((3, 3), np.int32))
    with pytest.raises(TypeError):
        mcv.contourArea(None)
    with pytest.raises(TypeError):
        mcv.pointPolygonTest(good, "xy", True)
    with pytest.raises(TypeError):
        mcv.boxPoints(5)
