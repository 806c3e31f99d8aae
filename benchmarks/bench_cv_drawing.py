"""mnnpy.cv drawing functions against OpenCV on a 1920x1080 photograph: 1000 random lines,
1000 random circles, filled polygons, contours and 200 text labels, each drawn in place into a
fresh copy of the photo (the copy is part of both timings). putText is indicative only: mnnpy
draws Hershey stroke glyphs, OpenCV 5 its own outline fonts, so the pixels differ. Drawing runs
on the calling thread, so 1 and 2 threads time the same work.
Run: python benchmarks/bench_cv_drawing.py [--only TEXT]"""
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy.cv as mcv  # noqa: E402

from common import full_hd_photo, run_cv_cases  # noqa: E402


def _shapes(seed=0, count=1000):
    rng = np.random.default_rng(seed)
    points = [tuple(int(v) for v in p) for p in rng.integers(-100, 2000, (2 * count, 2))]
    colors = [tuple(float(v) for v in c) for c in rng.integers(0, 256, (count, 3))]
    radii = [int(r) for r in rng.integers(1, 120, count)]
    thick = [int(t) for t in rng.choice([1, 2, 5], count)]
    return points, colors, radii, thick


def _draw_lines(cv, bgr, points, colors, thick, line_type, thickness=None):
    img = bgr.copy()
    for i, color in enumerate(colors):
        cv.line(img, points[2 * i], points[2 * i + 1], color, thickness or thick[i], line_type)
    return img


def _draw_circles(cv, bgr, points, colors, radii, thick, line_type):
    img = bgr.copy()
    for i, color in enumerate(colors):
        cv.circle(img, points[i], radii[i], color, thick[i] if i % 2 else -1, line_type)
    return img


def _fill(cv, bgr, polys):
    img = bgr.copy()
    cv.fillPoly(img, polys, (0, 200, 255))
    return img


def _contours(cv, bgr, contours, thickness):
    img = bgr.copy()
    cv.drawContours(img, contours, -1, (0, 255, 0), thickness)
    return img


def _labels(cv, bgr, labels, thickness, line_type):
    img = bgr.copy()
    for text, org, scale in labels:
        cv.putText(img, text, org, cv.FONT_HERSHEY_SIMPLEX, scale, (0, 255, 255), thickness, line_type)
    return img


def cases():
    bgr = full_hd_photo()
    points, colors, radii, thick = _shapes()
    rng = np.random.default_rng(1)
    polys = [rng.integers(0, 1900, (40, 2)).astype(np.int32) for _ in range(5)]
    gray = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
    contours, _ = cv2.findContours(cv2.threshold(gray, 110, 255, cv2.THRESH_BINARY)[1], cv2.RETR_LIST,
                                   cv2.CHAIN_APPROX_SIMPLE)
    out = []
    for lt, lt_name in ((cv2.LINE_8, "LINE_8"), (cv2.LINE_AA, "LINE_AA")):
        out.append((f"1000 lines, thickness 1, {lt_name}",
                    lambda lt=lt: _draw_lines(mcv, bgr, points, colors, thick, lt, 1),
                    lambda lt=lt: _draw_lines(cv2, bgr, points, colors, thick, lt, 1), lt))
        out.append((f"1000 lines, thickness 1/2/5, {lt_name}",
                    lambda lt=lt: _draw_lines(mcv, bgr, points, colors, thick, lt),
                    lambda lt=lt: _draw_lines(cv2, bgr, points, colors, thick, lt), lt))
        out.append((f"1000 circles, outline/filled, {lt_name}",
                    lambda lt=lt: _draw_circles(mcv, bgr, points, colors, radii, thick, lt),
                    lambda lt=lt: _draw_circles(cv2, bgr, points, colors, radii, thick, lt), lt))
    out.append(("fillPoly 5 x 40 random points", lambda: _fill(mcv, bgr, polys), lambda: _fill(cv2, bgr, polys),
                cv2.LINE_8))
    out.append((f"drawContours {len(contours)} contours", lambda: _contours(mcv, bgr, contours, 2),
                lambda: _contours(cv2, bgr, contours, 2), cv2.LINE_8))
    out.append(("drawContours filled", lambda: _contours(mcv, bgr, contours, -1),
                lambda: _contours(cv2, bgr, contours, -1), cv2.LINE_8))
    labels = [(f"person {i}: 0.{(37 * i) % 100:02d}", (int(x), int(y)), 0.5 + (i % 4) * 0.25)
              for i, (x, y) in enumerate(rng.integers(0, 1800, (200, 2)) % [1800, 1060] + [0, 20])]
    for thickness, lt, lt_name in ((1, cv2.LINE_8, "LINE_8"), (2, cv2.LINE_AA, "LINE_AA")):
        out.append((f"putText 200 labels, thickness {thickness}, {lt_name}",
                    lambda t=thickness, lt=lt: _labels(mcv, bgr, labels, t, lt),
                    lambda t=thickness, lt=lt: _labels(cv2, bgr, labels, t, lt), "text"))
    return out


def _check(name, ours, reference, line_type):
    if line_type == "text":
        # Different glyphs: both drew about as many pixels of the label color.
        drawn, expected = ((ours == (0, 255, 255)).all(-1).sum(), (reference == (0, 255, 255)).all(-1).sum())
        assert expected / 3 < drawn < 3 * expected, (name, drawn, expected)
    elif line_type == cv2.LINE_AA:
        assert np.abs(ours.astype(np.int16) - reference).max() <= 16, name
    else:
        np.testing.assert_array_equal(ours, reference, err_msg=name)


def main():
    run_cv_cases("mnnpy.cv drawing vs OpenCV, 1920x1080 BGR uint8", cases(), check=_check)


if __name__ == "__main__":
    main()
