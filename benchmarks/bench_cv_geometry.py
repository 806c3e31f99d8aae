"""mnnpy.cv geometric transforms against OpenCV on a 1080p BGR uint8 image: resize to 224x224
and to 960x540 (bilinear and area), flip and copyMakeBorder, at 1 and 2 threads. Each case is
timed to a NumPy result (mnnpy's lazy value is computed inside the timing).
Run: python benchmarks/bench_cv_geometry.py [--only TEXT]"""
import argparse
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
import mnnpy.cv as mcv  # noqa: E402

from common import Table, compare  # noqa: E402


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
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    args = parser.parse_args()
    table = Table("mnnpy.cv geometry, 1080p BGR uint8", "cv2")
    table.header()
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        cv2.setNumThreads(threads)
        for name, ours, reference in cases():
            if args.only not in name:
                continue
            t_ours, t_ref = compare(ours, reference, repeats=15, min_time=0.5)
            table.add(name, threads, t_ours, t_ref)


if __name__ == "__main__":
    main()
