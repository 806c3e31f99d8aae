"""mnnpy.cv warps and pyramids against OpenCV on a 1920x1080 BGR photograph (scikit-image's
coffee, resized by OpenCV), at 1 and 2 threads, each timed to a NumPy result.
Run: python benchmarks/bench_cv_warp.py [--only TEXT]"""
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy.cv as mcv  # noqa: E402

from common import full_hd_photo, run_cv_cases  # noqa: E402


def cases():
    bgr = full_hd_photo()
    h, w = bgr.shape[:2]
    rotate = cv2.getRotationMatrix2D((w / 2, h / 2), 15, 1.0)
    # A 224x224 crop that scales the central square down and rotates it.
    crop = cv2.getRotationMatrix2D((w / 2, h / 2), 10, 224 / h)
    crop[:, 2] -= (w / 2 - 112, h / 2 - 112)
    src_quad = np.float32([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]])
    dst_quad = np.float32([[120, 40], [w - 200, 0], [w - 1, h - 60], [60, h - 1]])
    persp = cv2.getPerspectiveTransform(src_quad, dst_quad)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    mapx = (xs + 6 * np.sin(ys / 40)).astype(np.float32)
    mapy = (ys + 6 * np.cos(xs / 50)).astype(np.float32)
    return [
        ("warpAffine rotate 15, linear", lambda: np.asarray(mcv.warpAffine(bgr, rotate, (w, h))),
         lambda: cv2.warpAffine(bgr, rotate, (w, h))),
        ("warpAffine to 224x224, linear", lambda: np.asarray(mcv.warpAffine(bgr, crop, (224, 224))),
         lambda: cv2.warpAffine(bgr, crop, (224, 224))),
        ("warpPerspective, linear", lambda: np.asarray(mcv.warpPerspective(bgr, persp, (w, h))),
         lambda: cv2.warpPerspective(bgr, persp, (w, h))),
        ("remap float maps, linear", lambda: np.asarray(mcv.remap(bgr, mapx, mapy, cv2.INTER_LINEAR)),
         lambda: cv2.remap(bgr, mapx, mapy, cv2.INTER_LINEAR)),
        ("pyrDown", lambda: np.asarray(mcv.pyrDown(bgr)), lambda: cv2.pyrDown(bgr)),
    ]


def main():
    run_cv_cases("mnnpy.cv warps and pyramids vs OpenCV, 1920x1080 BGR uint8", cases())


if __name__ == "__main__":
    main()
