"""mnnpy.cv image codecs against OpenCV on a 1920x1080 photograph (scikit-image's coffee,
resized by OpenCV): imdecode and imencode of JPEG (quality 95) and PNG (default compression),
at 1 and 2 threads, each timed to a NumPy result. Decoding and encoding one image run on one
thread in both libraries; the 2T column shows that nothing is lost to the thread pool.
Run: python benchmarks/bench_cv_codecs.py [--only TEXT]"""
import argparse
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
import mnnpy.cv as mcv  # noqa: E402

from common import Table, compare, full_hd_photo  # noqa: E402


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


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    args = parser.parse_args()
    table = Table("mnnpy.cv codecs vs OpenCV, 1920x1080 BGR uint8", "cv2")
    table.header()
    work = [c for c in cases() if args.only in c[0]]
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        cv2.setNumThreads(threads)
        for name, ours, reference in work:
            t_ours, t_ref = compare(ours, reference, repeats=15, min_time=0.5)
            table.add(name, threads, t_ours, t_ref)


if __name__ == "__main__":
    main()
