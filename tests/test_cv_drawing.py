"""mnnpy.cv's drawing functions against OpenCV (cv2 5.0), drawn on copies of the same image.

What holds:
- line, arrowedLine, rectangle (both forms), circle, ellipse (both forms), ellipse2Poly,
  polylines, fillPoly, fillConvexPoly, drawContours and drawMarker with LINE_4 / LINE_8 (and
  LINE_AA on non-uint8 images, which OpenCV draws as LINE_8): bit-exact, for thickness
  0/1/2/5/13/FILLED, shift 0..16, coordinates inside, outside and far outside the image
  (up to the int32 limits), 1/3/4 channels, uint8/int16/float32/float64.
- LINE_AA on uint8 images: OpenCV's antialiasing scheme (3-pixel-wide weighted spans along the
  major axis, end-point coverage, the same thick/filled geometry) with weight tables of our own
  (a fitted Gaussian profile and slope gain), so values differ slightly: every pixel within 16
  levels of cv2's, and the set of pixels drawn the same to within 1% (about 90% of the pixels a
  thin line touches differ, by 1..9 levels).
- NumPy images are drawn in place and returned (`result is img`); so are Vars (rebound to the
  drawn pixels, as MNN draws into them).
- Bad arguments raise mnnpy.cv.error where cv2 raises cv2.error, TypeError where cv2 raises
  TypeError.
"""
import numpy as np
import pytest

import cv2
import mnnpy
import mnnpy.cv as mcv

from cv_helpers import photos, random_image

INT_MIN, INT_MAX = -2**31, 2**31 - 1


def _draw_both(name, img, *args, **kwargs):
    """(ours, cv2's) drawn on copies of ``img``; checks that ours drew in place."""
    ours, theirs = img.copy(), img.copy()
    result = getattr(mcv, name)(ours, *args, **kwargs)
    assert result is ours
    expected = getattr(cv2, name)(theirs, *args, **kwargs)
    assert expected is theirs
    return ours, theirs


def _assert_same(name, img, *args, **kwargs):
    ours, theirs = _draw_both(name, img, *args, **kwargs)
    if not np.array_equal(ours, theirs):
        diff = ours != theirs
        if diff.ndim == 3:
            diff = diff.any(-1)
        ys, xs = np.nonzero(diff)
        raise AssertionError(f"{name}{args}: {diff.sum()} pixels differ, first at {list(zip(ys[:5], xs[:5]))}")


def _coordinate(rng, size, shift=0, limits=True):
    """A coordinate in the image, near it, far outside it, or at the int32 limits (whole-pixel
    coordinates only: OpenCV itself scans every row up to such a point otherwise)."""
    r = rng.random()
    if r < 0.06 and limits and shift == 0:
        return int(rng.choice([INT_MIN, INT_MAX, INT_MIN + 1, INT_MAX - 1]))
    if r < 0.15:
        return int(rng.integers(-10**5, 10**5)) << min(shift, 4)
    return int(rng.integers(-size, 2 * size)) << shift


def _point(rng, h, w, shift=0, limits=True):
    return (_coordinate(rng, w, shift, limits), _coordinate(rng, h, shift, limits))


def _canvas(rng, kind):
    """A blank or random image of an odd size, or a photo."""
    channels = int(rng.choice([0, 3, 4, 1]))
    dtype = rng.choice([np.uint8, np.float32, np.uint8, np.int16, np.float64])
    h, w = int(rng.integers(7, 90)), int(rng.integers(7, 90))
    if kind == "photo":
        return photos()[str(rng.choice(["astronaut", "camera", "coffee"]))][:h * 3, :w * 3].copy()
    if kind == "blank":
        shape = (h, w) if channels == 0 else (h, w, channels)
        return np.zeros(shape, dtype)
    return random_image(rng, h, w, channels, dtype)


