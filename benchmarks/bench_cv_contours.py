"""mnnpy.cv contours and shape analysis against OpenCV at 1 and 2 threads: findContours on Canny
edges and on a thresholded 1920x1080 photograph (scikit-image's coffee, resized by OpenCV), and
convexHull / minAreaRect on 100k random points.
Run: python benchmarks/bench_cv_contours.py [--only TEXT]"""
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy.cv as mcv  # noqa: E402

from common import full_hd_photo, run_cv_cases  # noqa: E402


def _flat(result):
    """findContours' (contours, hierarchy) as one array, for the equality check."""
    contours, hierarchy = result
    parts = [np.asarray(c).ravel() for c in contours]
    parts.append(np.asarray(hierarchy).ravel() if hierarchy is not None else np.zeros(0, np.int32))
    parts.append(np.array([len(c) for c in contours], np.int32))
    return np.concatenate(parts) if parts else np.zeros(0, np.int32)


def cases():
    bgr = full_hd_photo()
    gray = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
    edges = cv2.Canny(gray, 50, 150)
    binary = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[1]
    rng = np.random.default_rng(0)
    points_f = (rng.standard_normal((100_000, 1, 2)) * 300 + 500).astype(np.float32)
    points_i = rng.integers(0, 1_000_000, (100_000, 1, 2)).astype(np.int32)
    out = []
    for name, image in (("Canny edges", edges), ("Otsu threshold", binary)):
        for mode_name, mode in (("TREE", cv2.RETR_TREE), ("EXTERNAL", cv2.RETR_EXTERNAL)):
            out.append((f"findContours {mode_name}/SIMPLE, {name}",
                        lambda image=image, mode=mode: _flat(mcv.findContours(image, mode, cv2.CHAIN_APPROX_SIMPLE)),
                        lambda image=image, mode=mode: _flat(cv2.findContours(image, mode, cv2.CHAIN_APPROX_SIMPLE))))
    for name, pts in (("float32", points_f), ("int32", points_i)):
        out.append((f"convexHull 100k {name}", lambda pts=pts: mcv.convexHull(pts), lambda pts=pts: cv2.convexHull(pts)))
        out.append((f"minAreaRect 100k {name}", lambda pts=pts: np.array(mcv.minAreaRect(pts), dtype=object),
                    lambda pts=pts: np.array(cv2.minAreaRect(pts), dtype=object)))
    return out


def check(name, ours, reference):
    if name.startswith("minAreaRect"):
        (c, s, a), (ec, es, ea) = ours, reference
        assert s == es and a == ea, name
        np.testing.assert_allclose(c, ec, rtol=1e-6, err_msg=name)
    else:
        np.testing.assert_array_equal(ours, reference, err_msg=name)


def main():
    run_cv_cases("mnnpy.cv contours vs OpenCV, 1920x1080 uint8 / 100k points", cases(), check=check)


if __name__ == "__main__":
    main()
