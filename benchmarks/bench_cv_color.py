"""mnnpy.cv colour conversions against OpenCV on a 1920x1080 photograph (scikit-image's coffee,
resized by OpenCV), at 1 and 2 threads, each timed to a NumPy result.
Run: python benchmarks/bench_cv_color.py [--only TEXT]"""
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy.cv as mcv  # noqa: E402

from common import full_hd_photo, run_cv_cases  # noqa: E402


def nv21_of(bgr):
    """An NV21 buffer (1620x1920: the Y plane, then V and U interleaved) of a BGR image."""
    h, w = bgr.shape[:2]
    i420 = cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV_I420)
    u = i420[h:h + h // 4].reshape(-1)
    v = i420[h + h // 4:].reshape(-1)
    vu = np.empty(u.size * 2, np.uint8)
    vu[0::2], vu[1::2] = v, u
    return np.concatenate([i420[:h].reshape(-1), vu]).reshape(h * 3 // 2, w)


def cases():
    bgr = full_hd_photo()
    nv21 = nv21_of(bgr)
    bgra = cv2.cvtColor(bgr, cv2.COLOR_BGR2BGRA)
    items = [("BGR2GRAY", bgr, cv2.COLOR_BGR2GRAY, 0), ("BGR2RGB", bgr, cv2.COLOR_BGR2RGB, 0),
             ("BGRA2RGBA", bgra, cv2.COLOR_BGRA2RGBA, 0), ("BGR2BGRA", bgr, cv2.COLOR_BGR2BGRA, 0),
             ("BGRA2BGR", bgra, cv2.COLOR_BGRA2BGR, 0),
             ("BGR2HSV", bgr, cv2.COLOR_BGR2HSV, 0), ("YUV2BGR_NV21", nv21, cv2.COLOR_YUV2BGR_NV21, 0),
             ("YUV2RGBA_NV12", nv21, cv2.COLOR_YUV2RGBA_NV12, 0), ("YUV2BGR_I420", nv21, cv2.COLOR_YUV2BGR_I420, 0),
             ("BGR2YCrCb", bgr, cv2.COLOR_BGR2YCrCb, 0), ("BGR2Lab", bgr, cv2.COLOR_BGR2Lab, 3),
             # A model-sized crop: the time is mostly each library's fixed cost per call.
             ("BGR2RGB 224x224 crop", np.ascontiguousarray(bgr[400:624, 800:1024]), cv2.COLOR_BGR2RGB, 0)]
    return [(f"cvtColor {name}", lambda s=src, c=code: np.asarray(mcv.cvtColor(s, c)),
             lambda s=src, c=code: cv2.cvtColor(s, c), lsb) for name, src, code, lsb in items]


def within_lsb(name, ours, reference, lsb):
    difference = np.abs(ours.astype(np.int16) - reference.astype(np.int16)).max()
    assert difference <= lsb, f"{name}: {difference} LSB from OpenCV"


def main():
    run_cv_cases("mnnpy.cv colour conversions vs OpenCV, 1920x1080 uint8", cases(), check=within_lsb)


if __name__ == "__main__":
    main()
