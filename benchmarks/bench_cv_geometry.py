"""mnnpy.cv geometric transforms against OpenCV on a 1080p BGR uint8 image: resize to 224x224
and to 960x540 (bilinear and area), flip and copyMakeBorder, at 1 and 2 threads. Each case is
timed to a NumPy result (mnnpy's lazy value is computed inside the timing).
Run: python benchmarks/bench_cv_geometry.py [--only TEXT]"""
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy.cv as mcv  # noqa: E402

from common import run_cv_cases  # noqa: E402


def cases():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    out = []
    for dsize in [(224, 224), (960, 540)]:
        for name, flag in [("linear", cv2.INTER_LINEAR), ("area", cv2.INTER_AREA)]:
            out.append((f"resize {dsize[0]}x{dsize[1]} {name}",
                        lambda d=dsize, f=flag: np.asarray(mcv.resize(img, d, interpolation=f)),
                        lambda d=dsize, f=flag: cv2.resize(img, d, interpolation=f)))
    out.append(("flip horizontal", lambda: np.asarray(mcv.flip(img, 1)), lambda: cv2.flip(img, 1)))
    out.append(("copyMakeBorder 32 reflect101",
                lambda: np.asarray(mcv.copyMakeBorder(img, 32, 32, 32, 32, cv2.BORDER_REFLECT_101)),
                lambda: cv2.copyMakeBorder(img, 32, 32, 32, 32, cv2.BORDER_REFLECT_101)))
    return out


def main():
    run_cv_cases("mnnpy.cv geometry, 1080p BGR uint8", cases())


if __name__ == "__main__":
    main()
