"""mnnpy.cv image codecs against OpenCV on a 1920x1080 photograph (scikit-image's coffee,
resized by OpenCV): imdecode and imencode of JPEG (quality 95) and PNG (default compression),
at 1 and 2 threads, each timed to a NumPy result. Decoding and encoding one image run on one
thread in both libraries; the 2T column shows that nothing is lost to the thread pool.
Run: python benchmarks/bench_cv_codecs.py [--only TEXT]"""
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy.cv as mcv  # noqa: E402

from common import full_hd_photo, run_cv_cases  # noqa: E402


def cases():
    bgr = full_hd_photo()
    jpeg = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 95])[1]
    png = cv2.imencode(".png", bgr)[1]
    return [
        ("imdecode JPEG q95, color", lambda: np.asarray(mcv.imdecode(jpeg, cv2.IMREAD_COLOR)),
         lambda: cv2.imdecode(jpeg, cv2.IMREAD_COLOR)),
        ("imdecode JPEG q95, gray", lambda: np.asarray(mcv.imdecode(jpeg, cv2.IMREAD_GRAYSCALE)),
         lambda: cv2.imdecode(jpeg, cv2.IMREAD_GRAYSCALE)),
        ("imdecode PNG, color", lambda: np.asarray(mcv.imdecode(png, cv2.IMREAD_COLOR)),
         lambda: cv2.imdecode(png, cv2.IMREAD_COLOR)),
        ("imencode JPEG q95", lambda: mcv.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 95])[1],
         lambda: cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 95])[1]),
        ("imencode PNG", lambda: mcv.imencode(".png", bgr)[1], lambda: cv2.imencode(".png", bgr)[1]),
    ]


def results_not_compared(name, ours, reference):
    """Encoded bytes differ between encoders; the codec tests compare the pixels."""


def main():
    run_cv_cases("mnnpy.cv codecs vs OpenCV, 1920x1080 BGR uint8", cases(), check=results_not_compared)


if __name__ == "__main__":
    main()
