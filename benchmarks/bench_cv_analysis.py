"""mnnpy.cv analysis functions against OpenCV on a 1920x1080 photograph (scikit-image's coffee,
resized by OpenCV), at 1 and 2 threads, each timed to a NumPy result.
Run: python benchmarks/bench_cv_analysis.py [--only TEXT]"""
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
    hsv = cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV)
    edges = cv2.Canny(gray, 50, 150)
    dx, dy = cv2.Sobel(gray, cv2.CV_16S, 1, 0), cv2.Sobel(gray, cv2.CV_16S, 0, 1)
    return [
        ("threshold BINARY, BGR", lambda: np.asarray(mcv.threshold(bgr, 127, 255, cv2.THRESH_BINARY)[1]),
         lambda: cv2.threshold(bgr, 127, 255, cv2.THRESH_BINARY)[1]),
        ("threshold TRUNC, gray", lambda: np.asarray(mcv.threshold(gray, 127, 255, cv2.THRESH_TRUNC)[1]),
         lambda: cv2.threshold(gray, 127, 255, cv2.THRESH_TRUNC)[1]),
        ("threshold OTSU, gray", lambda: np.asarray(mcv.threshold(gray, 0, 255, cv2.THRESH_OTSU)[1]),
         lambda: cv2.threshold(gray, 0, 255, cv2.THRESH_OTSU)[1]),
        ("Canny 100/200, gray", lambda: np.asarray(mcv.Canny(gray, 100, 200)), lambda: cv2.Canny(gray, 100, 200)),
        ("Canny 50/150 L2, gray", lambda: np.asarray(mcv.Canny(gray, 50, 150, L2gradient=True)),
         lambda: cv2.Canny(gray, 50, 150, L2gradient=True)),
        ("Canny 800/2400 aperture 7, gray", lambda: np.asarray(mcv.Canny(gray, 800, 2400, apertureSize=7)),
         lambda: cv2.Canny(gray, 800, 2400, apertureSize=7)),
        ("Canny 100/200, BGR", lambda: np.asarray(mcv.Canny(bgr, 100, 200)), lambda: cv2.Canny(bgr, 100, 200)),
        ("Canny(dx, dy) 100/200", lambda: np.asarray(mcv.Canny(dx, dy, 100, 200)), lambda: cv2.Canny(dx, dy, 100, 200)),
        ("connectedComponentsWithStats", lambda: np.asarray(mcv.connectedComponentsWithStats(edges)[1]),
         lambda: cv2.connectedComponentsWithStats(edges)[1]),
        ("inRange HSV", lambda: np.asarray(mcv.inRange(hsv, (10, 50, 50), (40, 255, 255))),
         lambda: cv2.inRange(hsv, (10, 50, 50), (40, 255, 255))),
    ]


def main():
    run_cv_cases("mnnpy.cv analysis vs OpenCV, 1920x1080 uint8", cases())


if __name__ == "__main__":
    main()