def _color(rng):
    n = int(rng.integers(1, 5))
    values = [float(v) for v in rng.integers(0, 256, n)]
    if rng.random() < 0.2:
        values = [float(v) for v in rng.uniform(-300, 70000, n)]
    return values[0] if n == 1 and rng.random() < 0.5 else tuple(values)


def _polygons(rng, h, w, shift, count=None):
    out = []
    for _ in range(count or int(rng.integers(1, 5))):
        n = int(rng.integers(1, 10))
        pts = np.stack([rng.integers(-w // 2, w + w // 2, n), rng.integers(-h // 2, h + h // 2, n)], 1)
        out.append((pts.astype(np.int64) << shift).astype(np.int32))
    return out


KINDS = ["blank", "random", "photo"]
LINE_TYPES = [mcv.LINE_4, mcv.LINE_8]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kind", KINDS)
def test_line_exact(seed, kind):
    rng = np.random.default_rng(seed)
    img = _canvas(rng, kind)
    h, w = img.shape[:2]
    for _ in range(12):
        shift = int(rng.choice([0, 0, 1, 4, 16]))
        thickness = int(rng.choice([1, 2, 5, 13]))
        line_type = int(rng.choice(LINE_TYPES))
        _assert_same("line", img, _point(rng, h, w, shift), _point(rng, h, w, shift), _color(rng), thickness,
                     line_type, shift)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("kind", KINDS)
def test_rectangle_and_polylines_exact(seed, kind):
    rng = np.random.default_rng(100 + seed)
    img = _canvas(rng, kind)
    h, w = img.shape[:2]
    for _ in range(8):
        shift = int(rng.choice([0, 0, 2, 16]))
        line_type = int(rng.choice(LINE_TYPES))
        thickness = int(rng.choice([0, 1, 2, 5, -1]))
        _assert_same("rectangle", img, _point(rng, h, w, shift), _point(rng, h, w, shift), _color(rng), thickness,
                     line_type, shift)
        rec = (int(rng.integers(-w, w)) << shift, int(rng.integers(-h, h)) << shift,
               int(rng.integers(-5, 2 * w)) << shift, int(rng.integers(-5, 2 * h)) << shift)
        _assert_same("rectangle", img, rec, _color(rng), thickness, line_type, shift)
        polys = _polygons(rng, h, w, shift)
        _assert_same("polylines", img, polys, bool(rng.random() < 0.5), _color(rng), max(thickness, 0),
                     line_type, shift)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("kind", KINDS)
def test_circle_and_ellipse_exact(seed, kind):
    rng = np.random.default_rng(200 + seed)
    img = _canvas(rng, kind)
    h, w = img.shape[:2]
    for _ in range(8):
        shift = int(rng.choice([0, 0, 3, 16]))
        line_type = int(rng.choice(LINE_TYPES))
        thickness = int(rng.choice([1, 2, 5, -1]))
        radius = int(rng.integers(0, 2 * max(h, w))) << shift
        _assert_same("circle", img, _point(rng, h, w, shift, False), radius, _color(rng), thickness, line_type,
                     shift)
        axes = (int(rng.integers(0, 2 * w)) << shift, int(rng.integers(0, 2 * h)) << shift)
        angles = [float(v) for v in rng.uniform(-400, 400, 3)]
        _assert_same("ellipse", img, _point(rng, h, w, shift, False), axes, *angles, _color(rng), thickness, line_type,
                     shift)
        box = ((float(rng.uniform(-10, w + 10)), float(rng.uniform(-10, h + 10))),
               (float(rng.uniform(0, 2 * w)), float(rng.uniform(0, 2 * h))), float(rng.uniform(-400, 400)))
        _assert_same("ellipse", img, box, _color(rng), thickness, line_type)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("kind", KINDS)
def test_fill_exact(seed, kind):
    rng = np.random.default_rng(300 + seed)
    img = _canvas(rng, kind)
    h, w = img.shape[:2]
    for _ in range(8):
        shift = int(rng.choice([0, 0, 2, 16]))
        line_type = int(rng.choice(LINE_TYPES))
        polys = _polygons(rng, h, w, shift)
        offset = (int(rng.integers(-8, 8)), int(rng.integers(-8, 8)))
        _assert_same("fillPoly", img, polys, _color(rng), line_type, shift, offset)
        _assert_same("fillConvexPoly", img, polys[0], _color(rng), line_type, shift)
        _assert_same("fillConvexPoly", img, cv2.convexHull(polys[0]), _color(rng), line_type, shift)


def test_far_away_geometry_exact():
    img = np.zeros((37, 53, 3), np.uint8)
    far = [(INT_MIN, INT_MIN), (INT_MAX, INT_MAX), (INT_MIN, INT_MAX), (-10**9, 20), (10**9, 30), (25, -10**9)]
    for p in far:
        for q in far + [(10, 10), (40, 20)]:
            for thickness in (1, 3):
                _assert_same("line", img, p, q, (1, 2, 3), thickness, mcv.LINE_8)
                _assert_same("line", img, p, q, (1, 2, 3), thickness, mcv.LINE_4)
            _assert_same("rectangle", img, p, q, (5, 6, 7), 1)
    _assert_same("circle", img, (26, 18), 10**6, (9, 9, 9), 1)
    _assert_same("circle", img, (26, -10**6), 10**6 + 5, (9, 9, 9), -1)
    _assert_same("fillPoly", img, [np.array([[-100000, -100000], [100000, -90000], [20, 100000]], np.int32)], 7)
    _assert_same("fillConvexPoly", img, np.array([[-100000, -100000], [100000, -90000], [20, 100000]], np.int32), 7)


def test_ellipse2poly_exact():
    rng = np.random.default_rng(7)
    for _ in range(200):
        center = (int(rng.integers(-1000, 1000)), int(rng.integers(-1000, 1000)))
        axes = (int(rng.integers(-50, 3000)), int(rng.integers(0, 3000)))
        angle, start, end = (int(v) for v in rng.integers(-800, 800, 3))
        delta = int(rng.integers(1, 181))
        ours = mcv.ellipse2Poly(center, axes, angle, start, end, delta)
        theirs = cv2.ellipse2Poly(center, axes, angle, start, end, delta)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)


def _contour_image():
    gray = photos()["camera"]
    _, mask = cv2.threshold(gray, 100, 255, cv2.THRESH_BINARY)
    return mask


@pytest.mark.parametrize("mode", [cv2.RETR_EXTERNAL, cv2.RETR_TREE, cv2.RETR_CCOMP])
def test_draw_contours_exact(mode):
    contours, hierarchy = cv2.findContours(_contour_image(), mode, cv2.CHAIN_APPROX_SIMPLE)
    rng = np.random.default_rng(mode)
    for img in (photos()["coffee"][:400, :500].copy(), np.zeros((512, 512), np.float32)):
        for thickness in (1, 2, 5, -1):
            for line_type in LINE_TYPES:
                idx = int(rng.integers(-1, len(contours)))
                offset = (int(rng.integers(-20, 20)), int(rng.integers(-20, 20)))
                _assert_same("drawContours", img, contours, -1, (0, 255, 0), thickness, line_type)
                _assert_same("drawContours", img, contours, idx, (255, 0, 9), thickness, line_type, hierarchy,
                             int(rng.integers(0, 3)), offset)
                _assert_same("drawContours", img, list(contours), -1, 77, thickness, line_type, hierarchy, 1)


@pytest.mark.parametrize("seed", range(6))
def test_markers_and_arrows_exact(seed):
    rng = np.random.default_rng(400 + seed)
    img = _canvas(rng, "random")
    h, w = img.shape[:2]
    for marker in range(8):
        size = int(rng.integers(-5, 60))
        _assert_same("drawMarker", img, _point(rng, h, w), _color(rng), marker, size, int(rng.choice([1, 2, 5])),
                     int(rng.choice(LINE_TYPES)))
    for _ in range(10):
        shift = int(rng.choice([0, 0, 3]))
        _assert_same("arrowedLine", img, _point(rng, h, w, shift), _point(rng, h, w, shift), _color(rng),
                     int(rng.choice([1, 2, 5])), int(rng.choice(LINE_TYPES)), shift, float(rng.uniform(0, 1)))


def test_antialiased_non_uint8_exact():
    rng = np.random.default_rng(9)
    img = np.zeros((41, 57, 3), np.float32)
    for _ in range(20):
        _assert_same("line", img, _point(rng, 41, 57), _point(rng, 41, 57), (0.5, 1, 2), int(rng.choice([1, 3])),
                     mcv.LINE_AA)
        _assert_same("circle", img, _point(rng, 41, 57), int(rng.integers(0, 40)), (0.5, 1, 2), -1, mcv.LINE_AA)


def _assert_aa_close(name, img, *args):
    ours, theirs = _draw_both(name, img, *args)
    diff = np.abs(ours.astype(np.int32) - theirs.astype(np.int32))
    if diff.ndim == 3:
        diff = diff.max(-1)
    assert diff.max() <= 16, f"{name}{args}: max difference {diff.max()}"
    ours_changed = (ours != img).reshape(img.shape[0], img.shape[1], -1).any(-1)
    theirs_changed = (theirs != img).reshape(img.shape[0], img.shape[1], -1).any(-1)
    mismatch = (ours_changed != theirs_changed).sum()
    assert mismatch <= max(3, 0.01 * theirs_changed.sum()), f"{name}{args}: {mismatch} pixels drawn by one only"


@pytest.mark.parametrize("channels", [0, 3, 4])
def test_antialiased_close(channels):
    rng = np.random.default_rng(11 + channels)
    shape = (97, 131) if channels == 0 else (97, 131, channels)
    for _ in range(12):
        img = np.zeros(shape, np.uint8)
        color = tuple(float(v) for v in rng.integers(100, 256, 4))
        p, q = _point(rng, 97, 131, limits=False), _point(rng, 97, 131, limits=False)
        center = (int(rng.integers(-20, 150)), int(rng.integers(-20, 110)))
        _assert_aa_close("line", img, p, q, color, int(rng.choice([1, 1, 2, 5])), mcv.LINE_AA)
        _assert_aa_close("circle", img, center, int(rng.integers(1, 60)), color, int(rng.choice([1, 3, -1])),
                         mcv.LINE_AA)
        _assert_aa_close("ellipse", img, center, (int(rng.integers(1, 60)), int(rng.integers(1, 60))),
                         float(rng.uniform(0, 360)), 0.0, float(rng.uniform(0, 360)), color,
                         int(rng.choice([1, 3, -1])), mcv.LINE_AA)
        _assert_aa_close("fillPoly", img, _polygons(rng, 97, 131, 0, 2), color, mcv.LINE_AA)


def test_channels_and_dtypes_exact():
    rng = np.random.default_rng(12)
    for dtype in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32, np.float64):
        for shape in ((31, 45), (31, 45, 1), (31, 45, 2), (31, 45, 3), (31, 45, 4)):
            img = np.zeros(shape, dtype)
            _assert_same("line", img, (2, 3), (40, 25), (-7.5, 300.5, 70000, 2.5), 3)
            _assert_same("circle", img, (20, 15), 9, 1e10, -1)
            _assert_same("fillPoly", img, [np.array([[1, 1], [30, 5], [10, 29]], np.int32)], None)
    img = np.zeros((31, 45, 3), np.uint8)
    view = img[3:20, 5:40]  # rows apart by more than a row: drawn in place like cv2
    ref = img.copy()
    assert mcv.line(view, (0, 0), (30, 15), (1, 2, 3), 2) is view
    cv2.line(ref[3:20, 5:40], (0, 0), (30, 15), (1, 2, 3), 2)
    np.testing.assert_array_equal(img, ref)


def test_in_place_and_var():
    img = np.zeros((20, 30, 3), np.uint8)
    assert mcv.line(img, (1, 1), (20, 15), (255, 0, 0)) is img
    assert img.any()
    source = np.zeros((20, 30, 3), np.uint8)
    var = mnnpy.asarray(source) if hasattr(mnnpy, "asarray") else mnnpy._core.const(source, None, "NCHW")
    before = var + 0  # built from the Var before drawing: keeps the old pixels
    out = mcv.circle(var, (15, 10), 5, (0, 255, 0), -1)
    assert out is var
    expected = cv2.circle(source.copy(), (15, 10), 5, (0, 255, 0), -1)
    np.testing.assert_array_equal(np.asarray(var), expected)
    assert not np.asarray(before).any()
    out = mcv.fillPoly(var, [np.array([[1, 1], [25, 3], [8, 18]], np.int32)], (1, 2, 3))
    assert out is var
    np.testing.assert_array_equal(np.asarray(var), cv2.fillPoly(expected, [np.array([[1, 1], [25, 3], [8, 18]],
                                                                                     np.int32)], (1, 2, 3)))


def _raises_like_cv2(call):
    try:
        call(cv2)
    except cv2.error:
        with pytest.raises(mcv.error):
            call(mcv)
        return
    except TypeError:
        with pytest.raises(TypeError):
            call(mcv)
        return
    raise AssertionError("cv2 accepted the arguments")


BAD_CALLS = [
    lambda m: m.line(np.zeros((9, 9), np.uint8), (1.5, 2), (5, 5), 7),
    lambda m: m.line(np.zeros((9, 9), np.uint8), (1, 2, 3), (5, 5), 7),
    lambda m: m.line(np.zeros((9, 9), np.uint8), (2**31, 2), (5, 5), 7),
    lambda m: m.line(np.zeros((9, 9), np.uint8), (1, 2), (5, 5), (1, 2, 3, 4, 5)),
    lambda m: m.line(np.zeros((9, 9), np.uint8), (1, 2), (5, 5), "red"),
    lambda m: m.line(np.zeros((9, 9), np.uint8), (1, 2), (5, 5), 7, 0),
    lambda m: m.line(np.zeros((9, 9), np.uint8), (1, 2), (5, 5), 7, 40000),
    lambda m: m.line(np.zeros((9, 9), np.uint8), (1, 2), (5, 5), 7, 2.0),
    lambda m: m.line(np.zeros((9, 9), np.uint8), (1, 2), (5, 5), 7, 1, 3),
    lambda m: m.line(np.zeros((9, 9), np.uint8), (1, 2), (5, 5), 7, 1, 8, 17),
    lambda m: m.line(np.zeros((9, 9), np.uint8), (1, 2), (5, 5), 7, 1, 8, -1),
    lambda m: m.line(np.zeros((9, 9, 3), np.uint8)[:, ::2], (1, 2), (5, 5), 7),
    lambda m: m.line(np.zeros((9, 9, 3), np.uint8)[::-1], (1, 2), (5, 5), 7),
    lambda m: m.line([[0, 0], [0, 0]], (1, 2), (5, 5), 7),
    lambda m: m.line(np.zeros((9, 9, 5), np.uint8), (1, 2), (5, 5), 7),
    lambda m: m.line(np.zeros((9, 9, 3, 1), np.uint8), (1, 2), (5, 5), 7),
    lambda m: m.line(np.zeros((0, 9), np.uint8), (1, 2), (5, 5), 7),
    lambda m: m.circle(np.zeros((9, 9), np.uint8), (5, 5), -1, 7),
    lambda m: m.circle(np.zeros((9, 9), np.uint8), (5, 5), 2.5, 7),
    lambda m: m.circle(np.zeros((9, 9), np.uint8), (5., 5.), 2, 7),
    lambda m: m.rectangle(np.zeros((9, 9), np.uint8), (5, 5, 3), 7),
    lambda m: m.rectangle(np.zeros((9, 9), np.uint8), (5, 5), (7, 7), 7, 40000),
    lambda m: m.polylines(np.zeros((9, 9), np.uint8), [np.array([[1, 2], [5, 5]], np.float32)], True, 7),
    lambda m: m.polylines(np.zeros((9, 9), np.uint8), [np.array([[1, 2], [5, 5]], np.int16)], True, 7),
    lambda m: m.polylines(np.zeros((9, 9), np.uint8), [[[1, 2], [5, 5]]], True, 7),
    lambda m: m.polylines(np.zeros((9, 9), np.uint8), [np.array([[1, 2], [5, 5]], np.int32)], True, 7, -1),
    lambda m: m.polylines(np.zeros((9, 9), np.uint8), [np.zeros((4, 3), np.int32)], True, 7),
    lambda m: m.fillPoly(np.zeros((9, 9), np.uint8), [np.zeros((0, 2), np.int32)], 7),
    lambda m: m.fillPoly(np.zeros((9, 9), np.uint8), [np.array([[1, 2], [5, 5], [3, 9]], np.float32)], 7),
    lambda m: m.fillPoly(np.zeros((9, 9), np.uint8), [np.array([[1, 2], [5, 5], [3, 9]], np.int32)], 7,
                         offset=(1.5, 2)),
    lambda m: m.fillConvexPoly(np.zeros((9, 9), np.uint8), np.array([[1, 2], [5, 5], [3, 9]], np.float32), 7),
    lambda m: m.fillConvexPoly(np.zeros((9, 9), np.uint8), [np.array([[1, 2], [5, 5], [3, 9]], np.int32)], 7),
    lambda m: m.ellipse(np.zeros((9, 9), np.uint8), (4, 4), (-5, 3), 30.5, 0, 360, 7),
    lambda m: m.ellipse(np.zeros((9, 9), np.uint8), ((4.5, 4.2), (-5.5, 3.3), 30.7), 7),
    lambda m: m.ellipse2Poly((10, 10), (5, 3), 30, 0, 360, 0),
    lambda m: m.ellipse2Poly((10, 10), (5, 3), 30, 0, 360, 200),
    lambda m: m.ellipse2Poly((10, 10), (5, 3), 30.5, 0, 360, 10),
    lambda m: m.ellipse2Poly((10., 10), (5, 3), 30, 0, 360, 10),
    lambda m: m.drawContours(np.zeros((9, 9), np.uint8), [np.array([[[1, 2]], [[5, 5]]], np.int32)], 3, 7),
    lambda m: m.drawContours(np.zeros((9, 9), np.uint8), [np.zeros((0, 1, 2), np.int32)], -1, 7, -1),
    lambda m: m.drawMarker(np.zeros((9, 9), np.uint8), (5, 5), 7, 0, 20, 0),
]


@pytest.mark.parametrize("index", range(len(BAD_CALLS)))
def test_bad_arguments(index):
    _raises_like_cv2(BAD_CALLS[index])


def test_read_only_image_raises():
    img = np.zeros((9, 9), np.uint8)
    img.setflags(write=False)
    with pytest.raises(mcv.error):
        mcv.line(img, (1, 1), (5, 5), 7)
    with pytest.raises(mcv.error):
        mcv.fillPoly(photos()["camera"], [np.array([[1, 2], [5, 5], [3, 9]], np.int32)], 7)


def test_constants_match_cv2():
    from mnnpy.cv import _drawing
    for name in _drawing.__all__:
        if name.isupper():
            assert getattr(mcv, name) == getattr(cv2, name), name


def test_none_image_returns_none_like_cv2():
    assert cv2.line(None, (1, 1), (5, 5), 7) is None
    assert mcv.line(None, (1, 1), (5, 5), 7) is None
    assert mcv.fillPoly(None, [np.array([[1, 1], [5, 5], [1, 7]], np.int32)], 7) is None
