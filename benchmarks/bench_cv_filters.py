"""mnnpy.cv filters against OpenCV on a 1920x1080 photograph (scikit-image's coffee, resized by
OpenCV), at 1 and 2 threads, each timed to a NumPy result.
Run: python benchmarks/bench_cv_filters.py [--only TEXT]"""
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy.cv as mcv  # noqa: E402

from common import full_hd_photo, run_cv_cases  # noqa: E402


def cases():
    bgr = full_hd_photo()
    gray = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
    bgr_f = bgr.astype(np.float32) / 255
    kx, ky = np.array([1, 2, 1], np.float32), np.array([-1, 0, 1], np.float32)
    return [
        ("GaussianBlur 5x5, BGR", lambda: np.asarray(mcv.GaussianBlur(bgr, (5, 5), 0)),
         lambda: cv2.GaussianBlur(bgr, (5, 5), 0), True),
        ("GaussianBlur sigma 2, gray", lambda: np.asarray(mcv.GaussianBlur(gray, (0, 0), 2)),
         lambda: cv2.GaussianBlur(gray, (0, 0), 2), True),
        ("GaussianBlur 5x5, BGR float32", lambda: np.asarray(mcv.GaussianBlur(bgr_f, (5, 5), 0)),
         lambda: cv2.GaussianBlur(bgr_f, (5, 5), 0), False),
        ("blur 5x5, BGR", lambda: np.asarray(mcv.blur(bgr, (5, 5))), lambda: cv2.blur(bgr, (5, 5)), False),
        ("sepFilter2D 3x3 -> float32, BGR", lambda: np.asarray(mcv.sepFilter2D(bgr, cv2.CV_32F, kx, ky)),
         lambda: cv2.sepFilter2D(bgr, cv2.CV_32F, kx, ky), False),
        ("Sobel dx -> int16, gray", lambda: np.asarray(mcv.Sobel(gray, cv2.CV_16S, 1, 0)),
         lambda: cv2.Sobel(gray, cv2.CV_16S, 1, 0), True),
        ("erode 3x3, BGR", lambda: np.asarray(mcv.erode(bgr, None)), lambda: cv2.erode(bgr, None), True),
        ("medianBlur 3, gray", lambda: np.asarray(mcv.medianBlur(gray, 3)), lambda: cv2.medianBlur(gray, 3), True),
    ]


def exact_or_within_lsb(name, ours, reference, exact):
    if exact:
        np.testing.assert_array_equal(ours, reference, err_msg=name)
    else:
        tolerance = 1 if reference.dtype == np.uint8 else 1e-4
        assert np.abs(ours.astype(np.float64) - reference).max() <= tolerance, name


def main():
    run_cv_cases("mnnpy.cv filters vs OpenCV, 1920x1080", cases(), check=exact_or_within_lsb)


if __name__ == "__main__":
    main()
